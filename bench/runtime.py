"""Whole-model run time, tvm_memplan.compile against tvm.compile in one process: every model of
the zoo, unfused (TVM's CPU default) and fused (the "zero" pipeline first), timed in interleaved
rounds on the Relax VM (llvm), as the ratio memplan / stock.

Each round calls every build once per repetition in turn (stock and memplan alternating, the
order flipped every round), so drifts of the machine hit both alike; the figure per build is
the median over rounds of the mean call time within a round. The outputs of both builds are
compared first (bit-identical). With ``--torchvision``, torchvision networks at 64x64 join
the zoo (needs torch and torchvision).

    python bench/runtime.py [--rounds 15] [--calls 20] [--quick] [--torchvision]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable

import _torchvision as torchvision  # bench/_torchvision.py (the script's directory)
import numpy as np
import tvm
from _table import print_header  # bench/_table.py
from _zoo import models  # zoo/ (bench/_zoo.py)
from tvm import relax

import tvm_memplan
from tvm_memplan.testing import relax_inputs, run_relax

TARGET = "llvm"


def builds(mod: tvm.IRModule) -> dict[tuple[str, str], tvm.runtime.Executable]:
    fused = relax.get_pipeline("zero")(mod)
    return {
        ("unfused", "stock"): tvm.compile(mod, TARGET),
        ("unfused", "memplan"): tvm_memplan.compile(mod, TARGET),
        ("fused", "stock"): tvm.compile(fused, TARGET),
        ("fused", "memplan"): tvm_memplan.compile(fused, TARGET),
    }


def vm_call(executable, func_name: str, inputs) -> Callable[[], object]:
    """A call of `func_name` on the Relax VM with `inputs` already on the device, so that a
    timing measures the call, not copies of the inputs."""
    function = relax.VirtualMachine(executable, tvm.cpu())[func_name]
    args = [tvm.runtime.tensor(x) for x in inputs]
    return lambda: function(*args)


def timed_rounds(calls: dict, rounds: int, repeat: int) -> dict:
    """Median over rounds of the mean time of one call, per key of `calls`."""
    samples = {key: [] for key in calls}
    keys = list(calls)
    for round_ in range(rounds):
        for key in keys if round_ % 2 == 0 else reversed(keys):
            call = calls[key]
            start = time.perf_counter()
            for _ in range(repeat):
                call()
            samples[key].append((time.perf_counter() - start) / repeat)
    return {key: statistics.median(values) for key, values in samples.items()}


def parse_timing_args(
    parser: argparse.ArgumentParser, rounds: int, calls: int, quick: int
) -> argparse.Namespace:
    """Parse the command line of a script timed by `timed_rounds`, which declares --quick: with
    --rounds (default `rounds`) and --calls per build per round (default `calls`), each `quick`
    under --quick where unset."""
    parser.add_argument("--rounds", type=int, help=f"interleaved rounds (default {rounds})")
    parser.add_argument("--calls", type=int, help=f"calls per build per round (default {calls})")
    args = parser.parse_args()
    if args.rounds is None:
        args.rounds = quick if args.quick else rounds
    if args.calls is None:
        args.calls = quick if args.quick else calls
    return args


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="5 rounds of 5 calls if unset")
    torchvision.add_option(parser)
    args = parse_timing_args(parser, rounds=15, calls=20, quick=5)

    zoo = torchvision.zoo(args, models.ZOO)
    if zoo is None:
        return 2

    print(f"Run time on the Relax VM ({TARGET}, 1 thread per call as TVM's runtime chooses)")
    rule = print_header(
        f"{'model':<19} {'unfused stock ms':>16} {'memplan/stock':>13} "
        f"{'fused stock ms':>14} {'memplan/stock':>13}  identical"
    )
    ratios = {"unfused": [], "fused": []}
    all_identical = True
    for name, builder in zoo.items():
        mod, func_name = builder()
        executables = builds(mod)
        inputs = relax_inputs(mod[func_name], seed=0, low=-1.0, high=1.0)
        calls, outputs = {}, {}
        for key, executable in executables.items():
            vm = relax.VirtualMachine(executable, tvm.cpu())
            outputs[key], _ = run_relax(vm, func_name, inputs)
            calls[key] = vm_call(executable, func_name, inputs)
        same = all(
            all(
                np.array_equal(a, b)
                for a, b in zip(outputs[mode, "stock"], outputs[mode, "memplan"], strict=True)
            )
            for mode in ("unfused", "fused")
        )
        all_identical = all_identical and same
        times = timed_rounds(calls, args.rounds, args.calls)
        row = []
        for mode in ("unfused", "fused"):
            ratio = times[mode, "memplan"] / times[mode, "stock"]
            ratios[mode].append(ratio)
            row.append((times[mode, "stock"] * 1e3, ratio))
        print(
            f"{name:<19} {row[0][0]:>16.3f} {row[0][1]:>13.3f} {row[1][0]:>14.3f} "
            f"{row[1][1]:>13.3f}  {'yes' if same else 'NO'}"
        )
    print(rule)
    summary = {mode: (statistics.geometric_mean(r), max(r)) for mode, r in ratios.items()}
    print(
        "memplan/stock, geometric mean (max): "
        + "; ".join(f"{mode} {mean:.3f} ({worst:.3f})" for mode, (mean, worst) in summary.items())
    )
    worst = max(worst for _, worst in summary.values())
    print(
        f"targets: memplan/stock <= 1.02 on every model ({worst:.3f}): "
        f"{'met' if worst <= 1.02 else 'NOT met'}; results identical: "
        f"{'met' if all_identical else 'NOT met'}"
    )
    # Wrong results are an error; timings are reported (they depend on the machine's load).
    return 0 if all_identical else 1


if __name__ == "__main__":
    sys.exit(main())
