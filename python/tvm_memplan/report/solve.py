"""Solving for a shape variable: the largest value of a variable for which a build's VM figure
fits a budget, ours and TVM's planner side by side (``--fit vm=256MiB --solve seq_len``).

A bounded variable's plans are sized at its ``tir_var_upper_bound``: an LLM's ``seq_len`` bound is
the prefill chunk it is compiled with, and evaluating today's plan at a smaller value changes
nothing (a storage sized at a bound keeps it). So the question "up to which prefill chunk does it
fit" is answered by planning again: each build's planner input (the report's) with the variable's
bound set to a value N, both planners run on it (``analysis.memory_plan``), and the build's VM
figure taken as the summary takes it (the largest function's; variables without a bound at the
values given). The search doubles N until the figure passes the budget, then bisects, so the
answer N is the planners' own: N fits and N + 1 does not. It assumes the figure grows with N;
the curve's points are checked for that and a note says where they are not.
"""

from __future__ import annotations

import tvm

from .. import analysis
from . import needs
from .fit import UnknownSizesError
from .model import Report, Solution, SolvePoint

__all__ = ["CAP", "SOLVABLE", "figure_at", "formulas", "solve"]

#: The budgets a variable can be solved for: the VM figure, what the planners decide.
SOLVABLE = ("vm",)
#: The largest value tried: past it the answer is "at least CAP".
CAP = 1 << 24
#: Points of the curve besides the answers and the bound.
CURVE_POINTS = 24
BUILDS = ("stock", "memplan")


def _bounded(mod: tvm.IRModule, bounds: dict[str, int]) -> tvm.IRModule:
    """``mod`` with each Relax function's ``tir_var_upper_bound`` of ``bounds`` set."""
    functions = {}
    for gv, func in mod.functions.items():
        if isinstance(func, tvm.relax.Function):
            attr = func.attrs.get("tir_var_upper_bound") if func.attrs is not None else None
            merged = {str(k): int(v) for k, v in (attr or {}).items()}
            merged.update(bounds)
            func = func.with_attr("tir_var_upper_bound", merged)
        functions[gv] = func
    return tvm.IRModule(functions, attrs=mod.attrs, global_infos=mod.global_infos)


class _Figures:
    """The VM figure of each build at a value of the variable, planned once per value."""

    def __init__(self, report: Report, variable: str, values: dict[str, int], strict: bool = True):
        self.report, self.variable, self.strict = report, variable, strict
        #: Variables without a bound or a value whose sizes were left out (``strict=False``).
        self.left_out: set[str] = set()
        self.inputs = report.planner_inputs
        self.target = report.target_object
        bounded = needs.bounds(self.inputs["memplan"])
        # Values given for bounded variables are bounds to plan at; the others evaluate sizes.
        self.bounds = {k: v for k, v in values.items() if any(k in b for b in bounded.values())}
        self.values = {k: v for k, v in values.items() if k not in self.bounds}
        self.calls_each_other = any(
            needs.calls_other_relax(self.inputs["memplan"], name) for name in bounded
        )
        self.cache: dict[int, dict[str, dict[str, int]]] = {}

    def functions(self, value: int) -> dict[str, dict[str, int]]:
        """Per build, per function: its planned bytes with the variable's bound at ``value``."""
        if value not in self.cache:
            bounds = {**self.bounds, self.variable: value}
            found: dict[str, dict[str, int]] = {}
            for build in BUILDS:
                mod = _bounded(self.inputs[build], bounds)
                plans = analysis.memory_plan(mod, self.target, pipeline=None)
                found[build] = {str(p.function): self._bytes(p, build) for p in plans}
            self.cache[value] = found
        return self.cache[value]

    def _bytes(self, plan, build: str) -> int:
        needed = needs.plan_vars(plan)
        if needed:
            missing = sorted(needed - set(plan.upper_bounds) - set(self.values))
            if missing and self.strict:
                raise UnknownSizesError(missing)
            if missing:  # the plan's own figures leave out what depends on them
                self.left_out |= set(missing)
                return plan.bytes_of(build)
            plan = analysis.memory_plan_at(
                plan, {k: v for k, v in self.values.items() if k in needed}
            )
        # The stock build plans with TVM's planner; the memplan build applies ours (or TVM's
        # plan where ours is not smaller).
        return plan.bytes_of(build)

    def figure(self, value: int, build: str) -> int:
        return int(needs.vm_peak(self.functions(value)[build].values(), self.calls_each_other))


def figure_at(report: Report, variable: str, value: int, values: dict[str, int] | None = None):
    """Each build's VM figure with ``variable``'s bound at ``value`` ({"stock": ...,
    "memplan": ...}): the functions planned again at that bound."""
    figures = _Figures(report, variable, dict(values or {}))
    return {build: figures.figure(value, build) for build in BUILDS}


def _largest(figure, limit: int, start: int) -> tuple[int | None, bool]:
    """The largest N >= 1 with figure(N) <= limit (None: not even 1), and whether the search
    stopped at CAP."""
    if figure(1) > limit:
        return None, False
    fits, n = 1, max(2, start)
    while n <= CAP and figure(n) <= limit:
        fits, n = n, n * 2
    if n > CAP:
        if figure(CAP) <= limit:
            return CAP, True
        n = CAP
    while n - fits > 1:  # figure(fits) <= limit < figure(n)
        middle = (fits + n) // 2
        fits, n = (middle, n) if figure(middle) <= limit else (fits, middle)
    return fits, False


def _line(points: list[tuple[int, int]], variable: str) -> str | None:
    """``a*variable + b`` when that holds at every point, else None."""
    (x0, y0), (x1, y1) = points[0], points[-1]
    if (y1 - y0) % (x1 - x0):
        return None
    a = (y1 - y0) // (x1 - x0)
    b = y0 - a * x0
    if any(y != a * x + b for x, y in points):
        return None
    if a == 0:
        return str(b)
    term = variable if a == 1 else f"{a}*{variable}"
    return term if b == 0 else f"{term} + {b}" if b > 0 else f"{term} - {-b}"


def _affine(points: list[tuple[int, int]], variable: str) -> str | None:
    """The formula that holds at every point (``a*seq_len + b``), or at every point from some
    value on, at least three (``a*seq_len + b for seq_len >= 40``: smaller values are
    dominated by what does not depend on the variable); None when none does."""
    for i in range(len(points) - 2):
        line = _line(points[i:], variable)
        if line is not None:
            return line if i == 0 else f"{line} for {variable} >= {points[i][0]}"
    return None


def _function_formulas(
    figures: _Figures, values: list[int], variable: str
) -> dict[str, dict[str, str | None]]:
    """Per build, each function whose planned bytes change with the variable over ``values``
    in either build: its formula (a constant where that build's do not change; None where no
    formula holds)."""
    points = {
        build: {
            name: [(x, figures.functions(x)[build][name]) for x in values]
            for name in sorted(figures.functions(values[0])[build])
        }
        for build in BUILDS
    }
    varying = {
        name
        for build in BUILDS
        for name, found in points[build].items()
        if len({y for _, y in found}) > 1
    }
    return {
        build: {
            name: _affine(found, variable)
            for name, found in points[build].items()
            if name in varying
        }
        for build in BUILDS
    }


#: Points each bounded variable is planned at for its formulas: fractions of its bound.
FORMULA_POINTS = 12


def formulas(report: Report, values: dict[str, int] | None = None) -> dict:
    """For each bounded shape variable the plans depend on, per build, each function's planned
    bytes as a formula of it (``a*seq_len + b``), the other variables at their bounds or
    ``values``: both planners run again with the variable's bound at points from 1 to twice
    its bound. What depends on a variable with neither a bound nor a value is left out of the
    bytes, as the plans' own figures leave it out; ``"left_out"`` names those variables."""
    if not report.planner_inputs or None in report.planner_inputs.values():
        return {}
    values = dict(values or {})
    appearing: set[str] = set()
    for f in report.relax:
        if f.plan is not None:
            appearing |= needs.plan_vars(f.plan)
    bounded = needs.bounds(report.planner_inputs["memplan"])
    found: dict = {}
    left_out: set[str] = set()
    for variable in sorted(appearing):
        bound = max((b[variable] for b in bounded.values() if variable in b), default=None)
        if bound is None:
            continue
        top = 2 * bound
        xs = sorted({max(1, top * i // FORMULA_POINTS) for i in range(FORMULA_POINTS + 1)})
        figures = _Figures(
            report, variable, {k: v for k, v in values.items() if k != variable}, strict=False
        )
        per = _function_formulas(figures, xs, variable)
        if any(per.values()):
            found[variable] = per
        left_out |= figures.left_out
    if found and left_out:
        found["left_out"] = sorted(left_out)
    return found


def solve(
    report: Report, variable: str, budget: str, limit: int, values: dict[str, int] | None = None
) -> Solution:
    """The largest value of ``variable`` for which each build's ``budget`` figure (only "vm")
    is at most ``limit`` bytes; other variables at their bound, or at ``values``."""
    if budget not in SOLVABLE:
        raise ValueError(
            f"only the {', '.join(SOLVABLE)} budget can be solved for a shape variable, "
            f"not {budget}"
        )
    if not report.planner_inputs or None in report.planner_inputs.values():
        raise ValueError("the report has no Relax plans to solve with (a TIR-only module?)")
    values = {k: v for k, v in (values or {}).items() if k != variable}
    module_bounds = needs.bounds(report.planner_inputs["memplan"])
    appearing = set()
    for f in report.relax:
        if f.plan is not None:
            appearing |= needs.plan_vars(f.plan)
    if variable not in appearing:
        raise ValueError(
            f"no planned size depends on {variable} (the plans' shape variables: "
            f"{', '.join(sorted(appearing)) or 'none'})"
        )
    found = [b[variable] for b in module_bounds.values() if variable in b]
    bound = max(found) if found else None
    figures = _Figures(report, variable, values)
    largest, capped = {}, {}
    for build in BUILDS:
        largest[build], capped[build] = _largest(
            lambda n, build=build: figures.figure(n, build), limit, bound or 1
        )
    known = [n for n in largest.values() if n is not None]
    top = max([*known, bound or 1, 2])
    step = max(1, top * 5 // 4 // CURVE_POINTS)
    xs = set(range(1, top * 5 // 4 + 1, step)) | {top * 5 // 4}
    xs |= set(known) | {n + 1 for n in known if n < CAP}
    if bound:
        xs.add(bound)
    curve = [
        SolvePoint(x, figures.figure(x, "stock"), figures.figure(x, "memplan")) for x in sorted(xs)
    ]
    per_function = _function_formulas(figures, [p.value for p in curve], variable)
    found_formulas = {
        build: {
            "model": _affine([(p.value, getattr(p, build)) for p in curve], variable),
            **per_function[build],
        }
        for build in BUILDS
    }
    notes = []
    for build in BUILDS:
        ys = [getattr(p, build) for p in curve]
        if any(b < a for a, b in zip(ys, ys[1:], strict=False)):
            notes.append(
                f"the {build} figure does not grow with {variable} at every point of the curve: "
                "a larger value than the answer may fit too"
            )
    shown = {}
    for k in sorted(appearing - {variable}):
        at = values.get(k, max((b[k] for b in module_bounds.values() if k in b), default=None))
        if at is not None:
            shown[k] = at
    return Solution(
        variable,
        budget,
        limit,
        shown,
        bound,
        largest,
        capped,
        curve,
        found_formulas,
        notes,
    )
