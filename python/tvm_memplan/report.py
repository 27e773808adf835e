"""The data behind ``tvm-memplan report``: what the memory passes find in a module.

Building the report and rendering it are separate so that ``--json`` and the text table show
the same numbers.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

import tvm

from . import analysis


class ReportError(Exception):
    """A problem with the report's input, shown to the user as one line."""


def load_module(path: str | Path) -> tvm.IRModule:
    """The IRModule a Python file defines: a ``Module`` (TVMScript) or ``build() -> IRModule``."""
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
        raise ReportError(f"{path} failed to load: {type(err).__name__}: {err}") from err
    if hasattr(module, "build"):
        try:
            mod = module.build()
        except Exception as err:
            raise ReportError(f"{path}: build() failed: {type(err).__name__}: {err}") from err
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


def parse_target(text: str | None) -> tvm.target.Target | None:
    """A target from its JSON form, e.g. ``{"kind": "llvm"}``."""
    if text is None:
        return None
    try:
        config = json.loads(text)
    except json.JSONDecodeError as err:
        raise ReportError(f"--target is not valid JSON: {err}") from err
    if not isinstance(config, dict):
        raise ReportError('--target must be a JSON object such as {"kind": "llvm"}')
    try:
        return tvm.target.Target(config)
    except Exception as err:
        raise ReportError(f"--target is not a valid target: {err}") from err


def _json_shape(shape: tuple) -> list:
    return [dim if isinstance(dim, int) else str(dim) for dim in shape]


def build_report(mod: tvm.IRModule, target: tvm.target.Target | None = None) -> dict[str, Any]:
    """The report as plain data (what ``--json`` prints)."""
    allocations = analysis.allocation_summary(mod)
    return {
        "target": None if target is None else str(target.kind.name),
        "allocations": [
            {
                "function": a.function,
                "name": a.name,
                "kind": a.kind,
                "shape": _json_shape(a.shape),
                "dtype": a.dtype,
                "scope": a.scope,
                "size_bytes": a.size_bytes,
                "view_of": a.view_of,
            }
            for a in allocations
        ],
        "totals": {"allocated_bytes": analysis.total_bytes(allocations)},
    }


def render_text(report: dict[str, Any]) -> str:
    """The report as aligned text tables."""
    rows = [("function", "buffer", "kind", "shape", "dtype", "scope", "bytes")]
    for a in report["allocations"]:
        kind = a["kind"] if a["view_of"] is None else f"view of {a['view_of']}"
        size = "symbolic" if a["size_bytes"] is None else str(a["size_bytes"])
        shape = "x".join(str(d) for d in a["shape"]) or "scalar"
        rows.append((a["function"] or "-", a["name"], kind, shape, a["dtype"], a["scope"], size))
    widths = [max(len(row[c]) for row in rows) for c in range(len(rows[0]))]
    lines = ["Allocations"]
    for row in rows:
        cells = [cell.ljust(width) for cell, width in zip(row, widths, strict=True)]
        lines.append(("  " + "  ".join(cells)).rstrip())
    total = report["totals"]["allocated_bytes"]
    lines.append(f"Total allocated: {'symbolic' if total is None else f'{total} bytes'}")
    return "\n".join(lines)
