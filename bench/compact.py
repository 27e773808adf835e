"""CompactBufferAllocation, tvm_memplan's pass against TVM's in one process: the bytes each
scheduled workload allocates after compaction, the pass time on large generated functions, and
how many of the schedules users compile each pass gets wrong.

(a) Allocated bytes after each pass on the scheduled workloads of
    zoo.workloads, block TIR prepared by the passes the s_tir pipeline runs
    before compaction.
(b) Pass time on generated functions of 500 and 5000 blocks (median of several runs).
(c) Wrong results: the schedules of zoo.schedules (the seeded fuzz of vectorized, parallel,
    unrolled and serial loops around compute locations; MetaSchedule's CPU forms by hand) and
    the zoo's models scheduled by dlight's CPU rules, built for llvm by TVM's pipeline with
    each pass and run against a build without compaction; GPU schedules (the fuzz with thread
    bindings, and the zoo's models through TVM's cuda pipeline with its dlight rules) checked
    on the device IR after VectorizeLoop for stores of distinct lanes to one address.

    python bench/compact.py [--quick]

Both passes run on the same input in the same process; only ratios are meaningful.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import tvm
from _zoo import models, schedules, workloads  # zoo/ (bench/_zoo.py)
from tvm import s_tir, tirx

import tvm_memplan
from tvm_memplan import testing
from tvm_memplan.instrument import capture
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


# ---- (c) wrong results -------------------------------------------------------------------------

#: The builds whose results are judged, each against COMPACTIONS["none"].
JUDGED = ("stock", "ours")
LLVM = tvm.target.Target("llvm")
VECTORIZE_LOOP = "tirx.VectorizeLoop"


def _prim_results(lib, args) -> list[np.ndarray]:
    tensors = [tvm.runtime.tensor(a.copy()) for a in args]
    lib["main"](*tensors)
    return [t.numpy() for t in tensors]


def _wrong_prim_builds(mod: tvm.IRModule) -> set[str]:
    """The judged builds of a PrimFunc module whose results differ from the reference's on
    RUNS random inputs."""
    reference = testing.build_prim_module(mod, compaction="none")
    libs = {name: testing.build_prim_module(mod, compaction=name) for name in JUDGED}
    wrong = set()
    for seed in range(testing.RUNS):
        args = testing.random_args(mod["main"], seed)
        want = _prim_results(reference, args)
        for name, lib in libs.items():
            got = _prim_results(lib, args)
            if not all(np.array_equal(g, w) for g, w in zip(got, want, strict=True)):
                wrong.add(name)
    return wrong


def _wrong_relax_builds(mod: tvm.IRModule, func_name: str) -> set[str]:
    vms = {
        name: tvm.relax.VirtualMachine(testing.build_prim_module(mod, LLVM, name), tvm.cpu())
        for name in ("none", *JUDGED)
    }
    inputs = testing.relax_inputs(mod[func_name], seed=1)
    return {
        name
        for name in JUDGED
        if not testing.identical_relax_results([vms["none"], vms[name]], func_name, inputs)
    }


def _lanes_sharing(build) -> int:
    """Stores of distinct lanes to one address in what VectorizeLoop returned during `build`."""
    vectorized = capture(build, [VECTORIZE_LOOP], after=True)[VECTORIZE_LOOP]
    return len(testing.lanes_in_one_address(vectorized))


def _gpu_sharing(mod: tvm.IRModule, relax: bool) -> dict[str, int]:
    """Per judged build for cuda (a Relax model through TVM's cuda pipeline, its dlight rules
    included; a PrimFunc module through the TIR pipeline), the lane-sharing stores."""
    cuda = tvm.target.Target("cuda")
    if relax:
        builds = {
            "stock": lambda: tvm.compile(mod, cuda),
            "ours": lambda: tvm.compile(mod, cuda, tir_pipeline="memplan"),
        }
    else:
        builds = {name: lambda n=name: testing.build_prim_module(mod, cuda, n) for name in JUDGED}
    return {name: _lanes_sharing(build) for name, build in builds.items()}


def wrong_results(cpu_seeds: int, gpu_seeds: int, models_: list[str]) -> list[tuple]:
    """(corpus, cases, {build: cases wrong}) rows; for GPU corpora, cases with a lane-sharing
    store."""
    rows = []
    cpu = [schedules.random_schedule(seed).mod for seed in range(cpu_seeds)]
    tools = [make().mod for make in schedules.TOOL_SCHEDULES.values()]
    for corpus, mods in (("fuzz, cpu", cpu), ("MetaSchedule's CPU forms", tools)):
        wrong = [_wrong_prim_builds(mod) for mod in mods]
        rows.append((corpus, len(mods), {b: sum(b in w for w in wrong) for b in JUDGED}))
    dlight = []
    for name in models_:
        mod, func_name = models.ZOO[name]()
        dlight.append(_wrong_relax_builds(schedules.dlight_cpu(mod, LLVM), func_name))
    rows.append(
        ("zoo, dlight CPU rules", len(dlight), {b: sum(b in w for w in dlight) for b in JUDGED})
    )
    gpu = [
        _gpu_sharing(schedules.random_schedule(s, gpu=True).mod, False) for s in range(gpu_seeds)
    ]
    rows.append(("fuzz, cuda (IR)", len(gpu), {b: sum(g[b] > 0 for g in gpu) for b in JUDGED}))
    zoo_gpu = [_gpu_sharing(models.ZOO[name]()[0], True) for name in models_]
    rows.append(
        ("zoo, cuda (IR)", len(zoo_gpu), {b: sum(g[b] > 0 for g in zoo_gpu) for b in JUDGED})
    )
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

    cpu_seeds, gpu_seeds = (40, 8) if args.quick else (300, 48)
    zoo = ["small_cnn", "transformer_block", "resnet"] if args.quick else sorted(models.ZOO)
    print("\nwrong results (cpu: against a build without compaction; cuda: lanes stored to one")
    print("address after VectorizeLoop)")
    print(f"{'corpus':<26}  {'cases':>5}  {'stock wrong':>11}  {'ours wrong':>10}")
    for corpus, cases, wrong in wrong_results(cpu_seeds, gpu_seeds, zoo):
        print(f"{corpus:<26}  {cases:>5}  {wrong['stock']:>11}  {wrong['ours']:>10}")


if __name__ == "__main__":
    main()
