"""Helpers the analyses' Python wrappers share (no records: those are in the modules that
register them): counting an operator's calls in a module, the bytes of an element as the C++
core counts them, and the argument check of the TIR analyses."""

from __future__ import annotations

import tvm

from . import _ffi_api


def count_calls(mod: tvm.IRModule, op_name: str = "relax.call_tir_inplace") -> int:
    """Calls of the operator ``op_name`` in the Relax functions of ``mod`` (by default the
    in-place calls DataflowUseInplaceCalls makes)."""
    count = 0

    def visit(node):
        nonlocal count
        count += (
            isinstance(node, tvm.relax.Call)
            and isinstance(node.op, tvm.ir.Op)
            and node.op.name == op_name
        )

    for func in mod.functions.values():
        if isinstance(func, tvm.relax.Function):
            tvm.relax.analysis.post_order_visit(func, visit)
    return count


def element_bytes(dtype) -> int:
    """Bytes one element of ``dtype`` (with its lanes) takes as TVM allocates it, whole bytes
    per element (a bool or an int4 takes one): the C++ core's one count (``ir::DTypeBytes``)."""
    return int(_ffi_api.element_bytes(str(dtype)))


def check_tir(func_or_mod, what: str) -> None:
    """TypeError unless ``func_or_mod`` is a PrimFunc or an IRModule."""
    if not isinstance(func_or_mod, tvm.tirx.PrimFunc | tvm.IRModule):
        raise TypeError(
            f"{what} expects a tvm.tirx.PrimFunc or a tvm.IRModule, "
            f"got {type(func_or_mod).__name__}"
        )
