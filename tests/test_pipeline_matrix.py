"""Our passes inside the Relax pipelines users compose, not only ours: each build called three
times against the stock build of the same pipeline.

Pipelines: the fused CPU recipe `["zero", "default"]`, the same after FuseTransposeMatmul,
`zero` run on the module before `compile` (TVM's own way to write it), and the cuda default
pipeline as a build (no GPU here: it must build wherever stock builds). MLC-LLM's pass order is
tests/test_mlc_llm.py. Workloads: models of the zoo, and random programs in which many values
are computed from constants only, so that FoldConstant (in `zero`, after our first in-place
pass) turns them into constants: an in-place call on one would write a constant and change the
next call's results.
"""

from __future__ import annotations

import random

import numpy as np
import pytest
import tvm
from tvm import relax

import tvm_memplan
from tvm_memplan.instrument import capture
from tvm_memplan.testing import assert_same_relax_results
from zoo.models import ZOO

_PLANNER = "tvm_memplan.StaticPlanBlockMemory"


def _zero(mod):
    return relax.get_pipeline("zero")(mod)


def _ftm_zero(mod):
    return _zero(relax.transform.FuseTransposeMatmul()(mod))


# name -> (stock build, our build): the same pipeline with TVM's passes and with ours.
PIPELINES = {
    "zero+default": (
        lambda mod: tvm.compile(_zero(mod), "llvm"),
        lambda mod: tvm_memplan.compile(mod, "llvm", relax_pipeline=["zero", "default"]),
    ),
    "transpose+zero+default": (
        lambda mod: tvm.compile(_ftm_zero(mod), "llvm"),
        lambda mod: tvm_memplan.compile(
            mod,
            "llvm",
            relax_pipeline=[relax.transform.FuseTransposeMatmul(), "zero", "default"],
        ),
    ),
    "compile(zero(mod))": (
        lambda mod: tvm.compile(_zero(mod), "llvm"),
        lambda mod: tvm_memplan.compile(_zero(mod), "llvm"),
    ),
}


def _folding_program(seed: int, length: int = 12) -> tvm.IRModule:
    """`main(x)`: a chain of elementwise operators over `x` and values computed from constants
    only (tensor constants, and `arange`, which LegalizeOps itself folds), each value read once
    or more later, the last few combined with `x`."""
    rng = random.Random(seed)
    data = np.random.default_rng(seed)
    shape = (4, 8)
    x = relax.Var("x", relax.TensorType(shape, "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            arange = bb.emit(relax.op.arange(0, 32, 1, "float32"))
            pool = [
                bb.emit(relax.op.multiply(relax.op.reshape(arange, shape), relax.const(0.05))),
                relax.const(data.uniform(-1, 1, size=shape).astype("float32")),
                relax.const(data.uniform(-1, 1, size=(1, 8)).astype("float32")),
            ]
            unary = [relax.op.sin, relax.op.exp, relax.op.tanh, relax.op.negative]
            binary = [relax.op.add, relax.op.multiply, relax.op.subtract]
            for _ in range(length):
                if rng.random() < 0.5:
                    value = rng.choice(unary)(rng.choice(pool))
                else:
                    value = rng.choice(binary)(rng.choice(pool), rng.choice(pool))
                pool.append(bb.emit(value))
            result = x
            for value in pool[-3:]:
                result = bb.emit(relax.op.add(result, value))
            out = bb.emit_output(result)
        bb.emit_func_output(out)
    return bb.get()


def _workloads():
    for name in ("mlp", "transformer_block", "small_cnn", "unet"):
        yield pytest.param(name, lambda name=name: ZOO[name](), id=name)
    for seed in range(6):
        yield pytest.param(
            f"folding{seed}",
            lambda seed=seed: (_folding_program(seed), "main"),
            id=f"folding{seed}",
        )


@pytest.mark.parametrize("pipeline", sorted(PIPELINES))
@pytest.mark.parametrize(("name", "make"), list(_workloads()))
def test_same_results_as_the_stock_pipeline_on_three_calls(pipeline, name, make):
    """Every call of our build gives the first call's results of the stock build, and our
    planner had no in-place write to revert: our in-place pass never made an unsafe one."""
    mod, func_name = make()
    build_stock, build_ours = PIPELINES[pipeline]
    stock = build_stock(mod)
    built = {}
    captured = capture(lambda: built.setdefault("ours", build_ours(mod)), [_PLANNER])
    vms = tuple(relax.VirtualMachine(e, tvm.cpu()) for e in (stock, built["ours"]))
    assert_same_relax_results(mod, mod, func_name, vms=vms)
    reverted = tvm_memplan.analysis.unsafe_inplace_writes(captured[_PLANNER])
    assert reverted == {}, f"our in-place pass left unsafe writes: {reverted}"


@pytest.mark.parametrize("seed", range(3))
def test_folding_programs_build_for_cuda(seed):
    """The cuda default pipeline, as a build: ours builds where stock does."""
    mod = _folding_program(seed)
    tvm.compile(mod, "cuda")
    tvm_memplan.compile(mod, "cuda")
