"""Analyses of the C++ core, returning plain Python records."""

from __future__ import annotations

from dataclasses import dataclass

import tvm

from ..transform.dataflow_use_inplace_calls import InplaceOptions
from . import _ffi_api
from ._records import check_tir, shape_of
from .allocation_plan import AllocationDecision, allocation_plan, placement_counts
from .memory_plan import FunctionMemoryPlan, PlannedTensor, StorageAllocation, memory_plan
from .planned_storage import PlannedStorage, planned_storage, storage_after_planning

__all__ = [
    "Allocation",
    "AllocationDecision",
    "CompactedRegion",
    "FunctionMemoryPlan",
    "InplaceCandidate",
    "PlannedStorage",
    "PlannedTensor",
    "StorageAllocation",
    "allocation_plan",
    "allocation_summary",
    "compacted_regions",
    "inplace_candidates",
    "memory_plan",
    "placement_counts",
    "planned_storage",
    "storage_after_planning",
    "total_bytes",
]


@dataclass(frozen=True)
class Allocation:
    """One buffer definition in a PrimFunc.

    ``kind`` is ``"block_alloc_buffer"`` (an SBlock's ``alloc_buffers``), ``"alloc_buffer"``
    (a flat ``T.alloc_buffer``) or ``"decl_buffer"`` (a declaration; ``view_of`` names the
    buffer whose memory it views, when it is one). ``shape`` holds ints where the extent is a
    constant and TIR expressions where it is symbolic; ``size_bytes`` is None when symbolic.
    """

    function: str | None
    name: str
    kind: str
    shape: tuple
    dtype: str
    scope: str
    size_bytes: int | None
    view_of: str | None = None
    block: str | None = None

    @property
    def allocates(self) -> bool:
        """Whether this definition takes memory of its own (views do not)."""
        return self.kind != "decl_buffer"


def allocation_summary(func_or_mod) -> list[Allocation]:
    """Every buffer a PrimFunc (or each PrimFunc of a module) defines, in definition order."""
    check_tir(func_or_mod, "allocation_summary")
    return [
        Allocation(
            function=str(r["function"]) or None,
            name=str(r["name"]),
            kind=str(r["kind"]),
            shape=shape_of(r["shape"]),
            dtype=str(r["dtype"]),
            scope=str(r["scope"]),
            size_bytes=None if r["size_bytes"] is None else int(r["size_bytes"]),
            view_of=None if r["view_of"] is None else str(r["view_of"]),
            block=None if r["block"] is None else str(r["block"]),
        )
        for r in _ffi_api.allocation_summary(func_or_mod)
    ]


def total_bytes(allocations: list[Allocation]) -> int | None:
    """Bytes allocated by the summary (views excluded); None if any allocation is symbolic."""
    sizes = [a.size_bytes for a in allocations if a.allocates]
    return None if any(s is None for s in sizes) else sum(sizes)


@dataclass(frozen=True)
class InplaceCandidate:
    """The in-place decision for one binding whose value is a call.

    ``inplace`` tells whether DataflowUseInplaceCalls rewrites it; then ``arg_index`` and
    ``arg`` name the argument whose storage receives the result. ``reason`` says why, or why
    not (the first refusal of each candidate argument).
    """

    binding: str
    op: str | None
    dataflow: bool
    inplace: bool
    arg_index: int | None
    arg: str | None
    reason: str


def inplace_candidates(
    func,
    mod: tvm.IRModule | None = None,
    *,
    outside_dataflow: bool = True,
    memory_aware: bool = True,
    planner: str = "stock",
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
    options = InplaceOptions(
        outside_dataflow=outside_dataflow, memory_aware=memory_aware, planner=planner
    )
    return [
        InplaceCandidate(
            binding=str(r["binding"]),
            op=str(r["op"]) or None,
            dataflow=bool(r["dataflow"]),
            inplace=bool(r["inplace"]),
            arg_index=None if r["arg_index"] is None else int(r["arg_index"]),
            arg=None if r["arg"] is None else str(r["arg"]),
            reason=str(r["reason"]),
        )
        for r in _ffi_api.inplace_candidates(func, mod, options)
    ]


@dataclass(frozen=True)
class CompactedRegion:
    """What CompactBufferAllocation does to one allocated buffer.

    ``shape`` is the compacted shape and ``offset`` what is subtracted from each index (both
    equal the original shape and zeros when the buffer stays as it is, and ``reason`` says
    why). ``strides`` come from ``buffer_dim_align`` annotations (empty: row-major).
    ``views`` names the ``decl_buffer`` views compacted with the buffer; ``notes`` lists
    dimensions that keep their original extent although others compact.
    """

    name: str
    kind: str
    dtype: str
    original_shape: tuple
    shape: tuple
    offset: tuple
    original_strides: tuple = ()
    strides: tuple = ()
    views: tuple = ()
    reason: str | None = None
    notes: tuple = ()

    @property
    def compacted(self) -> bool:
        return self.reason is None

    @property
    def original_bytes(self) -> int | None:
        """Bytes of the allocation as it is (None when its shape is symbolic)."""
        return _allocated_bytes(self.original_shape, self.original_strides, self.dtype)

    @property
    def compacted_bytes(self) -> int | None:
        """Bytes after compaction (None when the compacted shape is symbolic)."""
        return _allocated_bytes(self.shape, self.strides, self.dtype)


def _allocated_bytes(shape: tuple, strides: tuple, dtype: str) -> int | None:
    values = (*shape, *strides)
    if not all(isinstance(v, int) for v in values):
        return None
    if strides:
        elements = (
            0 if 0 in shape else 1 + sum((n - 1) * s for n, s in zip(shape, strides, strict=True))
        )
    else:
        elements = 1
        for n in shape:
            elements *= n
    dt = tvm.DataType(dtype)
    return (elements * dt.bits * dt.lanes + 7) // 8


def compacted_regions(func: tvm.tirx.PrimFunc, is_strict: bool = True) -> list[CompactedRegion]:
    """The region analysis of CompactBufferAllocation, one record per allocated buffer."""
    if not isinstance(func, tvm.tirx.PrimFunc):
        raise TypeError(f"compacted_regions expects a tvm.tirx.PrimFunc, got {type(func).__name__}")
    return [
        CompactedRegion(
            name=str(r["name"]),
            kind=str(r["kind"]),
            dtype=str(r["dtype"]),
            original_shape=shape_of(r["original_shape"]),
            shape=shape_of(r["shape"]),
            offset=shape_of(r["offset"]),
            original_strides=shape_of(r["original_strides"]),
            strides=shape_of(r["strides"]),
            views=tuple(str(v) for v in r["views"]),
            reason=None if r["reason"] is None else str(r["reason"]),
            notes=tuple(str(n) for n in r["notes"]),
        )
        for r in _ffi_api.compacted_regions(func, bool(is_strict))
    ]
