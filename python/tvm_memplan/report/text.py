"""The report as text: the memory the model needs first, then what each pass does, largest
first, each failing pass in its own rows."""

from __future__ import annotations

from .format import bytes_text, ratio, shape
from .model import SUMMARY_FIGURES, FitResult, Needs, Report, Solution, Summary
from .origins import describe
from .views import (
    at_values,
    compaction_totals,
    concat_rows,
    kernel_groups,
    largest_tensors,
    lift,
    optimality_text,
    placement_totals,
    plan_bytes,
    section_failures,
    tensor_bytes,
)

__all__ = ["fit_lines", "render_text", "solve_lines", "summary_lines"]

#: Rows a long table shows before "... N more" (--json and --html list all).
TOP = 12


def table(header: tuple[str, ...], rows: list[tuple], indent: str = "  ") -> list[str]:
    cells = [tuple(str(c) for c in header)] + [tuple(cell(c) for c in row) for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(header))]
    return [
        (indent + "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True))).rstrip()
        for row in cells
    ]


def cell(value) -> str:
    if value is None:
        return "-"
    if isinstance(value, list):
        return shape(value)
    return str(value)


def _more(count: int, shown: int, what: str) -> list[str]:
    hidden = count - shown
    return [f"  ... {hidden} more {what} (--json and --html list them all)"] if hidden > 0 else []


def summary_lines(summary: Summary) -> list[str]:
    """Memory to run the model, stock build against memplan build."""
    lines = ["Memory to run the model: the stock TVM build and the memplan build"]
    if summary.evaluated_at:
        values = ", ".join(
            f"{k}={v} ({summary.value_sources.get(k, 'given')})"
            for k, v in summary.evaluated_at.items()
        )
        lines.append(f"  symbolic sizes evaluated at {values}")
    rows = []
    for key, label in SUMMARY_FIGURES:
        stock, ours = getattr(summary.stock, key), getattr(summary.memplan, key)
        if key == "held" and stock is None and ours is None:
            continue  # no Relax function: nothing is pooled
        rows.append(
            (
                f"  {label}" if key == "all_allocations" else label,
                _figure(summary.stock, key),
                _figure(summary.memplan, key),
                ratio(ours, stock) if key != "weights" else "",
            )
        )
    lines += table(("", "stock", "memplan", "memplan/stock"), rows)
    lines += [f"  {note}" for note in summary.notes]
    if summary.unknown_vars:
        lines.append(
            f"  symbolic in {', '.join(summary.unknown_vars)}, which have no bound: give values "
            "to evaluate the figures"
        )
    return lines


def _figure(needs: Needs, key: str) -> str:
    value = getattr(needs, key)
    if value is None and key in needs.symbolic:
        return needs.symbolic[key]
    return bytes_text(value)


def _per_function(report: Report) -> list[str]:
    functions = report.summary.functions
    if len(functions) <= 1:
        return []
    lines = ["", f"Per function ({len(functions)}), largest total first"]
    ordered = sorted(functions, key=lambda f: (-(f.memplan.total or 0), f.function))
    rows = [
        (
            f.function,
            build,
            bytes_text(n.weights),
            bytes_text(n.vm),
            bytes_text(n.workspace),
            bytes_text(n.stack),
            bytes_text(n.total),
        )
        for f in ordered[:TOP]
        for build, n in (("stock", f.stock), ("memplan", f.memplan))
    ]
    lines += table(("function", "build", "weights", "VM", "workspace", "stack", "total"), rows)
    return lines + _more(len(functions), TOP, "functions")


def _failures(report: Report, section: str) -> list[str]:
    return [f"  {f.text}" for f in section_failures(report, section)]


def _formulas(report: Report) -> list[str]:
    """The planned bytes of each function as formulas of the bounded shape variables."""
    variables = [v for v in report.formulas if v != "left_out"]
    if not variables:
        return []
    lines = [
        "",
        "Planned bytes as formulas of the bounded shape variables (both planners run again "
        "with the bound from 1 to twice it, the others at theirs; exact at every point planned; "
        "-: no one formula holds)",
    ]
    rows = []
    for v in variables:
        per = report.formulas[v]
        for name in sorted(set(per["stock"]) | set(per["memplan"])):
            rows.append((v, name, per["stock"].get(name) or "-", per["memplan"].get(name) or "-"))
    lines += table(("variable", "function", "stock", "memplan"), rows)
    left_out = report.formulas.get("left_out")
    if left_out:
        lines.append(
            f"  without what depends on {', '.join(left_out)} (no bound, no value: give one with "
            "--shape-var)"
        )
    return lines


def _relax(report: Report) -> list[str]:
    if not report.relax:
        return []
    lines = ["", "Relax memory plans (StaticPlanBlockMemory), after each build's in-place pass"]
    rows = []
    # How optimal each plan is, where the planner's records say.
    optimal = [optimality_text(f.plan) for f in report.relax]
    says = any(o is not None for o in optimal)
    for f in report.relax:
        plan = f.plan_at or f.plan
        if plan is None:
            rows.append((f.function, "-", "-", "-", "-", "-", "-", plan_bytes(f, "stock_build")))
            continue
        same_ir, ours = plan_bytes(f, "stock"), plan_bytes(f, "memplan")
        both = isinstance(ours, int) and isinstance(same_ir, int)
        rows.append(
            (
                f.function,
                f"{sum(int(t.storage) >= 0 for t in plan.tensors)}/{len(plan.tensors)}",
                int(plan.peak_live_bytes),
                same_ir,
                ours,
                ratio(ours, same_ir) if both else "-",
                str(plan.planner),
                plan_bytes(f, "stock_build"),
            )
        )
    header = (
        "function",
        "planned",
        "bound",
        "TVM same IR",
        "ours",
        "ours/TVM",
        "planner",
        "stock build",
    )
    if says:
        header += ("optimality",)
        rows = [(*row, optimal[i] or "-") for i, row in enumerate(rows)]
    lines += table(header, rows)
    lines += _formulas(report)
    lines += _failures(report, "relax")
    tensors = largest_tensors(report)
    if tensors:
        lines += ["", "Largest tensors of the memplan build"]
        rows = []
        for r in tensors[:TOP]:
            t = r.tensor
            where = (
                f"storage {t.storage} + {t.offset}" if int(t.storage) >= 0 else f"own: {t.reason}"
            )
            first = describe(r.writers[0]) if r.writers else f"written by {t.op}"
            inplace = f" (+{len(r.writers) - 1} in place)" if len(r.writers) > 1 else ""
            rows.append((r.function, str(t.binding), tensor_bytes(t), first + inplace, where))
        lines += table(("function", "tensor", "bytes", "what", "memplan"), rows)
        lines += _more(len(tensors), TOP, "tensors")
    return lines


def _concats(report: Report) -> list[str]:
    totals = report.concats
    if totals is None or not totals.count:
        return []
    lines = [
        "",
        f"Concatenations (StaticPlanBlockMemory, copy-free concatenation): {totals.copy_free} of "
        f"{totals.count} copy-free in the memplan build ({totals.kernel_runs} in fused kernels "
        f"that still run), {totals.bytes_not_copied} bytes not copied; the stock build copies "
        "every one",
    ]
    rows = []
    for r in concat_rows(report)[:TOP]:
        c = r.record
        what = describe(r.made_by) or f"written by {c.callee}"
        memplan = (
            f"copies: {c.reason} ({c.decision})"
            if not c.copy_free
            else "copy-free, in its running fused kernel"
            if c.kernel_runs
            else "copy-free"
        )
        rows.append((r.function, str(c.output), what, len(c.inputs), r.bytes, memplan))
    lines += table(("function", "output", "what", "inputs", "bytes", "memplan"), rows)
    lines += _more(totals.count, TOP, "concatenations")
    for f in report.relax:
        if f.with_copies is None:
            continue
        ours = plan_bytes(f, "memplan")
        lines.append(
            f"  {f.function}: the memplan build plans {cell(ours)} B; with every concatenation "
            f"copying (copy_free_concat=False) {f.with_copies} B, "
            f"{ratio(ours if isinstance(ours, int) else None, f.with_copies)}"
        )
    for code, count in sorted(totals.kept.items()):
        keeps = "keeps its" if count == 1 else "keep their"
        lines.append(f"  {count} {keeps} copy ({code}); what would lift it: {lift(code)}")
    return lines


def _run_name(run) -> str:
    return run.name.replace("_", " ")


def _inplace(report: Report) -> list[str]:
    inplace = report.inplace
    if inplace is None:
        return []
    conv = inplace.conversions
    lines = [
        "",
        f"In-place calls (DataflowUseInplaceCalls): {cell(conv['stock'])} with TVM's pass "
        f"(stock build), {cell(conv['memplan'])} with tvm-memplan's (memplan build), per run:",
    ]
    for run in inplace.runs:
        figure = run.skipped if run.conversions is None and run.skipped else cell(run.conversions)
        lines.append(f"  {run.where}: {figure}")
    converted = [
        (_run_name(run), name, str(c.binding), run.what(name, c), f"in place on {c.arg}")
        for run in inplace.runs
        for name, found in run.candidates.items()
        for c in found
        if c.inplace
    ]
    lines += (
        table(("run", "function", "binding", "op", "memplan"), converted[:TOP])
        if converted
        else ["  none"]
    )
    lines += _more(len(converted), TOP, "in-place calls")
    for run in inplace.runs:
        if not run.candidates:
            continue
        found = [c for cs in run.candidates.values() for c in cs if not c.inplace]
        already = sum(run.already_inplace(c) for c in found)
        lines.append(
            f"  {_run_name(run)}: {len(found) - already} other call bindings stay as they are"
            + (f", {already} already in place" if already else "")
            + " (--json lists why)"
        )
    unsafe = [
        (name, str(w.callee), str(w.argument), str(w.reason))
        for name, writes in inplace.stock_unsafe_writes.items()
        for w in writes
    ]
    if unsafe:
        lines.append(
            f"  TVM's pass writes into a constant or a value read afterwards at {len(unsafe)} "
            "calls: the stock build's results change from call to call; its figures count "
            "these calls with a copy (what computing right takes), not as a saving:"
        )
        lines += table(("function", "callee", "argument", "why"), unsafe[:TOP])
        lines += _more(len(unsafe), TOP, "such calls")
    lines += [f"  note: {note}" for note in inplace.notes]
    lines += _failures(report, "inplace")
    return lines


def _kernels(report: Report) -> list[str]:
    if not report.kernels:
        return []
    groups = kernel_groups(report)
    lines = [
        "",
        f"Kernels ({len(report.kernels)}), grouped by what they compute, largest first: "
        "workspace and stack per build",
    ]
    rows = []
    shown = 0
    for g in groups:
        for k in g.kernels:
            if shown >= TOP:
                break
            shown += 1
            what = describe(k.writers[0]) if k.writers else ""
            if len(k.writers) > 1:
                what += f" (+{len(k.writers) - 1} calls)"
            rows.append(
                (
                    g.kind,
                    k.name,
                    k.workspace.get("stock"),
                    k.workspace.get("memplan"),
                    k.stack.get("stock"),
                    k.stack.get("memplan"),
                    what,
                )
            )
    header = ("kind", "kernel", "workspace stock", "memplan", "stack stock", "memplan", "what")
    lines += table(header, rows)
    lines += _more(len(report.kernels), shown, "kernels")
    lines += _failures(report, "placement")

    def original(b) -> int:
        value = at_values(report, b.region.original_bytes, b.region.original_size)
        return value if isinstance(value, int) else 0

    buffers = sorted(
        ((k, b) for k in report.kernels for b in k.buffers),
        key=lambda kb: (-original(kb[1]), kb[0].name, kb[1].index),
    )
    lines += ["", "Buffer compaction (CompactBufferAllocation), largest first"]
    rows = [
        (
            k.name,
            str(b.region.name),
            list(b.region.original_shape),
            list(b.region.shape),
            at_values(report, b.region.original_bytes, b.region.original_size),
            at_values(report, b.stock_bytes, b.stock_size),
            at_values(report, b.region.compacted_bytes, b.region.compacted_size),
            b.region.reason or "",
        )
        for k, b in buffers[:TOP]
    ]
    header = ("kernel", "buffer", "shape", "ours", "bytes", "stock", "ours", "kept because")
    lines += table(header, rows) if rows else ["  no allocated buffers"]
    lines += _more(len(buffers), TOP, "buffers")
    lines += _failures(report, "compaction")

    def placed(d) -> int:
        value = at_values(report, d.nbytes, d.size)
        return value if isinstance(value, int) else 0

    decisions = sorted(
        ((k, d) for k in report.kernels for d in k.placement),
        key=lambda kd: (-placed(kd[1]), kd[0].name),
    )
    lines += ["", "Allocation placement (LowerTVMBuiltin), largest first"]
    rows = [
        (
            k.name,
            str(d.name),
            str(d.scope),
            at_values(report, d.nbytes, d.size),
            str(d.stock_placement),
            str(d.placement),
            str(d.reason),
        )
        for k, d in decisions[:TOP]
    ]
    header = ("kernel", "buffer", "scope", "bytes", "stock", "ours", "why (ours)")
    lines += table(header, rows) if rows else ["  no allocations"]
    lines += _more(len(decisions), TOP, "allocations")
    return lines


def _totals(report: Report) -> list[str]:
    c = compaction_totals(report)
    p = placement_totals(report)
    rows = [
        (
            "compacted bytes",
            c["original"],
            c["stock"],
            c["memplan"],
            ratio(c["memplan"], c["stock"]),
        )
    ]
    for where in ("stack", "workspace"):
        stock, ours = p["stock"][where], p["memplan"][where]
        rows.append(
            (
                f"{where} allocations (bytes)",
                "",
                f"{stock[0]} ({cell(stock[1])})",
                f"{ours[0]} ({cell(ours[1])})",
                "",
            )
        )
    inplace = report.inplace
    if inplace is not None:
        conv = inplace.conversions
        rows.append(("in-place conversions", "", conv["stock"], conv["memplan"], ""))
        for run in inplace.runs:
            rows.append((f"  {_run_name(run)}", "", "", run.conversions, ""))
        stock, ours = report.summary.stock.vm, report.summary.memplan.vm
        rows.append(
            ("planned VM storage bytes", inplace.without_inplace, stock, ours, ratio(ours, stock))
        )
        bound = [int((f.plan_at or f.plan).peak_live_bytes) for f in report.relax if f.plan]
        rows.append(("  peak-live bound (ours)", "", "", max(bound, default=None), ""))
    return [
        "",
        "Totals of each pass",
        *table(("", "without", "stock", "memplan", "memplan/stock"), rows),
    ]


def fit_lines(fit: FitResult) -> list[str]:
    """The fit check: each budget, and the largest contributors of those exceeded."""
    lines = [f"Fit check (memplan build): {'fits' if fit.fits else 'DOES NOT FIT'}"]
    for b in fit.budgets:
        figure = "unknown" if b.figure is None else f"{b.figure} B"
        verdict = "fits" if b.fits else "exceeds"
        lines.append(f"  {b.name}: {figure} {verdict} the budget of {b.budget} B ({b.meaning})")
        for c in b.contributors:
            lines.append(f"    {c.name} ({c.function}): {c.bytes} B, {c.origin}")
            lines.append(f"      done: {c.done}")
            lines.append(f"      could: {c.could or 'nothing left to do'}")
    return lines


_BUILD_NAMES = {"stock": "stock (TVM's planner)", "memplan": "memplan (ours)"}


def solve_lines(s: Solution) -> list[str]:
    """The largest value of the variable that fits, per build, with the figures at the answer
    and one past it, and the figures as formulas of the variable."""
    others = ", ".join(f"{k}={v}" for k, v in s.values.items()) or "none"
    bound = f"built with {s.variable} <= {s.bound}" if s.bound is not None else "unbounded"
    lines = [
        f"Solve {s.variable} for {s.budget} <= {s.limit} B ({bound}; other variables: {others}); "
        f"both planners run again at each {s.variable}"
    ]
    points = {p.value: p for p in s.curve}
    rows = []
    for build in ("stock", "memplan"):
        n = s.largest[build]
        if n is None:
            rows.append((_BUILD_NAMES[build], "none: 1 does not fit", "", ""))
            continue
        past = points.get(n + 1)
        rows.append(
            (
                _BUILD_NAMES[build],
                f"up to {n}" + (" (the search stops there)" if s.capped[build] else ""),
                f"{getattr(points[n], build)} B at {n}",
                f"{getattr(past, build)} B at {n + 1}" if past is not None else "",
            )
        )
    lines += table(("", f"{s.variable} that fits", "figure", "past it"), rows)
    lines.append(f"  as a formula of {s.variable} (exact at every point planned):")
    names = [k for k in s.formulas["memplan"] if k != "model"]
    rows = [
        (name, s.formulas["stock"].get(name) or "-", s.formulas["memplan"].get(name) or "-")
        for name in ["model", *names]
    ]
    lines += table(("", "stock", "memplan"), rows, indent="    ")
    lines += [f"  note: {note}" for note in s.notes]
    return lines


def render_text(report: Report) -> str:
    lines = [f"tvm-memplan report: {report.input} (target {report.target})", ""]
    lines += summary_lines(report.summary)
    if report.failures:
        lines += ["", "Passes that fail on this model (their rows below say so; the rest is shown)"]
        lines += [f"  {f.text}" for f in report.failures]
    lines += _per_function(report)
    lines += _relax(report)
    lines += _concats(report)
    lines += _inplace(report)
    lines += _kernels(report)
    lines += _totals(report)
    if report.fit is not None:
        lines += ["", *fit_lines(report.fit)]
    if report.solution is not None:
        lines += ["", *solve_lines(report.solution)]
    return "\n".join(lines)
