"""DataflowUseInplaceCalls, tvm_memplan's pass against TVM's in one process: in-place
conversions, planned bytes and identical results on every model of the zoo, and the pass time.

For every model of the zoo (zoo.models) and three variants (no in-place pass, TVM's
stock pass, ours) it prints:

- conversions: bindings rewritten to ``R.call_tir_inplace``;
- planned bytes: every allocation left after TVM's own default build sequence up to and
  including ``StaticPlanBlockMemory`` (read from ``tvm.relax.pipeline.default_build_pipeline``,
  so it includes ``RewriteDataflowReshape``): ``R.memory.alloc_storage`` (planned storage)
  plus ``R.builtin.alloc_tensor`` (the function's outputs, which the planner leaves alone);
- whether the three variants give bit-identical outputs on the Relax VM (llvm) and leave the
  inputs unchanged;

then the time of both passes on a large generated model (a deep transformer stack) as a
ratio ours / stock.

    python bench/inplace.py [--depth 24] [--repeat 5] [--quick]
"""

from __future__ import annotations

import argparse
import sys
import time

import tvm
from _table import print_header  # bench/_table.py
from _zoo import models  # zoo/ (bench/_zoo.py)
from tvm import relax

import tvm_memplan
from tvm_memplan.analysis import count_calls, planned_storage
from tvm_memplan.testing import identical_relax_results, relax_inputs, relax_vm


def identical_results(mods: list[tvm.IRModule], func_name: str) -> bool:
    """Whether every module, run twice on the same inputs, gives the outputs of the first run
    of the first module and leaves the inputs unchanged."""
    inputs = relax_inputs(mods[0][func_name], seed=0, low=-1.0, high=1.0)
    return identical_relax_results([relax_vm(mod) for mod in mods], func_name, inputs)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--depth", type=int, help="blocks of the timing model (default 24)")
    parser.add_argument("--repeat", type=int, help="timing repetitions, min kept (default 5)")
    parser.add_argument("--quick", action="store_true", help="depth 6 and 2 repetitions if unset")
    args = parser.parse_args()
    if args.depth is None:
        args.depth = 6 if args.quick else 24
    if args.repeat is None:
        args.repeat = 2 if args.quick else 5

    variants = {
        "none": lambda mod: mod,
        "stock": relax.transform.DataflowUseInplaceCalls(),
        "ours": tvm_memplan.transform.DataflowUseInplaceCalls(),
    }
    rule = print_header(
        f"{'model':<18} {'calls':>5} | {'conversions':^17} | "
        f"{'planned bytes (storage + outputs)':^44} | {'ours/stock':>10} {'ours/none':>9} | "
        "identical"
    )
    print(
        f"{'':<18} {'':>5} | {'stock':>8} {'ours':>8} | {'none':>14} {'stock':>14} {'ours':>14}"
        f" | {'bytes':>10} {'bytes':>9} |"
    )
    print(rule)
    total_conversions = {"stock": 0, "ours": 0}
    strictly_less = 0
    all_identical = True
    never_more_bytes = True
    for name, build in models.ZOO.items():
        mod, func_name = build()
        rewritten = {key: variant(mod) for key, variant in variants.items()}
        conversions = {k: count_calls(m) for k, m in rewritten.items()}
        sizes = {k: planned_storage(m) for k, m in rewritten.items()}
        totals = {k: v.total_bytes for k, v in sizes.items()}
        calls = len(tvm_memplan.analysis.inplace_candidates(mod[func_name], mod))

        identical = identical_results(list(rewritten.values()), func_name)
        for key in total_conversions:
            total_conversions[key] += conversions[key]
        strictly_less += totals["ours"] < totals["stock"]
        all_identical = all_identical and identical
        never_more_bytes = never_more_bytes and totals["ours"] <= min(totals.values())

        def fmt(key, sizes=sizes):
            return f"{sizes[key].storage_bytes:>7}+{sizes[key].output_bytes:<6}"

        print(
            f"{name:<18} {calls:>5} | {conversions['stock']:>8} {conversions['ours']:>8} | "
            f"{fmt('none'):>14} {fmt('stock'):>14} {fmt('ours'):>14} | "
            f"{totals['ours'] / totals['stock']:>10.3f} {totals['ours'] / totals['none']:>9.3f} | "
            f"{'yes' if identical else 'NO'}"
        )
    print(rule)
    ratio = total_conversions["ours"] / max(total_conversions["stock"], 1)
    print(
        f"conversions over the zoo: stock {total_conversions['stock']}, "
        f"ours {total_conversions['ours']} ({ratio:.2f}x)"
    )
    print(f"models where ours plans strictly fewer bytes than stock: {strictly_less}")

    big, func_name = models.transformer_stack(args.depth)
    timings = {}
    for key in ("stock", "ours"):
        best = float("inf")
        for _ in range(args.repeat):
            start = time.perf_counter()
            variants[key](big)
            best = min(best, time.perf_counter() - start)
        timings[key] = best
    bindings = sum(len(block.bindings) for block in big[func_name].body.blocks)
    print(
        f"pass time on a {args.depth}-block transformer stack ({bindings} bindings): "
        f"stock {timings['stock'] * 1e3:.1f} ms, ours {timings['ours'] * 1e3:.1f} ms, "
        f"ours/stock {timings['ours'] / timings['stock']:.2f}"
    )
    time_ratio = timings["ours"] / timings["stock"]
    targets = [
        ("results identical on every model", all_identical),
        ("ours <= stock and <= no in-place bytes on every model", never_more_bytes),
        (f"ours < stock bytes on at least 3 models ({strictly_less})", strictly_less >= 3),
        (f"conversions >= 2x stock ({ratio:.2f}x)", ratio >= 2.0),
        (f"pass time ours/stock <= 1.0 ({time_ratio:.2f})", time_ratio <= 1.0),
    ]
    print("targets: " + "; ".join(f"{name}: {'met' if ok else 'NOT met'}" for name, ok in targets))
    # Failing soundness or memory is an error; the other targets are reported above.
    return 0 if all_identical and never_more_bytes else 1


if __name__ == "__main__":
    sys.exit(main())
