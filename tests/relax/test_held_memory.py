"""What TVM's pooled allocator holds: the rule on a plan (analysis.held_by_sizes, held_by_plan)
and the measurement at run time (analysis.recorded_pool)."""

import numpy as np
import tvm
from tvm.script import relax as R

from tvm_memplan.analysis import POOL_PAGE, held_by_plan, held_by_sizes, recorded_pool


@tvm.script.ir_module
class Chain:
    @R.function
    def main(x: R.Tensor((16,), "float32")):
        with R.dataflow():
            a = R.exp(x)
            b = R.exp(a)
            c = R.add(a, b)
            R.output(c)
        return c


def test_the_pool_holds_per_rounded_size_the_most_blocks_one_function_asks_for():
    """Sizes round up to 4096 bytes; a size two functions ask for once each is one block."""
    held = held_by_sizes({"f": [5000, 100], "g": [5000], "h": [100, 200]})
    assert held.blocks == {2 * POOL_PAGE: 1, POOL_PAGE: 2}
    assert held.held_bytes == 4 * POOL_PAGE
    assert held.largest_function_bytes == 3 * POOL_PAGE


def test_resident_functions_are_held_beside_the_pool():
    """A function run once whose storages stay (cuda_graph_alloc) adds its bytes whole."""
    planned = tvm.relax.transform.StaticPlanBlockMemory()(
        tvm.transform.Sequential(
            [tvm.relax.transform.LegalizeOps(), tvm.relax.transform.CallTIRRewrite()]
        )(Chain)
    )
    alone = held_by_plan(planned)
    resident = held_by_plan(planned, resident=("main",))
    assert alone.held_bytes > 0
    assert resident.blocks == {} and resident.resident_bytes > 0


def test_recorded_pool_sees_blocks_reused_call_after_call():
    """Called twenty times, the function gets from the pool the blocks it had after its second
    call (one more than the first: the previous result's block is still taken when the next
    call allocates), and asks for the same sizes each time."""
    executable = tvm.compile(Chain, "llvm")
    x = tvm.runtime.tensor(np.ones(16, "float32"))
    with recorded_pool() as pool:
        vm = tvm.relax.VirtualMachine(executable, tvm.cpu())
        vm["main"](x)
        per_call = len(pool.requests)
        vm["main"](x)
        second = dict(pool.blocks)
        for _ in range(18):
            vm["main"](x)
    assert len(pool.requests) == 20 * per_call
    assert pool.blocks == second


def test_recorded_pool_puts_tvm_s_builtin_back():
    """A VM created after the block allocates through TVM's own builtin again."""
    executable = tvm.compile(Chain, "llvm")
    with recorded_pool() as pool:
        pass
    tvm.relax.VirtualMachine(executable, tvm.cpu())["main"](
        tvm.runtime.tensor(np.ones(16, "float32"))
    )
    assert pool.requests == []
