"""CompactBufferAllocation under the schedules users compile (issue 35): split, compute_at and
vectorize, the seeded fuzz of zoo/schedules.py, MetaSchedule's CPU forms written by hand, and
dlight's CPU rules on the zoo's models. Each build is compared with a build that compacts
nothing (``testing.COMPACTIONS["none"]``), in the pipelines users compile with: TVM's
``"s_tir"`` with our pass swapped in (``"ours"``) and the ``"memplan"`` pipeline. On GPU
schedules the device IR after VectorizeLoop must store no two lanes to one address.

How often the stock pass gets the same schedules wrong is measured in bench/compact.py.
"""

from __future__ import annotations

import numpy as np
import pytest
import tvm
from tvm import s_tir, te

import tvm_memplan
from tvm_memplan import testing
from tvm_memplan.instrument import capture
from zoo.models import ZOO
from zoo.schedules import TOOL_SCHEDULES, dlight_cpu, random_schedule

#: The builds compared with the reference (no compaction).
BUILDS = ("ours", "memplan")
CPU_SEEDS = range(48)
GPU_SEEDS = range(16)
#: Models whose dlight CPU build CI runs (all of them in bench/compact.py): vectorized
#: reductions (small_cnn, resnet, unet) and GEMVs (transformer_block, vision_transformer).
DLIGHT_MODELS = ("small_cnn", "transformer_block", "resnet", "unet", "vision_transformer")
LLVM = tvm.target.Target("llvm")


def _issue_reproducer() -> tvm.IRModule:
    a = te.placeholder((8,), name="A")
    b = te.compute((8,), lambda i: a[i] * 2, name="B")
    c = te.compute((8,), lambda i: b[i] + 1, name="C")
    sch = s_tir.Schedule(te.create_prim_func([a, c]))
    _, inner = sch.split(sch.get_loops(sch.get_sblock("C"))[0], [None, 4])
    sch.compute_at(sch.get_sblock("B"), inner)
    sch.vectorize(inner)
    return sch.mod


def _runs(lib, args: list[np.ndarray]) -> list[np.ndarray]:
    tensors = [tvm.runtime.tensor(a.copy()) for a in args]
    lib["main"](*tensors)
    return [t.numpy() for t in tensors]


def assert_builds_agree(mod: tvm.IRModule, builds=BUILDS, seeds=range(testing.RUNS)) -> None:
    """Each build of ``mod`` computes what the build without compaction computes, on fresh
    random inputs per seed."""
    reference = testing.build_prim_module(mod, compaction="none")
    libs = {name: testing.build_prim_module(mod, compaction=name) for name in builds}
    for seed in seeds:
        args = testing.random_args(mod["main"], seed)
        want = _runs(reference, args)
        for name, lib in libs.items():
            for i, (got, expected) in enumerate(zip(_runs(lib, args), want, strict=True)):
                np.testing.assert_array_equal(
                    got, expected, err_msg=f"{name}, seed {seed}, arg {i}"
                )


def test_issue_reproducer_computes_right_in_every_pipeline():
    """Split, compute_at into the inner loop, vectorize: `2 * a + 1` in TVM's pipeline with our
    pass, in "memplan" and through tvm_memplan.compile, three calls each with fresh inputs."""
    mod = _issue_reproducer()
    builds = {name: testing.build_prim_module(mod, compaction=name) for name in BUILDS}
    builds["tvm_memplan.compile"] = tvm_memplan.compile(mod, target="llvm")
    for seed in range(testing.RUNS):
        a = np.random.default_rng(seed).standard_normal(8).astype("float32")
        for name, lib in builds.items():
            c = tvm.runtime.tensor(np.zeros(8, "float32"))
            lib["main"](tvm.runtime.tensor(a), c)
            np.testing.assert_allclose(c.numpy(), a * 2 + 1, err_msg=name)


def test_stock_pipeline_gets_the_reproducer_wrong():
    """What the fix is measured against: TVM 0.27's own pipeline gives the lanes one element
    (`[7, 7, 7, 7, 15, ...]` on `arange(8)`). When this fails, TVM fixed its pass."""
    lib = testing.build_prim_module(_issue_reproducer(), compaction="stock")
    c = tvm.runtime.tensor(np.zeros(8, "float32"))
    lib["main"](tvm.runtime.tensor(np.arange(8, dtype="float32")), c)
    np.testing.assert_array_equal(c.numpy(), [7, 7, 7, 7, 15, 15, 15, 15])


@pytest.mark.parametrize("seed", CPU_SEEDS)
def test_random_cpu_schedule_keeps_results(seed):
    """Vectorized, parallel, unrolled and serial loops around every compute location."""
    assert_builds_agree(random_schedule(seed).mod)


@pytest.mark.parametrize("seed", GPU_SEEDS)
def test_random_gpu_schedule_keeps_lanes_apart(seed):
    """Thread-bound schedules with vectorized inner loops, built for cuda by "memplan": after
    VectorizeLoop no store writes distinct lanes to one address."""
    mod = random_schedule(seed, gpu=True).mod
    vectorized = capture(
        lambda: testing.build_prim_module(mod, "cuda", "memplan"),
        ["tirx.VectorizeLoop"],
        after=True,
    )["tirx.VectorizeLoop"]
    assert testing.lanes_in_one_address(vectorized) == []


@pytest.mark.parametrize("name", sorted(TOOL_SCHEDULES))
def test_metaschedule_cpu_forms_keep_results(name):
    """MetaSchedule's multi-level tiling, cache_write with reverse_compute_at, a parallel outer
    loop, vectorized innermost loops and unrolling, written by hand (its TuneContext segfaults
    in this TVM wheel)."""
    assert_builds_agree(TOOL_SCHEDULES[name]().mod)


@pytest.mark.parametrize("model", DLIGHT_MODELS)
def test_dlight_cpu_rules_keep_results(model):
    """A zoo model fused and scheduled by dlight's CPU rules, built with each compaction, gives
    the results of the build without compaction, call after call."""
    mod, func_name = ZOO[model]()
    mod = dlight_cpu(mod, LLVM)
    vms = {
        name: tvm.relax.VirtualMachine(testing.build_prim_module(mod, LLVM, name), tvm.cpu())
        for name in ("none", *BUILDS)
    }
    inputs = testing.relax_inputs(mod[func_name], seed=1)
    testing.assert_identical_relax_results(vms, func_name, inputs)


def test_the_lanes_check_finds_a_shared_address():
    """The GPU check can fail: the stock pipeline's VectorizeLoop output of the reproducer
    stores four lanes to one element."""
    vectorized = capture(
        lambda: testing.build_prim_module(_issue_reproducer(), compaction="stock"),
        ["tirx.VectorizeLoop"],
        after=True,
    )["tirx.VectorizeLoop"]
    assert testing.lanes_in_one_address(vectorized) == ["main: B[T.Broadcast(0, 4)]"]
