"""The fit check: whether the memplan build fits a device's budgets, read off the report's data.

Budgets (any subset), each against the memplan build's figure of ``report.summary``:

- ``weights``: parameters and constants the module keeps;
- ``vm``: what the Relax VM allocates once planned, for the largest Relax function;
- ``workspace``: the most ``TVMBackendAllocWorkspace`` bytes live at once (the largest kernel);
- ``stack``: the most stack one kernel takes;
- ``total``: the four together.

For each budget exceeded, the largest contributors: what each is (the op, its shape, the source
model's name), what is already done to it, and what could still shrink it.
"""

from __future__ import annotations

from .load import ReportError
from .model import FitBudget, FitContributor, FitResult, Kernel, Report
from .needs import placement_of
from .origins import describe
from .views import concat_call, concats_of, lift

__all__ = ["BUDGETS", "BUDGET_ALIASES", "UnknownSizesError", "check_fit"]

BUDGETS = ("weights", "vm", "workspace", "stack", "total")
#: Other names of a budget: MLC-LLM calls the VM figure its "temporary buffer".
BUDGET_ALIASES = {"temp": "vm"}
CONTRIBUTORS = 5


class UnknownSizesError(ReportError):
    """The fit check needs a figure that depends on shape variables with neither a bound nor
    a value (``variables``)."""

    def __init__(self, variables: list[str]):
        self.variables = variables
        super().__init__(
            "the fit check needs a value or a bound for every shape variable; none for "
            + ", ".join(variables)
        )


_MEANING = {
    "weights": "parameters and constants the module keeps",
    "vm": "what the Relax VM allocates once planned",
    "workspace": "the most workspace bytes live at once",
    "stack": "the most stack bytes one kernel takes",
    "total": "weights + VM + workspace + stack",
}


def _peak_kernel(report: Report, where: str) -> Kernel | None:
    figure = getattr(report.summary.memplan, where)
    for k in sorted(report.kernels, key=lambda k: k.name):
        if getattr(k, where).get("memplan") == figure and figure:
            return k
    return None


def _weights(report: Report) -> list[FitContributor]:
    return [
        FitContributor(
            w.name,
            w.function,
            w.bytes,
            describe(w.used_by) if w.used_by else "",
            f"a {w.kind} of the module: no memory pass changes it",
            "",
        )
        for w in report.weights
        if w.bytes
    ]


def _peak_point(plan) -> int | None:
    """The program point where the most bytes are live (the first, if several)."""
    live = [int(b) for b in plan.live_bytes()]
    return live.index(max(live)) if live else None


def _vm(report: Report) -> list[FitContributor]:
    """The tensors that make the VM figure: of the function whose figure it is, those live at
    its peak, and those allocated on their own. A tensor live elsewhere does not raise it."""
    figure = report.summary.memplan.vm
    found = []
    for f in report.relax:
        plan = f.plan_at or f.plan
        needs = next(
            (n.memplan for n in report.summary.functions if n.function == f.function), None
        )
        if plan is None or needs is None or needs.vm != figure:
            continue
        at_bound = int(plan.planned_bytes) == int(plan.peak_live_bytes)
        peak = _peak_point(plan)
        for i, t in enumerate(plan.tensors):
            planned = int(t.storage) >= 0
            at_peak = peak is not None and int(t.first) <= peak <= int(t.last)
            if int(t.bytes) <= 0 or (planned and not at_peak):
                continue
            writers = f.writers[i] if i < len(f.writers) else []
            if plan.applies_stock:
                done = f"planned by TVM's planner: {plan.reason}"
            elif planned:
                done = (
                    f"live at the peak (program point {peak}), at offset {t.offset} of storage "
                    f"{t.storage}"
                    + (
                        ""
                        if int(t.group) >= 0
                        else ", shared with tensors not live at the same time"
                    )
                )
            else:
                done = f"allocated on its own: {t.reason}"
            if len(writers) > 1:
                done += f"; {len(writers) - 1} later ops computed in place in it"
            could = []
            first = writers[0] if writers else None
            concat_done, concat_could = _concat_advice(plan, str(t.binding))
            if concat_done:
                done += "; " + "; ".join(concat_done)
            could += concat_could
            if first is not None and first.from_constants:
                could.append(
                    "computed from constants only: relax.transform.FoldConstant before "
                    "compiling would make it a weight"
                )
            if first is not None and first.transposed_for_matmul:
                could.append(
                    "a transposed weight read by a matmul: TVM's "
                    "relax.transform.FuseTransposeMatmul first (relax_pipeline=["
                    'FuseTransposeMatmul(), "zero", "default"]) computes the matmul from the '
                    "weight as it is, and this tensor goes"
                )
            refused = _inplace_refusals(report, f.function, first)
            if refused:
                could.append(f"not computed in place: {refused}")
            if not could and planned and at_bound:
                could.append("nothing left to do: the plan is at the peak-live bound")
            found.append(
                FitContributor(
                    str(t.binding),
                    f.function,
                    int(t.bytes),
                    describe(first) or f"written by {t.op}",
                    done,
                    "; ".join(could),
                )
            )
    return found


def _concat_advice(plan, binding: str) -> tuple[list[str], list[str]]:
    """What is done to a tensor by the concatenations it takes part in, and what could still
    be: a copy-free one is done; one that keeps its copy could be copy-free, and says why not
    and what would lift that."""
    done, could = [], []
    found = concats_of(plan, binding)
    for c, part in found:
        if c.copy_free and part == "output":
            done.append(
                f"made by the copy-free concatenation {concat_call(c)}: its inputs are computed "
                "into it, nothing is copied"
            )
    into = [f"`{c.output}`" for c, part in found if c.copy_free and part == "input"]
    if into:
        done.append(
            f"computed directly into its slice of {_listed(into)} (copy-free concatenation"
            f"{'s' if len(into) > 1 else ''}): they share those bytes"
        )
    kept: dict[tuple[str, str], list] = {}  # (code, reason) -> concatenations keeping a copy
    for c, _ in found:
        if not c.copy_free:
            kept.setdefault((str(c.decision), str(c.reason)), []).append(c)
    for (code, reason), concats in kept.items():
        if len(concats) == 1:
            what = f"the concatenation {concat_call(concats[0])} keeps its copy"
        else:
            outputs = _listed([f"`{c.output}`" for c in concats])
            what = f"the concatenations into {outputs} keep their copies"
        could.append(f"{what} ({code}: {reason})")
    copying = sum(len(concats) for concats in kept.values())
    for code in dict.fromkeys(code for code, _ in kept):
        if lift(code):
            could.append(f"{'it' if copying == 1 else 'they'} would be copy-free with {lift(code)}")
    return done, could


def _listed(names: list[str]) -> str:
    """ "a", "a and b", "a, b and c"."""
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def _inplace_refusals(report: Report, function: str, origin) -> str:
    """Why the op that made a tensor is not computed in place, per run of tvm-memplan's pass
    ("" when a run converted it, or no run judged it)."""
    if origin is None or report.inplace is None:
        return ""
    decisions = report.inplace.decisions(function, origin.binding)
    if not decisions or any(c.inplace or run.already_inplace(c) for run, c in decisions):
        return ""
    reasons: dict[str, list[str]] = {}
    for run, c in decisions:
        reasons.setdefault(str(c.reason), []).append(run.where.split(",")[0])
    return "; ".join(f"{reason} ({', '.join(where)})" for reason, where in reasons.items())


def _linked_buffers(kernel: Kernel) -> list:
    """Each memplan placement decision's compaction record, matched by position when the
    kernel's allocations line up (the same names in the same order), else None."""
    names = [str(d.name) for d in kernel.placement]
    buffers = [str(b.region.name) for b in kernel.buffers]
    if names != buffers:
        return [None] * len(kernel.placement)
    return list(kernel.buffers)


def _kernel_items(report: Report, where: str, budget: str) -> list[FitContributor]:
    kernel = _peak_kernel(report, where)
    if kernel is None:
        return []
    found = []
    origin = describe(kernel.writers[0]) if kernel.writers else ""
    if len(kernel.writers) > 1:
        origin += f" and {len(kernel.writers) - 1} more calls"
    for i, (d, buffer) in enumerate(zip(kernel.placement, _linked_buffers(kernel), strict=True)):
        if placement_of(d, "memplan") != where or d.nbytes is None:
            continue
        done = [str(d.reason)]
        could = []
        if buffer is not None:
            region = buffer.region
            if region.reason is None and region.original_bytes != region.compacted_bytes:
                done.insert(0, f"compacted from {region.original_bytes} B")
            elif region.reason is not None:
                done.insert(0, f"kept whole ({region.reason})")
        eligible = i < len(kernel.stack_eligible) and kernel.stack_eligible[i]
        if budget == "workspace" and eligible:
            could.append(
                f"tvm_memplan.max_stack_alloca >= {int(d.nbytes)} would put it on the stack "
                "instead (the stack figure grows by as much)"
            )
        if budget == "stack":
            could.append(
                f"tvm_memplan.max_stack_alloca < {int(d.nbytes)} would put it in the "
                "workspace instead (the workspace figure grows by as much)"
            )
        found.append(
            FitContributor(
                str(d.name), kernel.name, int(d.nbytes), origin, "; ".join(done), "; ".join(could)
            )
        )
    return found


def _largest(items: list[FitContributor]) -> list[FitContributor]:
    return sorted(items, key=lambda c: (-c.bytes, c.function, c.name))[:CONTRIBUTORS]


def check_fit(report: Report, budgets: dict[str, int]) -> FitResult:
    """Each budget against the memplan build, in the order of ``BUDGETS``. Raises
    UnknownSizesError when the model has shape variables with neither a bound nor a value: a
    device budget is checked against sizes, not expressions."""
    unknown = [b for b in budgets if b not in BUDGETS]
    if unknown:
        raise ValueError(f"unknown budgets: {', '.join(unknown)} (known: {', '.join(BUDGETS)})")
    needs = report.summary.memplan
    if report.summary.unknown_vars:
        raise UnknownSizesError(report.summary.unknown_vars)
    checked = []
    for name in BUDGETS:
        if name not in budgets:
            continue
        figure = getattr(needs, name)
        meaning = _MEANING[name]
        if name in ("workspace", "stack"):
            kernel = _peak_kernel(report, name)
            if kernel is not None:
                meaning += f": {kernel.name}"
        if figure is None:
            failures = [f.text for f in report.failures]
            meaning += " (unknown: " + ("; ".join(failures) or "symbolic sizes") + ")"
        fits = figure is not None and figure <= budgets[name]
        contributors: list[FitContributor] = []
        if not fits:
            if name == "weights":
                contributors = _weights(report)
            elif name == "vm":
                contributors = _vm(report)
            elif name in ("workspace", "stack"):
                contributors = _kernel_items(report, name, name)
            else:
                contributors = (
                    _weights(report)
                    + _vm(report)
                    + _kernel_items(report, "workspace", name)
                    + _kernel_items(report, "stack", name)
                )
        checked.append(
            FitBudget(name, budgets[name], figure, fits, meaning, _largest(contributors))
        )
    return FitResult(all(b.fits for b in checked), checked)
