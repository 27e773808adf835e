"""``tvm-memplan report``: how much memory a model needs to run, with the stock TVM build and the
memplan build, which layer costs it, and what each memory pass does, next to the stock pass on
the same IR; as text, JSON or a self-contained HTML page, with a fit check for device budgets.

Loading (``load_module``), building the data (``build_report``, into ``model.Report``) and
rendering (``render_text``, ``render_html``, ``Report.to_json``) are separate steps, so every
renderer shows the same figures; ``check_fit`` checks budgets on the same data. Parsing
command-line text belongs to ``tvm_memplan.cli``: these functions take parsed values.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import tvm

from .. import examples
from .build import build_report, stage
from .fit import BUDGETS, UnknownSizesError, check_fit
from .html import render_html
from .load import LoadedModel, ReportError, UnfixedInputsError, load_module
from .model import Report
from .text import render_text

__all__ = [
    "BUDGETS",
    "LoadedModel",
    "Report",
    "ReportError",
    "UnfixedInputsError",
    "UnknownSizesError",
    "build_report",
    "check_fit",
    "load_module",
    "render_html",
    "render_text",
    "run_report",
]

DEFAULT_TARGET = {"kind": "llvm"}


def run_report(
    file: str | Path | None = None,
    target: tvm.target.Target | None = None,
    *,
    input_shapes: dict[str, list[int]] | None = None,
    shape_values: dict[str, int] | None = None,
    budgets: dict[str, int] | None = None,
    progress: Callable[[str], None] | None = None,
) -> Report:
    """The whole ``report`` command but rendering: load ``file`` (default: the bundled
    example), build the report for ``target`` (default: llvm), check ``budgets``."""
    target = target if target is not None else tvm.target.Target(DEFAULT_TARGET)
    path = file or examples.DEFAULT_EXAMPLE
    with stage(f"loading {path}", progress):
        loaded = load_module(path, input_shapes)
    started = time.perf_counter()
    report = build_report(
        loaded,
        target,
        source=str(file or "bundled example"),
        shape_values=shape_values,
        progress=progress,
    )
    report.seconds = round(time.perf_counter() - started, 2)
    if budgets is not None:
        report.fit = check_fit(report, budgets)
    return report
