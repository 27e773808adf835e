"""What both renderers show in the same order: kernels grouped by what they compute, tensors
and buffers largest first, and each failure next to the rows it concerns."""

from __future__ import annotations

from dataclasses import dataclass

from .model import Failure, Kernel, Report
from .needs import placement_of

__all__ = [
    "Group",
    "TensorRow",
    "compaction_totals",
    "kernel_bytes",
    "kernel_groups",
    "largest_tensors",
    "placement_totals",
    "section_failures",
]

#: Which failures concern which part of the report.
SECTIONS = {
    "relax": (
        "inplace.memplan",
        "pipeline.memplan",
        "plan.memplan",
        "pipeline.stock",
        "plan.stock",
    ),
    "inplace": ("inplace.memplan", "inplace.stock", "pipeline.none", "plan.none"),
    "compaction": ("compile.memplan", "compaction.memplan", "compaction.stock"),
    "placement": ("compile.memplan", "compile.stock", "placement.memplan", "placement.stock"),
}


def section_failures(report: Report, section: str) -> list[Failure]:
    return [f for f in report.failures if f.stage in SECTIONS[section]]


def kernel_bytes(kernel: Kernel) -> int:
    """How large a kernel is, for ordering: its workspace and stack in either build, else what
    its buffers take before compaction."""
    figures = [
        v for table in (kernel.workspace, kernel.stack) for v in table.values() if v is not None
    ]
    placed = max(
        ((kernel.workspace.get(b) or 0) + (kernel.stack.get(b) or 0) for b in ("stock", "memplan")),
        default=0,
    )
    if figures:
        return placed
    return sum(b.region.original_bytes or 0 for b in kernel.buffers)


@dataclass
class Group:
    """Kernels that compute the same kind of op (all depthwise 3x3 convolutions, ...)."""

    kind: str
    kernels: list[Kernel]

    @property
    def bytes(self) -> int:
        return max((kernel_bytes(k) for k in self.kernels), default=0)


def kernel_groups(report: Report) -> list[Group]:
    """Kernels grouped by kind, each group largest kernel first, groups by their largest."""
    groups: dict[str, list[Kernel]] = {}
    for k in report.kernels:
        groups.setdefault(k.kind or "other PrimFuncs", []).append(k)
    result = [
        Group(kind, sorted(items, key=lambda k: (-kernel_bytes(k), k.name)))
        for kind, items in groups.items()
    ]
    return sorted(result, key=lambda g: (-g.bytes, g.kind))


@dataclass
class TensorRow:
    function: str
    index: int
    tensor: object  # analysis.PlannedTensor
    writers: list


def largest_tensors(report: Report) -> list[TensorRow]:
    """Every tensor of every Relax function's memplan plan, largest first."""
    rows = []
    for f in report.relax:
        plan = f.plan_at or f.plan
        if plan is None:
            continue
        for i, t in enumerate(plan.tensors):
            rows.append(TensorRow(f.function, i, t, f.writers[i] if i < len(f.writers) else []))
    return sorted(rows, key=lambda r: (-int(r.tensor.bytes), r.function, int(r.tensor.first)))


def _sum(values) -> int | None:
    values = list(values)
    return None if any(v is None for v in values) else sum(values)


def compaction_totals(report: Report) -> dict[str, int | None]:
    """Bytes of every allocated buffer: as scheduled, after TVM's compaction, after ours."""
    buffers = [b for k in report.kernels for b in k.buffers]
    return {
        "original": _sum(b.region.original_bytes for b in buffers),
        "stock": _sum(b.stock_bytes for b in buffers),
        "memplan": _sum(b.region.compacted_bytes for b in buffers),
    }


def placement_totals(report: Report) -> dict[str, dict[str, tuple[int, int | None]]]:
    """Per build, per placement: (allocations, bytes)."""
    totals: dict[str, dict[str, tuple[int, int | None]]] = {}
    for build in ("stock", "memplan"):
        totals[build] = {}
        for where in ("stack", "workspace"):
            decisions = [
                d
                for k in report.kernels
                for d in (k.placement if build == "memplan" else k.stock_placement)
                if placement_of(d, build) == where
            ]
            nbytes = _sum(None if d.nbytes is None else int(d.nbytes) for d in decisions)
            totals[build][where] = (len(decisions), nbytes)
    return totals
