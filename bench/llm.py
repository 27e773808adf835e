"""LLM memory at the sizes users deploy: a Llama-style module built as MLC-LLM builds one
(``relax.frontend.nn`` with the paged KV cache of ``relax.frontend.nn.llm``, zoo/llm.py) and
compiled in MLC-LLM's pass order, stock against tvm-memplan in one process, compile only.

Per function: the bytes the planner allocates with TVM's planner (the stock pipeline), with
ours (the same pipeline through ``tvm_memplan.relax_pipeline``), and the peak-live bound of the
IR our planner receives, every symbolic size at its MLC-LLM bound (``seq_len`` <= prefill
chunk, ``total_seq_len`` <= context window, ``batch_size`` <= max batch). MLC-LLM's own
"temporary buffer" estimate is the largest of these over the functions. Then what the VM's
pooled allocator holds once prefill and decode have both run: it rounds each storage up to
4096 bytes and reuses a freed buffer only for a request of that same size, so it holds, per
rounded size, as many buffers as the function asking most of them: the union over the two
functions, not their maximum.

Models: the small test model (hidden 128, 2 layers), Qwen2-0.5B's shapes and Llama-3-8B's
(float16, prefill chunk 2048); weights are parameters and never made. ``--quick``: the small
model only.

    python bench/llm.py [--quick]
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter

import _zoo  # noqa: F401  (bench/_zoo.py: puts the repository root on the path, for zoo/)
import tvm

import tvm_memplan
from tvm_memplan import pass_names
from tvm_memplan.analysis import memory_plan
from tvm_memplan.instrument import capture
from zoo.llm import LLAMA3_8B, QWEN2_0_5B, SMALL, llm_module, mlc_llm_pipeline

OUR_PLANNER = "tvm_memplan.StaticPlanBlockMemory"
#: The pooled allocator's page (src/runtime/memory/pooled_allocator.h).
POOL_PAGE = 4096
#: The functions an engine runs for one request: the pool holds what both asked for.
ENGINE_FUNCTIONS = ("prefill", "decode")
MODELS = {"small": SMALL, "qwen2-0.5b": QWEN2_0_5B, "llama3-8b": LLAMA3_8B}


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


def _pool(storages_by_function: dict[str, list[int]]) -> int:
    """Bytes the pooled allocator holds after each function in the dict ran once."""
    most: Counter = Counter()
    for sizes in storages_by_function.values():
        rounded = Counter(-(-size // POOL_PAGE) * POOL_PAGE for size in sizes if size > 0)
        for size, count in rounded.items():
            most[size] = max(most[size], count)
    return sum(size * count for size, count in most.items())


def _sizes(storages) -> list[int]:
    return [int(s.bytes) for s in storages if int(s.bytes) >= 0]


def measure(name: str, config) -> tuple[list[tuple], tuple[int, int]]:
    """Per function (model, function, stock, ours, bound), and the pools (stock, ours)."""
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
    pools = (
        _pool({f: _sizes(stock[f].stock_storages) for f in ENGINE_FUNCTIONS if f in stock}),
        _pool({f: _sizes(ours[f].storages) for f in ENGINE_FUNCTIONS if f in ours}),
    )
    return rows, pools


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
    print("(b) MLC-LLM's temporary-buffer estimate (largest function) and the pooled allocator")
    print("    after prefill and decode (bytes)")
    print(
        f"{'model':<12}  {'temp stock':>14}  {'temp memplan':>14}  {'ratio':>7}  "
        f"{'pool stock':>14}  {'pool memplan':>14}  {'ratio':>7}"
    )
    for name, temp_stock, temp_ours, pool_stock, pool_ours in summary:
        print(
            f"{name:<12}  {temp_stock:>14}  {temp_ours:>14}  {_ratio(temp_ours, temp_stock):>7}  "
            f"{pool_stock:>14}  {pool_ours:>14}  {_ratio(pool_ours, pool_stock):>7}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
