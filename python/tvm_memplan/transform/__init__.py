"""Passes of the C++ core, as ordinary ``tvm.transform.Pass`` objects."""

from .compact_buffer_allocation import CompactBufferAllocation
from .dataflow_use_inplace_calls import (
    DataflowUseInplaceCalls,
    InplaceOptions,
    InplaceStats,
    LegalizeOpsAfterInplaceCalls,
    use_inplace_calls,
)
from .guard_inplace_writes import GuardInplaceWrites
from .lower_tvm_builtin import LowerTVMBuiltin
from .static_plan_block_memory import MemoryPlanOptions, StaticPlanBlockMemory
from .tag_allocation_placement import TagAllocationPlacement
from .vectorize_inplace_loops import VectorizeInplaceLoops

__all__ = [
    "CompactBufferAllocation",
    "DataflowUseInplaceCalls",
    "GuardInplaceWrites",
    "InplaceOptions",
    "InplaceStats",
    "LegalizeOpsAfterInplaceCalls",
    "LowerTVMBuiltin",
    "MemoryPlanOptions",
    "StaticPlanBlockMemory",
    "TagAllocationPlacement",
    "VectorizeInplaceLoops",
    "use_inplace_calls",
]
