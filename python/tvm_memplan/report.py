"""The data behind ``tvm-memplan report``: what each memory pass does to a model, next to what
the stock TVM pass does to the same IR.

The module is compiled once with the ``"memplan"`` pipelines while an instrument records what
our compaction and our placement tagging receive; both our pass and the stock pass (or rule)
are then judged on exactly that IR. The Relax functions are judged before legalization, where
the in-place passes run. Building the report and rendering it are separate, so ``--json`` and
the text show the same numbers.
"""

from __future__ import annotations

import importlib.util
import json
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import tvm

from . import analysis, examples, pipeline, transform
from .instrument import capture

__all__ = [
    "ReportError",
    "build_report",
    "load_module",
    "parse_target",
    "render_text",
    "run_report",
]

_OUR_COMPACTION = "tvm_memplan.CompactBufferAllocation"
_OUR_PLACEMENT = "tvm_memplan.TagAllocationPlacement"
_DEFAULT_TARGET = {"kind": "llvm"}


class ReportError(Exception):
    """A problem with the report's input or a failing stage, shown to the user as one line."""


# ---- input ---------------------------------------------------------------------------------------


def load_module(path: str | Path) -> tvm.IRModule:
    """The IRModule a Python file defines: ``build() -> IRModule`` or a ``Module`` (TVMScript)."""
    path = Path(path)
    if not path.is_file():
        raise ReportError(f"no such file: {path}")
    spec = importlib.util.spec_from_file_location(f"tvm_memplan_input_{path.stem}", path)
    if spec is None or spec.loader is None:
        raise ReportError(f"{path} is not a Python file")
    module = importlib.util.module_from_spec(spec)
    # TVMScript reads the decorated functions' source through sys.modules.
    sys.modules[spec.name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as err:  # the user's file: any failure is reported, not raised
        raise ReportError(f"{path} failed to load: {_one_line(err)}") from err
    if hasattr(module, "build"):
        try:
            mod = module.build()
        except Exception as err:
            raise ReportError(f"{path}: build() failed: {_one_line(err)}") from err
        source = "build()"
    elif hasattr(module, "Module"):
        mod, source = module.Module, "Module"
    else:
        raise ReportError(f"{path} defines neither `Module` nor `build()`")
    if isinstance(mod, tvm.tirx.PrimFunc):
        mod = tvm.IRModule({"main": mod})
    if not isinstance(mod, tvm.IRModule):
        raise ReportError(f"{path}: {source} is a {type(mod).__name__}, not a tvm.IRModule")
    return mod


def parse_target(text: str | None) -> tvm.target.Target:
    """A target from its JSON form, e.g. ``{"kind": "c"}`` (default: llvm, the host CPU)."""
    config: Any = _DEFAULT_TARGET
    if text is not None:
        try:
            config = json.loads(text)
        except json.JSONDecodeError as err:
            raise ReportError(f"--target is not valid JSON: {err}") from err
        if not isinstance(config, dict):
            raise ReportError('--target must be a JSON object such as {"kind": "llvm"}')
    try:
        return tvm.target.Target(config)
    except Exception as err:
        raise ReportError(f"--target is not a valid target: {_one_line(err)}") from err


def _one_line(err: BaseException) -> str:
    """The first meaningful line of an exception (TVM errors carry tracebacks and notes)."""
    for line in str(err).strip().splitlines():
        line = line.strip()
        if line and not line.startswith(("Traceback", "File ", "note:")):
            return f"{type(err).__name__}: {line}"
    return type(err).__name__


# ---- stages --------------------------------------------------------------------------------------


@contextmanager
def _stage(name: str, progress: Callable[[str], None] | None) -> Iterator[None]:
    """Run one stage: say so on `progress` once it has taken a second, and turn a failure into
    a one-line ReportError naming the stage."""
    timer = None
    if progress is not None:
        timer = threading.Timer(1.0, progress, args=(f"{name}...",))
        timer.daemon = True
        timer.start()
    try:
        yield
    except ReportError:
        raise
    except Exception as err:
        raise ReportError(f"{name} failed: {_one_line(err)}") from err
    finally:
        if timer is not None:
            timer.cancel()


def _relax_functions(mod: tvm.IRModule) -> dict[str, tvm.relax.Function]:
    return {
        gv.name_hint: f
        for gv, f in sorted(mod.functions.items(), key=lambda item: item[0].name_hint)
        if isinstance(f, tvm.relax.Function)
    }


def _calls_relax_functions(mod: tvm.IRModule) -> bool:
    """Whether a Relax function calls another Relax function of the module."""
    relax_globals = {gv for gv, f in mod.functions.items() if isinstance(f, tvm.relax.Function)}
    found = False

    def visit(node):
        nonlocal found
        if isinstance(node, tvm.relax.Call) and node.op in relax_globals:
            found = True

    for func in _relax_functions(mod).values():
        tvm.relax.analysis.post_order_visit(func, visit)
    return found


def _count_inplace_calls(mod: tvm.IRModule) -> int:
    count = 0

    def visit(node):
        nonlocal count
        if isinstance(node, tvm.relax.Call) and getattr(node.op, "name", "") == (
            "relax.call_tir_inplace"
        ):
            count += 1

    for func in _relax_functions(mod).values():
        tvm.relax.analysis.post_order_visit(func, visit)
    return count


def _inplace_section(mod: tvm.IRModule, target: tvm.target.Target) -> dict[str, Any]:
    """In-place conversions and planned VM storage: no in-place pass and TVM's planner / TVM's
    in-place pass and planner / ours (as the memplan pipeline runs them), and our plan per
    function."""
    notes = []
    ours, stats = transform.use_inplace_calls(mod, planner="memplan")
    stock = None
    if _calls_relax_functions(mod):
        # TVM 0.27's pass can recurse without end (and kill the process) on such calls.
        notes.append(
            "the stock DataflowUseInplaceCalls is not run: this module calls Relax functions "
            "from Relax functions, on which it can recurse without end"
        )
    else:
        stock = tvm.relax.transform.DataflowUseInplaceCalls()(mod)
    already = _count_inplace_calls(mod)
    planned = {"none": analysis.planned_storage(mod, target).total_bytes, "stock": None}
    if stock is not None:
        planned["stock"] = analysis.planned_storage(stock, target).total_bytes
    plans = analysis.memory_plan(ours, target)
    functions = [
        {
            "function": plan.function,
            "tensors": len(plan.tensors),
            "planned_tensors": sum(t.planned for t in plan.tensors),
            "bound_bytes": plan.peak_live_bytes,
            "stock_bytes": None if plan.stock_bytes < 0 else plan.stock_bytes,
            "ours_bytes": plan.applied_bytes,
            "planner": plan.planner,
            "reason": plan.reason,
        }
        for plan in plans
    ]
    symbolic = any(p.symbolic_allocations or p.stock_bytes < 0 for p in plans)
    planned["ours"] = None if symbolic else sum(f["ours_bytes"] for f in functions)
    planned["bound"] = None if symbolic else sum(f["bound_bytes"] for f in functions)
    bindings = []
    for name, func in _relax_functions(mod).items():
        for c in analysis.inplace_candidates(func, mod, planner="memplan"):
            bindings.append(
                {
                    "function": name,
                    "binding": c.binding,
                    "op": c.op,
                    "inplace": c.inplace,
                    "arg": c.arg,
                    "reason": c.reason,
                }
            )
    return {
        "conversions": {
            "stock": None if stock is None else _count_inplace_calls(stock) - already,
            "ours": stats.rewritten,
        },
        "planned_bytes": planned,
        "functions": functions,
        "bindings": bindings,
        "notes": notes,
    }


def _allocated(mod: tvm.IRModule) -> dict[tuple[str, str], int | None]:
    """(function, buffer) -> bytes, for every buffer a module's PrimFuncs allocate."""
    return {
        (a.function or "", a.name): a.size_bytes
        for a in analysis.allocation_summary(mod)
        if a.allocates
    }


def _compaction_section(before: tvm.IRModule) -> dict[str, Any]:
    """Per allocated buffer: bytes as scheduled, after the stock pass, after ours."""
    stock = _allocated(tvm.s_tir.transform.CompactBufferAllocation()(before))
    buffers = []
    for gv, func in sorted(before.functions.items(), key=lambda item: item[0].name_hint):
        if not isinstance(func, tvm.tirx.PrimFunc):
            continue
        for region in analysis.compacted_regions(func):
            buffers.append(
                {
                    "function": gv.name_hint,
                    "buffer": region.name,
                    "dtype": region.dtype,
                    "shape": _json_shape(region.original_shape),
                    "compacted_shape": _json_shape(region.shape),
                    "original_bytes": region.original_bytes,
                    "stock_bytes": stock.get((gv.name_hint, region.name)),
                    "ours_bytes": region.compacted_bytes,
                    "reason": region.reason,
                }
            )
    return {"buffers": buffers, "totals": _sum_columns(buffers, "original", "stock", "ours")}


def _placement_section(before: tvm.IRModule) -> dict[str, Any]:
    """Per allocation of host code: where TVM's rule puts it and where ours does, and why."""
    buffers = [
        {
            "function": d.function,
            "buffer": d.name,
            "scope": d.scope,
            "bytes": d.nbytes,
            "stock": d.stock_placement,
            "ours": d.placement,
            "reason": d.reason,
        }
        for d in analysis.allocation_plan(before)
    ]
    totals = {}
    for side in ("stock", "ours"):
        for placement in ("stack", "workspace"):
            chosen = [b for b in buffers if b[side] == placement]
            sizes = [b["bytes"] for b in chosen]
            totals[f"{side}_{placement}"] = {
                "count": len(chosen),
                "bytes": None if None in sizes else sum(sizes),
            }
    return {"buffers": buffers, "totals": totals}


def _sum_columns(rows: list[dict], *columns: str) -> dict[str, int | None]:
    totals = {}
    for column in columns:
        values = [row[f"{column}_bytes"] for row in rows]
        totals[f"{column}_bytes"] = None if None in values else sum(values)
    return totals


def _json_shape(shape: tuple) -> list:
    return [dim if isinstance(dim, int) else str(dim) for dim in shape]


def build_report(
    mod: tvm.IRModule,
    target: tvm.target.Target,
    *,
    source: str = "",
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """The report as plain data (what ``--json`` prints). ``progress`` receives a line for each
    stage that takes more than a second."""
    report: dict[str, Any] = {"input": source, "target": target.kind.name, "inplace": None}
    if _relax_functions(mod):
        with _stage("in-place analysis (DataflowUseInplaceCalls, ours and stock)", progress):
            report["inplace"] = _inplace_section(mod, target)
    with _stage('compiling with the "memplan" pipelines', progress):
        seen = capture(
            lambda: pipeline.compile(mod, target=target), [_OUR_COMPACTION, _OUR_PLACEMENT]
        )
    with _stage("compaction (CompactBufferAllocation, ours and stock)", progress):
        report["compaction"] = _compaction_section(seen[_OUR_COMPACTION])
    with _stage("placement (LowerTVMBuiltin, ours and stock)", progress):
        report["placement"] = _placement_section(seen[_OUR_PLACEMENT])
    return report


# ---- text ----------------------------------------------------------------------------------------


def _table(header: tuple[str, ...], rows: list[tuple], indent: str = "  ") -> list[str]:
    cells = [tuple(str(c) for c in header)] + [tuple(_cell(c) for c in row) for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(header))]
    return [
        (indent + "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True))).rstrip()
        for row in cells
    ]


def _cell(value) -> str:
    if value is None:
        return "-"
    if isinstance(value, list):
        return "x".join(str(v) for v in value) or "scalar"
    return str(value)


def _ratio(ours: int | None, stock: int | None) -> str:
    if ours is None or stock is None:
        return "n/a (symbolic sizes)"
    if stock == 0:
        return "n/a"
    return f"{ours / stock:.3f}"


def render_text(report: dict[str, Any]) -> str:
    """The report as text: one table per pass, then the totals."""
    lines = [f"tvm-memplan report: {report['input']} (target {report['target']})", ""]

    compaction = report["compaction"]
    lines.append("Buffer compaction (CompactBufferAllocation): bytes per allocated buffer")
    rows = [
        (
            b["function"],
            b["buffer"],
            b["shape"],
            b["compacted_shape"],
            b["original_bytes"],
            b["stock_bytes"],
            b["ours_bytes"],
            b["reason"] or "",
        )
        for b in compaction["buffers"]
    ]
    if rows:
        header = ("function", "buffer", "shape", "ours", "bytes", "stock", "ours", "kept because")
        lines += _table(header, rows)
    else:
        lines.append("  no allocated buffers")

    placement = report["placement"]
    lines += ["", "Allocation placement (LowerTVMBuiltin): stack or workspace"]
    rows = [
        (b["function"], b["buffer"], b["scope"], b["bytes"], b["stock"], b["ours"], b["reason"])
        for b in placement["buffers"]
    ]
    if rows:
        header = ("function", "buffer", "scope", "bytes", "stock", "ours", "why (ours)")
        lines += _table(header, rows)
    else:
        lines.append("  no allocations")

    inplace = report["inplace"]
    if inplace is not None:
        lines += [
            "",
            "Relax memory plan (StaticPlanBlockMemory): bytes per function, "
            "after our in-place pass",
        ]
        rows = [
            (
                f["function"],
                f"{f['planned_tensors']}/{f['tensors']}",
                f["bound_bytes"],
                f["stock_bytes"],
                f["ours_bytes"],
                _ratio(f["ours_bytes"], f["stock_bytes"]),
                f["planner"],
            )
            for f in inplace["functions"]
        ]
        header = ("function", "planned", "bound", "stock", "ours", "ours/stock", "planner")
        lines += _table(header, rows) if rows else ["  no Relax functions"]
        lines += ["", "In-place calls (DataflowUseInplaceCalls)"]
        rows = [
            (b["function"], b["binding"], b["op"], f"in place on {b['arg']}")
            for b in inplace["bindings"]
            if b["inplace"]
        ]
        lines += _table(("function", "binding", "op", "ours"), rows) if rows else ["  none"]
        refused = sum(not b["inplace"] for b in inplace["bindings"])
        lines.append(f"  {refused} other call bindings stay as they are (--json lists why)")
        for note in inplace["notes"]:
            lines.append(f"  note: {note}")

    lines += ["", "Totals", *_totals_lines(report)]
    return "\n".join(lines)


def _totals_lines(report: dict[str, Any]) -> list[str]:
    c = report["compaction"]["totals"]
    p = report["placement"]["totals"]
    rows = [
        (
            "compacted bytes",
            c["original_bytes"],
            c["stock_bytes"],
            c["ours_bytes"],
            _ratio(c["ours_bytes"], c["stock_bytes"]),
        ),
        (
            "stack allocations (bytes)",
            "",
            f"{p['stock_stack']['count']} ({_cell(p['stock_stack']['bytes'])})",
            f"{p['ours_stack']['count']} ({_cell(p['ours_stack']['bytes'])})",
            "",
        ),
        (
            "workspace allocations (bytes)",
            "",
            f"{p['stock_workspace']['count']} ({_cell(p['stock_workspace']['bytes'])})",
            f"{p['ours_workspace']['count']} ({_cell(p['ours_workspace']['bytes'])})",
            "",
        ),
    ]
    inplace = report["inplace"]
    if inplace is not None:
        conv, planned = inplace["conversions"], inplace["planned_bytes"]
        rows.append(("in-place conversions", "", conv["stock"], conv["ours"], ""))
        rows.append(
            (
                "planned VM storage bytes",
                planned["none"],
                planned["stock"],
                planned["ours"],
                _ratio(planned["ours"], planned["stock"]),
            )
        )
        rows.append(("  peak-live bound (ours)", "", "", planned["bound"], ""))
    return _table(("", "without", "stock", "ours", "ours/stock"), rows)


def run_report(
    file: str | None,
    target_json: str | None = None,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """The whole ``report`` command but printing: check the target, load, build."""
    target = parse_target(target_json)
    path = Path(file) if file else examples.DEFAULT_EXAMPLE
    with _stage(f"loading {path}", progress):
        mod = load_module(path)
    started = time.perf_counter()
    report = build_report(mod, target, source=str(file or "bundled example"), progress=progress)
    report["seconds"] = round(time.perf_counter() - started, 2)
    return report
