"""allocation_summary: every buffer definition, on block TIR, lowered TIR and modules."""

import pytest
import tvm
from tvm.script import ir as I
from tvm.script import relax as R
from tvm.script import tirx as T

from tvm_memplan.analysis import Allocation, allocation_summary, total_bytes


@T.prim_func(s_tir=True)
def block_func(A: T.Buffer((16, 16), "float32"), C: T.Buffer((16, 16), "float32")):
    for i in range(16):
        with T.sblock("row"):
            T.reads(A[i, 0:16])
            T.writes(C[i, 0:16])
            B = T.sblock_alloc_buffer((16, 16), "float32", scope="local")
            for j in range(16):
                with T.sblock("produce"):
                    B[i, j] = A[i, j] + T.float32(1)
            for j in range(16):
                with T.sblock("consume"):
                    C[i, j] = B[i, j] * T.float32(2)


def _fields(record) -> dict:
    names = [f.name for f in type(record).__tvm_ffi_type_info__.fields]
    return {name: getattr(record, name) for name in names}


def test_block_allocation():
    (record,) = allocation_summary(block_func)
    assert isinstance(record, Allocation)
    assert _fields(record) == {
        "function": "block_func",
        "name": "B",
        "kind": "block_alloc_buffer",
        "shape": [16, 16],
        "dtype": "float32",
        "scope": "local",
        "size_bytes": 1024,
        "size": record.size,
        "view_of": None,
        "block": "row",
    }
    assert int(record.size.value) == 1024  # the same bytes, as an expression


def test_lowered_allocation_and_views():
    @T.prim_func
    def func(A: T.Buffer((16,), "float32")):
        B = T.alloc_buffer((16,), "float32")
        V = T.decl_buffer((4, 4), "float32", data=B.data)
        H = T.alloc_buffer((3,), "float16", scope="shared")
        V[0, 0] = A[0]
        H[0] = T.float16(0)

    summary = allocation_summary(func)
    assert [(a.name, a.kind, a.shape, a.scope, a.size_bytes, a.view_of) for a in summary] == [
        ("B", "alloc_buffer", (16,), "global", 64, None),
        ("V", "decl_buffer", (4, 4), "global", 64, "B"),
        ("H", "alloc_buffer", (3,), "shared", 6, None),
    ]
    assert total_bytes(summary) == 70  # the view allocates nothing


def test_lowering_keeps_the_allocation():
    lowered = tvm.s_tir.transform.LowerOpaqueBlock()(tvm.IRModule({"main": block_func}))
    (alloc,) = allocation_summary(lowered)
    assert (alloc.name, alloc.kind, alloc.shape, alloc.size_bytes) == (
        "B",
        "alloc_buffer",
        (16, 16),
        1024,
    )


def test_symbolic_shape_has_no_size():
    @T.prim_func
    def func(n: T.int32):
        B = T.alloc_buffer((n, 4), "int8")
        B[0, 0] = T.int8(0)

    (alloc,) = allocation_summary(func)
    assert alloc.size_bytes is None
    assert isinstance(alloc.shape[0], tvm.tirx.Var) and alloc.shape[1] == 4
    assert total_bytes([alloc]) is None


def test_module_with_several_functions_in_name_order():
    @I.ir_module
    class Module:
        @T.prim_func
        def second(A: T.Buffer((4,), "float32")):
            X = T.alloc_buffer((4,), "float32")
            X[0] = A[0]

        @T.prim_func
        def first(A: T.Buffer((4,), "float32")):
            Y = T.alloc_buffer((2,), "int32")
            Z = T.alloc_buffer((8,), "int8")
            Y[0] = 0
            Z[0] = T.int8(0)

        @R.function
        def main(x: R.Tensor((4,), "float32")):
            return x

    summary = allocation_summary(Module)
    assert [(a.function, a.name) for a in summary] == [
        ("first", "Y"),
        ("first", "Z"),
        ("second", "X"),
    ]
    assert total_bytes(summary) == 8 + 8 + 16


def test_function_without_allocations():
    @T.prim_func
    def func(A: T.Buffer((4,), "float32")):
        A[0] = T.float32(0)

    assert allocation_summary(func) == []


@pytest.mark.parametrize("bad", [None, 3, "main", tvm.tirx.Var("x", "int32")])
def test_non_tir_input_is_a_type_error(bad):
    with pytest.raises(TypeError, match="allocation_summary expects a tvm.tirx.PrimFunc"):
        allocation_summary(bad)


def test_relax_function_is_a_type_error():
    @R.function
    def func(x: R.Tensor((4,), "float32")):
        return x

    with pytest.raises(TypeError, match="got Function"):
        allocation_summary(func)


def test_core_rejects_non_tir_input_itself():
    """The C++ entry point checks its argument too (it is callable without the wrapper)."""
    from tvm_memplan.analysis import _ffi_api

    with pytest.raises(TypeError, match="expects a tvm.tirx.PrimFunc or a tvm.IRModule"):
        _ffi_api.allocation_summary(tvm.tirx.Var("x", "int32"))
