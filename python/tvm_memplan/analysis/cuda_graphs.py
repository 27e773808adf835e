"""What TVM's RewriteCUDAGraph captured: per Relax function, the captured regions (the kernels
each replays as one CUDA graph) and the kernels left outside, read off a module after the pass.

RewriteCUDAGraph lifts each region it captures into a function of its own and calls it through
``vm.builtin.cuda_graph.run_or_capture``; the storages it can allocate once go to
``cuda_graph_alloc``, called through ``vm.builtin.cuda_graph.get_cached_alloc``. Example::

    t = trace(lambda: tvm_memplan.compile(mod, "cuda"), ["RewriteCUDAGraph"],
              config={USE_CUDA_GRAPH: True})
    graphs = cuda_graph_capture(t.after["RewriteCUDAGraph"])
    graphs["main"].regions     # [["fused_matmul_relu", "softmax"], ...]: kernels, in order
    graphs["main"].outside     # kernels launched one by one
"""

from __future__ import annotations

import dataclasses
import re

import tvm
from tvm import relax

__all__ = [
    "CUDA_GRAPH_ALLOC",
    "ENTRY_CHECK",
    "USE_CUDA_GRAPH",
    "CaptureComparison",
    "CaptureSummary",
    "compare_capture",
    "cuda_graph_capture",
    "kernel_name",
]

#: The PassContext option under which TVM's pipelines (and MLC-LLM's) run RewriteCUDAGraph.
USE_CUDA_GRAPH = "relax.backend.use_cuda_graph"
#: The packed function tvm-memplan's entry checks on bounded sizes call (the VM's shape match).
ENTRY_CHECK = "vm.builtin.match_shape"
RUN_OR_CAPTURE = "vm.builtin.cuda_graph.run_or_capture"
GET_CACHED_ALLOC = "vm.builtin.cuda_graph.get_cached_alloc"
#: The function RewriteCUDAGraph lifts captured regions' static storages into, run once per VM.
CUDA_GRAPH_ALLOC = "cuda_graph_alloc"


@dataclasses.dataclass
class CaptureSummary:
    """One Relax function after RewriteCUDAGraph."""

    #: Per captured region, in call order: the kernels it launches (names of PrimFuncs).
    regions: list[list[str]]
    #: Kernels the function still launches itself, in order.
    outside: list[str]
    #: Bindings of the function, in order, as "var = callee" for calls (callee: a kernel, an
    #: operator or a packed function), for locating entry checks against the regions.
    calls: list[str]

    @property
    def captured(self) -> list[str]:
        return [kernel for region in self.regions for kernel in region]

    @property
    def entry_checks(self) -> list[int]:
        """Where in ``calls`` the function checks a bounded size (calls of ENTRY_CHECK)."""
        return [i for i, call in enumerate(self.calls) if call.endswith(f"= {ENTRY_CHECK}")]

    @property
    def checks_after_a_graph(self) -> list[int]:
        """The entry checks after the function's first captured region: those would not guard
        the sizes a graph was captured at."""
        graphs = [i for i, call in enumerate(self.calls) if call.endswith(f"= {RUN_OR_CAPTURE}")]
        return [i for i in self.entry_checks if graphs and i > graphs[0]]


def kernel_name(name: str) -> str:
    """A kernel's name with the suffix our in-place pass gives the in-place form removed, so
    that stock's and ours name the same computation alike."""
    return re.sub(r"_inplace$", "", name)


def _callee(call: relax.Call, mod: tvm.IRModule) -> tuple[str, str]:
    """(kind, name): kind "kernel" for a PrimFunc of `mod`, "function" for a Relax function,
    "packed" for a packed function, "op" for an operator."""
    op = call.op
    if isinstance(op, tvm.ir.GlobalVar):
        func = mod[op]
        return ("kernel" if isinstance(func, tvm.tirx.PrimFunc) else "function"), op.name_hint
    if isinstance(op, relax.ExternFunc):
        return "packed", str(op.global_symbol)
    if isinstance(op, tvm.ir.Op):
        return "op", op.name
    return "other", type(op).__name__


def _bindings(func: relax.Function):
    """Every binding of `func`, in order, inside `if` branches too."""
    out = []

    def visit_seq(seq):
        for block in seq.blocks:
            for binding in block.bindings:
                out.append(binding)
                value = binding.value
                if isinstance(value, relax.If):
                    for branch in (value.true_branch, value.false_branch):
                        if isinstance(branch, relax.SeqExpr):
                            visit_seq(branch)

    if isinstance(func.body, relax.SeqExpr):
        visit_seq(func.body)
    return out


def _called_builtin(call: relax.Call) -> tuple[str, list] | None:
    """For `R.call_builtin_with_ctx(symbol, (args...))`: (symbol, args)."""
    if not (isinstance(call.op, tvm.ir.Op) and call.op.name == "relax.call_builtin_with_ctx"):
        return None
    symbol = str(call.args[0].global_symbol)
    args = call.args[1].fields if isinstance(call.args[1], relax.Tuple) else []
    return symbol, list(args)


def cuda_graph_capture(mod: tvm.IRModule) -> dict[str, CaptureSummary]:
    """Per Relax function of `mod` (a module after RewriteCUDAGraph), other than the functions
    the pass lifted, its captured regions and the kernels outside them."""
    lifted: set[str] = set()
    for func in mod.functions.values():
        if not isinstance(func, relax.Function):
            continue
        for binding in _bindings(func):
            value = binding.value
            builtin = _called_builtin(value) if isinstance(value, relax.Call) else None
            if builtin and builtin[0] in (RUN_OR_CAPTURE, GET_CACHED_ALLOC):
                lifted.add(builtin[1][0].name_hint)
    summaries = {}
    for gv, func in mod.functions.items():
        if not isinstance(func, relax.Function) or gv.name_hint in lifted:
            continue
        regions, outside, calls = [], [], []
        for binding in _bindings(func):
            value = binding.value
            if not isinstance(value, relax.Call):
                continue
            builtin = _called_builtin(value)
            if builtin and builtin[0] == RUN_OR_CAPTURE:
                region = mod[builtin[1][0]]
                regions.append(
                    [
                        name
                        for b in _bindings(region)
                        if isinstance(b.value, relax.Call)
                        for kind, name in [_callee(b.value, mod)]
                        if kind == "kernel"
                    ]
                )
                calls.append(f"{binding.var.name} = {RUN_OR_CAPTURE}")
                continue
            kind, name = _callee(value, mod)
            if kind == "kernel":
                outside.append(name)
            calls.append(f"{binding.var.name} = {name}")
        summaries[gv.name_hint] = CaptureSummary(regions, outside, calls)
    return summaries


@dataclasses.dataclass
class CaptureComparison:
    """Ours against stock on one function: whether ours captures at least the kernels stock
    captures, in no more regions."""

    function: str
    stock_regions: int
    ours_regions: int
    stock_captured: int
    ours_captured: int
    #: Kernels stock captures that ours launches outside every region (by name, in-place forms
    #: named as the others).
    missing: list[str]
    #: Kernels stock captures that ours does not launch at all (a copy-free concatenation).
    removed: list[str]

    @property
    def holds(self) -> bool:
        return not self.missing and self.ours_regions <= self.stock_regions


def compare_capture(
    stock: dict[str, CaptureSummary], ours: dict[str, CaptureSummary]
) -> list[CaptureComparison]:
    """`cuda_graph_capture` of a stock and of a memplan build of one model, function by
    function (the functions of the stock build)."""
    out = []
    for name, want in stock.items():
        got = ours.get(name, CaptureSummary([], [], []))
        captured = [kernel_name(k) for k in got.captured]
        outside = [kernel_name(k) for k in got.outside]
        missing, removed = [], []
        for kernel in (kernel_name(k) for k in want.captured):
            if kernel in captured:
                captured.remove(kernel)
            elif kernel in outside:
                outside.remove(kernel)
                missing.append(kernel)
            else:
                removed.append(kernel)
        out.append(
            CaptureComparison(
                name,
                len(want.regions),
                len(got.regions),
                len(want.captured),
                len(got.captured),
                missing,
                removed,
            )
        )
    return out
