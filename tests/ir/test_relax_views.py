"""Relax views: blocks, bindings and the expressions bound in them."""

from tvm.script import ir as I
from tvm.script import relax as R

from tvm_memplan import testing as hooks


@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2, 3), "float32")):
        with R.dataflow():
            y = R.add(x, x)
            t = (x, y)
            z = t[1]
            R.output(z)
        w = R.multiply(z, z)
        return w


def test_bindings_in_order_with_their_blocks_and_values():
    assert list(hooks.relax_bindings(Module["main"])) == [
        "y df call relax.add 2x3",
        "t df tuple",
        "z df get 1 2x3",
        "w call relax.multiply 2x3",
    ]
