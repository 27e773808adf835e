"""bench/plan.py, section (f)-(h): offset packing where the greedy orders stop above the optimum.

(f) Perfect packings: a rectangle of 2n program points by 64 x 64 bytes cut into n tiles by
    guillotine cuts, each tile a tensor; every point is full, so the optimum is the peak-live
    bound. n = 40 (budget 1 s each), 120 and 400 (30 s each).
(g) The planner on every function of the zoo and of the LLM module (the small model, Qwen2-0.5B's
    shapes, and an MLC-style model with hidden size 256), with its default budget: bytes over
    the corrected bound (per storage) and which algorithm placed each storage.
(h) Any directory of CSV problems (``--hard-csv DIR``: rows ``id,lower,upper,size``, a buffer live
    over ``[lower, upper)``; a file named ``X.<capacity>.csv`` is solved at that capacity, any
    other minimized), such as the 11 "challenging" instances MiniMalloc publishes, or idealloc's
    traces of 20,000-60,000 buffers (neither vendored); ``--hard-csv-s S`` sets our budget, which
    bounds the whole packing (greedy orders included). Per problem: size over the bound, the
    greedy orders run and the seconds of each phase. With ``--hard-csv-ranked`` each problem is
    packed again with every time point replaced by its rank among them all (the same problem:
    every overlap stays), and the row says whether the placement is the same, bit for bit.

With ``--minimalloc BIN`` (a MiniMalloc binary you built; never part of this repository) the same
problems run through it in the same process' run, one after the other, and ratios are printed.
Times are wall-clock seconds of one run: ours from the Python call (greedy orders, search setup
and search), MiniMalloc's as it reports its solve (without its process start and CSV parse).
"""

from __future__ import annotations

import csv
import re
import subprocess
import tempfile
import time
from pathlib import Path

import tvm
from _table import print_header  # bench/_table.py
from _zoo import packings

from tvm_memplan.analysis import memory_plan, pack_offsets

OPTIMUM = packings.UNIT * packings.HEIGHT  # bytes, of every perfect packing
PERFECT = {40: (10, 1.0), 120: (6, 30.0), 400: (4, 30.0)}  # tensors: (instances, budget s)
CSV_BUDGET_S = 60.0


def add_options(parser) -> None:
    parser.add_argument(
        "--hard-csv", metavar="DIR", help="also pack every CSV problem (id,lower,upper,size) here"
    )
    parser.add_argument(
        "--minimalloc", metavar="BIN", help="a MiniMalloc binary to time on the same problems"
    )
    parser.add_argument(
        "--hard-only", action="store_true", help="only the hard-instance sections (f)-(h)"
    )
    parser.add_argument(
        "--hard-csv-ranked",
        action="store_true",
        help="also pack each CSV problem on ranked time points; say whether it places alike",
    )
    parser.add_argument(
        "--hard-csv-s",
        type=float,
        default=CSV_BUDGET_S,
        metavar="S",
        help=f"our budget per CSV problem, the whole packing (default {CSV_BUDGET_S:g})",
    )


def _write_csv(path: Path, items) -> None:
    with open(path, "w", encoding="utf-8", newline="") as out:
        out.write("id,lower,upper,size\n")
        for ident, lower, upper, size in items:
            out.write(f"{ident},{lower},{upper},{size}\n")


def minimalloc(binary: str | None, path: Path, capacity: int, timeout_s: float):
    """(placed, seconds) of MiniMalloc on a CSV at a capacity; None without a binary; placed is
    False when it failed or ran past `timeout_s`."""
    if binary is None:
        return None
    with tempfile.TemporaryDirectory() as tmp:
        try:
            run = subprocess.run(
                [
                    binary,
                    f"--capacity={capacity}",
                    f"--input={path}",
                    f"--output={tmp}/out.csv",
                    f"--timeout={timeout_s}s",
                ],
                capture_output=True,
                text=True,
                timeout=timeout_s + 30,
            )
        except subprocess.TimeoutExpired:
            return False, timeout_s
        found = re.search(r"Elapsed time ([0-9.]+)s", run.stderr + run.stdout)
        seconds = float(found.group(1)) if found else float("nan")
        placed = run.returncode == 0 and Path(f"{tmp}/out.csv").exists()
        return placed and seconds <= timeout_s, seconds


def _ranked(items):
    """`items` (id, lower, upper, size) with each time point replaced by its rank among all."""
    points = sorted({p for _, lower, upper, _ in items for p in (lower, upper)})
    rank = {point: r for r, point in enumerate(points)}
    return [(ident, rank[lower], rank[upper], size) for ident, lower, upper, size in items]


def _ours(items, capacity, budget_s):
    start = time.perf_counter()
    packing = pack_offsets(
        items, capacity=capacity, alignment=1, exact_search_ms=round(budget_s * 1000)
    )
    return packing, time.perf_counter() - start


def _ours_or_best(items, capacity, budget_s):
    """_ours, or where nothing fits the capacity the best placement found and its time."""
    start = time.perf_counter()
    try:
        return _ours(items, capacity, budget_s)
    except ValueError as err:  # DoesNotFitError
        return err.packing, time.perf_counter() - start


def perfect_packings(args) -> dict:
    print(
        f"(f) Perfect packings (optimum = bound = {OPTIMUM} bytes): ours, "
        f"and MiniMalloc at {OPTIMUM}"
    )
    rule = print_header(
        f"{'tensors':>7} {'seed':>4} {'over opt':>8} {'ours s':>8} {'optimality':<14} "
        f"{'algorithm':<40} {'MiniMalloc s':>12} {'ratio':>6}"
    )
    solved = {}
    for count, (instances, budget) in PERFECT.items():
        if args.quick:
            instances = min(instances, 2)
        ours_ok = peer_ok = 0
        for seed in range(instances):
            items = packings.perfect_packing(count, seed)
            packing, seconds = _ours(items, None, budget)
            ours_ok += packing.size == OPTIMUM and seconds <= budget
            with tempfile.TemporaryDirectory() as tmp:
                path = Path(tmp) / "p.csv"
                _write_csv(path, items)
                peer = minimalloc(args.minimalloc, path, OPTIMUM, budget)
            peer_text = ratio = ""
            if peer is not None:
                peer_ok += peer[0]
                peer_text = f"{peer[1]:.3f}" if peer[0] else f">{budget:g}"
                ratio = f"{seconds / peer[1]:.2f}" if peer[0] and peer[1] > 0 else ""
            print(
                f"{count:>7} {seed:>4} {packing.size - OPTIMUM:>8} {seconds:>8.3f} "
                f"{packing.optimality:<14} {packing.algorithm:<40} {peer_text:>12} {ratio:>6}"
            )
        solved[count] = (ours_ok, peer_ok if args.minimalloc else None, instances)
    print(rule)
    for count, (ours_ok, peer_ok, instances) in solved.items():
        peer = f", MiniMalloc {peer_ok} of {instances}" if peer_ok is not None else ""
        print(
            f"at the optimum within the budget, {count} tensors: ours {ours_ok} of {instances}"
            + peer
        )
    return solved


def planner_functions(zoo: dict, llm_configs: dict) -> bool:
    """Every function of the zoo and the LLM module at the planner's default budget."""
    print()
    print("(g) The planner, every function: bytes over the corrected bound, and what placed them")
    rule = print_header(
        f"{'model':<20} {'function':<36} {'bound':>11} {'over':>6} {'optimality':<14} "
        f"{'plan s':>6}  algorithms"
    )
    all_at_bound = True

    def rows(model, plans, seconds):
        nonlocal all_at_bound
        for plan in plans:
            algorithms = sorted({str(s.algorithm) for s in plan.storages})
            all_at_bound = all_at_bound and plan.optimality == "at_bound"
            print(
                f"{model:<20} {str(plan.function):<36} {int(plan.peak_live_bytes):>11} "
                f"{int(plan.optimality_gap_bytes):>6} {str(plan.optimality):<14} "
                f"{seconds:>6.2f}  {', '.join(algorithms)}"
            )

    for name, builder in zoo.items():
        mod, _ = builder()
        start = time.perf_counter()
        plans = memory_plan(mod, "llvm")
        rows(name, plans, time.perf_counter() - start)
    import llm  # bench/llm.py (imports zoo.llm)

    for name, config in llm_configs.items():
        _, ours_in = llm.planner_inputs(config)
        start = time.perf_counter()
        with tvm.target.Target("llvm"):
            plans = memory_plan(ours_in, pipeline=None)
        rows(name, plans, time.perf_counter() - start)
    print(rule)
    print(f"every function at its corrected bound: {'yes' if all_at_bound else 'NO'}")
    return all_at_bound


def csv_problems(args) -> None:
    print()
    budget_s = args.hard_csv_s
    print(f"(h) CSV problems in {args.hard_csv}: ours (budget {budget_s:g} s) and MiniMalloc")
    rule = print_header(
        f"{'problem':<18} {'buffers':>7} {'capacity':>9} {'bound':>11} {'ours':>11} {'/bound':>7} "
        f"{'fits':>4} {'ours s':>7} {'orders':>6} {'greedy s':>8} {'search s':>8} "
        f"{'optimality':<14} {'algorithm':<34} {'MiniMalloc s':>12} {'ratio':>6}"
        + (f" {'ranked s':>8} {'same':>4}" if args.hard_csv_ranked else "")
    )
    worst = 0.0
    same_count = 0
    paths = sorted(Path(args.hard_csv).glob("*.csv"))
    for path in paths:
        with open(path, encoding="utf-8") as f:
            rows = list(csv.DictReader(f))
        items = [(r["id"], int(r["lower"]), int(r["upper"]), int(r["size"])) for r in rows]
        named = re.match(r".*\.(\d+)\.csv$", path.name)
        capacity = int(named.group(1)) if named else None
        packing, seconds = _ours_or_best(items, capacity, budget_s)
        ranked_text = ""
        if args.hard_csv_ranked:
            ranked, ranked_s = _ours_or_best(_ranked(items), capacity, budget_s)
            same = (ranked.offsets, ranked.algorithm) == (packing.offsets, packing.algorithm)
            same_count += same
            ranked_text = f" {ranked_s:>8.3f} {'yes' if same else 'NO':>4}"
        peer = minimalloc(args.minimalloc, path, capacity, budget_s) if capacity else None
        peer_text = ratio = ""
        if peer is not None:
            peer_text = f"{peer[1]:.3f}" if peer[0] else f">{budget_s:g}"
            if peer[0] and packing.fits:
                worst = max(worst, seconds / peer[1])
                ratio = f"{seconds / peer[1]:.2f}"
        print(
            f"{path.name:<18} {len(items):>7} {capacity or '-':>9} {packing.bound:>11} "
            f"{packing.size:>11} {packing.size / max(packing.bound, 1):>7.4f} "
            f"{'yes' if packing.fits else 'NO':>4} {seconds:>7.3f} {packing.greedy_orders:>6} "
            f"{packing.greedy_seconds:>8.3f} {packing.search_seconds:>8.3f} "
            f"{packing.optimality:<14} {packing.algorithm:<34} {peer_text:>12} {ratio:>6}"
            + ranked_text
        )
    print(rule)
    if args.hard_csv_ranked:
        print(f"placed alike on ranked time: {same_count} of {len(paths)}")
    if args.minimalloc:
        print(f"slowest ours/MiniMalloc: {worst:.2f}")


def run(args, zoo: dict, llm_configs: dict) -> int:
    perfect_packings(args)
    planner_functions(zoo, llm_configs)
    if args.hard_csv:
        csv_problems(args)
    return 0
