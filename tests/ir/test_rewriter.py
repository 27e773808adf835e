"""The rewriter: variable remapping plus post-order hooks, checked on IR and numerically."""

import numpy as np
import pytest
import tvm
from tvm.script import tirx as T

from tvm_memplan import testing as hooks


def _ints(*values):
    return [tvm.tirx.IntImm("int32", v) for v in values]


@T.prim_func
def tiled(A: T.Buffer((64, 64), "float32"), B: T.Buffer((64, 64), "float32")):
    for io in range(16):
        tmp = T.alloc_buffer((64, 64), "float32")
        for ii, j in T.grid(4, 64):
            tmp[io * 4 + ii, j] = A[io * 4 + ii, j] * T.float32(2)
        for ii, j in T.grid(4, 64):
            B[io * 4 + ii, j] = tmp[io * 4 + ii, j] + T.float32(1)


@T.prim_func
def tiled_reshaped(A: T.Buffer((64, 64), "float32"), B: T.Buffer((64, 64), "float32")):
    for io in range(16):
        tmp = T.alloc_buffer((4, 64), "float32")
        for ii, j in T.grid(4, 64):
            tmp[ii, j] = A[io * 4 + ii, j] * T.float32(2)
        for ii, j in T.grid(4, 64):
            B[io * 4 + ii, j] = tmp[ii, j] + T.float32(1)


def _reshape_tmp(func):
    io = func.body.loop_var
    return hooks.reshape_buffer(func, "tmp", _ints(4, 64), [io * 4, *_ints(0)])


def test_remap_buffer_and_shift_indices():
    hooks.assert_ir_equal(_reshape_tmp(tiled), tiled_reshaped)


def test_reshaped_buffer_keeps_a_layout_consistent_with_its_shape():
    tmp = (
        hooks.reshape_buffer(tiled, "tmp", _ints(4, 64), [tiled.body.loop_var * 4, *_ints(0)])
        .body.body.seq[0]
        .buffer
    )
    layout = tmp.ty.layout
    assert [int(i.extent) for i in layout.shard] == [4, 64]
    assert [int(i.stride) for i in layout.shard] == [64, 1]


def test_rewrite_preserves_results():
    hooks.assert_same_results(tiled, _reshape_tmp(tiled))
    a = hooks.random_args(tiled)[0]
    np.testing.assert_allclose(hooks.run_prim_func(tiled, [a, a])[1], a * 2 + 1)


def test_same_shape_rewrite_is_structurally_unchanged():
    out = hooks.reshape_buffer(tiled, "tmp", _ints(64, 64), _ints(0, 0))
    hooks.assert_ir_equal(out, tiled)


def test_rewrite_without_matches_returns_the_same_object():
    i, j, k = (tvm.tirx.Var(n, "int32") for n in "ijk")
    expr = i * 4 + j
    assert hooks.substitute(expr, {k: j}).same_as(expr)


def test_unknown_buffer_is_a_value_error():
    with pytest.raises(ValueError, match="no buffer named `nope`"):
        hooks.reshape_buffer(tiled, "nope", _ints(1), _ints(0))


def test_substitute_replaces_vars_in_expressions():
    i, j = tvm.tirx.Var("i", "int32"), tvm.tirx.Var("j", "int32")
    out = hooks.substitute(i * 4 + j, {i: j + 1})
    tvm.ir.assert_structural_equal(out, (j + 1) * 4 + j)
