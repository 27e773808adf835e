"""Building the report: what each memory pass does to a model, next to what the stock TVM pass
does, and the memory the stock and the memplan builds need to run it.

``trace_builds`` runs the builds and keeps what each memory pass receives there; here the analyses
judge those modules (our passes' and TVM's side by side), and their records are assembled into
a ``model.Report``, which every renderer reads. A step that raises becomes a ``Failure`` for its
rows, and the report goes on with the rest.
"""

from __future__ import annotations

from collections.abc import Callable

import tvm
import tvm_ffi

from .. import analysis
from ..instrument import PassTrace
from . import needs, origins, solve
from .load import LoadedModel, one_line
from .model import (
    Buffer,
    Concats,
    Inplace,
    InplaceRun,
    Kernel,
    RelaxFunction,
    Report,
)
from .needs import placement_of
from .trace_builds import (
    INPLACE_RUNS,
    OUR_PLANNER,
    OURS,
    TVMS,
    Stages,
    TirInputs,
    ToolBuild,
    compile_tir,
    pass_title,
    planner_input,
    prim_funcs,
    relax_functions,
    stock_inplace,
    tool_planner_input,
    trace_memplan_relax,
)

__all__ = ["build_report"]


# ---- Relax: in-place calls and memory plans ----------------------------------------------------

_NOT_ON_GPUS = (
    "not run on GPU targets: their pipelines schedule what they legalize (dlight), so calls "
    "go in place after scheduling only"
)


def _inside(stack: list[str], path: str) -> bool:
    """Whether the passes of ``path`` ("Outer/Inner") run directly one inside the other in
    ``stack`` (outermost first)."""
    parts = path.split("/")
    return any(stack[i : i + len(parts)] == parts for i in range(len(stack)))


class _RelaxBuilds:
    """The Relax side of both builds: in-place passes, the planner's input, the plans."""

    def __init__(
        self,
        mod: tvm.IRModule,
        target: tvm.target.Target,
        stages: Stages,
        tool: ToolBuild | None = None,
    ):
        self.mod, self.target, self.stages, self.tool = mod, target, stages, tool
        self.notes: list[str] = []
        self.runs: list[InplaceRun] = []
        # The memplan build: its Relax pipeline up to our planner, each in-place run recorded.
        self.memplan_input = self._inplace_runs(trace_memplan_relax(mod, target, stages, tool))
        self.memplan_failed = any(
            stages.failure(f"inplace.memplan.{name}") for name, _, _ in INPLACE_RUNS
        )
        # The stock build: TVM's in-place pass where it runs, then the IR its planner receives.
        self.stock_mod, notes = stock_inplace(mod, target, stages, tool)
        self.notes += notes
        if tool is None:
            self.stock_input = planner_input("stock", self.stock_mod or mod, target, stages)
        else:
            self.stock_input = tool_planner_input(mod, tool.relax_pipeline, target, stages)
        # Both planners on what each build's planner receives.
        self.ours_plans = self._plans(
            "plan.memplan", f"{OURS} StaticPlanBlockMemory", self.memplan_input
        )
        self.stock_plans = self._plans(
            "plan.stock", f"{TVMS} StaticPlanBlockMemory", self.stock_input
        )
        self.none_plans = self._none_plans()
        self.copies_plans = self._copies_plans()

    def _inplace_runs(self, captured: PassTrace | None) -> tvm.IRModule | None:
        """Our in-place runs as the memplan build's trace recorded them (``self.runs``: what
        each converted and could convert), and what the planner receives. When one of our runs
        fails, the failure is recorded and the planner's input is TVM's pipeline on what the
        runs before it returned."""
        if captured is None:
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
                self._judge_run(record, name, what, before, after)
        if captured.error is None:
            return captured.before[OUR_PLANNER]
        if not failed:
            innermost = captured.failing[-1] if captured.failing else "the pipeline"
            owner = OURS if innermost.startswith("tvm_memplan") else TVMS
            self.stages.failed(
                "pipeline.memplan",
                f"{owner} {pass_title(innermost)} (in the memplan build's Relax pipeline)",
                one_line(captured.error),
            )
            return None
        self.notes.append(
            "the memplan build is planned without tvm-memplan's in-place runs from the failing "
            "one on (TVM's Relax pipeline on what the runs before it returned)"
        )
        return planner_input("memplan", last, self.target, self.stages)

    def _judge_run(
        self, record: InplaceRun, name: str, what: str, before: tvm.IRModule, after: tvm.IRModule
    ) -> None:
        """What one in-place run converted, and per function the candidates it judged."""
        record.conversions = analysis.count_calls(after) - analysis.count_calls(before)
        gpu = False if name == "before_legalization" else None
        for fname, func in relax_functions(before).items():
            found = self.stages.run(
                f"inplace.memplan.{name}",
                what,
                lambda func=func, before=before, gpu=gpu: self._candidates(func, before, gpu),
            )
            record.candidates[fname] = [] if found is None else found
            record.callees[fname] = _callees(func)

    def _candidates(self, func, mod: tvm.IRModule, gpu: bool | None) -> list:
        # The options the memplan pipeline gives the run (pipeline.py); gpu=None: the target.
        with self.target:
            return analysis.inplace_candidates(func, mod, planner="memplan", gpu=gpu)

    def _plans(self, key: str, what: str, mod, **options):
        if mod is None:
            return None
        plans = self.stages.run(
            key, what, lambda: analysis.memory_plan(mod, self.target, pipeline=None, **options)
        )
        return None if plans is None else {str(p.function): p for p in plans}

    def _none_plans(self):
        """TVM's planner with no in-place pass at all (None where no in-place pass changed
        anything: the stock plans are those)."""
        if self.tool is not None:
            return self.stock_plans  # the tool's build has no in-place pass
        if self.stock_mod is None and not any(r.conversions for r in self.runs):
            return None
        none_input = planner_input("none", self.mod, self.target, self.stages)
        return self._plans("plan.none", f"{TVMS} StaticPlanBlockMemory", none_input)

    def _copies_plans(self):
        """Our planner with every concatenation copying, where one is copy-free."""
        if not any(c.copy_free for p in (self.ours_plans or {}).values() for c in p.concats):
            return None
        return self._plans(
            "plan.memplan",
            f"{OURS} StaticPlanBlockMemory (copy_free_concat=False)",
            self.memplan_input,
            copy_free_concat=False,
        )

    def functions(self, bindings: dict[str, dict[str, origins.Origin]]) -> list[RelaxFunction]:
        result = []
        for name in relax_functions(self.mod):
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


class _KernelTable:
    """The report's kernels by name, each made when first met (its writers, and its kind from
    them), in that order."""

    def __init__(self, writers: dict[str, list[origins.Origin]]):
        self.writers = writers
        self.kernels: dict[str, Kernel] = {}

    def __getitem__(self, name: str) -> Kernel:
        if name not in self.kernels:
            found = self.writers.get(name, [])
            self.kernels[name] = Kernel(name, found[0].kind if found else "", found)
        return self.kernels[name]


def _kernels(
    tir: TirInputs, stages: Stages, writers: dict[str, list[origins.Origin]]
) -> list[Kernel]:
    """Per PrimFunc: its buffers as our compaction receives them (ours and TVM's pass on them),
    and each build's placement."""
    kernels = _KernelTable(writers)
    if tir.compacting is not None:
        _judge_compaction(tir.compacting, stages, kernels)
    if tir.placing is not None:
        _judge_memplan_placement(tir.placing, stages, kernels)
    if tir.stock_placing is not None:
        _place("stock", tir.stock_placing, stages, kernels)
    # Which builds have each kernel (in-place kernels exist in one build only).
    present = {
        "memplan": set(prim_funcs(tir.placing)) if tir.placing is not None else set(),
        "stock": set(prim_funcs(tir.stock_placing)) if tir.stock_placing is not None else set(),
    }
    for k in kernels.kernels.values():
        k.builds = [b for b in ("stock", "memplan") if k.name in present[b]]
    return list(kernels.kernels.values())


def _judge_compaction(compacting: tvm.IRModule, stages: Stages, kernels: _KernelTable) -> None:
    """Each kernel's buffers: our compaction's regions, and TVM's CompactBufferAllocation run
    on the same module beside it."""
    stock = stages.run(
        "compaction.stock",
        f"{TVMS} CompactBufferAllocation",
        lambda: tvm.s_tir.transform.CompactBufferAllocation()(compacting),
    )
    for name, func in prim_funcs(compacting).items():
        regions = stages.run(
            "compaction.memplan",
            f"{OURS} CompactBufferAllocation",
            lambda func=func: analysis.compacted_regions(func),
        )
        if not regions:
            continue
        after = [None] * len(regions) if stock is None else _stock_compacted(stock, name, regions)
        kernels[name].buffers = [
            Buffer(i, r, None if a is None else a.size_bytes, None if a is None else a.size)
            for i, (r, a) in enumerate(zip(regions, after, strict=True))
        ]


def _place(build: str, mod: tvm.IRModule, stages: Stages, kernels: _KernelTable) -> list:
    """A build's placement decisions, each added to its kernel."""
    owner = OURS if build == "memplan" else TVMS
    plan = stages.run(
        f"placement.{build}",
        f"{owner} LowerTVMBuiltin",
        lambda: analysis.allocation_plan(mod),
    )
    for d in plan or []:
        k = kernels[str(d.function)]
        (k.placement if build == "memplan" else k.stock_placement).append(d)
    return plan or []


def _judge_memplan_placement(placing: tvm.IRModule, stages: Stages, kernels: _KernelTable) -> None:
    """The memplan build's placement, what a larger stack limit would move to the stack, and
    the kernels each kernel calls."""
    plan = _place("memplan", placing, stages, kernels)
    if plan:
        # What a larger limit could move to the stack: the same decisions without one.
        unlimited = stages.run(
            "placement.memplan",
            f"{OURS} LowerTVMBuiltin",
            lambda: _without_stack_limit(placing),
        )
        for d, u in zip(plan, unlimited or [], strict=False):
            kernels[str(d.function)].stack_eligible.append(
                placement_of(d, "memplan") == "workspace" and placement_of(u, "memplan") == "stack"
            )
    names = set(prim_funcs(placing))
    for name, func in prim_funcs(placing).items():
        calls = _kernel_calls(func, names - {name})
        if calls:
            kernels[name].calls = calls


def _without_stack_limit(mod: tvm.IRModule) -> list:
    config = {"tvm_memplan.max_stack_alloca": _NO_LIMIT}
    with tvm.transform.PassContext(config=config):
        return analysis.allocation_plan(mod)


_NO_LIMIT = 1 << 40


def _kernel_writers(
    relax: _RelaxBuilds | None, bindings: dict[str, dict[str, origins.Origin]]
) -> dict[str, list[origins.Origin]]:
    """Per kernel, the model's bindings that write through it (of the memplan build's planner
    input, else the stock build's)."""
    writers: dict[str, list[origins.Origin]] = {}
    for planned in (relax.memplan_input, relax.stock_input) if relax is not None else ():
        if planned is None:
            continue
        for name, func in relax_functions(planned).items():
            known = bindings.get(name, {})
            for kernel, names in origins.kernel_writers(func).items():
                if kernel not in writers:  # the same kernel in both builds: once
                    writers[kernel] = [known[n] for n in names if n in known]
    return writers


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
    stages = Stages(progress)
    bindings = origins.binding_origins(mod, loaded.sources)
    relax = None
    if relax_functions(mod):
        relax = _RelaxBuilds(mod, target, stages, tool)
    tir = compile_tir(
        mod,
        target,
        stages,
        progress,
        memplan_failed=relax is not None and relax.memplan_failed,
        stock_mod=relax.stock_mod if relax is not None else None,
        tool=tool,
    )
    kernels = _kernels(tir, stages, _kernel_writers(relax, bindings))
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
