"""TagAllocationPlacement: placement decisions recorded in storage scopes before StorageRewrite."""

import pytest
import tvm
from tvm.script import tirx as T

import tvm_memplan
from tvm_memplan.analysis import allocation_plan, placement_counts
from tvm_memplan.testing import assert_ir_equal


def tag(func, **config):
    with tvm.transform.PassContext(config={f"tvm_memplan.{k}": v for k, v in config.items()}):
        return tvm_memplan.transform.TagAllocationPlacement()(tvm.IRModule({"main": func}))["main"]


@T.prim_func
def mixed(A: T.Buffer((512,), "float32")):
    T.func_attr({"target": T.target("llvm")})
    S = T.alloc_buffer((16,), "float32")
    G = T.alloc_buffer((512,), "float32")
    L = T.alloc_buffer((512,), "float32", scope="local")
    K = T.alloc_buffer((4,), "float32", annotations={"disable_lower_builtin": 1})
    V = T.decl_buffer((512,), "int32", data=L.data, scope="local")
    for i in range(512):
        S[i % 16] = A[i]
        G[i] = S[i % 16]
        L[i] = G[i]
        K[i % 4] = T.Cast("float32", V[i])
        A[i] = K[i % 4]


@T.prim_func
def mixed_tagged(A: T.Buffer((512,), "float32")):
    T.func_attr({"target": T.target("llvm")})
    S = T.alloc_buffer((16,), "float32")
    G = T.alloc_buffer((512,), "float32", scope="global.workspace")
    L = T.alloc_buffer((512,), "float32", scope="global.workspace")
    K = T.alloc_buffer(
        (4,),
        "float32",
        scope="global.memplan_unlowered",
        annotations={"disable_lower_builtin": 1},
    )
    V = T.decl_buffer((512,), "int32", data=L.data, scope="global.workspace")
    for i in range(512):
        S[i % 16] = A[i]
        G[i] = S[i % 16]
        L[i] = G[i]
        K[i % 4] = T.Cast("float32", V[i])
        A[i] = K[i % 4]


def test_workspace_and_unlowered_decisions_move_to_their_scopes():
    """2 KB "global" and "local" buffers (over 1024) move to "global.workspace" with their views,
    disable_lower_builtin to the carrier scope; stack decisions keep theirs."""
    assert_ir_equal(tag(mixed), mixed_tagged)


def test_keeps_the_scopes_of_stack_decisions():
    """With a 64 KB limit every buffer is on the stack and keeps its scope; only the
    disable_lower_builtin request moves to its carrier scope."""
    out = tag(mixed, max_stack_alloca=65536)
    scopes = {s.buffer.name: s.buffer.ty.storage_scope for s in out.body.seq[:4]}
    assert scopes == {"S": "global", "G": "global", "L": "local", "K": "global.memplan_unlowered"}


def test_is_idempotent():
    once = tag(mixed)
    tvm.ir.assert_structural_equal(tag(once), once)


def test_decisions_survive_the_tagging():
    """LowerTVMBuiltin decides the same placements after the tagging as before it."""
    before = placement_counts(allocation_plan(mixed))
    after = placement_counts(allocation_plan(tag(mixed)))
    assert before == after == {"stack": 1, "workspace": 2, "unlowered": 1}


def test_budget_demotions_are_tagged():
    """64 + 2048 + 2048 bytes on the stack, budget 2112: L (the later of the two largest) moves."""
    out = tag(mixed, max_stack_alloca=65536, max_stack_bytes=2112)
    scopes = [s.buffer.ty.storage_scope for s in out.body.seq[:3]]
    assert scopes == ["global", "global", "global.workspace"]


def test_errors_name_the_buffer_as_written():
    @T.prim_func
    def func(A: T.Buffer((4,), "float32")):
        T.func_attr({"target": T.target("llvm")})
        Scratch = T.alloc_buffer((4,), "float32", scope="global.stack")
        Scratch[0] = A[0]
        A[1] = Scratch[0]

    with pytest.raises(ValueError, match='main: buffer `Scratch` has scope "global.stack"'):
        tag(func, max_stack_alloca=0)


def test_an_annotated_dynamic_buffer_is_left_to_storage_rewrite():
    """StorageRewrite refuses dynamic sizes in a carrier scope: the buffer stays as written, and
    loses its annotation there as in TVM's pipeline (tests/test_pipeline.py builds it)."""

    @T.prim_func
    def func(A: T.Buffer((4,), "float32"), n: T.int32):
        T.func_attr({"target": T.target("llvm")})
        K = T.alloc_buffer((n,), "float32", annotations={"disable_lower_builtin": 1})
        K[0] = A[0]

    tvm.ir.assert_structural_equal(tag(func), func)


def test_keeps_functions_of_device_targets():
    func = mixed.with_attr("target", tvm.target.Target("cuda"))
    tvm.ir.assert_structural_equal(tag(func), func)
