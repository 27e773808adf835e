"""The report's data: plain dataclasses that the text, JSON and HTML renderers and the fit check
all read, so a figure cannot differ between them. ``Report.to_json()`` is what ``--json``
prints."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "CompactedBuffer",
    "Compaction",
    "FitBudget",
    "FitContributor",
    "FitResult",
    "FunctionMemory",
    "FunctionSummary",
    "Inplace",
    "InplaceBinding",
    "PlacedAllocation",
    "Placement",
    "Report",
    "StorageRecord",
    "TensorRecord",
]


@dataclass(frozen=True)
class CompactedBuffer:
    """One allocated buffer of a PrimFunc: bytes as scheduled, after TVM's compaction, after
    ours (None where symbolic), and why ours keeps it whole."""

    function: str
    buffer: str
    dtype: str
    shape: list
    compacted_shape: list
    original_bytes: int | None
    stock_bytes: int | None
    ours_bytes: int | None
    reason: str | None


@dataclass
class Compaction:
    buffers: list[CompactedBuffer]
    #: original_bytes, stock_bytes, ours_bytes over all buffers (None where symbolic).
    totals: dict[str, int | None]


@dataclass(frozen=True)
class PlacedAllocation:
    """One allocation of host code: stack or workspace under TVM's rule and under ours."""

    function: str
    buffer: str
    scope: str
    bytes: int | None
    stock: str
    ours: str
    reason: str


@dataclass
class Placement:
    allocations: list[PlacedAllocation]
    #: "stock_stack", "ours_workspace", ...: {"count": n, "bytes": b or None}.
    totals: dict[str, dict[str, int | None]]


@dataclass(frozen=True)
class InplaceBinding:
    function: str
    binding: str
    op: str | None
    inplace: bool
    arg: str | None
    reason: str


@dataclass
class Inplace:
    """In-place calls and the VM bytes of whole Relax builds."""

    #: "stock" (None when TVM's pass cannot run) and "ours".
    conversions: dict[str, int | None]
    #: VM bytes after planning: "none" (no in-place pass, TVM's planner), "stock" (TVM's
    #: in-place pass and planner), "ours" (ours, as the memplan pipeline runs them) and "bound"
    #: (the peak-live bound of that IR); None where symbolic.
    planned_bytes: dict[str, int | None]
    bindings: list[InplaceBinding]
    notes: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class TensorRecord:
    """One tensor of a Relax function on the memory timeline (see analysis.PlannedTensor)."""

    binding: str
    op: str
    shape: list
    dtype: str
    bytes: int
    first: int
    last: int
    #: Our storage and offset (-1: not planned, `reason` says why).
    storage: int
    offset: int
    #: TVM's planner on the same IR: its storage (-1: not planned); its offsets are 0.
    stock_storage: int
    reason: str


@dataclass(frozen=True)
class StorageRecord:
    bytes: int
    size: str
    device: int
    scope: str


@dataclass
class FunctionMemory:
    """The memory plan of one Relax function, on the IR our planner receives in the memplan
    pipeline, with TVM's planner on the same IR."""

    function: str
    planner: str
    reason: str
    num_points: int
    bound_bytes: int
    #: TVM's planner on the same IR (None: unknown).
    stock_bytes: int | None
    #: What our pass allocates for it.
    ours_bytes: int
    #: TVM's in-place pass and planner on the function as given (the stock build).
    stock_build_bytes: int | None
    tensors: list[TensorRecord]
    storages: list[StorageRecord]
    stock_storages: list[StorageRecord]
    #: Bytes of static-size tensors live at each program point.
    live_bytes: list[int]


@dataclass(frozen=True)
class FunctionSummary:
    """One function's line in the summary: stock build against memplan build."""

    function: str
    kind: str  # "relax" or "tir"
    #: Relax: VM bytes (stock build, memplan build, the bound of the memplan IR).
    vm_stock: int | None = None
    vm_ours: int | None = None
    vm_bound: int | None = None
    #: TIR: bytes after compaction, on the stack and in the workspace.
    compacted_stock: int | None = None
    compacted_ours: int | None = None
    stack_stock: int | None = None
    stack_ours: int | None = None
    workspace_stock: int | None = None
    workspace_ours: int | None = None


@dataclass(frozen=True)
class FitContributor:
    name: str
    function: str
    bytes: int
    #: What a memplan pass does to it, or why none can shrink it.
    note: str
    shrinkable: bool


@dataclass(frozen=True)
class FitBudget:
    """One budget of `--fit` against the memplan build."""

    name: str  # "vm", "stack" or "workspace"
    budget: int
    #: The build's figure (None: unknown, symbolic sizes).
    figure: int | None
    fits: bool
    #: What the figure is ("VM bytes of all Relax functions", ...).
    meaning: str
    contributors: list[FitContributor]


@dataclass
class FitResult:
    fits: bool
    budgets: list[FitBudget]


@dataclass
class Report:
    input: str
    target: str
    compaction: Compaction
    placement: Placement
    #: None for a module without Relax functions.
    inplace: Inplace | None
    memory: list[FunctionMemory]
    summary: list[FunctionSummary]
    seconds: float | None = None
    fit: FitResult | None = None

    def to_json(self) -> dict[str, Any]:
        """Plain data, as `--json` prints it."""
        return dataclasses.asdict(self)
