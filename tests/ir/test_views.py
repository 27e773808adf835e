"""Typed views: buffer facts read through reflection, and errors on the wrong node type."""

import pytest
import tvm
from tvm.script import tirx as T

from tvm_memplan import testing as hooks


@T.prim_func
def buffers(A: T.Buffer((16, 16), "float32"), n: T.int32):
    B = T.alloc_buffer((4, 8), "float16", scope="local")
    M = T.alloc_buffer((10,), "bool")
    Q = T.alloc_buffer((7,), "int4")
    S = T.alloc_buffer((n, 4), "int8", scope="shared")
    B[0, 0] = T.float16(0)
    M[0] = T.bool(True)
    Q[0] = T.Cast("int4", 1)
    S[0, 0] = T.int8(0)
    A[0, 0] = T.float32(0)


def _alloc(name):
    allocs = [s for s in buffers.body.seq if isinstance(s, tvm.tirx.AllocBuffer)]
    return next(s.buffer for s in allocs if s.buffer.name == name)


def test_buffer_facts():
    info = hooks.describe_buffer(_alloc("B"))
    assert str(info["name"]) == "B"
    assert str(info["dtype"]) == "float16"
    assert [int(x) for x in info["shape"]] == [4, 8]
    assert str(info["scope"]) == "local"
    assert info["num_elements"] == 32
    assert info["size_bytes"] == 64


def test_bool_takes_a_byte_per_element():
    assert hooks.describe_buffer(_alloc("M"))["size_bytes"] == 10


def test_sub_byte_dtype_takes_a_byte_per_element():
    """As TVM allocates it: LowerTVMBuiltin asks TVMBackendAllocWorkspace for 4000 bytes for
    4000 int4 elements."""
    assert hooks.describe_buffer(_alloc("Q"))["size_bytes"] == 7


def test_symbolic_shape_has_no_constant_size():
    info = hooks.describe_buffer(_alloc("S"))
    assert info["num_elements"] is None
    assert info["size_bytes"] is None
    assert str(info["scope"]) == "shared"


def test_param_buffer_is_a_buffer():
    info = hooks.describe_buffer(buffers.params[0])
    assert str(info["name"]) == "A"
    assert info["size_bytes"] == 1024


def test_scalar_var_is_not_a_buffer():
    with pytest.raises(TypeError, match="`n` is a variable, not a buffer"):
        hooks.describe_buffer(buffers.params[1])


def test_wrong_node_type_is_a_type_error():
    with pytest.raises(TypeError, match=r"expected `ir.Var`, got `tirx.SeqStmt`"):
        hooks.describe_buffer(buffers.body)


def test_reading_a_field_from_another_type_is_a_type_error():
    with pytest.raises(TypeError, match=r"cannot read field `body` of `tirx.For` from .*SeqStmt"):
        hooks.read_field(buffers.body, "tirx.For", "body")


def test_unknown_field_names_the_supported_tvm_version():
    with pytest.raises(RuntimeError, match=r"has no field `no_such_field`.*TVM 0\.27\.0\.post1"):
        hooks.read_field(buffers.body, "tirx.SeqStmt", "no_such_field")


def test_unknown_type_key_names_the_supported_tvm_version():
    with pytest.raises(RuntimeError, match=r"unknown TVM type key `tir.Stmt`.*TVM 0\.27\.0\.post1"):
        hooks.read_field(buffers.body, "tir.Stmt", "span")


def test_reading_a_field():
    assert str(hooks.read_field(_alloc("B"), "ir.Var", "name")) == "B"
    assert isinstance(hooks.read_field(buffers.body, "tirx.SeqStmt", "seq")[0], tvm.tirx.Stmt)


def _ints(*values):
    return [tvm.tirx.IntImm("int32", v) for v in values]


def test_with_shape_sets_strides_and_a_matching_row_major_layout():
    new = hooks.with_shape(_alloc("B"), _ints(2, 8), _ints(12, 1))
    assert [int(x) for x in new.ty.shape] == [2, 8]
    assert [int(x) for x in new.ty.strides] == [12, 1]
    assert [(int(i.extent), int(i.stride)) for i in new.ty.layout.shard] == [(2, 8), (8, 1)]
    assert new.name == "B" and str(new.ty.storage_scope) == "local"


def test_with_shape_drops_strides_when_given_none():
    strided = hooks.with_shape(_alloc("B"), _ints(4, 8), _ints(12, 1))
    plain = hooks.with_shape(strided, _ints(4, 8), [])
    assert list(plain.ty.strides) == []
