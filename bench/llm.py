"""LLM memory at the sizes users deploy: a Llama-style module built as MLC-LLM builds one
(``relax.frontend.nn`` with the paged KV cache of ``relax.frontend.nn.llm``, zoo/llm.py) and
compiled in MLC-LLM's pass order, stock against tvm-memplan in one process: planned, held by the
VM's pooled allocator, and the KV-cache tokens that leaves.

(a) Per function: the bytes the planner allocates with TVM's planner (the stock pipeline), with
    ours (the same pipeline through ``tvm_memplan.relax_pipeline``), and the peak-live bound of
    the IR our planner receives, every symbolic size at its MLC-LLM bound (``seq_len`` <= prefill
    chunk, ``total_seq_len`` <= context window, ``batch_size`` <= max batch). Compile only.
(b) Per model: MLC-LLM's "temporary buffer" estimate T (the largest function); what the pooled
    allocator holds once every function has run (``analysis.held_by_records``: it rounds each
    request up to 4096 bytes and reuses a block only for a request of that size, so it holds, per
    size, the most blocks one function asks for; allocations of constant size, ours at the sizes
    pool sizing allocates); and, at Llama-3-8B's shapes (f16 weights) on a 24 GiB GPU at
    MLC-LLM's default gpu_memory_utilization 0.85, the KV-cache tokens MLC-LLM's engine sizes
    from T (``analysis.MLCKVCache``).
(c) At run time (the HELD model, llvm): the bytes the real pooled allocator holds
    (``analysis.recorded_pool``) after a prefill, decodes, a batch prefill and batch decodes,
    then after prefills of four more lengths and batch prefills and decodes of every batch size
    up to the bound: stock, ours without pool sizing, ours. Then the time of that varied sequence
    with the naive allocator (which allocates every request anew), ours with and without pool
    sizing: what pool sizing costs where nothing is pooled.

Models: the small test model (hidden 128, 2 layers), Qwen2-0.5B's shapes and Llama-3-8B's
(float16, prefill chunk 2048); weights are parameters and never made, except in (c).
``--quick``: the small model only in (a) and (b).

    python bench/llm.py [--quick]
"""

from __future__ import annotations

import argparse
import sys
import time

import _zoo  # noqa: F401  (bench/_zoo.py: puts the repository root on the path, for zoo/)
import tvm

import tvm_memplan
from tvm_memplan import pass_names
from tvm_memplan.analysis import held_by_records, memory_plan, recorded_pool
from tvm_memplan.instrument import capture
from zoo import llm
from zoo.llm import HELD, LLAMA3_8B, QWEN2_0_5B, SMALL, llm_module, mlc_llm_pipeline

OUR_PLANNER = "tvm_memplan.StaticPlanBlockMemory"
MODELS = {"small": SMALL, "qwen2-0.5b": QWEN2_0_5B, "llama3-8b": LLAMA3_8B}
#: (b): the GPU the KV-cache tokens are counted for, and MLC-LLM's default utilization.
GPU_BYTES, GPU_UTILIZATION = 24 * 2**30, 0.85
#: (c): code generation at opt-level 0, as the tests build the model.
TARGET = tvm.target.Target({"kind": "llvm", "opt-level": 0})


def planner_inputs(config) -> tuple[tvm.IRModule, tvm.IRModule]:
    """The modules TVM's planner (stock pipeline) and ours (memplan) receive."""
    mod, _ = llm_module(config)
    target = tvm.target.Target("llvm")
    stock = mlc_llm_pipeline(target, variable_bounds=config.variable_bounds)
    ours = tvm_memplan.relax_pipeline(stock)
    with target:
        stock_in = capture(lambda: stock(mod), [pass_names.STOCK_PLANNER])[pass_names.STOCK_PLANNER]
        ours_in = capture(lambda: ours(mod), [OUR_PLANNER])[OUR_PLANNER]
    return stock_in, ours_in


def measure(name: str, config) -> tuple[list[tuple], tuple[int, int]]:
    """Per function (model, function, stock, ours, bound), and what the pool holds once every
    function has run (stock, ours)."""
    stock_in, ours_in = planner_inputs(config)
    with tvm.target.Target("llvm"):
        stock = {str(p.function): p for p in memory_plan(stock_in, pipeline=None)}
        ours = {str(p.function): p for p in memory_plan(ours_in, pipeline=None)}
    rows = []
    for function in sorted(ours):
        plan, theirs = ours[function], stock.get(function)
        stock_bytes = int(theirs.stock_bytes) if theirs is not None else -1
        applied, bound = int(plan.applied_bytes), int(plan.peak_live_bytes)
        if applied == 0 and stock_bytes <= 0:
            continue
        rows.append((name, function, stock_bytes, applied, bound))
    held = (held_by_records(stock.values(), "stock"), held_by_records(ours.values(), "memplan"))
    return rows, tuple(h.held_bytes for h in held)


def _build(config, planner: str):
    """The MLC-order build of `config` for llvm: "stock", "ours" or "ours, no pool sizing"."""
    mod, _ = llm.llm_module(config, TARGET)
    pipeline = llm.mlc_llm_pipeline(variable_bounds=config.variable_bounds)
    if planner == "stock":
        return tvm.compile(mod, TARGET, relax_pipeline=pipeline)
    options = {"pool_sizes": planner == "ours"}
    relax = tvm_memplan.relax_pipeline(pipeline, planner_options=options)
    return tvm.compile(mod, TARGET, tir_pipeline="memplan", relax_pipeline=relax)


def held_at_run_time(config) -> list[tuple[str, int, int]]:
    """(build, held after the first calls, held after the varied ones) per build."""
    weights = llm.llm_weights(config, seed=0)
    lengths = [3, 17, 40, config.prefill_chunk_size]
    batches = range(1, config.max_batch_size + 1)
    rows = []
    for planner in ("stock", "ours, no pool sizing", "ours"):
        executable = _build(config, planner)
        with recorded_pool() as pool:
            vm = tvm.relax.VirtualMachine(executable, tvm.cpu())
            llm.serve(vm, config, weights, [5], [2])
            first = pool.held_bytes
            llm.serve(vm, config, weights, lengths, batches, seed=1)
            rows.append((planner, first, pool.held_bytes))
    return rows


def naive_allocator_seconds(config, repeat: int = 3) -> list[tuple[str, float]]:
    """Best time of the varied sequence with the naive allocator, ours with and without pool
    sizing."""
    weights = llm.llm_weights(config, seed=0)
    rows = []
    for planner in ("ours, no pool sizing", "ours"):
        vm = tvm.relax.VirtualMachine(_build(config, planner), tvm.cpu(), memory_cfg="naive")
        best = float("inf")
        for _ in range(repeat):
            start = time.perf_counter()
            llm.serve(vm, config, weights, [3, 17, 40], range(1, config.max_batch_size + 1))
            best = min(best, time.perf_counter() - start)
        rows.append((planner, best))
    return rows


def _ratio(a: int, b: int) -> str:
    return f"{a / b:.3f}" if a >= 0 and b > 0 else "-"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="the small model only")
    args = parser.parse_args()
    models = {"small": SMALL} if args.quick else MODELS
    print("(a) per function, every size at its bound (bytes)")
    print(
        f"{'model':<12}  {'function':<36}  {'stock':>14}  {'memplan':>14}  {'bound':>14}  "
        f"{'memplan/stock':>14}  {'memplan/bound':>14}"
    )
    summary = []
    for name, config in models.items():
        rows, pools = measure(name, config)
        for model, function, stock, ours, bound in rows:
            print(
                f"{model:<12}  {function:<36}  {stock:>14}  {ours:>14}  {bound:>14}  "
                f"{_ratio(ours, stock):>14}  {_ratio(ours, bound):>14}"
            )
        temporary = (max(r[2] for r in rows), max(r[3] for r in rows))
        summary.append((name, *temporary, *pools))
    print()
    print("(b) MLC-LLM's temporary-buffer estimate T (largest function) and what the pooled")
    print("    allocator holds once every function has run (bytes)")
    print(
        f"{'model':<12}  {'T stock':>14}  {'T memplan':>14}  {'ratio':>7}  "
        f"{'held stock':>14}  {'held memplan':>14}  {'ratio':>7}"
    )
    for name, temp_stock, temp_ours, held_stock, held_ours in summary:
        print(
            f"{name:<12}  {temp_stock:>14}  {temp_ours:>14}  {_ratio(temp_ours, temp_stock):>7}  "
            f"{held_stock:>14}  {held_ours:>14}  {_ratio(held_ours, held_stock):>7}"
        )
    for name, temp_stock, temp_ours, _, _ in summary:
        if name != "llama3-8b":
            continue
        kv = LLAMA3_8B.kv_cache()
        tokens = [
            kv.tokens(t, LLAMA3_8B.param_bytes, GPU_BYTES, GPU_UTILIZATION)
            for t in (temp_stock, temp_ours)
        ]
        print(
            f"KV-cache tokens, llama3-8b, f16 weights ({LLAMA3_8B.param_bytes / 1e9:.1f} GB), "
            f"24 GiB at {GPU_UTILIZATION}: stock {tokens[0]}, memplan {tokens[1]} "
            f"({tokens[1] - tokens[0]:+d}; {kv.bytes_per_token} B per token)"
        )
    print()
    print(
        f"(c) held by the pooled allocator at run time, HELD model (vocabulary "
        f"{HELD.vocab_size}, batches up to {HELD.max_batch_size}, chunk "
        f"{HELD.prefill_chunk_size}; bytes)"
    )
    print(f"{'build':<22}  {'first calls':>12}  {'varied calls':>12}  {'grew':>10}")
    for planner, first, varied in held_at_run_time(HELD):
        print(f"{planner:<22}  {first:>12}  {varied:>12}  {varied - first:>10}")
    print("naive allocator, the varied calls (best of 3):")
    for planner, seconds in naive_allocator_seconds(HELD):
        print(f"  {planner:<22}  {seconds:.3f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
