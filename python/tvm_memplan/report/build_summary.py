"""What one build of a tool did to memory, in a line: the figures ``tvm-memplan run`` prints at exit
for every ``tvm.compile`` / ``relax.build`` / ``tirx.build`` call, read off the planner's records
of the IR our planner received in that build (``FunctionMemoryPlan``: ours and TVM's planner on
the same IR, the peak-live bound, concatenations, how optimal) and of what our in-place runs
changed.

    summary = summarize_build(1, "tvm.compile", traced, target)
    summary_line(summary)
    # build 1 (tvm.compile, llvm): 10 Relax functions, 9 planned by tvm-memplan; VM planned
    # 196608 B (largest: prefill), TVM's planner 245760 B on the same IR (0.800), ...; pooled
    # allocator holds 200704 B once every function has run, with TVM's planner 262144 B ...
"""

from __future__ import annotations

from dataclasses import dataclass, field

import tvm

from .. import analysis
from ..instrument import PassTrace
from . import needs, sizes
from .format import ratio
from .load import one_line
from .trace_builds import INPLACE_RUNS, OUR_PLANNER, RECORDED_PASSES
from .views import optimality_of

__all__ = ["BuildSummary", "summarize_build", "summary_line"]


@dataclass
class BuildSummary:
    """The figures of one build, as its summary line shows them."""

    #: 1 for the tool's first build, ...
    index: int
    #: The call that built: "tvm.compile", "relax.build" or "tirx.build".
    entry: str
    target: str
    #: Relax functions planned by tvm-memplan's planner (0: it did not run in this build).
    functions: int = 0
    #: The function whose figures the line shows (the largest; None when functions call each
    #: other: then the figures are their sum).
    largest: str | None = None
    #: What the VM allocates with our plan (the plan the pass applies), TVM's planner on the
    #: same IR, and the peak-live bound: ints at the bounds, or expressions of the shape
    #: variables without one.
    planned: int | str | None = None
    stock_same_ir: int | str | None = None
    bound: int | str | None = None
    #: What TVM's pooled allocator holds once every function has run
    #: (analysis.held_by_records), with our plan and with TVM's planner on the same IR.
    held: int | None = None
    stock_held: int | None = None
    #: Calls our in-place runs made in place (None: none ran).
    inplace: int | None = None
    concats: int = 0
    copy_free: int = 0
    #: Functions per optimality code, and the largest gap to the bound ({} and None from a
    #: planner that does not say).
    optimality: dict[str, int] = field(default_factory=dict)
    gap: int | None = None
    #: Shape variables without a bound that planned sizes depend on: what depends on them is
    #: not in the figures (as MLC-LLM's estimate leaves it out).
    unbounded: list[str] = field(default_factory=list)
    #: Why there is nothing to say ("" when there is).
    note: str = ""


def _figure(plan, build: str):
    """The plan's bytes in ``build`` at its bounds (what depends on a variable without one is not
    in it, as the record counts), or its expression when it has no such figure."""
    value = plan.bytes_of(build)
    return value if value >= 0 else sizes.simplify(plan.size_of(build))


def summarize_build(
    index: int,
    entry: str,
    traced: PassTrace,
    target: tvm.target.Target | None,
    mod: tvm.IRModule | None = None,
) -> BuildSummary:
    """The summary of one traced build (``traced`` watched ``compile.RECORDED_PASSES``) of
    ``mod``."""
    name = target.kind.name if target is not None else "current target"
    summary = BuildSummary(index, entry, name)
    if traced.error is not None:
        summary.note = f"failed: {one_line(traced.error)}"
        return summary
    planner_input = traced.before.get(OUR_PLANNER)
    if planner_input is None:
        functions = [] if mod is None else list(mod.functions.values())
        if not any(isinstance(f, tvm.relax.Function) for f in functions):
            prim_funcs = sum(isinstance(f, tvm.tirx.PrimFunc) for f in functions)
            ran = all(name in traced.before for name in RECORDED_PASSES[-2:])
            summary.note = (
                f"a TIR-only build ({prim_funcs} PrimFuncs): no Relax function to plan; "
                + (
                    "tvm-memplan's compaction and placement ran in its TIR pipeline"
                    if ran
                    else "its TIR pipeline builds none of the passes ours replace"
                )
            )
        else:
            summary.note = (
                "tvm-memplan's planner did not run in this build (no Relax pipeline, or one "
                "without StaticPlanBlockMemory)"
            )
        return summary
    plans = analysis.memory_plan(planner_input, target or "llvm", pipeline=None)
    summary.functions = len(plans)
    calls_each_other = any(needs.calls_other_relax(planner_input, str(p.function)) for p in plans)
    planned = [_figure(p, "memplan") for p in plans]
    summary.planned = needs.vm_peak(planned, calls_each_other)
    summary.stock_same_ir = needs.vm_peak([_figure(p, "stock") for p in plans], calls_each_other)
    summary.bound = needs.vm_peak([int(p.peak_live_bytes) for p in plans], calls_each_other)
    if plans and not calls_each_other and all(isinstance(v, int) for v in planned):
        summary.largest = str(plans[planned.index(max(planned))].function)
    summary.held = analysis.held_by_records(plans, "memplan").held_bytes
    summary.stock_held = analysis.held_by_records(plans, "stock").held_bytes
    for figure in ("planned", "stock_same_ir", "bound"):
        value = getattr(summary, figure)
        if value is not None and not isinstance(value, int):
            setattr(summary, figure, sizes.text(value))
    runs = [
        analysis.count_calls(traced.after[path]) - analysis.count_calls(traced.before[path])
        for _, path, _ in INPLACE_RUNS
        if path in traced.after and path in traced.before
    ]
    summary.inplace = sum(runs) if runs else None
    unbounded: set[str] = set()
    for p in plans:
        unbounded |= set(sizes.free_vars(p.applied_size)) - {str(k) for k in p.upper_bounds}
    summary.unbounded = sorted(unbounded)
    for p in plans:
        summary.concats += len(p.concats)
        summary.copy_free += sum(bool(c.copy_free) for c in p.concats)
        code, gap = optimality_of(p)
        if code is not None:
            summary.optimality[code] = summary.optimality.get(code, 0) + 1
        if gap is not None:
            summary.gap = max(gap, summary.gap or 0)
    return summary


def _bytes(value) -> str:
    return "-" if value is None else f"{value} B" if isinstance(value, int) else value


def summary_line(s: BuildSummary) -> str:
    """``build 1 (tvm.compile, llvm): 9 Relax functions planned; VM ...``."""
    head = f"build {s.index} ({s.entry}, {s.target}): "
    if s.note:
        return head + s.note
    which = f" (largest: {s.largest})" if s.largest else " (their sum)" if s.functions > 1 else ""
    if s.unbounded:
        which += f" + what depends on {', '.join(s.unbounded)} (no bound)"
    both = isinstance(s.planned, int) and isinstance(s.stock_same_ir, int)
    parts = [
        f"{s.functions} Relax function{'s' if s.functions != 1 else ''} planned",
        f"VM planned {_bytes(s.planned)}{which}, TVM's planner {_bytes(s.stock_same_ir)} on "
        f"the same IR ({ratio(s.planned, s.stock_same_ir) if both else '-'}), peak-live bound "
        f"{_bytes(s.bound)}",
        f"pooled allocator holds {_bytes(s.held)} once every function has run, with TVM's "
        f"planner {_bytes(s.stock_held)} ({ratio(s.held, s.stock_held) if s.stock_held else '-'})",
        f"{'-' if s.inplace is None else s.inplace} calls in place",
        f"{s.copy_free} of {s.concats} concatenations copy-free",
    ]
    if s.optimality:
        codes = ", ".join(f"{n} {code}" for code, n in sorted(s.optimality.items()))
        gap = f" (largest gap {s.gap} B)" if s.gap else ""
        parts.append(f"optimality: {codes}{gap}")
    return head + "; ".join(parts)
