"""The planner on seeded random Relax programs with branches, tuples and views
(tests/relax/random_relax.py, branch chains on) and on the model zoo: results, plan invariants,
the stock planner's model, and the stock planner's miscompile on branches."""

import pytest
from random_relax import DYNAMIC, random_module
from tvm import relax

from tvm_memplan.analysis import memory_plan, planner_input
from tvm_memplan.testing import assert_same_relax_results, relax_vm
from zoo.models import ZOO

SEEDS = range(40)


def check_plan(plan) -> None:
    """Invariants of a plan, checked from its records alone: every planned tensor inside its
    storage at an aligned offset, no two tensors of one storage live at the same point sharing
    a byte (but those a copy-free concatenation groups, which keep their offsets from each
    other), and no fewer bytes than the bound."""
    by_storage = {}
    for tensor in plan.tensors:
        if tensor.planned:
            by_storage.setdefault(tensor.storage, []).append(tensor)
    for index, tensors in by_storage.items():
        storage = plan.storages[index]
        for i, a in enumerate(tensors):
            if storage.bytes >= 0:
                assert a.offset % 64 == 0 and a.offset + a.bytes <= storage.bytes
            for b in tensors[:i]:
                if a.group >= 0 and a.group == b.group:
                    assert a.offset - b.offset == a.group_offset - b.group_offset
                elif a.first <= b.last and b.first <= a.last:
                    assert a.offset + a.bytes <= b.offset or b.offset + b.bytes <= a.offset, (
                        f"{a.binding} and {b.binding} overlap in storage {index}"
                    )
    assert plan.planned_bytes >= plan.peak_live_bytes
    if plan.planner == "memplan" and plan.stock_bytes >= 0:
        assert plan.planned_bytes <= plan.stock_bytes or plan.decision == "stock_ill_formed"


@pytest.mark.parametrize("seed", SEEDS)
def test_random_program_keeps_its_results(seed):
    """Against a build without any planner (every tensor its own storage), two input draws so
    both branches run, each run twice: outputs identical, inputs untouched."""
    mod = random_module(seed, branch_chains=True)
    vms = (relax_vm(mod, planner="none"), relax_vm(mod, planner="memplan"))
    for input_seed in (seed, seed + 1000):
        assert_same_relax_results(mod, mod, seed=input_seed, vms=vms)


@pytest.mark.parametrize("seed", SEEDS)
def test_random_program_plan_invariants(seed):
    for plan in memory_plan(random_module(seed, branch_chains=True)):
        check_plan(plan)


def test_the_random_programs_include_the_stock_planners_miscompile():
    """The results test above is not vacuous for branches: on some of these programs TVM's plan
    is not well formed (apache/tvm#20191), and ours runs them correctly."""
    broken = 0
    for seed in SEEDS:
        planned = relax.transform.StaticPlanBlockMemory()(
            planner_input(random_module(seed, branch_chains=True))
        )
        broken += not relax.analysis.check_well_formed(planned)
    assert broken >= 5  # 11 of these 40


@pytest.mark.parametrize("dynamic", DYNAMIC)
@pytest.mark.parametrize("seed", SEEDS)
def test_the_stock_model_predicts_the_stock_planner(seed, dynamic):
    """The model that decides the fallback without running TVM's planner predicts its bytes and
    its allocations of symbolic size, at static sizes, at sizes `tir_var_upper_bound` bounds
    (TVM's storages at the bound) and at unbounded ones (reused only for a provably equal
    size)."""
    for plan in memory_plan(random_module(seed, branch_chains=True, dynamic=dynamic)):
        assert plan.stock_source == "stock_pass"
        assert plan.stock_model_bytes == plan.stock_bytes
        assert plan.stock_model_symbolic_allocations == plan.stock_symbolic_allocations


def test_the_dynamic_programs_have_allocations_of_symbolic_size():
    """The test above is not vacuous for symbolic sizes: unbounded programs leave TVM's plan
    with storages of symbolic size, and bounded ones with none of them but the results."""
    unbounded = [memory_plan(random_module(s, dynamic="unbounded"))[0] for s in SEEDS]
    bounded = [memory_plan(random_module(s, dynamic="bounded"))[0] for s in SEEDS]
    assert sum(p.stock_symbolic_allocations > 1 for p in unbounded) >= 10
    assert sum(p.stock_bytes > 0 for p in bounded) >= 10


@pytest.mark.parametrize("seed", SEEDS)
def test_the_memplan_model_predicts_our_planner(seed):
    """The model the in-place pass judges its rewrites by, without planning, predicts our
    planner's bytes (copy-free concatenation, which the model does not know, off)."""
    for plan in memory_plan(random_module(seed, branch_chains=True), copy_free_concat=False):
        assert plan.memplan_model_bytes == plan.planned_bytes


@pytest.mark.parametrize("model", sorted(ZOO))
def test_the_memplan_model_predicts_our_planner_on_the_zoo(model):
    (plan,) = memory_plan(ZOO[model]()[0], copy_free_concat=False)
    assert plan.memplan_model_bytes == plan.planned_bytes


@pytest.mark.parametrize("model", sorted(ZOO))
def test_zoo_plans(model):
    """On every model of the zoo: the invariants, ours at the bound (within alignment padding),
    never more than the stock planner, and the model predicting the stock planner."""
    mod, _ = ZOO[model]()
    (plan,) = memory_plan(mod)
    check_plan(plan)
    assert plan.planner == "memplan"
    assert plan.planned_bytes <= 1.001 * plan.peak_live_bytes
    assert plan.planned_bytes <= plan.stock_bytes
    assert plan.stock_model_bytes == plan.stock_bytes
