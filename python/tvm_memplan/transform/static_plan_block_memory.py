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
    (``src_cpp/relax/memory_plan_analysis.h``)."""


def StaticPlanBlockMemory(
    *, alignment: int = 64, fall_back_to_stock: bool = True
) -> tvm.transform.Pass:
    """Plan the memory of every Relax function: tensors of one device and storage scope share
    one storage at offsets, over lifetimes that span the whole function. Runs where TVM's
    planner runs (after ``CallTIRRewrite``) and takes its place.

    Parameters
    ----------
    alignment
        Every offset is a multiple of this many bytes (a multiple of 64, the runtime's
        allocation alignment).
    fall_back_to_stock
        Plan a function as TVM's StaticPlanBlockMemory does when that takes fewer bytes.
    """
    _check_int("alignment", alignment)
    options = MemoryPlanOptions(alignment=alignment, fall_back_to_stock=bool(fall_back_to_stock))
    return _ffi_api.StaticPlanBlockMemory(options)


def _check_int(name: str, value) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
