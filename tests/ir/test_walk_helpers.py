"""Helpers for cheap walks: node kinds, statement children, borrowed field reads."""

import pytest
import tvm
from tvm.script import tirx as T

from tvm_memplan import testing as hooks


@T.prim_func
def func(A: T.Buffer((16,), "float32")):
    B = T.alloc_buffer((16,), "float32")
    for i in range(16):
        if i < 8:
            B[i] = A[i]
        else:
            B[i] = T.float32(0)
    tx = T.launch_thread("threadIdx.x", 4)
    A[tx] = B[tx]


i = tvm.tirx.Var("i", "int32")


@pytest.mark.parametrize(
    ("value", "kind"),
    [
        (tvm.tirx.IntImm("int32", 1), "constant"),
        (tvm.tirx.FloatImm("float32", 1.0), "constant"),
        (i, "var"),
        (func.params[0], "var"),  # a buffer is a var
        (i + 1, "expr"),
        (func.body, "stmt"),
        (func.body.seq, "array"),
        (i.ty, "opaque"),  # a type holds no use of a var
        (None, "opaque"),
        (3, "opaque"),
        (tvm.ir.Range(0, 4), "other"),
        (func, "expr"),  # ir.BaseFunc derives from ir.Expr in TVM 0.27
    ],
)
def test_node_kind(value, kind):
    assert hooks.node_kind(value) == kind


def test_child_statements_of_a_sequence_are_its_elements():
    assert list(hooks.child_stmts(func.body)) == [
        "tirx.AllocBuffer",
        "tirx.For",
        "tirx.AttrStmt",
    ]


def test_child_statements_of_a_loop_an_if_and_an_attribute():
    loop = func.body.seq[1]
    assert list(hooks.child_stmts(loop)) == ["tirx.IfThenElse"]
    assert list(hooks.child_stmts(loop.body)) == ["tirx.BufferStore", "tirx.BufferStore"]
    assert list(hooks.child_stmts(func.body.seq[2])) == ["tirx.BufferStore"]


def test_child_statements_of_blocks():
    @T.prim_func(s_tir=True)
    def blocks(A: T.Buffer((4,), "float32")):
        for i in range(4):
            with T.sblock("b"):
                vi = T.axis.spatial(4, i)
                A[vi] = T.float32(0)

    realize = blocks.body  # the root block
    assert list(hooks.child_stmts(realize)) == ["s_tir.SBlock"]
    assert list(hooks.child_stmts(realize.block)) == ["tirx.For"]


def test_a_leaf_statement_has_no_child_statements():
    store = func.body.seq[1].body.then_case
    assert list(hooks.child_stmts(store)) == []


def test_mapping_child_statements_copies_on_write():
    loop = func.body.seq[1]
    mapped = hooks.child_stmts_to_evaluate(loop)
    assert isinstance(mapped, tvm.tirx.For) and not mapped.same_as(loop)
    assert isinstance(mapped.body, tvm.tirx.Evaluate)
    assert mapped.loop_var.same_as(loop.loop_var)
    assert hooks.child_stmts_to_evaluate(mapped).same_as(mapped)  # nothing left to change


def test_mapping_both_branches_of_an_if():
    branch = func.body.seq[1].body
    mapped = hooks.child_stmts_to_evaluate(branch)
    assert isinstance(mapped.then_case, tvm.tirx.Evaluate)
    assert isinstance(mapped.else_case, tvm.tirx.Evaluate)
    assert mapped.condition.same_as(branch.condition)


def test_borrowed_field_is_the_object_the_field_holds():
    loop = func.body.seq[1]
    assert hooks.borrow_field(loop, "tirx.For", "body").same_as(loop.body)
    assert hooks.borrow_field(loop, "tirx.For", "loop_var").same_as(loop.loop_var)
    # Again, once the field is known to be stored as a pointer.
    assert hooks.borrow_field(loop, "tirx.For", "body").same_as(loop.body)


def test_borrowed_none_is_none():
    then_only = func.body.seq[1].body.then_case
    store_if = tvm.tirx.IfThenElse(i < 1, then_only, None)
    assert hooks.borrow_field(store_if, "tirx.IfThenElse", "else_case") is None


def test_borrowing_a_field_that_holds_no_object_is_a_type_error():
    with pytest.raises(TypeError):
        hooks.borrow_field(func.body.seq[1], "tirx.For", "kind")
