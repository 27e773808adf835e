"""Analyses of the C++ core. Their records are reflected C++ objects: each record type is
declared once, in C++, and Python reads its fields, docs and types from there."""

from __future__ import annotations

import tvm
import tvm_ffi

from .._options import takes_options
from ..transform.compact_buffer_allocation import CompactionOptions
from ..transform.dataflow_use_inplace_calls import InplaceOptions
from . import _ffi_api
from ._helpers import check_tir, count_calls, element_bytes
from .allocation_plan import AllocationDecision, allocation_plan, placement_counts
from .codes import Code, code_families, codes
from .held_memory import (
    POOL_PAGE,
    HeldByPlan,
    MLCKVCache,
    PoolRecord,
    held_by_plan,
    held_by_records,
    held_by_sizes,
    pool_size,
    recorded_pool,
)
from .memory_plan import (
    FunctionMemoryPlan,
    PlannedTensor,
    RevertedInplaceWrite,
    StorageAllocation,
    memory_plan,
    memory_plan_at,
    planner_input,
    unsafe_inplace_writes,
)
from .packing import (
    DoesNotFitError,
    Packing,
    SearchDefaults,
    optimality_codes,
    pack_offsets,
    search_config,
    search_defaults,
)
from .planned_storage import PlannedStorage, planned_storage, storage_after_planning

__all__ = [
    "POOL_PAGE",
    "Allocation",
    "AllocationDecision",
    "Code",
    "CompactedRegion",
    "DoesNotFitError",
    "FunctionMemoryPlan",
    "HeldByPlan",
    "InplaceCandidate",
    "MLCKVCache",
    "Packing",
    "PlannedStorage",
    "PlannedTensor",
    "PoolRecord",
    "RevertedInplaceWrite",
    "SearchDefaults",
    "StorageAllocation",
    "allocation_plan",
    "allocation_summary",
    "code_families",
    "codes",
    "compacted_regions",
    "count_calls",
    "element_bytes",
    "held_by_plan",
    "held_by_records",
    "held_by_sizes",
    "inplace_candidates",
    "memory_plan",
    "memory_plan_at",
    "optimality_codes",
    "pack_offsets",
    "placement_counts",
    "planned_storage",
    "planner_input",
    "pool_size",
    "prim_func_inplace_refusal",
    "recorded_pool",
    "search_config",
    "search_defaults",
    "storage_after_planning",
    "total_bytes",
    "unsafe_inplace_writes",
]


@tvm_ffi.register_object("tvm_memplan.tir.Allocation")
class Allocation(tvm_ffi.Object):
    """One buffer definition in a PrimFunc (fields and docs from ``src_cpp/tir/
    allocation_summary.h``): ``kind`` is ``"block_alloc_buffer"``, ``"alloc_buffer"`` or
    ``"decl_buffer"`` (``view_of`` names the buffer a view's data is); ``size_bytes`` is None
    when symbolic."""

    @property
    def allocates(self) -> bool:
        """Whether this definition takes memory of its own (views do not)."""
        return self.kind != "decl_buffer"


def allocation_summary(func_or_mod) -> list[Allocation]:
    """Every buffer a PrimFunc (or each PrimFunc of a module) defines, in definition order."""
    check_tir(func_or_mod, "allocation_summary")
    return list(_ffi_api.allocation_summary(func_or_mod))


def total_bytes(allocations: list[Allocation]) -> int | None:
    """Bytes allocated by the summary (views excluded); None if any allocation is symbolic."""
    sizes = [a.size_bytes for a in allocations if a.allocates]
    return None if any(s is None for s in sizes) else sum(sizes)


@tvm_ffi.register_object("tvm_memplan.relax.InplaceCandidate")
class InplaceCandidate(tvm_ffi.Object):
    """The in-place decision for one binding whose value is a call (fields and docs from
    ``src_cpp/relax/inplace_records.h``): ``inplace`` tells whether DataflowUseInplaceCalls
    rewrites it, ``arg_index`` and ``arg`` which argument receives the result, ``reason``
    why, or why not."""


@takes_options(InplaceOptions)
def inplace_candidates(
    func, mod: tvm.IRModule | None = None, options=None
) -> list[InplaceCandidate]:
    """In-place decisions for every call binding of a Relax function, in program order.

    ``mod`` is the module holding ``func``: with it, calls of PrimFuncs and of other Relax
    functions are judged precisely; without it, conservatively.
    """
    if not isinstance(func, tvm.relax.Function):
        raise TypeError(
            f"inplace_candidates expects a tvm.relax.Function, got {type(func).__name__}"
        )
    if mod is not None and not isinstance(mod, tvm.IRModule):
        raise TypeError(f"mod must be a tvm.IRModule, got {type(mod).__name__}")
    return list(_ffi_api.inplace_candidates(func, mod, options))


def prim_func_inplace_refusal(func: tvm.tirx.PrimFunc, inputs: int | list[int]) -> str | None:
    """The access proof of DataflowUseInplaceCalls alone: None when ``func`` may write its
    output (its last parameter) into the memory of parameters ``inputs`` (one tensor passed as
    each of them), else why not (``src_cpp/relax/inplace_prim_func.h`` states the rule)."""
    if not isinstance(func, tvm.tirx.PrimFunc):
        raise TypeError(
            f"prim_func_inplace_refusal expects a tvm.tirx.PrimFunc, got {type(func).__name__}"
        )
    indices = [inputs] if isinstance(inputs, int) else list(inputs)
    if not indices or not all(isinstance(i, int) for i in indices):
        raise TypeError(f"inputs must be a parameter index or a list of them, got {inputs!r}")
    refusal = _ffi_api.prim_func_inplace_refusal(func, indices)
    return None if refusal is None else str(refusal)


@tvm_ffi.register_object("tvm_memplan.tir.CompactedRegion")
class CompactedRegion(tvm_ffi.Object):
    """What CompactBufferAllocation does to one allocated buffer (fields and docs from
    ``src_cpp/tir/compact_buffers_records.h``): ``shape`` is the compacted shape and ``offset``
    what is subtracted from each index (the original shape and zeros when the buffer stays, and
    ``reason`` says why); bytes before and after are counted as everywhere else
    (``ir::AllocatedBytes``)."""

    @property
    def compacted(self) -> bool:
        return self.reason is None


@takes_options(CompactionOptions, positional=True)
def compacted_regions(func: tvm.tirx.PrimFunc, options) -> list[CompactedRegion]:
    """The region analysis of CompactBufferAllocation, one record per allocated buffer."""
    if not isinstance(func, tvm.tirx.PrimFunc):
        raise TypeError(f"compacted_regions expects a tvm.tirx.PrimFunc, got {type(func).__name__}")
    return list(_ffi_api.compacted_regions(func, options))
