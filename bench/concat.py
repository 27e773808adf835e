"""Copy-free concatenation in tvm_memplan's StaticPlanBlockMemory, against the same planner
keeping every copy and against TVM's planner, in one process: planned bytes, the bound, how many
concatenations become copy-free, the bytes of whole builds, identical results, and the run time,
unfused, fused and for cuda.

Models: the zoo's DenseNet, U-Net, Inception and GhostNet (zoo.models), and a 3-level U-Net at
64x64 imported from ONNX (zoo.onnx_models, with the onnx extra); with
``--torchvision``, torchvision densenet121 and googlenet at 64x64 and densenet121 at 224x224
(needs torch and torchvision). Each in three builds:

- unfused: TVM's CPU default pipeline (``tvm.compile(mod, "llvm")``), where a concatenation is a
  PrimFunc of its own;
- fused: the fused CPU recipe, ``zero`` before the default pipeline, where FuseOps puts a
  concatenation in one kernel with its injective neighbours (an upsample, an add);
- cuda: the cuda default pipeline, fused and scheduled by dlight (thread-bound loops). It is
  built, not run: no GPU here.

(a) Same IR: the module StaticPlanBlockMemory receives in the memplan build (after our
    in-place passes; recorded with a pass instrument while it compiles), planned by our planner
    with copy-free concatenation (the default), by our planner with ``copy_free_concat=False``
    (every concatenation copies: the plan reaches the fixed-order bound of that IR), and by TVM's
    planner; the bound of the copy-free plan (a group of tensors sharing bytes counts once) and
    the concatenations made copy-free (of them, those whose fused kernel still runs).
(b) Whole builds: VM bytes after planning of the stock build, the memplan build and the memplan
    build without copy-free concatenation, and (on the CPU) whether the three give bit-identical
    outputs over three calls, inputs untouched.
(c) Run time on the CPU of the memplan build with copy-free concatenation over the one without,
    timed in interleaved rounds on the Relax VM (the order flipped every round; median over
    rounds of the mean call time within a round).
(d) Fused builds: the time of the kernels that still run and write their sliced inputs back in
    place, and its share of the model's call: what rewriting them to skip those writes could
    save at most.

    python bench/concat.py [--rounds 21] [--quick] [--torchvision] [--builds unfused,fused,cuda]
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import sys
import time
from dataclasses import dataclass

import _torchvision as torchvision  # bench/_torchvision.py (the script's directory)
import tvm
from _table import print_header  # bench/_table.py
from _zoo import models  # zoo/ (bench/_zoo.py)
from runtime import timed_rounds, vm_call
from tvm import relax

import tvm_memplan
from tvm_memplan import pass_names
from tvm_memplan.analysis import memory_plan, storage_after_planning
from tvm_memplan.instrument import trace
from tvm_memplan.testing import identical_relax_results, random_args, relax_inputs

ZOO = {name: models.ZOO[name] for name in ("densenet", "unet", "inception", "ghostnet")}
if importlib.util.find_spec("onnx") is not None:  # the onnx extra
    from zoo.onnx_models import onnx_unet

    ZOO["onnx_unet"] = onnx_unet
TORCHVISION = {
    "tv_densenet121": ("densenet121", (1, 3, 64, 64)),
    "tv_googlenet": ("googlenet", (1, 3, 64, 64)),
    "tv_densenet121_224": ("densenet121", (1, 3, 224, 224)),
}
COPIES = {"copy_free_concat": False}


@dataclass(frozen=True)
class Setup:
    """One way users build: the target and the Relax pipeline (before ours replaces passes)."""

    target: str
    relax_pipeline: object
    #: Whether its builds run here.
    runs: bool


SETUPS = {
    "unfused": Setup("llvm", "default", True),
    "fused": Setup("llvm", ["zero", "default"], True),
    "cuda": Setup("cuda", "default", False),
}
#: Seconds one build's calls take in a round, about (calls per round follow from it).
ROUND_SECONDS = 0.3


def build(mod: tvm.IRModule, variant: str, setup: Setup):
    """One build: its executable, the module its planner received and the one it returned.
    Variants: "stock" (TVM's pipeline), "memplan" (``tvm_memplan.compile``), "copies" (the
    memplan build without copy-free concatenation)."""
    if variant == "stock":
        stock_mod = mod
        if setup.relax_pipeline != "default":  # ["zero", "default"]: zero first, as users do
            stock_mod = relax.get_pipeline("zero")(mod)
        compile_ = lambda: tvm.compile(stock_mod, target=setup.target)  # noqa: E731
        planner = pass_names.STOCK_PLANNER
    else:
        options = COPIES if variant == "copies" else None
        pipeline = tvm_memplan.relax_pipeline(setup.relax_pipeline, planner_options=options)
        compile_ = lambda: tvm.compile(  # noqa: E731
            mod, target=setup.target, tir_pipeline="memplan", relax_pipeline=pipeline
        )
        planner = pass_names.PLANNER
    passes = trace(compile_, [planner])
    return passes.result, passes.before[planner], passes.after[planner]


def calls_per_round(call) -> int:
    start = time.perf_counter()
    call()
    return max(1, round(ROUND_SECONDS / max(time.perf_counter() - start, 1e-6)))


@dataclass
class Model:
    mod: tvm.IRModule
    func_name: str
    setup: Setup
    #: Per variant ("stock", "memplan", "copies"): (executable, planner input, planner output).
    builds: dict
    #: Our plans of the memplan build's planner input: copy-free (the default) and with copies.
    ours: object
    copies: object


def load(builder, setup: Setup) -> Model:
    mod, func_name = builder()
    builds = {variant: build(mod, variant, setup) for variant in ("stock", "memplan", "copies")}
    received = builds["memplan"][1]
    target = tvm.target.Target(setup.target)
    (ours,) = memory_plan(received, target, pipeline=None)
    (copies,) = memory_plan(received, target, pipeline=None, **COPIES)
    return Model(mod, func_name, setup, builds, ours, copies)


def same_ir(rows: dict[str, Model]) -> tuple[bool, bool]:
    """Table (a); whether copy-free <= with copies <= stock, and ours is at the bound."""
    print(
        "(a) Same IR: what StaticPlanBlockMemory receives in the memplan build, bytes planned "
        "by ours (copy-free), ours with copies (copy_free_concat=False) and TVM's"
    )
    rule = print_header(
        f"{'model':<19} {'copy-free':>9} {'in kernel':>9} {'bound':>9} {'ours':>9} "
        f"{'copies':>9} {'its bound':>9} {'stock':>9} {'ours/copies':>11} {'ours/stock':>10}"
    )
    never_more = at_bound = True
    totals = {"ours": 0, "copies": 0, "stock": 0}
    for name, m in rows.items():
        free = sum(bool(c.copy_free) for c in m.ours.concats)
        running = sum(bool(c.copy_free and c.kernel_runs) for c in m.ours.concats)
        planned, with_copies = m.ours.applied_bytes, m.copies.applied_bytes
        stock = m.ours.stock_bytes
        for key, value in (("ours", planned), ("copies", with_copies), ("stock", stock)):
            totals[key] += value
        never_more = never_more and planned <= with_copies <= stock
        at_bound = at_bound and planned <= 1.02 * m.ours.peak_live_bytes
        print(
            f"{name:<19} {f'{free}/{len(m.ours.concats)}':>9} {running:>9} "
            f"{m.ours.peak_live_bytes:>9} "
            f"{planned:>9} {with_copies:>9} {m.copies.peak_live_bytes:>9} {stock:>9} "
            f"{planned / with_copies:>11.3f} {planned / stock:>10.3f}"
        )
    print(rule)
    print(
        f"{'total':<19} {'':>9} {'':>9} {'':>9} {totals['ours']:>9} {totals['copies']:>9} "
        f"{'':>9} "
        f"{totals['stock']:>9} {totals['ours'] / totals['copies']:>11.3f} "
        f"{totals['ours'] / totals['stock']:>10.3f}"
    )
    print(
        "  in kernel: copy-free concatenations whose fused kernel still runs, writing the "
        "sliced inputs back where they lie; bound: of the copy-free plan (tensors sharing bytes "
        "count them once); copies: every concatenation keeps its copy, and its bound (the "
        "fixed-order bound of the IR); stock: TVM's planner, which never makes a concatenation "
        "copy-free"
    )
    return never_more, at_bound


def whole_builds(rows: dict[str, Model]) -> tuple[bool, bool]:
    """Table (b); whether the results are identical, and memplan <= copies <= stock."""
    print("(b) Whole builds: VM bytes after planning, stock vs memplan vs memplan with copies")
    print_header(
        f"{'model':<19} {'stock':>9} {'memplan':>9} {'copies':>9} {'memplan/stock':>13} "
        f"{'memplan/copies':>14}  identical"
    )
    all_identical = never_more = True
    for name, m in rows.items():
        vm = {v: storage_after_planning(b[2]).total_bytes for v, b in m.builds.items()}
        same = None
        if m.setup.runs:
            inputs = relax_inputs(m.mod[m.func_name], seed=0, low=-1.0, high=1.0)
            vms = [relax.VirtualMachine(b[0], tvm.cpu()) for b in m.builds.values()]
            same = identical_relax_results(vms, m.func_name, inputs)
            all_identical = all_identical and same
        never_more = never_more and vm["memplan"] <= vm["copies"] <= vm["stock"]
        print(
            f"{name:<19} {vm['stock']:>9} {vm['memplan']:>9} {vm['copies']:>9} "
            f"{vm['memplan'] / vm['stock']:>13.3f} {vm['memplan'] / vm['copies']:>14.3f}  "
            f"{'not run (no GPU)' if same is None else 'yes' if same else 'NO'}"
        )
    return all_identical, never_more


def run_time(rows: dict[str, Model], rounds: int) -> None:
    """Table (c)."""
    print(
        "(c) Run time on the Relax VM (llvm), memplan build with copy-free concatenation "
        f"over without, {rounds} interleaved rounds"
    )
    rule = print_header(
        f"{'model':<19} {'copies ms':>10} {'copy-free ms':>12} {'copy-free/copies':>16}"
    )
    ratios = []
    for name, m in rows.items():
        calls = {}
        for variant in ("memplan", "copies"):
            inputs = relax_inputs(m.mod[m.func_name], seed=0, low=-1.0, high=1.0)
            calls[variant] = vm_call(m.builds[variant][0], m.func_name, inputs)
        times = timed_rounds(calls, rounds, calls_per_round(calls["copies"]))
        ratio = times["memplan"] / times["copies"]
        ratios.append(ratio)
        print(
            f"{name:<19} {times['copies'] * 1e3:>10.3f} {times['memplan'] * 1e3:>12.3f} "
            f"{ratio:>16.3f}"
        )
    print(rule)
    print(
        f"copy-free/copies, geometric mean (max): {statistics.geometric_mean(ratios):.3f} "
        f"({max(ratios):.3f})"
    )


def kernel_share(rows: dict[str, Model], rounds: int) -> None:
    """Table (d): what a rewrite of the fused kernels that write their sliced inputs back in
    place could save at most: their run time, and its share of the model's call."""
    timed = {
        name: [c for c in m.ours.concats if c.copy_free and c.kernel_runs]
        for name, m in rows.items()
    }
    timed = {name: concats for name, concats in timed.items() if concats}
    if not timed:
        return
    print(
        "(d) The fused kernels that write their sliced inputs back in place: their time per "
        "model call (each compiled alone, timed on random inputs) and its share of the call, "
        f"{rounds} interleaved rounds"
    )
    print_header(
        f"{'model':<19} {'kernels':>7} {'kernels ms':>10} {'model ms':>9} {'share':>6} "
        f"{'sliced':>6}"
    )
    for name, concats in timed.items():
        m = rows[name]
        received = m.builds["memplan"][1]
        calls, sliced, written = {}, 0, 0
        tensors = {str(t.binding): int(t.bytes) for t in m.ours.tensors}
        for k, c in enumerate(concats):
            func = received[str(c.callee)].with_attr("global_symbol", "main")
            kernel = tvm.compile(tvm.IRModule({"main": func}), target="llvm")["main"]
            args = [tvm.runtime.tensor(a) for a in random_args(func)]
            calls[k] = lambda kernel=kernel, args=args: kernel(*args)
            sliced += sum(tensors[str(i)] for i in c.inputs)
            written += tensors[str(c.output)]
        inputs = relax_inputs(m.mod[m.func_name], seed=0, low=-1.0, high=1.0)
        calls["model"] = vm_call(m.builds["memplan"][0], m.func_name, inputs)
        times = timed_rounds(calls, rounds, calls_per_round(calls["model"]))
        kernels = sum(t for key, t in times.items() if key != "model")
        print(
            f"{name:<19} {len(concats):>7} {kernels * 1e3:>10.3f} {times['model'] * 1e3:>9.3f} "
            f"{kernels / times['model']:>6.3f} {sliced / written:>6.3f}"
        )
    print(
        "  share: of the model's call; sliced: the fraction of those kernels' output bytes that "
        "they write back onto themselves, the most a rewrite skipping those writes could remove "
        "of their time"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, help="interleaved timing rounds (default 21)")
    parser.add_argument("--quick", action="store_true", help="5 timing rounds if unset")
    parser.add_argument(
        "--builds",
        default=",".join(SETUPS),
        help=f"comma-separated builds of {', '.join(SETUPS)} (default: all)",
    )
    torchvision.add_option(parser)
    args = parser.parse_args()
    if args.rounds is None:
        args.rounds = 5 if args.quick else 21
    setups = args.builds.split(",")
    unknown = [name for name in setups if name not in SETUPS]
    if unknown:
        parser.error(f"unknown build {', '.join(unknown)}; choose among {', '.join(SETUPS)}")
    zoo = torchvision.zoo(args, ZOO, TORCHVISION)
    if zoo is None:
        return 2

    plans_le = at_bound = identical = builds_le = True
    for k, setup_name in enumerate(setups):
        setup = SETUPS[setup_name]
        if k:
            print()
        pipeline = " then ".join(
            [setup.relax_pipeline]
            if isinstance(setup.relax_pipeline, str)
            else setup.relax_pipeline
        )
        print(f"=== {setup_name}: {setup.target}, Relax pipeline {pipeline}")
        rows = {name: load(builder, setup) for name, builder in zoo.items()}
        le, bound = same_ir(rows)
        print()
        same, builds = whole_builds(rows)
        plans_le, at_bound = plans_le and le, at_bound and bound
        identical, builds_le = identical and same, builds_le and builds
        if setup.runs:
            print()
            run_time(rows, args.rounds)
            if any(c.kernel_runs for m in rows.values() for c in m.ours.concats):
                print()
                kernel_share(rows, args.rounds)
    targets = [
        ("copy-free <= with copies <= stock, same IR and whole builds", plans_le and builds_le),
        ("ours <= 1.02x the bound", at_bound),
        ("results identical", identical),
    ]
    print("targets: " + "; ".join(f"{t}: {'met' if ok else 'NOT met'}" for t, ok in targets))
    # Wrong results and planning more than the variant without the feature are errors; run
    # times are reported (they depend on the machine's load).
    return 0 if identical and plans_le and builds_le else 1


if __name__ == "__main__":
    sys.exit(main())
