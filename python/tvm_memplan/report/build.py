"""Building the report: what each memory pass does to a model, next to what the stock TVM pass
does, and the memory the stock and the memplan builds need to run it.

The Relax functions are judged where the in-place passes and the planners run: the memplan
build's Relax pipeline runs up to our planner while an instrument records what each of the two
runs of our in-place pass receives and returns, and what the planner receives; TVM's in-place
pass runs on the module as imported, then TVM's pipeline up to its planner. The TIR is judged
where each pass
receives it: the memplan build is compiled once with the ``"memplan"`` pipelines while an
instrument records what our compaction and our placement tagging receive, the stock build up to
TVM's StorageRewrite (where placement is decided in the memplan build).

Every pass runs on its own: when one raises, the report records a ``Failure`` for its rows and
goes on with the rest (a stock build without TVM's failing in-place pass, the TIR of the memplan
build without ours, ...). The result is a ``model.Report``, which every renderer reads.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import tvm
import tvm_ffi

from .. import analysis, pass_names, pipeline
from ..instrument import PassTrace, trace
from . import needs, origins, solve
from .load import LoadedModel, ReportError, one_line
from .model import (
    Buffer,
    Concats,
    Failure,
    Inplace,
    InplaceRun,
    Kernel,
    RelaxFunction,
    Report,
)
from .needs import placement_of

__all__ = ["INPLACE_RUNS", "OUR_PLANNER", "RECORDED_PASSES", "ToolBuild", "build_report", "stage"]

_OUR_COMPACTION = pass_names.COMPACTION
_OUR_PLACEMENT = pass_names.PLACEMENT
# Where placement is decided in the memplan build: our tagging runs right before it.
_STOCK_PLACEMENT_POINT = "tirx.StorageRewrite"
# TVM's planner, as its pass is named.
_STOCK_PLANNER = "StaticPlanBlockMemory"
# The last of our passes in the memplan build (host finalization): after it, code generation.
_OUR_LAST_PASS = pass_names.LOWER_BUILTIN

OURS = "tvm-memplan's"
TVMS = "TVM's"


@contextmanager
def _announced(what: str, progress: Callable[[str], None] | None) -> Iterator[None]:
    """Say "`what`..." on `progress` if the block takes more than a second."""
    timer = None
    if progress is not None:
        timer = threading.Timer(1.0, progress, args=(f"{what}...",))
        timer.daemon = True
        timer.start()
    try:
        yield
    finally:
        if timer is not None:
            timer.cancel()


@contextmanager
def stage(name: str, progress: Callable[[str], None] | None) -> Iterator[None]:
    """Run one stage: say so on `progress` once it has taken a second, and turn a failure into
    a one-line ReportError naming the stage."""
    with _announced(name, progress):
        try:
            yield
        except ReportError:
            raise
        except Exception as err:
            raise ReportError(f"{name} failed: {one_line(err)}") from err


class _Stages:
    """Runs the passes of the report one at a time; a pass that raises becomes a Failure."""

    def __init__(self, progress: Callable[[str], None] | None):
        self.progress = progress
        self.failures: list[Failure] = []

    def run(self, key: str, what: str, fn: Callable[[], Any]) -> Any:
        """``fn()``, or None after recording that ``what`` fails."""
        with _announced(what, self.progress):
            try:
                return fn()
            except Exception as err:  # a pass failing on this model is a finding, not an error
                self.failed(key, what, one_line(err))
                return None

    def failed(self, key: str, what: str, error: str) -> None:
        self.failures.append(Failure(key, what, error))

    def failure(self, key: str) -> Failure | None:
        return next((f for f in self.failures if f.stage == key), None)


def _compile_capturing(
    run: Callable[[], object],
    names: list[str],
    *,
    stop_before: str | None = None,
    stop_after: str | None = None,
) -> PassTrace:
    """Run a compilation recording the module each pass in ``names`` receives and returns, and
    end it before the pass ``stop_before`` or after the pass ``stop_after`` (what follows, code
    generation above all, is no memory pass); a failure is recorded (``failing``, ``error``).
    A name is a pass name, or "Outer/Inner": pass Inner run by pass Outer (one pass name can run
    at several places of a pipeline). It runs under the current PassContext's settings (the
    tool's, for a build ``tvm-memplan run`` recorded)."""
    return trace(
        run, names, stop_before=stop_before, stop_after=stop_after, catch=True, inherit=True
    )


def _relax_functions(mod: tvm.IRModule) -> dict[str, tvm.relax.Function]:
    return {
        gv.name_hint: f
        for gv, f in sorted(mod.functions.items(), key=lambda item: item[0].name_hint)
        if isinstance(f, tvm.relax.Function)
    }


def _prim_funcs(mod: tvm.IRModule) -> dict[str, tvm.tirx.PrimFunc]:
    return {
        gv.name_hint: f
        for gv, f in sorted(mod.functions.items(), key=lambda item: item[0].name_hint)
        if isinstance(f, tvm.tirx.PrimFunc)
    }


def _calls_relax_functions(mod: tvm.IRModule) -> bool:
    """Whether a Relax function calls another Relax function of the module."""
    return any(needs.calls_other_relax(mod, name) for name in _relax_functions(mod))


# ---- Relax: in-place calls and memory plans ----------------------------------------------------


# The memplan build's Relax pipeline (docs/pipelines.md): our in-place pass runs twice, each run
# inside the Sequential that puts it before a stock pass; then our planner.
_INPLACE_PASS = pass_names.INPLACE
INPLACE_RUNS = (
    (
        "before_legalization",
        f"{pass_names.LEGALIZE}/{_INPLACE_PASS}",
        "before LegalizeOps, on operator calls",
    ),
    (
        "after_scheduling",
        f"{pass_names.REWRITE_DATAFLOW_RESHAPE}/{_INPLACE_PASS}",
        "before RewriteDataflowReshape, on call_tir of the final (fused, scheduled) PrimFuncs",
    ),
)
OUR_PLANNER = pass_names.PLANNER
#: What a build is traced for when ``tvm-memplan run`` records it: the report of the memplan
#: side reads these modules of the real build (``ToolBuild``).
RECORDED_PASSES = (
    *(path for _, path, _ in INPLACE_RUNS),
    OUR_PLANNER,
    _OUR_COMPACTION,
    _OUR_PLACEMENT,
)
_NOT_ON_GPUS = (
    "not run on GPU targets: their pipelines schedule what they legalize (dlight), so calls "
    "go in place after scheduling only"
)


def _inside(stack: list[str], path: str) -> bool:
    """Whether the passes of ``path`` ("Outer/Inner") run directly one inside the other in
    ``stack`` (outermost first)."""
    parts = path.split("/")
    return any(stack[i : i + len(parts)] == parts for i in range(len(stack)))


@dataclass
class ToolBuild:
    """A build a tool made under ``tvm-memplan run``: the report reads its memplan side off the
    trace of the real build (``RECORDED_PASSES``: what our in-place runs, our planner, our
    compaction and our placement received and returned), and makes its stock side with the
    tool's own pipelines, as the tool passed them, without our passes."""

    traced: PassTrace
    #: The tool's ``relax_pipeline`` (a name, a Pass, a callable, a list, or None).
    relax_pipeline: Any = "default"
    #: The tool's ``tir_pipeline``.
    tir_pipeline: Any = "default"


def _run_relax_pipeline(base, mod: tvm.IRModule, target: tvm.target.Target) -> tvm.IRModule:
    """``mod`` through a Relax pipeline as ``relax.build`` runs the argument it is given."""
    with target:
        if base is None:
            return mod
        if isinstance(base, str | list | tuple | tvm.transform.Pass):
            for p in pipeline.resolve_relax_pipeline(base, target):
                mod = p(mod)
            return mod
        return base(mod)


class _RelaxBuilds:
    """The Relax side of both builds: in-place passes, the planner's input, the plans."""

    def __init__(
        self,
        mod: tvm.IRModule,
        target: tvm.target.Target,
        stages: _Stages,
        tool: ToolBuild | None = None,
    ):
        self.mod, self.target, self.stages, self.tool = mod, target, stages, tool
        self.notes: list[str] = []
        self.runs: list[InplaceRun] = []
        # The memplan build: its Relax pipeline up to our planner, each in-place run recorded.
        self.memplan_input = self._memplan_pipeline(tool.traced if tool is not None else None)
        self.memplan_failed = any(
            stages.failure(f"inplace.memplan.{name}") for name, _, _ in INPLACE_RUNS
        )
        self.stock_mod = None
        if tool is not None:
            # The stock build is the tool's own: its pipeline as it is, no pass added.
            self.notes.append(
                "the stock build is the tool's Relax pipeline as the tool ran it, without "
                "tvm-memplan's passes (and without an in-place pass of TVM's it does not run)"
            )
        elif "gpu" in target.keys:
            # As in the memplan build: dlight cannot schedule the in-place PrimFuncs the pass
            # makes before legalization, and the stock GPU build would fail.
            self.notes.append(
                f"{TVMS} DataflowUseInplaceCalls is not run on GPU targets: their pipelines "
                "cannot schedule the in-place PrimFuncs it makes before legalization"
            )
        elif _calls_relax_functions(mod):
            # TVM 0.27's pass can recurse without end (and kill the process) on such calls.
            self.notes.append(
                f"{TVMS} DataflowUseInplaceCalls is not run: this module calls Relax functions "
                "from Relax functions, on which it can recurse without end"
            )
        else:
            self.stock_mod = stages.run(
                "inplace.stock",
                f"{TVMS} DataflowUseInplaceCalls",
                lambda: tvm.relax.transform.DataflowUseInplaceCalls()(mod),
            )
            if self.stock_mod is None:
                self.notes.append(
                    "the stock build is planned without an in-place pass "
                    f"({TVMS} DataflowUseInplaceCalls fails on this model)"
                )
        # The IR the stock planner receives in the stock build.
        if tool is None:
            self.stock_input = self._planner_input("stock", self.stock_mod or mod)
        else:
            self.stock_input = self._tool_planner_input(mod, tool.relax_pipeline)
        self.ours_plans = self._plans(
            "plan.memplan", f"{OURS} StaticPlanBlockMemory", self.memplan_input
        )
        self.stock_plans = self._plans(
            "plan.stock", f"{TVMS} StaticPlanBlockMemory", self.stock_input
        )
        self.none_plans = None
        if tool is not None:
            self.none_plans = self.stock_plans  # the tool's build has no in-place pass
        elif self.stock_mod is not None or any(r.conversions for r in self.runs):
            none_input = self._planner_input("none", mod)
            self.none_plans = self._plans("plan.none", f"{TVMS} StaticPlanBlockMemory", none_input)
        self.copies_plans = None
        if any(c.copy_free for p in (self.ours_plans or {}).values() for c in p.concats):
            self.copies_plans = self._plans(
                "plan.memplan",
                f"{OURS} StaticPlanBlockMemory (copy_free_concat=False)",
                self.memplan_input,
                copy_free_concat=False,
            )

    def _memplan_pipeline(self, captured: PassTrace | None) -> tvm.IRModule | None:
        """The memplan build's Relax pipeline up to our planner: what each in-place run
        receives and returns (``self.runs``), and what the planner receives. When one of our
        runs fails, the failure is recorded and the planner's input is TVM's pipeline on what
        the runs before it returned. ``captured``: the trace of a real build (a tool's),
        read instead of running the default pipeline."""
        names = [path for _, path, _ in INPLACE_RUNS] + [OUR_PLANNER]

        def run():
            with self.target:
                pipeline.relax_pipeline("default")(self.mod)

        if captured is None:
            captured = _compile_capturing(run, names, stop_before=OUR_PLANNER)
        elif captured.error is None and OUR_PLANNER not in captured.before:
            self.stages.failed(
                "pipeline.memplan",
                "the tool's Relax pipeline",
                "it runs no StaticPlanBlockMemory, so tvm-memplan's planner never ran",
            )
            return None
        last = self.mod  # what the last run that did not fail returned
        failed = False
        for name, path, where in INPLACE_RUNS:
            record = InplaceRun(name, where, None)
            self.runs.append(record)
            what = f"{OURS} DataflowUseInplaceCalls ({where.split(',')[0]})"
            if failed:
                record.skipped = "not run: an earlier run fails"
            elif captured.error is not None and _inside(captured.failing, path):
                self.stages.failed(f"inplace.memplan.{name}", what, one_line(captured.error))
                failed = True
            elif path not in captured.after:
                record.skipped = (
                    _NOT_ON_GPUS
                    if name == "before_legalization" and "gpu" in self.target.keys
                    else "not reached: the pipeline fails before it"
                    if captured.error is not None
                    else "the pipeline has no such point"
                )
            else:
                before, after = captured.before[path], captured.after[path]
                last = after
                record.conversions = analysis.count_calls(after) - analysis.count_calls(before)
                gpu = False if name == "before_legalization" else None
                for fname, func in _relax_functions(before).items():
                    found = self.stages.run(
                        f"inplace.memplan.{name}",
                        what,
                        lambda func=func, before=before, gpu=gpu: self._candidates(
                            func, before, gpu
                        ),
                    )
                    record.candidates[fname] = [] if found is None else found
                    record.callees[fname] = _callees(func)
        if captured.error is None:
            return captured.before[OUR_PLANNER]
        if not failed:
            innermost = captured.failing[-1] if captured.failing else "the pipeline"
            owner = OURS if innermost.startswith("tvm_memplan") else TVMS
            self.stages.failed(
                "pipeline.memplan",
                f"{owner} {_pass_title(innermost)} (in the memplan build's Relax pipeline)",
                one_line(captured.error),
            )
            return None
        self.notes.append(
            "the memplan build is planned without tvm-memplan's in-place runs from the failing "
            "one on (TVM's Relax pipeline on what the runs before it returned)"
        )
        return self._planner_input("memplan", last)

    def _candidates(self, func, mod: tvm.IRModule, gpu: bool | None) -> list:
        # The options the memplan pipeline gives the run (pipeline.py); gpu=None: the target.
        with self.target:
            return analysis.inplace_candidates(func, mod, planner="memplan", gpu=gpu)

    def _tool_planner_input(self, mod: tvm.IRModule, base) -> tvm.IRModule | None:
        """What TVM's planner receives in the tool's Relax pipeline without our passes."""
        captured = _compile_capturing(
            lambda: _run_relax_pipeline(base, mod, self.target),
            [_STOCK_PLANNER],
            stop_before=_STOCK_PLANNER,
        )
        if _STOCK_PLANNER in captured.before:
            return captured.before[_STOCK_PLANNER]
        self.stages.failed(
            "pipeline.stock",
            f"{TVMS} build with the tool's Relax pipeline",
            one_line(captured.error)
            if captured.error is not None
            else "the pipeline runs no StaticPlanBlockMemory",
        )
        return None

    def _planner_input(self, build: str, mod: tvm.IRModule | None) -> tvm.IRModule | None:
        if mod is None:
            return None
        return self.stages.run(
            f"pipeline.{build}",
            f"{TVMS} Relax pipeline up to the memory planner",
            lambda: analysis.planner_input(mod, self.target),
        )

    def _plans(self, key: str, what: str, mod, **options):
        if mod is None:
            return None
        plans = self.stages.run(
            key, what, lambda: analysis.memory_plan(mod, self.target, pipeline=None, **options)
        )
        return None if plans is None else {str(p.function): p for p in plans}

    def functions(self, bindings: dict[str, dict[str, origins.Origin]]) -> list[RelaxFunction]:
        result = []
        for name in _relax_functions(self.mod):
            plan = (self.ours_plans or {}).get(name)
            writers = []
            if plan is not None and self.memplan_input is not None:
                aliases = origins.tensor_writers(self.memplan_input[name])
                known = bindings.get(name, {})
                writers = [
                    [known[w] for w in aliases.get(str(t.binding), []) if w in known]
                    for t in plan.tensors
                ]
            stock = (self.stock_plans or {}).get(name)
            function = RelaxFunction(name, plan, stock, writers)
            if plan is not None and any(c.copy_free for c in plan.concats):
                function.copies_plan = (self.copies_plans or {}).get(name)
            result.append(function)
        return result

    def inplace(self) -> Inplace:
        already = analysis.count_calls(self.mod)
        ran = [r.conversions for r in self.runs if r.conversions is not None]
        conversions = {
            "stock": None
            if self.stock_mod is None
            else analysis.count_calls(self.stock_mod) - already,
            "memplan": sum(ran) if ran else None,
        }
        unsafe = {
            name: list(plan.reverted_writes)
            for name, plan in (self.stock_plans or {}).items()
            if self.stock_mod is not None and len(plan.reverted_writes)
        }
        return Inplace(conversions, self.runs, None, self.notes, unsafe)


def _callees(func: tvm.relax.Function) -> dict[str, str]:
    """Per binding calling a PrimFunc through ``call_tir`` (or ``call_tir_inplace``): the
    PrimFunc."""
    found = {}
    for binding in origins.bindings(func):
        value = binding.value
        if (
            isinstance(value, tvm.relax.Call)
            and getattr(value.op, "name", "") in ("relax.call_tir", "relax.call_tir_inplace")
            and isinstance(value.args[0], tvm.ir.GlobalVar)
        ):
            found[binding.var.name] = value.args[0].name_hint
    return found


def _concats(functions: list[RelaxFunction]) -> Concats:
    """The concatenations of the memplan build's plans, in numbers."""
    totals = Concats()
    for f in functions:
        if f.plan is None:
            continue
        nbytes = {str(t.binding): int(t.bytes) for t in f.plan.tensors}
        for c in f.plan.concats:
            totals.count += 1
            if c.copy_free:
                totals.copy_free += 1
                totals.kernel_runs += bool(c.kernel_runs)
                held = [str(c.output)] if not c.kernel_runs else [str(i) for i in c.inputs]
                totals.bytes_not_copied += sum(max(nbytes.get(name, 0), 0) for name in held)
            else:
                code = str(c.decision)
                totals.kept[code] = totals.kept.get(code, 0) + 1
    return totals


# ---- TIR: compaction and placement -------------------------------------------------------------


def _kernel_calls(func: tvm.tirx.PrimFunc, kernels: set[str]) -> list[str]:
    """The PrimFuncs of the module ``func`` calls."""
    called: set[str] = set()

    def visit(gv):
        if gv.name_hint in kernels:
            called.add(gv.name_hint)

    tvm_ffi.structural_walk(func.body, [(tvm.ir.GlobalVar, visit)])
    return sorted(called)


def _stock_compacted(stock: tvm.IRModule, name: str, regions) -> list:
    """Each buffer after TVM's pass (an ``analysis.Allocation``), matched by position: the pass
    keeps every allocation where it is. When the allocations do not line up (their names in
    order), None for each."""
    if name not in {gv.name_hint for gv in stock.functions}:
        return [None] * len(regions)
    after = [a for a in analysis.allocation_summary(stock[name]) if a.allocates]
    if [a.name for a in after] != [str(r.name) for r in regions]:
        return [None] * len(regions)
    return after


def _kernels(
    memplan: dict[str, tvm.IRModule],
    stock_seen: dict[str, tvm.IRModule],
    stages: _Stages,
    writers: dict[str, list[origins.Origin]],
) -> list[Kernel]:
    """Per PrimFunc: its buffers as our compaction receives them (ours and TVM's pass on them),
    and each build's placement."""
    kernels: dict[str, Kernel] = {}

    def kernel(name: str) -> Kernel:
        if name not in kernels:
            found = writers.get(name, [])
            kernels[name] = Kernel(name, found[0].kind if found else "", found)
        return kernels[name]

    compacting = memplan.get(_OUR_COMPACTION)
    if compacting is not None:
        stock = stages.run(
            "compaction.stock",
            f"{TVMS} CompactBufferAllocation",
            lambda: tvm.s_tir.transform.CompactBufferAllocation()(compacting),
        )
        for name, func in _prim_funcs(compacting).items():
            regions = stages.run(
                "compaction.memplan",
                f"{OURS} CompactBufferAllocation",
                lambda func=func: analysis.compacted_regions(func),
            )
            if not regions:
                continue
            after = (
                [None] * len(regions) if stock is None else _stock_compacted(stock, name, regions)
            )
            kernel(name).buffers = [
                Buffer(i, r, None if a is None else a.size_bytes, None if a is None else a.size)
                for i, (r, a) in enumerate(zip(regions, after, strict=True))
            ]

    def place(build: str, mod: tvm.IRModule) -> list:
        owner = OURS if build == "memplan" else TVMS
        plan = stages.run(
            f"placement.{build}",
            f"{owner} LowerTVMBuiltin",
            lambda: analysis.allocation_plan(mod),
        )
        for d in plan or []:
            k = kernel(str(d.function))
            (k.placement if build == "memplan" else k.stock_placement).append(d)
        return plan or []

    placing = memplan.get(_OUR_PLACEMENT)
    if placing is not None:
        plan = place("memplan", placing)
        if plan:
            # What a larger limit could move to the stack: the same decisions without one.
            unlimited = stages.run(
                "placement.memplan",
                f"{OURS} LowerTVMBuiltin",
                lambda: _without_stack_limit(placing),
            )
            for d, u in zip(plan, unlimited or [], strict=False):
                kernel(str(d.function)).stack_eligible.append(
                    placement_of(d, "memplan") == "workspace"
                    and placement_of(u, "memplan") == "stack"
                )
        names = set(_prim_funcs(placing))
        for name, func in _prim_funcs(placing).items():
            calls = _kernel_calls(func, names - {name})
            if calls:
                kernel(name).calls = calls
    stock_placing = stock_seen.get(_STOCK_PLACEMENT_POINT)
    if stock_placing is not None:
        place("stock", stock_placing)
    # Which builds have each kernel (in-place kernels exist in one build only).
    present = {
        "memplan": set(_prim_funcs(placing)) if placing is not None else set(),
        "stock": set(_prim_funcs(stock_placing)) if stock_placing is not None else set(),
    }
    for k in kernels.values():
        k.builds = [b for b in ("stock", "memplan") if k.name in present[b]]
    return list(kernels.values())


def _without_stack_limit(mod: tvm.IRModule) -> list:
    config = {"tvm_memplan.max_stack_alloca": _NO_LIMIT}
    with tvm.transform.PassContext(config=config):
        return analysis.allocation_plan(mod)


_NO_LIMIT = 1 << 40


def _compile_tir(
    mod: tvm.IRModule,
    relax: _RelaxBuilds | None,
    target: tvm.target.Target,
    stages: _Stages,
    progress,
    tool: ToolBuild | None = None,
) -> tuple[dict[str, tvm.IRModule], dict[str, tvm.IRModule]]:
    """What the TIR passes receive in each build (in a tool's build: the memplan side as the
    real build's trace recorded it, the stock side built with the tool's pipelines)."""
    if tool is not None:
        tir = tool.tir_pipeline if tool.tir_pipeline != pipeline.PIPELINE_NAME else "default"

        def build():
            if _relax_functions(mod):
                return tvm.compile(
                    mod, target=target, relax_pipeline=tool.relax_pipeline, tir_pipeline=tir
                )
            return tvm.compile(mod, target=target, tir_pipeline=tir)

        with _announced("compiling with the tool's pipelines", progress):
            stock = _compile_capturing(
                build, [_STOCK_PLACEMENT_POINT], stop_before=_STOCK_PLACEMENT_POINT
            )
        if stock.error is not None:
            failing = stock.failing[-1] if stock.failing else None
            stages.failed(
                "compile.stock",
                f"{TVMS} {_pass_title(failing)} (in the stock build)",
                one_line(stock.error),
            )
        return dict(tool.traced.before), stock.before
    with _announced('compiling with the "memplan" pipelines', progress):
        if relax is not None and relax.memplan_failed:
            # An in-place run of ours fails: the memplan TIR pipeline on the module without it.
            run = lambda: tvm.compile(mod, target=target, tir_pipeline=pipeline.PIPELINE_NAME)  # noqa: E731
        else:
            run = lambda: pipeline.compile(mod, target=target)  # noqa: E731
        memplan = _compile_capturing(
            run, [_OUR_COMPACTION, _OUR_PLACEMENT], stop_after=_OUR_LAST_PASS
        )
        if memplan.error is not None:
            failing = memplan.failing[-1] if memplan.failing else None
            owner = OURS if failing and failing.startswith("tvm_memplan") else TVMS
            stages.failed(
                "compile.memplan",
                f"{owner} {_pass_title(failing)} (in the memplan build)",
                one_line(memplan.error),
            )
        stock_input = mod if relax is None else (relax.stock_mod or mod)
        stock = _compile_capturing(
            lambda: tvm.compile(stock_input, target=target),
            [_STOCK_PLACEMENT_POINT],
            stop_before=_STOCK_PLACEMENT_POINT,
        )
        if stock.error is not None:
            failing = stock.failing[-1] if stock.failing else None
            stages.failed(
                "compile.stock",
                f"{TVMS} {_pass_title(failing)} (in the stock build)",
                one_line(stock.error),
            )
    return memplan.before, stock.before


def _pass_title(name: str | None) -> str:
    if not name:
        return "build"
    return name.removeprefix("tvm_memplan.").split(".")[-1]


def build_report(
    loaded: LoadedModel | tvm.IRModule,
    target: tvm.target.Target,
    *,
    source: str = "",
    shape_values: dict[str, int] | None = None,
    progress: Callable[[str], None] | None = None,
    tool: ToolBuild | None = None,
) -> Report:
    """The report as data. ``shape_values`` gives values to symbolic shape variables (bounded
    ones default to their bound). ``progress`` receives a line for each stage that takes more
    than a second. ``tool``: the report of a build a tool made (``tvm-memplan run``), its
    memplan side read off that build, its stock side the tool's pipelines without ours."""
    if isinstance(loaded, tvm.IRModule):
        loaded = LoadedModel(loaded)
    mod = loaded.mod
    stages = _Stages(progress)
    bindings = origins.binding_origins(mod, loaded.sources)
    relax = None
    if _relax_functions(mod):
        relax = _RelaxBuilds(mod, target, stages, tool)
    memplan_tir, stock_tir = _compile_tir(mod, relax, target, stages, progress, tool)
    writers: dict[str, list[origins.Origin]] = {}
    for planned in (relax.memplan_input, relax.stock_input) if relax is not None else ():
        if planned is None:
            continue
        for name, func in _relax_functions(planned).items():
            known = bindings.get(name, {})
            for kernel, names in origins.kernel_writers(func).items():
                if kernel not in writers:  # the same kernel in both builds: once
                    writers[kernel] = [known[n] for n in names if n in known]
    kernels = _kernels(memplan_tir, stock_tir, stages, writers)
    functions = relax.functions(bindings) if relax is not None else []
    report = Report(
        input=source,
        target=str(target.kind.name),
        summary=None,  # filled below, from the rest
        relax=functions,
        inplace=relax.inplace() if relax is not None else None,
        kernels=kernels,
        weights=needs.weights(mod, bindings, loaded.constant_names),
        concats=_concats(functions) if relax is not None else None,
        failures=stages.failures,
    )
    report.summary = needs.summary(report, relax, shape_values or {})
    report.target_object = target
    if relax is not None:
        report.planner_inputs = {"stock": relax.stock_input, "memplan": relax.memplan_input}
        found = stages.run(
            "plan.formulas",
            "both planners with the shape variables' bounds changed",
            lambda: solve.formulas(report, shape_values),
        )
        report.formulas = found or {}
    return report
