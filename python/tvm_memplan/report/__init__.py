"""``tvm-memplan report``: what each memory pass does to a model, next to what the stock TVM pass
does to the same IR, as text, JSON or a self-contained HTML page, with a fit check for device
budgets.

Loading (``load``), building the data (``build``, into the dataclasses of ``model``) and
rendering (``text``, ``html``, ``Report.to_json``) are separate steps, so every renderer shows
the same figures; ``fit`` checks budgets on the same data.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from .. import examples
from .build import build_report
from .build import stage as _stage
from .fit import check_fit, parse_budgets, parse_size
from .html import render_html
from .load import ReportError, load_module, parse_input_shapes, parse_target
from .model import Report
from .text import render_text

__all__ = [
    "Report",
    "ReportError",
    "build_report",
    "check_fit",
    "load_module",
    "parse_budgets",
    "parse_input_shapes",
    "parse_size",
    "parse_target",
    "render_html",
    "render_text",
    "run_report",
]


def run_report(
    file: str | None,
    target_json: str | None = None,
    progress: Callable[[str], None] | None = None,
    *,
    input_shapes: list[str] | None = None,
    fit: str | None = None,
) -> Report:
    """The whole ``report`` command but rendering: check the arguments, load, build, check the
    budgets."""
    target = parse_target(target_json)
    shapes = parse_input_shapes(input_shapes)
    budgets = parse_budgets(fit) if fit is not None else None
    path = file or str(examples.DEFAULT_EXAMPLE)
    with _stage(f"loading {path}", progress):
        mod = load_module(path, shapes)
    started = time.perf_counter()
    report = build_report(mod, target, source=str(file or "bundled example"), progress=progress)
    report.seconds = round(time.perf_counter() - started, 2)
    if budgets is not None:
        report.fit = check_fit(report, budgets)
    return report
