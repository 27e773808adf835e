"""Builds for GPU targets (no GPU here: build only). Wherever the stock pipelines build, the
"memplan" ones build too, with the same fused kernels; calls go in place after the target's
schedules, on the scheduled kernels. A representative subset of the zoo is built for cuda here;
``bench/plan.py`` builds every model.

The kernels of a memplan build are the stock build's, except that a kernel called both in place
and out of place is there twice (``<name>`` and ``<name>_inplace``); a kernel called only in
place is there once, in its in-place form.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
import tvm
from tvm.script import relax as R

import tvm_memplan
from tvm_memplan.analysis import count_calls, storage_after_planning
from tvm_memplan.instrument import capture
from tvm_memplan.testing import device_kernel_names, lanes_in_one_address
from zoo.models import ZOO
from zoo.workloads import WORKLOADS

sys.path.insert(0, str(Path(__file__).parent / "relax"))
from random_relax import random_module  # noqa: E402

# The in-place pass the memplan Relax pipeline runs before RewriteDataflowReshape.
AFTER_SCHEDULING = "tvm_memplan.RewriteDataflowReshape"
OUR_PLANNER = "tvm_memplan.StaticPlanBlockMemory"
STOCK_PLANNER = "StaticPlanBlockMemory"
VECTORIZE_LOOP = "tirx.VectorizeLoop"


@tvm.script.ir_module
class Elementwise:
    """The four-operator function of issue 18: it failed on every GPU target."""

    @R.function
    def main(x: R.Tensor((64, 64), "float32"), y: R.Tensor((64, 64), "float32")):
        with R.dataflow():
            a = R.exp(x)
            b = R.add(a, y)
            c = R.multiply(b, y)
            d = R.nn.relu(c)
            R.output(d)
        return d


@tvm.script.ir_module
class WithIntermediates:
    """Elementwise ops around reductions (softmax, layer norm): fused kernels with intermediate
    inputs, which may run in place once scheduled. (No matmul: dlight's Metal matmul rule
    crashes TVM 0.27 itself on it.)"""

    @R.function
    def main(
        x: R.Tensor((64, 64), "float32"),
        w: R.Tensor((64, 64), "float32"),
        gamma: R.Tensor((64,), "float32"),
    ):
        with R.dataflow():
            a = R.exp(x)
            b = R.nn.softmax(a, axis=-1)
            c = R.add(b, w)
            d = R.nn.softmax(c, axis=0)
            e = R.nn.layer_norm(d, gamma, gamma, axes=[-1])
            f = R.multiply(e, x)
            R.output(f)
        return f


def _outcome(build):
    try:
        build()
    except Exception as error:  # noqa: BLE001  (any failure of a build is an outcome)
        return str(error).strip().splitlines()[-1]
    return None


GPU_TARGETS = ["cuda", "metal", "opencl", "rocm", "vulkan"]


@pytest.mark.parametrize("target", GPU_TARGETS)
def test_memplan_relax_pipeline_runs_wherever_the_stock_one_does(target):
    """The Relax pipeline alone (no code generation, so rocm and vulkan count too)."""
    target = tvm.target.Target(target)

    def stock():
        with target:
            tvm_memplan.pipeline.stock_relax_pipeline(target)(WithIntermediates)

    def ours():
        with target:
            tvm_memplan.relax_pipeline("default")(WithIntermediates)

    assert _outcome(stock) is None, "the stock Relax pipeline itself fails here"
    assert _outcome(ours) is None


@pytest.mark.parametrize("target", GPU_TARGETS)
@pytest.mark.parametrize("mod", [Elementwise, WithIntermediates], ids=["elementwise", "fused"])
def test_memplan_builds_wherever_stock_builds(mod, target):
    """Whole builds; where the stock build fails (no ROCm, no Vulkan codegen in this TVM), ours
    fails with the same error, never at a stage of ours."""
    stock = _outcome(lambda: tvm.compile(mod, target))
    ours = _outcome(lambda: tvm_memplan.compile(mod, target))
    via_tvm = _outcome(lambda: tvm.compile(mod, target, relax_pipeline="memplan"))
    assert ours == stock and via_tvm == stock
    if stock is not None:
        # Both fail alike, which is all this test can check here: it did not build ours.
        pytest.skip(reason=f"the stock build fails too on {target} (so does ours, alike): {stock}")


def _strip_inplace(name: str) -> str:
    return re.sub(r"_inplace(?=_kernel$)", "", name)


def assert_same_kernels(stock: list[str], ours: list[str]) -> None:
    """Ours has the stock kernels (each maybe in its in-place form), plus the out-of-place form
    of kernels that are called both ways."""
    assert sorted({_strip_inplace(k) for k in ours}) == stock
    both = [k for k in ours if k.endswith("_inplace_kernel") and _strip_inplace(k) in ours]
    assert len(ours) == len(stock) + len(both)


class CudaBuild:
    """A model built for cuda by stock and by memplan, with what the tests look at."""

    def __init__(self, mod: tvm.IRModule, via: str = "tvm_memplan.compile"):
        target = tvm.target.Target("cuda")
        built = {}

        def build(key, compile_):
            def run():
                built[key] = compile_()

            return run

        stock = capture(
            build("stock", lambda: tvm.compile(mod, target)), [STOCK_PLANNER], after=True
        )
        if via == "tvm_memplan.compile":
            compile_ours = lambda: tvm_memplan.compile(mod, target)  # noqa: E731
        else:
            compile_ours = lambda: tvm.compile(mod, target, relax_pipeline="memplan")  # noqa: E731
        ours = capture(
            build("ours", compile_ours), [AFTER_SCHEDULING, OUR_PLANNER, VECTORIZE_LOOP], after=True
        )
        self.lanes_in_one_address = lanes_in_one_address(ours[VECTORIZE_LOOP])
        self.stock_kernels = device_kernel_names(built["stock"])
        self.kernels = device_kernel_names(built["ours"])
        self.inplace_calls = count_calls(ours[AFTER_SCHEDULING])
        self.planned = storage_after_planning(ours[OUR_PLANNER]).total_bytes
        self.stock_planned = storage_after_planning(stock[STOCK_PLANNER]).total_bytes


# Models of the zoo built in CI (all of them in bench/plan.py), and how many calls run in place
# once scheduled: regression figures of the cuda builds, read off the builds' IR. small_cnn has
# none: dlight schedules its convolutions as implicit GEMMs whose thread blocks read a halo of
# the input that neighbouring blocks would overwrite (the proof refuses; on the CPU, where the
# padding loop reads the whole input first, they run in place).
CI_MODELS = {"small_cnn": 0, "residual_net": 3, "transformer_block": 2, "vision_transformer": 8}


@pytest.fixture(scope="module")
def cuda_builds():
    cache = {}

    def get(name, via="tvm_memplan.compile"):
        if (name, via) not in cache:
            cache[name, via] = CudaBuild(ZOO[name]()[0], via)
        return cache[name, via]

    return get


@pytest.mark.parametrize("model", list(CI_MODELS))
def test_zoo_model_builds_for_cuda_with_the_stock_kernels(model, cuda_builds):
    build = cuda_builds(model)
    assert build.kernels, "no kernel built"
    assert_same_kernels(build.stock_kernels, build.kernels)


@pytest.mark.parametrize("model", list(CI_MODELS))
def test_zoo_model_stores_no_two_lanes_to_one_address_for_cuda(model, cuda_builds):
    """dlight vectorizes its local caches: after VectorizeLoop, no kernel of the memplan build
    writes distinct lanes to one element (issue 35)."""
    assert cuda_builds(model).lanes_in_one_address == []


@pytest.mark.parametrize("model", list(CI_MODELS))
def test_zoo_model_keeps_its_in_place_kernels(model, cuda_builds):
    """The calls made in place after scheduling, per model; every one of them is a kernel of
    the build."""
    build = cuda_builds(model)
    assert build.inplace_calls == CI_MODELS[model]
    in_place_kernels = [k for k in build.kernels if k.endswith("_inplace_kernel")]
    assert bool(in_place_kernels) == (build.inplace_calls > 0)


@pytest.mark.parametrize("model", list(CI_MODELS))
def test_zoo_model_plans_no_more_bytes_than_stock_for_cuda(model, cuda_builds):
    """On the IR the VM runs: our planner and in-place calls never plan more than stock."""
    build = cuda_builds(model)
    assert build.planned <= build.stock_planned


def test_tvm_compile_with_the_memplan_relax_pipeline_builds_the_same(cuda_builds):
    """``tvm.compile(..., relax_pipeline="memplan")`` runs the same Relax passes."""
    ours = cuda_builds("residual_net")
    via_tvm = cuda_builds("residual_net", via="tvm.compile")
    assert via_tvm.kernels == ours.kernels
    assert via_tvm.inplace_calls == ours.inplace_calls


@pytest.mark.parametrize("seed", range(0, 12, 3))
def test_random_programs_build_for_cuda(seed):
    """Seeded random Relax programs (tuples, views, constants, branches): wherever the stock
    build succeeds, ours does, with the stock kernels."""
    mod = random_module(seed)
    stock = tvm.compile(mod, "cuda")
    ours = tvm_memplan.compile(mod, "cuda")
    assert_same_kernels(device_kernel_names(stock), device_kernel_names(ours))


def test_random_fused_programs_build_for_cuda():
    from test_inplace_prim_func import random_fused_source

    built_in_place = 0
    for seed in range(4):
        mod = tvm.IRModule({"main": tvm.script.from_source(random_fused_source(seed))})
        stock = device_kernel_names(tvm.compile(mod, "cuda"))
        ours = device_kernel_names(tvm_memplan.compile(mod, "cuda"))
        assert_same_kernels(stock, ours)
        built_in_place += any(k.endswith("_inplace_kernel") for k in ours)
    assert built_in_place >= 2


GPU_WORKLOADS = sorted(name for name, w in WORKLOADS.items() if w.gpu)


@pytest.mark.parametrize("workload", GPU_WORKLOADS)
def test_gpu_workloads_build_for_cuda(workload):
    """Scheduled TIR workloads go through the memplan TIR pipeline for cuda."""
    mod = WORKLOADS[workload].build()
    stock = device_kernel_names(tvm.compile(mod, "cuda"))
    ours = device_kernel_names(tvm_memplan.compile(mod, "cuda"))
    assert ours == stock and ours


def _symbolic_decoder() -> tvm.IRModule:
    """An MLC-LLM-style block: RMS norm and a SiLU MLP over a symbolic `seq_len`, bounded."""
    from tvm.relax.frontend import nn
    from tvm.relax.frontend.nn import op

    class Block(nn.Module):
        def __init__(self, d: int = 64):
            self.weight = nn.Parameter((d,), "float32")
            self.up = nn.Linear(d, 4 * d, bias=False)
            self.down = nn.Linear(4 * d, d, bias=False)

        def forward(self, x: nn.Tensor):
            h = op.rms_norm(x, self.weight, axes=[-1])
            return x + self.down(op.silu(self.up(h)))

    mod, _ = Block().export_tvm({"forward": {"x": nn.spec.Tensor((1, "seq_len", 64), "float32")}})
    mod["forward"] = mod["forward"].with_attr("tir_var_upper_bound", {"seq_len": 128})
    return mod


def test_symbolic_model_relax_pipeline_builds_for_cuda():
    """Symbolic sizes: the memplan Relax pipeline (in place after scheduling, our planner)
    builds what the stock one builds, with its kernels."""
    mod = _symbolic_decoder()
    stock = device_kernel_names(tvm.compile(mod, "cuda"))
    ours = device_kernel_names(tvm.compile(mod, "cuda", relax_pipeline="memplan"))
    assert_same_kernels(stock, ours)


def test_symbolic_model_builds_for_cuda():
    """The whole memplan build: dlight's local matmul accumulator, indexed through a vthread of
    extent 1, compacts to a constant size as stock's does (CUDA takes no other)."""
    mod = _symbolic_decoder()
    stock = device_kernel_names(tvm.compile(mod, "cuda"))
    assert_same_kernels(stock, device_kernel_names(tvm_memplan.compile(mod, "cuda")))
