"""``tvm-memplan report``: how much memory a model needs to run, with the stock TVM build and the
memplan build, which layer costs it, and what each memory pass does, next to the stock pass on
the same IR; as text, JSON or a self-contained HTML page, with a fit check for device budgets.

Loading (``load_module``), running the builds traced (``trace_builds``), assembling their
records into ``model.Report`` (``assemble.build_report``) and rendering (``render_text``,
``render_html``, ``Report.to_json``) are separate steps, so every renderer shows the same
figures; ``check_fit`` checks budgets on the same data, and ``solve`` finds the largest bound of
a shape variable that fits the VM budget (both planners run again).
``build_summary`` says in a line what one build of a tool did (``tvm-memplan run``). Parsing
command-line text belongs to ``tvm_memplan.command_line``: these functions take parsed values.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import tvm

from .. import analysis, examples
from ..instrument import configured
from .assemble import build_report
from .fit import BUDGET_ALIASES, BUDGETS, UnknownSizesError, check_fit
from .html import render_html
from .load import LoadedModel, ReportError, UnfixedInputsError, load_module
from .model import Report
from .solve import SOLVABLE, solve
from .text import render_text
from .trace_builds import stage

__all__ = [
    "BUDGETS",
    "BUDGET_ALIASES",
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
    "solve",
    "solvable_budget",
]

DEFAULT_TARGET = {"kind": "llvm"}


def run_report(
    file: str | Path | None = None,
    target: tvm.target.Target | None = None,
    *,
    input_shapes: dict[str, list[int]] | None = None,
    shape_values: dict[str, int] | None = None,
    budgets: dict[str, int] | None = None,
    solve_for: str | None = None,
    exact_search_ms: int | None = None,
    progress: Callable[[str], None] | None = None,
) -> Report:
    """The whole ``report`` command but rendering: load ``file`` (default: the bundled
    example), build the report for ``target`` (default: llvm), check ``budgets``, and with
    ``solve_for`` (a shape variable) find the largest value of it that fits the vm budget.
    ``exact_search_ms``: the planner's exact-search budget per function in every build and
    analysis of the report (None: the planner's default)."""
    target = target if target is not None else tvm.target.Target(DEFAULT_TARGET)
    path = file or examples.DEFAULT_EXAMPLE
    with stage(f"loading {path}", progress):
        loaded = load_module(path, input_shapes)
    with configured(analysis.search_config(exact_search_ms)):
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
        if solve_for is not None:
            report.solution = solve_budget(report, solve_for, budgets or {}, shape_values or {})
    return report


def solvable_budget(variable: str, budgets: dict[str, int]) -> str:
    """The budget of ``budgets`` that ``--solve variable`` solves for; a ReportError naming
    the flag to give when there is none."""
    solvable = [b for b in budgets if b in SOLVABLE]
    if not solvable:
        aliases = ", ".join(k for k, v in BUDGET_ALIASES.items() if v == SOLVABLE[0])
        raise ReportError(
            f"--solve {variable} needs a budget it can solve for: --fit {SOLVABLE[0]}=SIZE "
            f"(or {aliases}=SIZE)"
        )
    return solvable[0]


def solve_budget(
    report: Report, variable: str, budgets: dict[str, int], shape_values: dict[str, int]
):
    """``solve`` for the budget of ``budgets`` that can be solved, as a ReportError when it
    cannot be."""
    budget = solvable_budget(variable, budgets)
    try:
        return solve(report, variable, budget, budgets[budget], shape_values)
    except UnknownSizesError:
        raise
    except ValueError as err:
        raise ReportError(f"--solve {variable}: {err}") from err
