"""C++ functions exposed as ordinary tvm.transform passes."""

import tvm
from tvm.script import ir as I
from tvm.script import tirx as T

from tvm_memplan import testing as hooks


@I.ir_module
class Module:
    @T.prim_func
    def first(A: T.Buffer((4,), "float32")):
        A[0] = T.float32(0)

    @T.prim_func
    def second(A: T.Buffer((4,), "float32")):
        A[1] = T.float32(0)


def test_prim_func_pass_is_a_tvm_pass_that_visits_every_function():
    pass_ = hooks.mark_visited_pass("tvm_memplan.testing.MarkVisited")
    assert isinstance(pass_, tvm.tirx.transform.PrimFuncPass)
    assert pass_.info.name == "tvm_memplan.testing.MarkVisited"
    out = pass_(Module)
    assert all(bool(f.attrs["tvm_memplan.visited"]) for f in out.functions.values())
    assert "tvm_memplan.visited" not in (Module["first"].attrs or {})


def test_prim_func_pass_runs_in_a_sequential_and_reads_the_pass_context():
    seq = tvm.transform.Sequential([hooks.mark_visited_pass("tvm_memplan.testing.MarkVisited")])
    with tvm.transform.PassContext(config={"tirx.disable_vectorize": False}):
        out = seq(Module)
    # The hook stores the option's value when the context sets it (True otherwise).
    assert not bool(out["first"].attrs["tvm_memplan.visited"])


def test_module_pass_builds_a_new_module():
    out = hooks.drop_functions_pass("second")(Module)
    assert [gv.name_hint for gv in out.functions] == ["second"]
    assert len(Module.functions) == 2
