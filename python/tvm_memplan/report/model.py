"""The report's data, which the text, JSON and HTML renderers and the fit check all read, so a
figure cannot differ between them. ``Report.to_json()`` is what ``--json`` prints.

What the analyses decide is kept as their own records, reflected C++ objects whose fields and
docs come from C++ (``analysis.FunctionMemoryPlan``, ``CompactedRegion``,
``AllocationDecision``, ``InplaceCandidate``); the dataclasses here only add what the report
knows beside them: names users recognise, the stock side where it comes from another run, the
memory the builds need, failures.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .origins import Origin
from .records import to_data

__all__ = [
    "Buffer",
    "Concats",
    "Failure",
    "FitBudget",
    "FitContributor",
    "FitResult",
    "FunctionNeeds",
    "Inplace",
    "InplaceRun",
    "Kernel",
    "Needs",
    "RelaxFunction",
    "Report",
    "SolvePoint",
    "Solution",
    "Summary",
    "Weight",
]

#: The two builds the report compares.
BUILDS = ("stock", "memplan")


@dataclass(frozen=True)
class Failure:
    """A pass that raises on this model. The report shows it in that pass's rows and goes on
    with everything else."""

    #: What failed, as the report's data names it ("inplace.stock", "plan.memplan", ...).
    stage: str
    #: Whose pass, for people: "TVM's DataflowUseInplaceCalls".
    what: str
    #: The error, one line.
    error: str

    @property
    def text(self) -> str:
        return f"{self.what} fails on this model: {self.error}"


@dataclass
class Needs:
    """The memory one build needs to run a function, or the whole model: what a device budget
    is checked against. None: unknown (a failing pass, or a symbolic size without a value)."""

    #: Parameters and constants the module keeps.
    weights: int | None = 0
    #: What the Relax VM allocates for the function once planned: its storages and the
    #: tensors allocated on their own (function results, escaping tensors).
    vm: int | None = 0
    #: The most TVMBackendAllocWorkspace bytes live at once: the largest kernel's, kernels
    #: running one at a time (one that calls another adds the callee's).
    workspace: int | None = 0
    #: The most stack bytes one kernel takes, the same way.
    stack: int | None = 0
    #: What TVM's pooled allocator (the VM's, and MLC-LLM's engine's) holds once every function
    #: has run (analysis.held_by_records: per rounded size, the most blocks one function asks
    #: for; allocations of constant size). The model's figure only (None per function).
    held: int | None = None
    #: weights + vm + workspace + stack.
    total: int | None = 0
    #: Secondary: everything summed (weights, VM, and every kernel's workspace and stack), as
    #: if no allocation were ever freed or reused.
    all_allocations: int | None = 0
    #: Figures of symbolic size, as expressions of the shape variables (before evaluation).
    symbolic: dict[str, str] = field(default_factory=dict)


#: The summary's rows, in order, as the text and the page show them: (Needs field, label).
SUMMARY_FIGURES = (
    ("weights", "weights (parameters and constants)"),
    ("vm", "VM, planned"),
    ("held", "VM, held by the pooled allocator"),
    ("workspace", "workspace peak (largest kernel)"),
    ("stack", "stack peak (largest kernel)"),
    ("total", "total"),
    ("all_allocations", "all allocations summed (not a peak)"),
)


@dataclass
class FunctionNeeds:
    function: str
    #: "relax" (an entry function of the VM) or "tir" (a PrimFunc, in a TIR-only module).
    kind: str
    stock: Needs
    memplan: Needs


@dataclass
class Summary:
    """Memory to run the model: the stock TVM build and the memplan build, in total and per
    function."""

    stock: Needs
    memplan: Needs
    functions: list[FunctionNeeds]
    #: The shape-variable values the figures are evaluated at ({} when all sizes are static).
    evaluated_at: dict[str, int] = field(default_factory=dict)
    #: How each value was chosen: "bound" (tir_var_upper_bound) or "given".
    value_sources: dict[str, str] = field(default_factory=dict)
    #: Shape variables neither bounded nor given: figures depending on them stay symbolic.
    unknown_vars: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Weight:
    """A parameter or constant the module keeps."""

    name: str
    function: str
    bytes: int
    shape: list
    dtype: str
    #: "constant" (kept in the module) or "parameter" (passed in by the caller).
    kind: str
    #: Where it is used: the op reading it and the source model's name for that op.
    used_by: Origin | None = None


@dataclass
class RelaxFunction:
    """The memory plans of one Relax function."""

    function: str
    #: tvm-memplan's planner on the memplan build's IR (its input in the memplan pipeline,
    #: after our in-place pass), with TVM's planner on the same IR in its ``stock_*`` fields.
    plan: Any | None
    #: The stock build: TVM's in-place pass, then TVM's planner (``stock_bytes``).
    stock_build: Any | None
    #: Per tensor of ``plan``: the model's bindings naming its memory (the op that made it
    #: first, then ops computed in place in it).
    writers: list[list[Origin]] = field(default_factory=list)
    #: ``plan`` evaluated at the summary's values (the same record with integer sizes) when
    #: sizes are symbolic; otherwise None.
    plan_at: Any | None = None
    stock_build_at: Any | None = None
    #: What the memplan build's VM would allocate for the function with every concatenation
    #: keeping its copy (our planner with ``copy_free_concat=False`` on the same IR), at the
    #: summary's values; None when no concatenation of ``plan`` is copy-free.
    with_copies: int | None = None
    #: The plan ``with_copies`` comes from (not in the JSON).
    copies_plan: Any | None = field(default=None, repr=False, metadata={"json": False})


@dataclass
class Concats:
    """The concatenations of the memplan build (``FunctionMemoryPlan.concats`` of every plan):
    how many are copy-free and what that saves. The stock build copies every one: TVM's
    planner makes no concatenation copy-free."""

    count: int = 0
    copy_free: int = 0
    #: Of the copy-free ones, those whose fused kernel still runs (it computes part of the
    #: output and writes the sliced inputs back where they lie).
    kernel_runs: int = 0
    #: Bytes the copy-free ones do not copy: the bytes of the outputs of those that are
    #: dropped, and of the inputs that the running kernels hold in place.
    bytes_not_copied: int = 0
    #: Concatenations that keep their copy, per decision code (``not_contiguous``, ...).
    kept: dict[str, int] = field(default_factory=dict)


@dataclass
class InplaceRun:
    """One run of tvm-memplan's DataflowUseInplaceCalls in the memplan build's Relax pipeline
    (docs/pipelines.md): before LegalizeOps on operator calls (CPUs only), and before
    RewriteDataflowReshape on ``call_tir`` of the final (fused, scheduled) PrimFuncs."""

    #: "before_legalization" or "after_scheduling".
    name: str
    #: Where it runs and on what, for people.
    where: str
    #: Calls it converted to in-place calls; None when it fails or does not run.
    conversions: int | None
    #: Its decision for every call binding it receives (InplaceCandidate records), per
    #: function, in program order.
    candidates: dict[str, list[Any]] = field(default_factory=dict)
    #: The PrimFunc each ``call_tir`` (or ``call_tir_inplace``) binding calls, per function.
    callees: dict[str, dict[str, str]] = field(default_factory=dict)
    #: Why it does not run ("" when it runs).
    skipped: str = ""

    def already_inplace(self, candidate) -> bool:
        """Whether a binding was an in-place call when the run received it."""
        return str(candidate.op or "") == "relax.call_tir_inplace"

    def what(self, function: str, candidate) -> str:
        """The op of a binding, or for a call of a PrimFunc, the PrimFunc."""
        callee = self.callees.get(function, {}).get(str(candidate.binding))
        op = str(candidate.op or "")
        return f"{op.removeprefix('relax.')} {callee}" if callee else op.removeprefix("relax.")


@dataclass
class Inplace:
    """In-place calls: TVM's pass on the module as imported (the stock build), and each run of
    ours in the memplan build's pipeline."""

    #: Calls converted: "stock" (None when TVM's pass does not run) and "memplan" (both runs
    #: of ours together; None when none ran).
    conversions: dict[str, int | None]
    #: The runs of tvm-memplan's pass, in pipeline order.
    runs: list[InplaceRun]
    #: VM bytes of all Relax functions with TVM's planner and no in-place pass at all.
    without_inplace: int | None = None
    notes: list[str] = field(default_factory=list)
    #: Per function, the calls TVM's pass made in place that write into a constant or into a
    #: value read afterwards (RevertedInplaceWrite records): the stock build's results change
    #: from call to call there, and the stock figures count those calls with the copy our
    #: planner gives them, not as a saving.
    stock_unsafe_writes: dict[str, list[Any]] = field(default_factory=dict)

    def decisions(self, function: str, binding: str) -> list[tuple[InplaceRun, Any]]:
        """Each run's decision for one binding (the runs that saw it)."""
        return [
            (run, c)
            for run in self.runs
            for c in run.candidates.get(function, [])
            if str(c.binding) == binding
        ]


@dataclass
class Buffer:
    """One allocated buffer of a kernel, as CompactBufferAllocation receives it."""

    #: Its position among the kernel's allocations, in definition order: how the report tells
    #: two buffers of one name apart.
    index: int
    #: Our compaction's record (CompactedRegion).
    region: Any
    #: TVM's CompactBufferAllocation on the same IR: bytes of the buffer at the same position
    #: (None where symbolic), and as an expression of the shape variables.
    stock_bytes: int | None
    stock_size: Any = None


@dataclass
class Kernel:
    """One PrimFunc: its buffers and where each build puts them."""

    name: str
    #: What it computes, for grouping ("nn.conv2d depthwise 3x3"); "" when no Relax calls it.
    kind: str = ""
    #: The model's bindings its calls compute.
    writers: list[Origin] = field(default_factory=list)
    buffers: list[Buffer] = field(default_factory=list)
    #: AllocationDecision records: the memplan build (``placement``: ours) and the stock
    #: build (``stock_placement``: TVM's rule, on the stock pipeline's IR).
    placement: list[Any] = field(default_factory=list)
    stock_placement: list[Any] = field(default_factory=list)
    #: Per ``placement`` decision: whether the allocation would live on the stack if
    #: ``max_stack_alloca`` were large enough (what a larger limit could move there).
    stack_eligible: list[bool] = field(default_factory=list)
    #: Kernels it calls (their workspace and stack are live with its own).
    calls: list[str] = field(default_factory=list)
    #: The builds that have it ("stock", "memplan"): an in-place kernel exists in one only.
    builds: list[str] = field(default_factory=lambda: ["stock", "memplan"])
    #: Workspace and stack bytes per build, with those of the kernels it calls.
    workspace: dict[str, int | None] = field(default_factory=dict)
    stack: dict[str, int | None] = field(default_factory=dict)
    #: Where those are symbolic and not evaluated: the expressions ("workspace.memplan": ...).
    symbolic: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class FitContributor:
    name: str
    function: str
    bytes: int
    #: Names users recognise: the op, its shape, the source model's name.
    origin: str
    #: What is already done to it.
    done: str
    #: What could still shrink it ("" when nothing is left to do).
    could: str


@dataclass(frozen=True)
class FitBudget:
    """One budget of the fit check against the memplan build."""

    name: str  # "weights", "vm", "stack", "workspace" or "total"
    budget: int
    #: The build's figure (None: unknown).
    figure: int | None
    fits: bool
    #: What the figure is.
    meaning: str
    contributors: list[FitContributor]


@dataclass
class FitResult:
    fits: bool
    budgets: list[FitBudget]


@dataclass(frozen=True)
class SolvePoint:
    """The VM figure of each build with the solved variable's bound at ``value`` (the
    functions planned again at that bound)."""

    value: int
    stock: int
    memplan: int


@dataclass
class Solution:
    """The largest value of a shape variable (its ``tir_var_upper_bound``: for an LLM's
    ``seq_len``, the prefill chunk it is compiled with) for which each build's VM figure fits a
    budget: every figure is the planners' own, the functions planned again at that bound
    (``solve.solve``)."""

    variable: str
    #: The budget solved for ("vm") and its limit in bytes.
    budget: str
    limit: int
    #: The other shape variables' values (their bound, or the value given).
    values: dict[str, int]
    #: The variable's bound as built (the largest of the functions'; None: unbounded).
    bound: int | None
    #: Per build ("stock": TVM's planner in the stock build, "memplan": ours), the largest
    #: value that fits; None when not even 1 does.
    largest: dict[str, int | None]
    #: Per build, whether the search stopped at ``solve.CAP`` still fitting.
    capped: dict[str, bool]
    #: The figures at the points planned, by value (the curve of the page).
    curve: list[SolvePoint]
    #: Per build, the model's figure and each function's planned bytes as a formula of the
    #: variable (``a*seq_len + b``), where one holds at every point of the curve (None where
    #: none does: the curve shows the figures).
    formulas: dict[str, dict[str, str | None]]
    notes: list[str] = field(default_factory=list)


@dataclass
class Report:
    input: str
    target: str
    summary: Summary
    relax: list[RelaxFunction]
    #: None for a module without Relax functions.
    inplace: Inplace | None
    kernels: list[Kernel]
    #: Largest first.
    weights: list[Weight]
    #: None for a module without Relax functions.
    concats: Concats | None = None
    failures: list[Failure] = field(default_factory=list)
    seconds: float | None = None
    fit: FitResult | None = None
    solution: Solution | None = None
    #: Per bounded shape variable, per build, each function whose planned bytes depend on it:
    #: its bytes as a formula of the variable (``solve.formulas``: both planners run again with
    #: the bound from 1 to twice it); ``"left_out"``: variables without a bound or a value whose
    #: sizes the bytes leave out.
    formulas: dict[str, Any] = field(default_factory=dict)
    #: What the solver plans again: each build's planner input ("stock", "memplan") and the
    #: target (not in the JSON).
    planner_inputs: dict[str, Any] = field(
        default_factory=dict, repr=False, metadata={"json": False}
    )
    target_object: Any = field(default=None, repr=False, metadata={"json": False})

    def to_json(self) -> dict[str, Any]:
        """Plain data, as `--json` prints it."""
        return to_data(self)
