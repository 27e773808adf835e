"""Modules on which TVM's own passes compute wrong numbers, shared by the tests of our passes
(which must not) and of the report (which must say where stock's do)."""

import numpy as np
from tvm.script import ir as I
from tvm.script import relax as R


@I.ir_module
class ConstantThroughAView:
    """`a = astype(k)` to its own dtype is a view of the constant `k`: TVM's
    DataflowUseInplaceCalls writes `b` into it, so a second call adds to a changed constant."""

    @R.function
    def main(x: R.Tensor((4,), "float32")):
        with R.dataflow():
            k = R.const(np.arange(4, dtype="float32"))
            a = R.astype(k, "float32")
            b = R.add(a, x)
            R.output(b)
        return b
