"""tvm-memplan's StaticPlanBlockMemory: a drop-in for ``tvm.relax.transform.StaticPlanBlockMemory``
that packs tensors at offsets of one storage (see docs/passes/static_plan_block_memory.md)."""

from __future__ import annotations

import tvm
import tvm_ffi

from .. import _lib  # noqa: F401  (registers the options type before it is bound below)
from . import _ffi_api


@tvm_ffi.register_object("tvm_memplan.relax.MemoryPlanOptions")
class MemoryPlanOptions(tvm_ffi.Object):
    """Options of StaticPlanBlockMemory; fields, docs and defaults come from the C++ core
    (``src_cpp/relax/memory_plan_records.h``)."""


def StaticPlanBlockMemory(
    *,
    alignment: int | None = None,
    fall_back_to_stock: bool | None = None,
    copy_free_concat: bool | None = None,
) -> tvm.transform.Pass:
    """Plan the memory of every Relax function: tensors of one device and storage scope share
    one storage at offsets, over lifetimes that span the whole function. Runs where TVM's
    planner runs (after ``CallTIRRewrite``) and takes its place. An option left at None takes
    its default from ``MemoryPlanOptions``.

    Parameters
    ----------
    alignment
        Every offset is a multiple of this many bytes (a multiple of 64, the runtime's
        allocation alignment). Default 64.
    fall_back_to_stock
        Plan a function as TVM's StaticPlanBlockMemory does when that takes fewer bytes.
        Default True.
    copy_free_concat
        Place the inputs of a concatenation at their slices of its output where that is safe,
        so that the concatenation copies nothing. Default True.
    """
    options = memory_plan_options(
        alignment=alignment,
        fall_back_to_stock=fall_back_to_stock,
        copy_free_concat=copy_free_concat,
    )
    return _ffi_api.StaticPlanBlockMemory(options)


def memory_plan_options(**given) -> MemoryPlanOptions:
    """The options object, with the given values (None: the default of the C++ declaration)."""
    if given.get("alignment") is not None:
        _check_int("alignment", given["alignment"])
    values = {name: value for name, value in given.items() if value is not None}
    for name in ("fall_back_to_stock", "copy_free_concat"):
        if name in values:
            values[name] = bool(values[name])
    return MemoryPlanOptions(**values)


def _check_int(name: str, value) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
