"""Running the builds the report reads: each pipeline runs traced, and what a memory pass receives
there is kept for ``assemble`` to judge.

The Relax functions are judged where the in-place passes and the planners run: the memplan
build's Relax pipeline runs up to our planner while an instrument records what each of the two
runs of our in-place pass receives and returns, and what the planner receives; TVM's in-place
pass runs on the module as imported, then TVM's pipeline up to its planner. The TIR is judged
where each pass receives it: the memplan build is compiled once with the ``"memplan"``
pipelines while an instrument records what our compaction and our placement tagging receive,
the stock build up to TVM's StorageRewrite (where placement is decided in the memplan build).
A build a tool made (``tvm-memplan run``, ``ToolBuild``) is read off its own trace instead, its
stock side built with the tool's pipelines.

Every step runs on its own (``Stages``): when one raises, the report records a ``Failure`` for
its rows and goes on with the rest (a stock build without TVM's failing in-place pass, the TIR of
the memplan build without ours, ...).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import tvm

from .. import analysis, pass_names, pipeline
from ..instrument import PassTrace, trace
from . import needs
from .load import ReportError, one_line
from .model import Failure

__all__ = [
    "INPLACE_RUNS",
    "OURS",
    "OUR_PLANNER",
    "RECORDED_PASSES",
    "TVMS",
    "Stages",
    "TirInputs",
    "ToolBuild",
    "announced",
    "compile_tir",
    "pass_title",
    "planner_input",
    "prim_funcs",
    "relax_functions",
    "stage",
    "stock_inplace",
    "tool_planner_input",
    "trace_memplan_relax",
]

OURS = "tvm-memplan's"
TVMS = "TVM's"

# The memplan build's Relax pipeline (docs/pipelines.md): our in-place pass runs twice, each run
# inside the Sequential that puts it before a stock pass; then our planner.
_INPLACE_PASS = pass_names.INPLACE
#: Our in-place runs: (name, "Outer/Inner" path in the pipeline, where it runs).
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
_OUR_COMPACTION = pass_names.COMPACTION
_OUR_PLACEMENT = pass_names.PLACEMENT
#: What a build is traced for when ``tvm-memplan run`` records it: the report of the memplan
#: side reads these modules of the real build (``ToolBuild``).
RECORDED_PASSES = (
    *(path for _, path, _ in INPLACE_RUNS),
    OUR_PLANNER,
    _OUR_COMPACTION,
    _OUR_PLACEMENT,
)
# Where placement is decided in the memplan build: our tagging runs right before it.
_STOCK_PLACEMENT_POINT = "tirx.StorageRewrite"
# TVM's planner, as its pass is named.
# The last of our passes in the memplan build (host finalization): after it, code generation.
_OUR_LAST_PASS = pass_names.LOWER_BUILTIN


# ---- running one step ------------------------------------------------------------------------


@contextmanager
def announced(what: str, progress: Callable[[str], None] | None) -> Iterator[None]:
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
    with announced(name, progress):
        try:
            yield
        except ReportError:
            raise
        except Exception as err:
            raise ReportError(f"{name} failed: {one_line(err)}") from err


class Stages:
    """Runs the passes of the report one at a time; a pass that raises becomes a Failure."""

    def __init__(self, progress: Callable[[str], None] | None):
        self.progress = progress
        self.failures: list[Failure] = []

    def run(self, key: str, what: str, fn: Callable[[], Any]) -> Any:
        """``fn()``, or None after recording that ``what`` fails."""
        with announced(what, self.progress):
            try:
                return fn()
            except Exception as err:  # a pass failing on this model is a finding, not an error
                self.failed(key, what, one_line(err))
                return None

    def failed(self, key: str, what: str, error: str) -> None:
        self.failures.append(Failure(key, what, error))

    def failure(self, key: str) -> Failure | None:
        return next((f for f in self.failures if f.stage == key), None)


def _trace_compile(
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


def pass_title(name: str | None) -> str:
    """A pass as a failure names it: "StaticPlanBlockMemory" ("build" for none)."""
    if not name:
        return "build"
    return name.removeprefix("tvm_memplan.").split(".")[-1]


def relax_functions(mod: tvm.IRModule) -> dict[str, tvm.relax.Function]:
    return {
        gv.name_hint: f
        for gv, f in sorted(mod.functions.items(), key=lambda item: item[0].name_hint)
        if isinstance(f, tvm.relax.Function)
    }


def prim_funcs(mod: tvm.IRModule) -> dict[str, tvm.tirx.PrimFunc]:
    return {
        gv.name_hint: f
        for gv, f in sorted(mod.functions.items(), key=lambda item: item[0].name_hint)
        if isinstance(f, tvm.tirx.PrimFunc)
    }


# ---- Relax: up to the planners --------------------------------------------------------------


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


def trace_memplan_relax(
    mod: tvm.IRModule, target: tvm.target.Target, stages: Stages, tool: ToolBuild | None
) -> PassTrace | None:
    """The memplan build's Relax pipeline up to our planner, traced: what each in-place run
    (``INPLACE_RUNS``) receives and returns, and what the planner receives; a failure is in
    the trace. A tool's build is read off its own trace: None, the failure recorded, when its
    pipeline runs no planner of ours."""
    if tool is None:
        names = [path for _, path, _ in INPLACE_RUNS] + [OUR_PLANNER]

        def run():
            with target:
                pipeline.relax_pipeline("default")(mod)

        return _trace_compile(run, names, stop_before=OUR_PLANNER)
    captured = tool.traced
    if captured.error is None and OUR_PLANNER not in captured.before:
        stages.failed(
            "pipeline.memplan",
            "the tool's Relax pipeline",
            "it runs no StaticPlanBlockMemory, so tvm-memplan's planner never ran",
        )
        return None
    return captured


def stock_inplace(
    mod: tvm.IRModule, target: tvm.target.Target, stages: Stages, tool: ToolBuild | None
) -> tuple[tvm.IRModule | None, list[str]]:
    """The stock build's in-place step: ``mod`` after TVM's DataflowUseInplaceCalls (None where
    it does not run or fails), and notes saying why it did not run."""
    if tool is not None:
        # The stock build is the tool's own: its pipeline as it is, no pass added.
        return None, [
            "the stock build is the tool's Relax pipeline as the tool ran it, without "
            "tvm-memplan's passes (and without an in-place pass of TVM's it does not run)"
        ]
    if "gpu" in target.keys:
        # As in the memplan build: dlight cannot schedule the in-place PrimFuncs the pass
        # makes before legalization, and the stock GPU build would fail.
        return None, [
            f"{TVMS} DataflowUseInplaceCalls is not run on GPU targets: their pipelines "
            "cannot schedule the in-place PrimFuncs it makes before legalization"
        ]
    if any(needs.calls_other_relax(mod, name) for name in relax_functions(mod)):
        # TVM 0.27's pass can recurse without end (and kill the process) on such calls.
        return None, [
            f"{TVMS} DataflowUseInplaceCalls is not run: this module calls Relax functions "
            "from Relax functions, on which it can recurse without end"
        ]
    stock_mod = stages.run(
        "inplace.stock",
        f"{TVMS} DataflowUseInplaceCalls",
        lambda: tvm.relax.transform.DataflowUseInplaceCalls()(mod),
    )
    if stock_mod is None:
        return None, [
            "the stock build is planned without an in-place pass "
            f"({TVMS} DataflowUseInplaceCalls fails on this model)"
        ]
    return stock_mod, []


def planner_input(
    build: str, mod: tvm.IRModule | None, target: tvm.target.Target, stages: Stages
) -> tvm.IRModule | None:
    """What TVM's Relax pipeline hands the memory planner for ``mod`` (None where ``mod`` is,
    or the pipeline fails: recorded as ``pipeline.<build>``)."""
    if mod is None:
        return None
    return stages.run(
        f"pipeline.{build}",
        f"{TVMS} Relax pipeline up to the memory planner",
        lambda: analysis.planner_input(mod, target),
    )


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


def tool_planner_input(
    mod: tvm.IRModule, base, target: tvm.target.Target, stages: Stages
) -> tvm.IRModule | None:
    """What TVM's planner receives in the tool's Relax pipeline ``base`` without our passes."""
    captured = _trace_compile(
        lambda: _run_relax_pipeline(base, mod, target),
        [pass_names.STOCK_PLANNER],
        stop_before=pass_names.STOCK_PLANNER,
    )
    if pass_names.STOCK_PLANNER in captured.before:
        return captured.before[pass_names.STOCK_PLANNER]
    stages.failed(
        "pipeline.stock",
        f"{TVMS} build with the tool's Relax pipeline",
        one_line(captured.error)
        if captured.error is not None
        else "the pipeline runs no StaticPlanBlockMemory",
    )
    return None


# ---- TIR: up to compaction and placement ----------------------------------------------------


@dataclass
class TirInputs:
    """What the TIR memory passes receive in each build (None where a build does not get
    there)."""

    #: The memplan build: what our CompactBufferAllocation receives.
    compacting: tvm.IRModule | None
    #: The memplan build: what our placement tagging receives.
    placing: tvm.IRModule | None
    #: The stock build: what TVM's StorageRewrite receives (where placement is decided in the
    #: memplan build).
    stock_placing: tvm.IRModule | None


def compile_tir(
    mod: tvm.IRModule,
    target: tvm.target.Target,
    stages: Stages,
    progress,
    *,
    memplan_failed: bool,
    stock_mod: tvm.IRModule | None,
    tool: ToolBuild | None = None,
) -> TirInputs:
    """Both builds of ``mod`` up to their TIR memory passes (in a tool's build: the memplan side
    as the real build's trace recorded it, the stock side built with the tool's pipelines).
    ``memplan_failed``: an in-place run of ours fails, so the memplan build runs without our
    Relax pipeline; ``stock_mod``: the stock build's module after TVM's in-place pass."""
    if tool is not None:
        tir = tool.tir_pipeline if tool.tir_pipeline != pipeline.PIPELINE_NAME else "default"

        def build():
            if relax_functions(mod):
                return tvm.compile(
                    mod, target=target, relax_pipeline=tool.relax_pipeline, tir_pipeline=tir
                )
            return tvm.compile(mod, target=target, tir_pipeline=tir)

        with announced("compiling with the tool's pipelines", progress):
            stock = _trace_stock(build)
        memplan_before = dict(tool.traced.before)
    else:
        with announced('compiling with the "memplan" pipelines', progress):
            memplan_before = _trace_memplan_tir(mod, target, stages, memplan_failed)
            stock = _trace_stock(lambda: tvm.compile(stock_mod or mod, target=target))
    if stock.error is not None:
        failing = stock.failing[-1] if stock.failing else None
        stages.failed(
            "compile.stock",
            f"{TVMS} {pass_title(failing)} (in the stock build)",
            one_line(stock.error),
        )
    return TirInputs(
        memplan_before.get(_OUR_COMPACTION),
        memplan_before.get(_OUR_PLACEMENT),
        stock.before.get(_STOCK_PLACEMENT_POINT),
    )


def _trace_memplan_tir(
    mod: tvm.IRModule, target: tvm.target.Target, stages: Stages, memplan_failed: bool
) -> dict[str, tvm.IRModule]:
    """The memplan build up to the end of our passes: what our compaction and our placement
    receive."""
    if memplan_failed:
        # An in-place run of ours fails: the memplan TIR pipeline on the module without it.
        run = lambda: tvm.compile(mod, target=target, tir_pipeline=pipeline.PIPELINE_NAME)  # noqa: E731
    else:
        run = lambda: pipeline.compile(mod, target=target)  # noqa: E731
    memplan = _trace_compile(run, [_OUR_COMPACTION, _OUR_PLACEMENT], stop_after=_OUR_LAST_PASS)
    if memplan.error is not None:
        failing = memplan.failing[-1] if memplan.failing else None
        owner = OURS if failing and failing.startswith("tvm_memplan") else TVMS
        stages.failed(
            "compile.memplan",
            f"{owner} {pass_title(failing)} (in the memplan build)",
            one_line(memplan.error),
        )
    return memplan.before


def _trace_stock(build: Callable[[], object]) -> PassTrace:
    """A stock build up to TVM's StorageRewrite."""
    return _trace_compile(build, [_STOCK_PLACEMENT_POINT], stop_before=_STOCK_PLACEMENT_POINT)
