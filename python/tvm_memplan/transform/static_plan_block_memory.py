"""tvm-memplan's StaticPlanBlockMemory: a drop-in for ``tvm.relax.transform.StaticPlanBlockMemory``
that packs tensors at offsets of one storage (see docs/passes/static_plan_block_memory.md)."""

from __future__ import annotations

import tvm
import tvm_ffi

from .. import _lib  # noqa: F401  (registers the options type before it is bound below)
from .._options import takes_options
from . import _ffi_api


@tvm_ffi.register_object("tvm_memplan.relax.MemoryPlanOptions")
class MemoryPlanOptions(tvm_ffi.Object):
    """Options of StaticPlanBlockMemory, declared once in the C++ core
    (``src_cpp/relax/memory_plan_records.h``): names, docs and defaults."""


@takes_options(MemoryPlanOptions)
def StaticPlanBlockMemory(options) -> tvm.transform.Pass:
    """Plan the memory of every Relax function: tensors of one device and storage scope share
    one storage at offsets, over lifetimes that span the whole function. Runs where TVM's
    planner runs (after ``CallTIRRewrite``) and takes its place.
    """
    return _ffi_api.StaticPlanBlockMemory(options)
