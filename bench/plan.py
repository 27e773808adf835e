"""StaticPlanBlockMemory, tvm_memplan's planner against TVM's in one process: the bytes each
plans for every model of the zoo, the peak-live bound, the bytes of whole builds, identical
results, and the pass time.

(a) Same IR: each model goes through TVM's Relax pipeline up to the planner (no in-place pass),
    and both planners plan what the planner receives there
    (``tvm_memplan.analysis.memory_plan``): the peak-live bound (the most bytes of plannable
    tensors live at one program point, plus the tensors no planner may share: the function's
    results), TVM's bytes, ours, ours/bound, ours/stock.
(b) Whole builds, what a user sees: VM bytes (storage plus unplanned tensors) after
    ``tvm.compile`` with the stock pipelines and after ``tvm_memplan.compile`` (our in-place
    pass and our planner), and whether the outputs are bit-identical (two runs each, inputs
    untouched).
(c) Pass time, ours / stock, on the IR a 24-block transformer stack hands to the planner: the
    best of ``--repeat`` rounds, interleaved with the order flipped every round.
(d) Fused CPU builds, the recipe of docs/pipelines.md: ``relax.get_pipeline("zero")`` (LegalizeOps,
    FuseOps, FuseTIR), then ``tvm.compile`` or ``tvm_memplan.compile`` (our in-place pass on the
    fused kernels and our planner): VM bytes, the peak-live bound of the IR our planner receives,
    and identical results.
(e) cuda builds (no GPU needed: build only): VM bytes on the IR the VM runs, stock vs memplan,
    the kernels each build carries and the calls made in place after dlight's schedules.
(f)-(h) Hard instances for the offset packer (bench/_hard_packing.py): perfect packings, every
    function of the zoo and of LLM modules, and a directory of CSV problems (``--hard-csv``),
    with MiniMalloc side by side if given (``--minimalloc``); ``--hard-only`` runs only these.

With ``--torchvision``, torchvision networks at 64x64 join the zoo (needs torch and
torchvision).

    python bench/plan.py [--depth 24] [--repeat 20] [--quick] [--torchvision]
                         [--hard-csv DIR [--hard-csv-s S] [--hard-csv-ranked]] [--minimalloc BIN]
                         [--hard-only]
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass

import _hard_packing as hard  # bench/_hard_packing.py: sections (f)-(h)
import _torchvision as torchvision  # bench/_torchvision.py (the script's directory)
import tvm
from _table import print_header  # bench/_table.py
from _timing import best_of  # bench/_timing.py
from _zoo import models  # zoo/ (bench/_zoo.py)
from tvm import relax

import tvm_memplan
from tvm_memplan import pass_names
from tvm_memplan.analysis import count_calls, memory_plan, planner_input, storage_after_planning
from tvm_memplan.instrument import capture
from tvm_memplan.testing import device_kernel_names, identical_relax_results, relax_inputs
from zoo import llm

TARGET = "llvm"
#: The LLM modules of section (g): bench/llm.py's small model and Qwen2-0.5B's shapes, and an
#: MLC-style model of hidden size 256 (the size of MLC-LLM's tiny test Llama).
LLM_CONFIGS = {
    "llm small": llm.SMALL,
    "llm qwen2-0.5b": llm.QWEN2_0_5B,
    "mlc-style h256": llm.LlamaConfig(
        hidden_size=256,
        intermediate_size=688,
        num_attention_heads=4,
        num_key_value_heads=4,
        head_dim=64,
    ),
}
# The in-place pass the memplan Relax pipeline runs on the scheduled kernels.
AFTER_SCHEDULING = "tvm_memplan.RewriteDataflowReshape"


def compile_capturing(mod: tvm.IRModule, memplan: bool, target: str, passes, after=True):
    """``tvm.compile`` (or ``tvm_memplan.compile``) of `mod`, and the modules the passes named in
    `passes` returned (with ``after=False``: received)."""
    compile_ = tvm_memplan.compile if memplan else tvm.compile
    executable = None

    def run():
        nonlocal executable
        executable = compile_(mod, target=target)

    captured = capture(run, passes, after=after)
    return executable, captured


def planner_of(memplan: bool) -> str:
    return pass_names.PLANNER if memplan else pass_names.STOCK_PLANNER


def build(mod: tvm.IRModule, memplan: bool):
    """The executable and the module right after the planner."""
    executable, captured = compile_capturing(mod, memplan, TARGET, [planner_of(memplan)])
    return executable, captured[planner_of(memplan)]


def build_fused(mod: tvm.IRModule, memplan: bool):
    """The fused CPU recipe: the executable, the module after the planner and (memplan) the
    module the planner received."""
    fused = relax.get_pipeline("zero")(mod)
    planner = planner_of(memplan)
    executable, captured = compile_capturing(fused, memplan, TARGET, [planner])
    received = None
    if memplan:
        received = compile_capturing(fused, memplan, TARGET, [planner], after=False)[1][planner]
    return executable, captured[planner], received


def build_cuda(mod: tvm.IRModule, memplan: bool):
    """A cuda build: VM bytes after planning, the kernels, the calls made in place."""
    planner = planner_of(memplan)
    watched = [planner] + ([AFTER_SCHEDULING] if memplan else [])
    executable, captured = compile_capturing(mod, memplan, "cuda", watched)
    inplace = count_calls(captured[AFTER_SCHEDULING]) if memplan else 0
    kernels = device_kernel_names(executable)
    return storage_after_planning(captured[planner]).total_bytes, kernels, inplace


def identical(executables, func_name: str, mod: tvm.IRModule) -> bool:
    inputs = relax_inputs(mod[func_name], seed=0, low=-1.0, high=1.0)
    vms = [relax.VirtualMachine(executable, tvm.cpu()) for executable in executables]
    return identical_relax_results(vms, func_name, inputs)


def print_targets(targets: list[tuple[str, bool]]) -> None:
    print("targets: " + "; ".join(f"{name}: {'met' if ok else 'NOT met'}" for name, ok in targets))


@dataclass
class SameIr:
    """Section (a)'s findings."""

    #: Per model: the module and its function (the other sections build them again).
    built: dict[str, tuple[tvm.IRModule, str]]
    at_bound: bool
    ours_le_stock: bool
    #: Ours / stock over the whole zoo.
    total_ratio: float


@dataclass
class Builds:
    """Section (b)'s or (d)'s findings."""

    identical: bool
    le_stock: bool


def same_ir(zoo: dict) -> SameIr:
    """(a): both planners on the IR TVM's pipeline hands its planner, against the bound."""
    print("(a) Same IR: what StaticPlanBlockMemory receives in TVM's pipeline, bytes")
    rule = print_header(
        f"{'model':<19} {'tensors':>7} {'bound':>9} {'stock':>9} {'ours':>9} "
        f"{'stock/bound':>11} {'ours/bound':>10} {'ours/stock':>10}"
    )
    totals = {"bound": 0, "stock": 0, "ours": 0}
    found = SameIr({}, at_bound=True, ours_le_stock=True, total_ratio=0.0)
    for name, builder in zoo.items():
        mod, func_name = builder()
        (plan,) = memory_plan(mod, TARGET)
        bound, stock, ours = plan.peak_live_bytes, plan.stock_bytes, plan.planned_bytes
        for key, value in (("bound", bound), ("stock", stock), ("ours", ours)):
            totals[key] += value
        found.at_bound = found.at_bound and ours <= 1.02 * bound
        found.ours_le_stock = found.ours_le_stock and ours <= stock
        print(
            f"{name:<19} {len(plan.tensors):>7} {bound:>9} {stock:>9} {ours:>9} "
            f"{stock / bound:>11.3f} {ours / bound:>10.4f} {ours / stock:>10.3f}"
        )
        found.built[name] = (mod, func_name)
    print(rule)
    found.total_ratio = totals["ours"] / totals["stock"]
    print(
        f"{'total':<19} {'':>7} {totals['bound']:>9} {totals['stock']:>9} {totals['ours']:>9} "
        f"{totals['stock'] / totals['bound']:>11.3f} {totals['ours'] / totals['bound']:>10.4f} "
        f"{found.total_ratio:>10.3f}"
    )
    return found


def whole_builds(built: dict) -> Builds:
    """(b): VM bytes of whole llvm builds, stock pipelines vs tvm_memplan.compile."""
    print(
        "(b) Whole builds (llvm): VM bytes after planning, stock pipelines vs tvm_memplan.compile"
    )
    rule = print_header(
        f"{'model':<19} {'stock':>9} {'memplan':>9} {'memplan/stock':>13}  identical"
    )
    totals = {"stock": 0, "memplan": 0}
    found = Builds(identical=True, le_stock=True)
    for name, (mod, func_name) in built.items():
        stock_exe, stock_planned = build(mod, memplan=False)
        ours_exe, ours_planned = build(mod, memplan=True)
        stock = storage_after_planning(stock_planned).total_bytes
        ours = storage_after_planning(ours_planned).total_bytes
        totals["stock"] += stock
        totals["memplan"] += ours
        same = identical([stock_exe, ours_exe], func_name, mod)
        found.identical = found.identical and same
        found.le_stock = found.le_stock and ours <= stock
        print(f"{name:<19} {stock:>9} {ours:>9} {ours / stock:>13.3f}  {'yes' if same else 'NO'}")
    print(rule)
    ratio = totals["memplan"] / totals["stock"]
    print(f"{'total':<19} {totals['stock']:>9} {totals['memplan']:>9} {ratio:>13.3f}")
    return found


def pass_time(depth: int, repeat: int) -> float:
    """(c): the pass time, ours / stock, on a transformer stack of ``depth`` blocks."""
    big, _ = models.transformer_stack(depth)
    planned = planner_input(big, TARGET)
    stock_pass = relax.transform.StaticPlanBlockMemory()
    our_pass = tvm_memplan.transform.StaticPlanBlockMemory()
    with tvm.target.Target(TARGET):
        timings = best_of(
            {"stock": lambda: stock_pass(planned), "ours": lambda: our_pass(planned)}, repeat
        )
    bindings = sum(len(block.bindings) for block in planned["forward"].body.blocks)
    time_ratio = timings["ours"] / timings["stock"]
    print(
        f"(c) Pass time on a {depth}-block transformer stack ({bindings} bindings): "
        f"stock {timings['stock'] * 1e3:.1f} ms, ours {timings['ours'] * 1e3:.1f} ms, "
        f"ours/stock {time_ratio:.2f}"
    )
    return time_ratio


def fused_builds(built: dict) -> Builds:
    """(d): the fused CPU recipe, VM bytes against the bound of what our planner receives."""
    print(
        '(d) Fused CPU builds (llvm): relax.get_pipeline("zero"), then compile; VM bytes after '
        "planning"
    )
    rule = print_header(
        f"{'model':<19} {'stock':>9} {'memplan':>9} {'bound':>9} {'memplan/stock':>13} "
        f"{'memplan/bound':>13}  identical"
    )
    totals = {"stock": 0, "memplan": 0, "bound": 0}
    found = Builds(identical=True, le_stock=True)
    every_model_085 = True
    for name, (mod, func_name) in built.items():
        stock_exe, stock_planned, _ = build_fused(mod, memplan=False)
        ours_exe, ours_planned, received = build_fused(mod, memplan=True)
        stock = storage_after_planning(stock_planned).total_bytes
        ours = storage_after_planning(ours_planned).total_bytes
        bound = sum(p.peak_live_bytes for p in memory_plan(received, TARGET, pipeline=None))
        same = identical([stock_exe, ours_exe], func_name, mod)
        for key, value in (("stock", stock), ("memplan", ours), ("bound", bound)):
            totals[key] += value
        found.identical = found.identical and same
        found.le_stock = found.le_stock and ours <= stock
        every_model_085 = every_model_085 and ours <= 0.85 * stock
        print(
            f"{name:<19} {stock:>9} {ours:>9} {bound:>9} {ours / stock:>13.3f} "
            f"{ours / bound:>13.3f}  {'yes' if same else 'NO'}"
        )
    print(rule)
    ratio = totals["memplan"] / totals["stock"]
    print(
        f"{'total':<19} {totals['stock']:>9} {totals['memplan']:>9} {totals['bound']:>9} "
        f"{ratio:>13.3f} {totals['memplan'] / totals['bound']:>13.3f}"
    )
    print_targets(
        [
            ("memplan <= 0.85x stock on every model", every_model_085),
            (f"total <= 0.65x stock ({ratio:.3f})", ratio <= 0.65),
            ("results identical", found.identical),
        ]
    )
    return found


def cuda_builds(built: dict, quick: bool) -> bool:
    """(e): cuda builds (build only); whether memplan's VM bytes are at most stock's on each."""
    print("(e) cuda builds (build only): VM bytes after planning, kernels, calls made in place")
    rule = print_header(
        f"{'model':<19} {'stock':>9} {'memplan':>9} {'memplan/stock':>13} "
        f"{'kernels':>7} {'memplan':>7} {'in place':>8}"
    )
    totals = {"stock": 0, "memplan": 0}
    le_stock = True
    for name in list(built)[: 4 if quick else None]:
        mod, _ = built[name]
        stock, stock_kernels, _ = build_cuda(mod, memplan=False)
        ours, kernels, inplace = build_cuda(mod, memplan=True)
        totals["stock"] += stock
        totals["memplan"] += ours
        le_stock = le_stock and ours <= stock
        print(
            f"{name:<19} {stock:>9} {ours:>9} {ours / stock:>13.3f} "
            f"{len(stock_kernels):>7} {len(kernels):>7} {inplace:>8}"
        )
    print(rule)
    print(
        f"{'total':<19} {totals['stock']:>9} {totals['memplan']:>9} "
        f"{totals['memplan'] / totals['stock']:>13.3f}"
    )
    return le_stock


#: Section (c)'s options: (default, default with --quick).
TIMING_DEFAULTS = {"depth": (24, 6), "repeat": (20, 4)}


def parse_args() -> argparse.Namespace:
    depth, repeat = TIMING_DEFAULTS["depth"], TIMING_DEFAULTS["repeat"]
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--depth", type=int, help=f"blocks of the timing model (default {depth[0]})"
    )
    parser.add_argument(
        "--repeat", type=int, help=f"timing rounds, interleaved, best kept (default {repeat[0]})"
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help=f"depth {depth[1]} and {repeat[1]} rounds if unset",
    )
    torchvision.add_option(parser)
    hard.add_options(parser)
    args = parser.parse_args()
    for option, (full, quick) in TIMING_DEFAULTS.items():
        if getattr(args, option) is None:
            setattr(args, option, quick if args.quick else full)
    return args


def main() -> int:
    args = parse_args()
    zoo = torchvision.zoo(args, models.ZOO)
    if zoo is None:
        return 2
    if args.hard_only:
        return hard.run(args, zoo, LLM_CONFIGS)
    same = same_ir(zoo)
    print()
    builds = whole_builds(same.built)
    print()
    time_ratio = pass_time(args.depth, args.repeat)
    print_targets(
        [
            ("ours <= 1.02x the bound on every model", same.at_bound),
            ("ours <= stock on every model", same.ours_le_stock),
            (f"total <= 0.85x stock ({same.total_ratio:.3f})", same.total_ratio <= 0.85),
            (f"pass time <= 1.5x stock ({time_ratio:.2f})", time_ratio <= 1.5),
            ("results identical", builds.identical),
        ]
    )
    print()
    fused = fused_builds(same.built)
    print()
    cuda_le_stock = cuda_builds(same.built, args.quick)
    print()
    hard.run(args, zoo, LLM_CONFIGS)
    # Soundness and never planning more than stock are errors; the other targets are reported.
    sound = builds.identical and fused.identical
    never_more = same.ours_le_stock and builds.le_stock and fused.le_stock and cuda_le_stock
    return 0 if sound and never_more else 1


if __name__ == "__main__":
    sys.exit(main())
