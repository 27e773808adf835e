"""The report as text: one table per pass, the memory plans, then the totals."""

from __future__ import annotations

from .model import Report

__all__ = ["render_text"]


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
        return "x".join(str(v) for v in value) or "scalar"
    return str(value)


def ratio(ours: int | None, stock: int | None) -> str:
    if ours is None or stock is None:
        return "n/a (symbolic sizes)"
    if stock == 0:
        return "n/a"
    return f"{ours / stock:.3f}"


def render_text(report: Report) -> str:
    lines = [f"tvm-memplan report: {report.input} (target {report.target})", ""]

    lines.append("Buffer compaction (CompactBufferAllocation): bytes per allocated buffer")
    rows = [
        (
            b.function,
            b.buffer,
            b.shape,
            b.compacted_shape,
            b.original_bytes,
            b.stock_bytes,
            b.ours_bytes,
            b.reason or "",
        )
        for b in report.compaction.buffers
    ]
    if rows:
        header = ("function", "buffer", "shape", "ours", "bytes", "stock", "ours", "kept because")
        lines += table(header, rows)
    else:
        lines.append("  no allocated buffers")

    lines += ["", "Allocation placement (LowerTVMBuiltin): stack or workspace"]
    rows = [
        (a.function, a.buffer, a.scope, a.bytes, a.stock, a.ours, a.reason)
        for a in report.placement.allocations
    ]
    if rows:
        header = ("function", "buffer", "scope", "bytes", "stock", "ours", "why (ours)")
        lines += table(header, rows)
    else:
        lines.append("  no allocations")

    inplace = report.inplace
    if inplace is not None:
        lines += [
            "",
            "Relax memory plan (StaticPlanBlockMemory): bytes per function, "
            "after our in-place pass",
        ]
        rows = [
            (
                m.function,
                f"{sum(t.storage >= 0 for t in m.tensors)}/{len(m.tensors)}",
                m.bound_bytes,
                m.stock_bytes,
                m.ours_bytes,
                ratio(m.ours_bytes, m.stock_bytes),
                m.planner,
            )
            for m in report.memory
        ]
        header = ("function", "planned", "bound", "stock", "ours", "ours/stock", "planner")
        lines += table(header, rows) if rows else ["  no Relax functions"]
        lines += ["", "In-place calls (DataflowUseInplaceCalls)"]
        rows = [
            (b.function, b.binding, b.op, f"in place on {b.arg}")
            for b in inplace.bindings
            if b.inplace
        ]
        lines += table(("function", "binding", "op", "ours"), rows) if rows else ["  none"]
        refused = sum(not b.inplace for b in inplace.bindings)
        lines.append(f"  {refused} other call bindings stay as they are (--json lists why)")
        for note in inplace.notes:
            lines.append(f"  note: {note}")

    lines += ["", "Totals", *_totals_lines(report)]
    if report.fit is not None:
        lines += ["", *fit_lines(report)]
    return "\n".join(lines)


def _totals_lines(report: Report) -> list[str]:
    c = report.compaction.totals
    p = report.placement.totals
    rows = [
        (
            "compacted bytes",
            c["original_bytes"],
            c["stock_bytes"],
            c["ours_bytes"],
            ratio(c["ours_bytes"], c["stock_bytes"]),
        ),
        (
            "stack allocations (bytes)",
            "",
            f"{p['stock_stack']['count']} ({cell(p['stock_stack']['bytes'])})",
            f"{p['ours_stack']['count']} ({cell(p['ours_stack']['bytes'])})",
            "",
        ),
        (
            "workspace allocations (bytes)",
            "",
            f"{p['stock_workspace']['count']} ({cell(p['stock_workspace']['bytes'])})",
            f"{p['ours_workspace']['count']} ({cell(p['ours_workspace']['bytes'])})",
            "",
        ),
    ]
    inplace = report.inplace
    if inplace is not None:
        conv, planned = inplace.conversions, inplace.planned_bytes
        rows.append(("in-place conversions", "", conv["stock"], conv["ours"], ""))
        rows.append(
            (
                "planned VM storage bytes",
                planned["none"],
                planned["stock"],
                planned["ours"],
                ratio(planned["ours"], planned["stock"]),
            )
        )
        rows.append(("  peak-live bound (ours)", "", "", planned["bound"], ""))
    return table(("", "without", "stock", "ours", "ours/stock"), rows)


def fit_lines(report: Report) -> list[str]:
    """The fit check: each budget, and the largest contributors of those exceeded."""
    fit = report.fit
    lines = [f"Fit check (memplan build): {'fits' if fit.fits else 'DOES NOT FIT'}"]
    for b in fit.budgets:
        figure = "unknown (symbolic sizes)" if b.figure is None else f"{b.figure} B"
        verdict = "fits" if b.fits else "exceeds"
        lines.append(f"  {b.name}: {figure} {verdict} the budget of {b.budget} B ({b.meaning})")
        if not b.fits and b.contributors:
            rows = [
                (c.name, c.function, c.bytes, "yes" if c.shrinkable else "no", c.note)
                for c in b.contributors
            ]
            header = ("largest", "function", "bytes", "shrinkable", "memplan")
            lines += table(header, rows, indent="    ")
    return lines
