"""CUDA graphs, build only: every model of the zoo and the LLM module (MLC-LLM's order, with its
capture hints) built for cuda with ``relax.backend.use_cuda_graph``, tvm_memplan.compile against
tvm.compile in one process: the graphs RewriteCUDAGraph captures and the kernels inside them, and
the VM bytes after planning with CUDA graphs on and off.

A kernel inside a captured graph is launched with the graph, not on its own: on LLM decode this is
where the launch overhead goes. Ours must capture every kernel stock captures, in no more graphs
(a copy-free concatenation's kernel, which ours no longer launches at all, needs none). With
CUDA graphs on, our in-place pass leaves the function's result out of in-place writes (a returned
tensor cannot be captured, and neither can any kernel touching it): the bytes columns show what
that costs against the same build with CUDA graphs off. Running the graphs needs a GPU:
``python -m bench --gpu``.

    python bench/cuda_graphs.py [--quick]
"""

from __future__ import annotations

import argparse
import dataclasses
import sys

import tvm
from _table import print_header  # bench/_table.py
from _zoo import llm, models  # zoo/ (bench/_zoo.py)

import tvm_memplan
from tvm_memplan import pass_names
from tvm_memplan.analysis import storage_after_planning
from tvm_memplan.analysis.cuda_graphs import USE_CUDA_GRAPH, compare_capture, cuda_graph_capture
from tvm_memplan.instrument import trace

TARGET = tvm.target.Target("cuda")
#: The planner each build runs (ours also runs TVM's inside, to compare: it must not be read).
PLANNER = {"stock": pass_names.STOCK_PLANNER, "ours": pass_names.PLANNER}


def after_rewrite(build, who: str, graphs: bool) -> tuple[tvm.IRModule, tvm.IRModule]:
    """What the planner of `who` returned and what RewriteCUDAGraph returned in `build()`."""
    watch = [PLANNER[who], "RewriteCUDAGraph"]
    t = trace(build, watch, stop_after="RewriteCUDAGraph", config={USE_CUDA_GRAPH: graphs})
    return t.after[PLANNER[who]], t.after["RewriteCUDAGraph"]


def builds(mod: tvm.IRModule, relax_pipeline=None):
    """(stock, memplan) build functions for cuda, in `relax_pipeline` (default: the target's)."""
    if relax_pipeline is None:
        return (lambda: tvm.compile(mod, TARGET)), (lambda: tvm_memplan.compile(mod, TARGET))
    ours = tvm_memplan.relax_pipeline(relax_pipeline())
    return (
        lambda: tvm.compile(mod, TARGET, relax_pipeline=relax_pipeline()),
        lambda: tvm.compile(mod, TARGET, relax_pipeline=ours),
    )


def planned_bytes(planned: tvm.IRModule, mlc_estimate: bool) -> int:
    """VM bytes after planning; for the LLM module MLC-LLM's own figure, its "temporary buffer"
    estimate (the largest function's planned bytes: its sizes are at their bounds)."""
    if mlc_estimate:
        return max(llm.memory_usage(planned).values())
    return storage_after_planning(planned).total_bytes


@dataclasses.dataclass
class Counts:
    """One build's figures (a sum over models for the zoo's total)."""

    kernels: int = 0
    graphs: tuple[int, int] = (0, 0)  # stock, ours
    captured: tuple[int, int] = (0, 0)
    removed: int = 0
    holds: bool = True
    bytes: tuple[int, int, int] = (0, 0, 0)  # stock, ours, ours with CUDA graphs off

    def __add__(self, other: Counts) -> Counts:
        pairs = zip(dataclasses.astuple(self), dataclasses.astuple(other), strict=True)
        values = [
            a and b
            if isinstance(a, bool)
            else tuple(map(sum, zip(a, b, strict=True)))
            if isinstance(a, tuple)
            else a + b
            for a, b in pairs
        ]
        return Counts(*values)


def measure(mod: tvm.IRModule, relax_pipeline=None) -> Counts:
    stock_build, ours_build = builds(mod, relax_pipeline)
    stock_planned, stock = after_rewrite(stock_build, "stock", True)
    ours_planned, ours = after_rewrite(ours_build, "ours", True)
    ours_planned_off, _ = after_rewrite(ours_build, "ours", False)
    comparisons = compare_capture(cuda_graph_capture(stock), cuda_graph_capture(ours))
    summaries = cuda_graph_capture(stock)
    mlc = relax_pipeline is not None
    return Counts(
        kernels=sum(len(s.captured) + len(s.outside) for s in summaries.values()),
        graphs=(
            sum(c.stock_regions for c in comparisons),
            sum(c.ours_regions for c in comparisons),
        ),
        captured=(
            sum(c.stock_captured for c in comparisons),
            sum(c.ours_captured for c in comparisons),
        ),
        removed=sum(len(c.removed) for c in comparisons),
        holds=all(c.holds for c in comparisons),
        bytes=tuple(planned_bytes(m, mlc) for m in (stock_planned, ours_planned, ours_planned_off)),
    )


def row(name: str, c: Counts) -> str:
    stock_bytes, ours_bytes, ours_off = c.bytes
    return (
        f"{name:<20} {c.kernels:>7} {c.graphs[0]:>6} {c.graphs[1]:>6} {c.captured[0]:>8} "
        f"{c.captured[1]:>8} {c.removed:>7} {'yes' if c.holds else 'NO':>5} {stock_bytes:>12} "
        f"{ours_bytes:>12} {ours_bytes / stock_bytes:>7.3f} {ours_bytes / ours_off:>7.3f}"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="three models and the LLM module")
    args = parser.parse_args()
    names = ["resnet", "transformer_block", "residual_net"] if args.quick else list(models.ZOO)
    print("cuda builds with relax.backend.use_cuda_graph: stock, then ours")
    rule = print_header(
        f"{'model':<20} {'kernels':>7} {'graphs':>6} {'ours':>6} {'captured':>8} {'ours':>8} "
        f"{'removed':>7} {'holds':>5} {'stock bytes':>12} {'ours bytes':>12} {'ratio':>7} "
        f"{'on/off':>7}"
    )
    zoo = Counts()
    for name in names:
        mod, _ = models.ZOO[name]()
        counts = measure(mod)
        zoo = zoo + counts
        print(row(name, counts))
    print(row(f"zoo ({len(names)} models)", zoo))
    config = llm.SMALL
    mod, _ = llm.llm_module(config, TARGET)
    counts = measure(mod, lambda: llm.mlc_llm_pipeline(variable_bounds=config.variable_bounds))
    print(row("llm (MLC-LLM order)", counts))
    print(rule)
    print(
        "kernels: launched per call by stock's build; graphs, captured: CUDA graphs and the "
        "kernels inside them (stock, ours); removed: captured by stock, not launched by ours "
        "(copy-free concatenations); bytes: VM bytes after planning (the LLM module: MLC-LLM's "
        "temporary-buffer estimate, its largest function); ratio: ours / stock; on/off: ours "
        "with CUDA graphs on / off"
    )
    holds = zoo.holds and counts.holds
    print(
        f"ours captures every kernel stock captures, in no more graphs: {'yes' if holds else 'NO'}"
    )
    return 0 if holds else 1


if __name__ == "__main__":
    sys.exit(main())
