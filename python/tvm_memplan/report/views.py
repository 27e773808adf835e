"""What both renderers show in the same order: kernels grouped by what they compute, tensors,
buffers and concatenations largest first (with what would make a copying concatenation
copy-free), and each failure next to the rows it concerns."""

from __future__ import annotations

from dataclasses import dataclass

from ..analysis.codes import codes
from . import sizes
from .model import Failure, Kernel, Report
from .needs import placement_of

__all__ = [
    "optimality_of",
    "optimality_text",
    "ConcatRow",
    "Group",
    "tensor_bytes",
    "at_values",
    "plan_bytes",
    "TensorRow",
    "compaction_totals",
    "concat_call",
    "concat_rows",
    "concats_of",
    "lift",
    "kernel_bytes",
    "kernel_groups",
    "largest_tensors",
    "placement_totals",
    "section_failures",
]

#: Which failures concern which part of the report.
SECTIONS = {
    "relax": (
        "inplace.memplan.before_legalization",
        "inplace.memplan.after_scheduling",
        "pipeline.memplan",
        "plan.memplan",
        "pipeline.stock",
        "plan.stock",
        "plan.formulas",
    ),
    "inplace": (
        "inplace.memplan.before_legalization",
        "inplace.memplan.after_scheduling",
        "inplace.stock",
        "pipeline.none",
        "plan.none",
    ),
    "compaction": ("compile.memplan", "compaction.memplan", "compaction.stock"),
    "placement": ("compile.memplan", "compile.stock", "placement.memplan", "placement.stock"),
}


def optimality_of(plan) -> tuple[str | None, int | None]:
    """How optimal a plan is, where the planner says: ``FunctionMemoryPlan.optimality``
    ("at_bound", "proven_minimum" or "best_found") and the gap to the bound in bytes; (None,
    None) from a planner whose records have no such fields. The one place they are read."""
    code = getattr(plan, "optimality", None) if plan is not None else None
    gap = getattr(plan, "optimality_gap_bytes", None) if plan is not None else None
    return (None if code is None else str(code)), (None if gap is None else int(gap))


def optimality_text(plan) -> str | None:
    """``optimality_of`` as the renderers show it: "at_bound", "best_found (+64 B)"; None
    from a planner that does not say."""
    code, gap = optimality_of(plan)
    if code is None:
        return None
    return f"{code} (+{gap} B)" if gap else code


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


def _number(value) -> int | None:
    return value if isinstance(value, int) else None


def compaction_totals(report: Report) -> dict[str, int | None]:
    """Bytes of every allocated buffer: as scheduled, after TVM's compaction, after ours (at
    the summary's shape values; None where symbolic without values)."""
    buffers = [b for k in report.kernels for b in k.buffers]
    return {
        "original": _sum(
            _number(at_values(report, b.region.original_bytes, b.region.original_size))
            for b in buffers
        ),
        "stock": _sum(_number(at_values(report, b.stock_bytes, b.stock_size)) for b in buffers),
        "memplan": _sum(
            _number(at_values(report, b.region.compacted_bytes, b.region.compacted_size))
            for b in buffers
        ),
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
            nbytes = _sum(_number(at_values(report, d.nbytes, d.size)) for d in decisions)
            totals[build][where] = (len(decisions), nbytes)
    return totals


def at_values(report: Report, nbytes: int | None, size) -> int | str | None:
    """A buffer's bytes: exact when static, else at the summary's shape values, else the
    expression."""
    if nbytes is not None:
        return int(nbytes)
    value = sizes.evaluate(size, report.summary.evaluated_at)
    if value is not None:
        return value
    return None if size is None else sizes.text(size)


def plan_bytes(f, which: str) -> int | str | None:
    """A Relax function's plan bytes, as the plan records give them: at the summary's values
    where symbolic (``plan_at``), else the expression. ``which``: "memplan" (what the pass
    allocates), "planned" (tvm-memplan's planner), "stock" (TVM's planner on the same IR),
    "stock_build" (the stock build)."""
    if which == "stock_build":
        plan, evaluated, which = f.stock_build, f.stock_build_at, "stock"
    else:
        plan, evaluated = f.plan, f.plan_at
    if plan is None:
        return None
    if evaluated is not None:
        value = evaluated.bytes_of(which)
        return value if value >= 0 else None
    size = plan.size_of(which)
    if size is not None and sizes.free_vars(size):
        return sizes.text(size)  # the record's bytes leave the symbolic part out
    value = plan.bytes_of(which)
    return value if value >= 0 else None


def tensor_bytes(tensor) -> int | str:
    """A planned tensor's bytes, or its size as an expression where it has no value."""
    nbytes = int(tensor.bytes)
    if nbytes >= 0:
        return nbytes
    return sizes.text(tensor.size) if tensor.size is not None else "-"


# ---- concatenations ------------------------------------------------------------------------------


def lift(decision: str) -> str:
    """What would make a concatenation that keeps its copy copy-free ("" when unknown): the
    remedy of its decision code in the C++ table (``analysis.codes("concat")``)."""
    code = codes("concat").get(str(decision))
    return code.remedy if code is not None else ""


@dataclass
class ConcatRow:
    """One concatenation of the memplan build's plan, with names users recognise."""

    function: str
    #: Its position in ``FunctionMemoryPlan.concats``.
    index: int
    record: object  # analysis.Concatenation
    #: The output's bytes (None when it is not a tensor of the plan).
    bytes: int | None
    #: The model's binding that made the output (None when unknown).
    made_by: object | None
    #: Per input: the model's binding that made it (None when unknown).
    inputs: list


def _tensor_index(plan) -> dict[str, int]:
    return {str(t.binding): i for i, t in enumerate(plan.tensors)}


def concat_rows(report: Report) -> list[ConcatRow]:
    """Every concatenation of the memplan build's plans, largest output first."""
    rows = []
    for f in report.relax:
        if f.plan is None:
            continue
        index = _tensor_index(f.plan)

        def first_writer(name: str, f=f, index=index):
            i = index.get(name)
            writers = f.writers[i] if i is not None and i < len(f.writers) else []
            return writers[0] if writers else None

        for k, c in enumerate(f.plan.concats):
            i = index.get(str(c.output))
            nbytes = int(f.plan.tensors[i].bytes) if i is not None else None
            rows.append(
                ConcatRow(
                    f.function,
                    k,
                    c,
                    nbytes if nbytes is None or nbytes >= 0 else None,
                    first_writer(str(c.output)),
                    [first_writer(str(name)) for name in c.inputs],
                )
            )
    return sorted(rows, key=lambda r: (-(r.bytes or 0), r.function, r.index))


def concats_of(plan, binding: str) -> list[tuple[object, str]]:
    """The concatenations of ``plan`` a tensor takes part in, each with its part: "output" or
    "input"."""
    found = []
    for c in plan.concats:
        if str(c.output) == binding:
            found.append((c, "output"))
        elif binding in [str(i) for i in c.inputs]:
            found.append((c, "input"))
    return found


def concat_call(c) -> str:
    """``alloc8 = concatenate1(alloc, alloc3, alloc7)``; a fused kernel's inputs it computes
    from follow: ``alloc8 = fused_resize2d_concatenate(alloc4; computed from alloc7)``."""
    computed = [str(i) for i in c.computed_from]
    tail = f"; computed from {', '.join(computed)}" if computed else ""
    return f"{c.output} = {c.callee}({', '.join(str(i) for i in c.inputs)}{tail})"
