"""CompactBufferAllocation, tvm_memplan's pass against TVM's in one process: the bytes each
scheduled workload allocates after compaction, and the pass time on large generated functions.

(a) Allocated bytes after each pass on the scheduled workloads of
    zoo.workloads, block TIR prepared by the passes the s_tir pipeline runs
    before compaction.
(b) Pass time on generated functions of 500 and 5000 blocks (median of several runs).

    python bench/compact.py [--quick]

Both passes run on the same input in the same process; only ratios are meaningful.
"""

from __future__ import annotations

import argparse
import statistics
import time

import tvm
from _zoo import workloads  # zoo/ (bench/_zoo.py)
from tvm import s_tir, tirx

import tvm_memplan
from tvm_memplan import testing
from tvm_memplan.transform import CompactBufferAllocation


def _bytes(mod: tvm.IRModule) -> int:
    return sum(testing.allocated_bytes(f) or 0 for f in mod.functions.values())


def bytes_table() -> list[tuple[str, int, int, int]]:
    ours, stock = CompactBufferAllocation(), s_tir.transform.CompactBufferAllocation()
    rows = []
    for name, workload in workloads.WORKLOADS.items():
        mod = workloads.before_compaction(workload.build())
        rows.append((name, _bytes(mod), _bytes(stock(mod)), _bytes(ours(mod))))
    return rows


# ---- generated functions for pass time ----------------------------------------------------------


def generated(n_blocks: int) -> tvm.IRModule:
    """Stages of three blocks: tiles with tail predicates, 2-D tiles, halo reads."""
    lines = [
        "@T.prim_func(s_tir=True)",
        "def main(A: T.Buffer((62, 32), 'float32'), C: T.Buffer((62, 32), 'float32')):",
    ]
    for s in range(max(1, n_blocks // 3)):
        b = f"B{s}"
        if s % 3 == 0:
            x = "io * 4 + ii"
            body = [
                "    for io in range(16):",
                "        with T.sblock():",
                f"            {b} = T.sblock_alloc_buffer((64, 32), 'float32')",
                "            for ii, j in T.grid(4, 32):",
                "                with T.sblock():",
                f"                    T.where({x} < 62)",
                f"                    {b}[{x}, j] = A[{x}, j] * T.float32({s})",
                "            for ii, j in T.grid(4, 32):",
                "                with T.sblock():",
                f"                    T.where({x} < 62)",
                f"                    C[{x}, j] = {b}[{x}, j] + T.float32(1)",
            ]
        elif s % 3 == 1:
            x, y = "io * 31 + ii", "jo * 8 + ji"
            body = [
                "    for io, jo in T.grid(2, 4):",
                "        with T.sblock():",
                f"            {b} = T.sblock_alloc_buffer((62, 32), 'float32')",
                "            for ii, ji in T.grid(31, 8):",
                "                with T.sblock():",
                f"                    {b}[{x}, {y}] = A[{x}, {y}] * T.float32({s})",
                "            for ii, ji in T.grid(31, 8):",
                "                with T.sblock():",
                f"                    C[{x}, {y}] = {b}[{x}, {y}] + T.float32(1)",
            ]
        else:
            x = "io * 31 + ii"
            halo = f"T.if_then_else({x} + 1 < 62, {b}[{x} + 1, j], T.float32(0))"
            body = [
                "    for io in range(2):",
                "        with T.sblock():",
                f"            {b} = T.sblock_alloc_buffer((62, 32), 'float32')",
                "            for ii, j in T.grid(32, 32):",
                "                with T.sblock():",
                f"                    T.where({x} < 62)",
                f"                    {b}[{x}, j] = A[{x}, j]",
                "            for ii, j in T.grid(31, 32):",
                "                with T.sblock():",
                f"                    C[{x}, j] = {b}[{x}, j] + {halo}",
            ]
        lines += body
    func = tvm.script.from_source("\n".join(lines))
    return tvm.IRModule({"main": func.with_attr("global_symbol", "main")})


def _median_ms(pass_, mod, repeat) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        pass_(mod)
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


def time_table(sizes, repeat) -> list[tuple[int, float, float]]:
    ours, stock = CompactBufferAllocation(), s_tir.transform.CompactBufferAllocation()
    rows = []
    for n in sizes:
        mod = generated(n)
        simplify = tvm.transform.Sequential([tirx.transform.StmtSimplify()])
        tvm.ir.assert_structural_equal(simplify(ours(mod)), simplify(stock(mod)))
        stock_ms, ours_ms = _median_ms(stock, mod, repeat), _median_ms(ours, mod, repeat)
        rows.append((n, stock_ms, ours_ms))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="smaller functions, fewer runs")
    args = parser.parse_args()
    print(f"tvm {tvm.__version__}, tvm_memplan {tvm_memplan.__version__}\n")

    rows = bytes_table()
    width = max(len(r[0]) for r in rows)
    print(f"{'workload':<{width}}  {'original B':>10}  {'stock B':>9}  {'ours B':>9}  ours/stock")
    for name, original, stock, ours in rows:
        print(f"{name:<{width}}  {original:>10}  {stock:>9}  {ours:>9}  {ours / stock:>10.3f}")
    fewer = sum(ours < stock for _, _, stock, ours in rows)
    larger = sum(ours > stock for _, _, stock, ours in rows)
    total_stock, total_ours = sum(r[2] for r in rows), sum(r[3] for r in rows)
    print(
        f"\nbytes: ours <= stock on {len(rows) - larger}/{len(rows)} workloads, strictly less on "
        f"{fewer}; total ours/stock = {total_ours / total_stock:.3f}\n"
    )

    sizes, repeat = ((150, 500), 3) if args.quick else ((500, 5000), 7)
    print(f"{'blocks':>6}  {'stock ms':>9}  {'ours ms':>9}  ours/stock")
    for n, stock_ms, ours_ms in time_table(sizes, repeat):
        print(f"{n:>6}  {stock_ms:>9.1f}  {ours_ms:>9.1f}  {ours_ms / stock_ms:>10.2f}")


if __name__ == "__main__":
    main()
