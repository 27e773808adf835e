"""Dynamic shapes as LLM deployments use them: sizes bounded by `tir_var_upper_bound` are planned
at the bound, and a call past the bound raises an error naming it instead of returning wrong
numbers (tensors packed at offsets of one storage would overlap past the bound)."""

import numpy as np
import pytest
import tvm
from models.decoder import decoder_inputs, decoder_module
from random_relax import N_UPPER_BOUND, random_module
from tvm.script import ir as I
from tvm.script import relax as R

import tvm_memplan
from tvm_memplan.analysis import memory_plan
from tvm_memplan.testing import assert_same_relax_results, past_bound_error, relax_vm

SEEDS = range(16)
#: Values of `n` below, at and past its bound.
N_VALUES = (1, N_UPPER_BOUND - 1, N_UPPER_BOUND, N_UPPER_BOUND + 1, 2 * N_UPPER_BOUND + 3)


@pytest.mark.parametrize("dynamic", ["bounded", "unbounded"])
@pytest.mark.parametrize("seed", SEEDS)
def test_random_dynamic_program_is_right_or_raises(seed, dynamic):
    """Against a build without a planner (every tensor its own storage): identical results at
    every size within the bound; past it, an error naming the bound, never other numbers. A
    function whose plan relies on no bound (unbounded sizes, or none planned) runs everywhere."""
    mod = random_module(seed, branch_chains=True, dynamic=dynamic)
    (plan,) = memory_plan(mod)
    reference, ours = relax_vm(mod, planner="none"), relax_vm(mod, planner="memplan")
    for n in N_VALUES:
        shape_vars = {"n": n, "m": 3}
        if "n" in plan.checked_bounds and n > plan.upper_bounds["n"]:
            error = past_bound_error("main", "n", n, plan.upper_bounds["n"])
            with pytest.raises(Exception, match=error):
                assert_same_relax_results(
                    mod, mod, seed=seed, shape_vars=shape_vars, vms=(reference, ours)
                )
            continue
        for input_seed in (seed, seed + 1000):
            assert_same_relax_results(
                mod, mod, seed=input_seed, shape_vars=shape_vars, vms=(reference, ours)
            )


def test_the_random_dynamic_programs_reach_the_check():
    """The test above is not vacuous: most bounded programs plan tensors at the bound, so their
    calls past it must raise."""
    checked = sum(
        bool(plan.checked_bounds)
        for seed in SEEDS
        for plan in memory_plan(random_module(seed, branch_chains=True, dynamic="bounded"))
    )
    assert checked >= len(SEEDS) // 2


@I.ir_module
class SumOfExps:
    """The shape of the first report of the failure: `a`, `b` and `c` are live together and
    packed at offsets sized for n = 1024."""

    @R.function
    def main(x: R.Tensor(("n",), "float32"), w: R.Tensor((8, 16), "float32")):
        R.func_attr({"tir_var_upper_bound": {"n": 1024}})
        with R.dataflow():
            s = R.exp(w)
            a = R.exp(x)
            b = R.exp(a)
            c = R.add(a, b)
            d = R.sum(c)
            e = R.sum(s)
            f = R.add(d, e)
            R.output(f)
        return f


def _run(executable, *arrays):
    vm = tvm.relax.VirtualMachine(executable, tvm.cpu())
    return vm["main"](*[tvm.runtime.tensor(a) for a in arrays]).numpy()


@pytest.mark.parametrize("n", [1, 1000, 1024, 1025, 1100, 1500, 3000])
def test_a_call_past_the_bound_raises_naming_function_variable_value_and_bound(n):
    """Within the bound, tvm_memplan.compile gives stock's results; past it, an error naming the
    function, the variable, its value and the bound (stock fails the VM's storage check, or not
    at all when the tensor happens to fit)."""
    rng = np.random.default_rng(n)
    x = (rng.random(n) * 0.1).astype("float32")
    w = (rng.random((8, 16)) * 0.1).astype("float32")
    ours = tvm_memplan.compile(SumOfExps, "llvm")
    if n <= 1024:
        np.testing.assert_array_equal(_run(ours, x, w), _run(tvm.compile(SumOfExps, "llvm"), x, w))
        return
    with pytest.raises(Exception, match=past_bound_error("main", "n", n, 1024)):
        _run(ours, x, w)


def test_the_check_is_in_the_printed_module():
    """The check is IR: it shows where the planned module is printed, before the storages, as
    a call of the VM's own shape match (no Python in the runtime), on `max(n, bound)`."""
    from tvm_memplan.analysis import planner_input
    from tvm_memplan.transform import StaticPlanBlockMemory

    planned = StaticPlanBlockMemory()(planner_input(SumOfExps))
    script = planned["main"].script()
    check = script.index('R.call_packed("vm.builtin.match_shape", R.shape([T.max(n, 1024)])')
    assert check < script.index("R.memory.alloc_storage")


@pytest.mark.parametrize("upper_bound", [32, None])
def test_decoder_with_symbolic_seq_len(upper_bound):
    """A Llama-style decoder as MLC-LLM compiles it: identical logits to stock at several
    lengths up to the bound; past the bound an error naming `seq_len`. Without a bound every
    length runs."""
    mod = decoder_module(upper_bound=upper_bound)
    stock = tvm.relax.VirtualMachine(tvm.compile(mod, "llvm"), tvm.cpu())
    ours = tvm.relax.VirtualMachine(tvm_memplan.compile(mod, "llvm"), tvm.cpu())
    for seq_len in (1, 7, 32, 33):
        inputs = [tvm.runtime.tensor(a) for a in decoder_inputs(mod, seq_len)]
        if upper_bound is not None and seq_len > upper_bound:
            error = past_bound_error("forward", "seq_len", seq_len, upper_bound)
            with pytest.raises(Exception, match=error):
                ours["forward"](*inputs)
            continue
        np.testing.assert_array_equal(
            ours["forward"](*inputs).numpy(), stock["forward"](*inputs).numpy()
        )
