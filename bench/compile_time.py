"""Compile time, tvm_memplan against TVM in one process (best of interleaved rounds): the in-place
pass against TVM's DataflowUseInplaceCalls on every zoo model in both of its modes, how its cost
grows with the number of bindings, and whole builds, tvm_memplan.compile against tvm.compile.

(a) The in-place pass per zoo model: TVM's ``DataflowUseInplaceCalls``, and ours with
    ``planner="stock"`` (judging rewrites by TVM's planner, the pass's default) and
    ``planner="memplan"`` (judging them by ours, as the memplan pipeline runs it before
    LegalizeOps), both ``gpu=False``; the ratios ours / TVM.
(b) Growth: the same three on transformer stacks and RegNet-Y-style networks of several depths,
    with the number of bindings, and the time per binding.
(c) Whole builds (llvm): ``tvm.compile`` against ``tvm_memplan.compile``, per model and in total,
    and where the difference goes: our in-place pass (its run before LegalizeOps and its run on
    the final kernels), our planner, and our TIR passes, each against the stock passes they
    replace (pass instruments, so both sides pay the same instrumentation), and LLVM's code
    generation (``target.build.llvm``, timed around TVM's own function).
(d) The planner pass with depth: TVM's ``StaticPlanBlockMemory`` against ours on the IR a
    transformer stack of 2, 8, 32 and 64 blocks hands to the planner, ours / TVM.

Each figure is the best of ``--rounds`` rounds; within a round every variant runs once, in an
order flipped every round, so that load changes hit all variants alike. With ``--torchvision``,
torchvision networks at 64x64 join (a) and (c): RegNet-Y 400MF, ResNet-18, DenseNet-121,
MobileNetV2, MnasNet 0.5, SqueezeNet 1.0, EfficientNet-B0, ShuffleNetV2 1.0, MobileNetV3 small
and ResNet-50 (needs torch and torchvision).

    python bench/compile_time.py [--rounds 3] [--quick] [--torchvision]
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import sys
import time
from collections.abc import Callable

import _torchvision as torchvision  # bench/_torchvision.py (the script's directory)
import tvm
import tvm_ffi
from _table import print_header  # bench/_table.py
from _timing import best_of  # bench/_timing.py
from _zoo import models  # zoo/ (bench/_zoo.py)
from tvm import relax

import tvm_memplan
from tvm_memplan import pass_names

TARGET = "llvm"
# The real networks of (a) and (c) under --torchvision.
TORCHVISION = (
    "tv_regnet_y_400mf",
    "tv_resnet18",
    "tv_densenet121",
    "tv_mobilenet_v2",
    "tv_mnasnet0_5",
    "tv_squeezenet1_0",
    "tv_efficientnet_b0",
    "tv_shufflenet_v2_x1_0",
    "tv_mobilenet_v3_small",
    "tv_resnet50",
)
INPLACE_VARIANTS = {
    "tvm": lambda: relax.transform.DataflowUseInplaceCalls(),
    "stock": lambda: tvm_memplan.transform.DataflowUseInplaceCalls(planner="stock", gpu=False),
    "memplan": lambda: tvm_memplan.transform.DataflowUseInplaceCalls(planner="memplan", gpu=False),
}
# Our passes in tvm_memplan.compile and the stock passes they replace in tvm.compile.
OURS_INPLACE = pass_names.INPLACE
PLANNERS = (pass_names.PLANNER, pass_names.STOCK_PLANNER)
TIR_OURS = (
    pass_names.COMPACTION,
    pass_names.VECTORIZE,
    pass_names.PLACEMENT,
    pass_names.LOWER_BUILTIN,
)
# TVM's LLVM code generation, which no pass instrument sees.
LLVM_BUILD = "target.build.llvm"
TIR_STOCK = (pass_names.STOCK_COMPACTION, pass_names.STOCK_LOWER_BUILTIN)


def bindings_of(mod: tvm.IRModule) -> int:
    count = 0
    for func in mod.functions.values():
        if isinstance(func, relax.Function):
            for block in func.body.blocks:
                count += len(block.bindings)
    return count


def inplace_times(mod: tvm.IRModule, rounds: int) -> dict[str, float]:
    passes = {key: make() for key, make in INPLACE_VARIANTS.items()}
    return best_of({key: (lambda p=p: p(mod)) for key, p in passes.items()}, rounds)


@tvm.instrument.pass_instrument
class PassTimes:
    """Seconds per pass name (nested passes counted in their parents too), and per occurrence
    of our in-place pass."""

    def __init__(self):
        self.seconds = collections.defaultdict(float)
        self.inplace_runs: list[float] = []
        #: Seconds in LLVM's code generation (LLVM_BUILD).
        self.llvm = 0.0
        self._started: list[float] = []

    def run_before_pass(self, _mod, _info):
        self._started.append(time.perf_counter())

    def run_after_pass(self, _mod, info):
        seconds = time.perf_counter() - self._started.pop()
        self.seconds[info.name] += seconds
        if info.name == OURS_INPLACE:
            self.inplace_runs.append(seconds)


@contextlib.contextmanager
def timing_llvm(times: PassTimes):
    """TVM's LLVM code generation, timed into ``times.llvm`` while the block runs."""
    stock = tvm.get_global_func(LLVM_BUILD)

    def timed(mod, target):
        start = time.perf_counter()
        try:
            return stock(mod, target)
        finally:
            times.llvm += time.perf_counter() - start

    tvm_ffi.register_global_func(LLVM_BUILD, timed, override=True)
    try:
        yield
    finally:
        tvm_ffi.register_global_func(LLVM_BUILD, stock, override=True)


def timed_build(compile_: Callable, mod: tvm.IRModule) -> tuple[float, PassTimes]:
    times = PassTimes()
    with timing_llvm(times), tvm.transform.PassContext(instruments=[times]):
        start = time.perf_counter()
        compile_(mod, target=TARGET)
        total = time.perf_counter() - start
    return total, times


def build_times(mod: tvm.IRModule, rounds: int) -> tuple[dict[str, float], dict[str, PassTimes]]:
    best: dict[str, float] = {}
    passes: dict[str, PassTimes] = {}
    compilers = {"stock": tvm.compile, "memplan": tvm_memplan.compile}
    keys = list(compilers)
    for round_ in range(rounds):
        for key in keys if round_ % 2 == 0 else reversed(keys):
            total, times = timed_build(compilers[key], mod)
            if total < best.get(key, float("inf")):
                best[key], passes[key] = total, times
    return best, passes


def start_table(title: str, header: str) -> str:
    """Print a table's title, header and rule; returns the rule."""
    print(title)
    return print_header(header)


def print_inplace_table(zoo: dict, rounds: int) -> tuple[bool, dict]:
    rule = start_table(
        "(a) The in-place pass, seconds: TVM's, ours judging by TVM's planner, ours by ours",
        f"{'model':<22} {'bindings':>8} {'tvm':>8} {'stock':>8} {'memplan':>8} "
        f"{'stock/tvm':>9} {'memplan/tvm':>11}",
    )
    within = True
    loaded = {}
    totals = collections.Counter()
    for name, build in zoo.items():
        mod, _ = build()
        loaded[name] = mod
        t = inplace_times(mod, rounds)
        totals.update(t)
        ratios = t["stock"] / t["tvm"], t["memplan"] / t["tvm"]
        if not name.startswith("tv_"):
            within = within and max(ratios) <= 1.0
        print(
            f"{name:<22} {bindings_of(mod):>8} {t['tvm']:>8.3f} {t['stock']:>8.3f} "
            f"{t['memplan']:>8.3f} {ratios[0]:>9.2f} {ratios[1]:>11.2f}"
        )
    print(rule)
    print(
        f"{'total':<22} {'':>8} {totals['tvm']:>8.3f} {totals['stock']:>8.3f} "
        f"{totals['memplan']:>8.3f} {totals['stock'] / totals['tvm']:>9.2f} "
        f"{totals['memplan'] / totals['tvm']:>11.2f}"
    )
    return within, loaded


def print_growth_table(depths: list[int], rounds: int) -> None:
    start_table(
        "(b) Growth with the number of bindings: seconds, and microseconds per binding",
        f"{'model':<22} {'bindings':>8} {'tvm':>8} {'stock':>8} {'memplan':>8} "
        f"{'us/b tvm':>9} {'us/b stock':>10} {'us/b memplan':>12} {'memplan/tvm':>11}",
    )
    families = {
        "transformer_stack": lambda depth: models.transformer_stack(depth),
        "regnet_y": lambda depth: models.regnet_y(depth),
    }
    for family, build in families.items():
        for depth in depths:
            mod, _ = build(depth)
            count = bindings_of(mod)
            t = inplace_times(mod, rounds)
            per = {key: value / count * 1e6 for key, value in t.items()}
            print(
                f"{f'{family}({depth})':<22} {count:>8} {t['tvm']:>8.3f} {t['stock']:>8.3f} "
                f"{t['memplan']:>8.3f} {per['tvm']:>9.1f} {per['stock']:>10.1f} "
                f"{per['memplan']:>12.1f} {t['memplan'] / t['tvm']:>11.2f}"
            )


def print_planner_table(depths: list[int], rounds: int) -> float:
    """(d); the largest ratio ours / TVM."""
    from tvm_memplan.analysis import planner_input

    start_table(
        "(d) The planner pass on transformer stacks, on the IR the planner receives: ms",
        f"{'model':<22} {'bindings':>8} {'tvm ms':>8} {'ours ms':>8} {'ours/tvm':>8}",
    )
    planners = {
        "tvm": relax.transform.StaticPlanBlockMemory(),
        "ours": tvm_memplan.transform.StaticPlanBlockMemory(),
    }
    worst = 0.0
    for depth in depths:
        planned = planner_input(models.transformer_stack(depth)[0], TARGET)
        with tvm.target.Target(TARGET):
            variants = {key: (lambda p=p, m=planned: p(m)) for key, p in planners.items()}
            t = best_of(variants, rounds)
        worst = max(worst, t["ours"] / t["tvm"])
        print(
            f"{f'transformer_stack({depth})':<22} {bindings_of(planned):>8} "
            f"{t['tvm'] * 1e3:>8.2f} {t['ours'] * 1e3:>8.2f} {t['ours'] / t['tvm']:>8.2f}"
        )
    return worst


def print_build_table(loaded: dict, rounds: int) -> dict[str, float]:
    rule = start_table(
        "(c) Whole builds (llvm), seconds: tvm.compile, tvm_memplan.compile, and our passes "
        "against the stock ones they replace",
        f"{'model':<22} {'stock':>7} {'memplan':>7} {'ratio':>6} | {'in-place 1st':>12} "
        f"{'2nd':>6} | {'planner +':>9} {'TIR +':>6} {'LLVM +':>7} {'rest +':>7}",
    )
    totals: dict[str, float] = collections.Counter()
    for name, mod in loaded.items():
        best, passes = build_times(mod, rounds)
        ours, stock = passes["memplan"], passes["stock"]
        runs = ours.inplace_runs + [0.0, 0.0]
        planner = ours.seconds[PLANNERS[0]] - stock.seconds[PLANNERS[1]]
        tir = sum(ours.seconds[p] for p in TIR_OURS) - sum(stock.seconds[p] for p in TIR_STOCK)
        llvm = ours.llvm - stock.llvm
        rest = best["memplan"] - best["stock"] - sum(ours.inplace_runs) - planner - tir - llvm
        group = "real" if name.startswith("tv_") else "zoo"
        totals[f"{group} stock"] += best["stock"]
        totals[f"{group} memplan"] += best["memplan"]
        print(
            f"{name:<22} {best['stock']:>7.2f} {best['memplan']:>7.2f} "
            f"{best['memplan'] / best['stock']:>6.3f} | {runs[0]:>12.3f} {runs[1]:>6.3f} | "
            f"{planner:>+9.3f} {tir:>+6.3f} {llvm:>+7.3f} {rest:>+7.3f}"
        )
    print(rule)
    ratios = {}
    for group in ("zoo", "real"):
        if totals[f"{group} stock"]:
            ratios[group] = totals[f"{group} memplan"] / totals[f"{group} stock"]
            print(
                f"{'total ' + group:<22} {totals[f'{group} stock']:>7.2f} "
                f"{totals[f'{group} memplan']:>7.2f} {ratios[group]:>6.3f}"
            )
    return ratios


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, help="interleaved rounds, best kept (default 3)")
    parser.add_argument("--quick", action="store_true", help="2 rounds, fewer depths, no (c)")
    torchvision.add_option(parser)
    args = parser.parse_args()
    zoo = torchvision.zoo(
        args, models.ZOO, {name: torchvision.MODELS[name] for name in TORCHVISION}
    )
    if zoo is None:
        return 2
    if args.rounds is None:
        args.rounds = 2 if args.quick else 3

    within, loaded = print_inplace_table(zoo, args.rounds)
    print()
    print_growth_table([2, 4] if args.quick else [2, 4, 8, 16], args.rounds)
    targets = [("in-place pass <= 1.0x TVM's on every zoo model, both modes", within)]
    print()
    # The planner's pass is milliseconds: more rounds than the builds take.
    worst = print_planner_table([2, 8] if args.quick else [2, 8, 32, 64], 5 * args.rounds)
    targets.append((f"planner pass <= 1.5x TVM's at every depth ({worst:.2f})", worst <= 1.5))
    if not args.quick:
        print()
        ratios = print_build_table(loaded, args.rounds)
        for group, ratio in ratios.items():
            targets.append(
                (f"whole builds <= 1.05x stock in total, {group} ({ratio:.3f})", ratio <= 1.05)
            )
    print()
    print("targets: " + "; ".join(f"{name}: {'met' if ok else 'NOT met'}" for name, ok in targets))
    return 0


if __name__ == "__main__":
    sys.exit(main())
