"""tvm-memplan inside MLC-LLM's compile pipeline, on an LLM built as MLC-LLM builds one
(zoo/llm.py): the pipeline is MLC's order without ComputePrimValue, the memplan build runs the
model as MLC's engine does (paged KV cache, prefill, decode, batches) with the stock build's
results bit for bit, and a call past a bound is an error naming the variable."""

from __future__ import annotations

import json

import numpy as np
import pytest
import tvm

import tvm_memplan
from tvm_memplan import pass_names, testing
from tvm_memplan.analysis import recorded_pool
from tvm_memplan.instrument import trace
from tvm_memplan.testing import past_bound_error
from zoo import llm

# The zoo's test size (cheap to build with MLC's llvm schedule; a prefill chunk of 64 keeps the
# past-the-bound call cheap).
CONFIG = llm.TEST
# Code generation at opt-level 0: the same for both builds, so results compare bit for bit.
TARGET = tvm.target.Target({"kind": "llvm", "opt-level": 0})

# mlc-ai/mlc-llm python/mlc_llm/compiler_pass/pipeline.py, `_mlc_llm_pipeline`: its passes in
# its order, those that act on this build (llvm; no flashinfer, cuBLAS, tensor or pipeline
# parallelism, quantization; its CUDA graph passes run, and capture nothing without the option),
# named as the passes name themselves: MLC's AttachMetadataWithMemoryUsage is "AttachMetadata",
# tvm.tir.transform.BindTarget and ForceNarrowIndexToInt32 are "tirx.BindTarget" and
# "tirx.NarrowDataType", and dl.ApplyDefaultSchedule(dl.cpu.GEMV()) is "ApplyDefaultSchedule".
# No ComputePrimValue.
MLC_LLM_ORDER = [
    # Phase 0
    "AttachVariableBounds",
    "AttachCUDAGraphSymbolicCaptureHints",
    "AttachMemoryPlanAttr",
    "tirx.BindTarget",
    # Phase 1
    "FuseTransposeMatmul",
    # Phase 2
    "DispatchSampling",
    "DispatchSortScan",
    "LegalizeOps",
    "AnnotateTIROpPattern",
    "FoldConstant",
    "FuseOps",
    "FuseTIR",
    # Phase 3
    "DeadCodeElimination",
    "CleanUpTIRAttrs",
    # Phase 4
    "ApplyDefaultSchedule",
    "tirx.NarrowDataType",
    "RewriteDataflowReshape",
    "ToNonDataflow",
    "RemovePurityChecking",
    "CallTIRRewrite",
    "StaticPlanBlockMemory",
    "AttachMetadata",
    "RewriteCUDAGraph",
    "AttachCUDAGraphAllocInitFunc",
    "LowerGPUIPCAllocStorage",
    "LowerAllocTensor",
    "KillAfterLastUse",
    "LowerRuntimeBuiltin",
    "VMShapeLower",
    "AttachGlobalSymbol",
]

# Three generations: a short prompt, a longer one, one exactly at the prefill chunk.
PROMPT_LENGTHS = (5, 23, CONFIG.prefill_chunk_size)
DECODE_STEPS = 3


def _build(memplan: bool, compaction: bool = True, config: llm.LlamaConfig = CONFIG) -> dict:
    """The executable's VM, the passes that ran (all of them, and the pipeline's own: those
    its Sequential ran directly) and the metadata the pipeline wrote. Without `compaction`:
    the stock build with TVM's TIR pipeline compacting nothing (the reference for compaction)."""
    metadata: dict = {}
    pipeline = llm.mlc_llm_pipeline(variable_bounds=config.variable_bounds, metadata=metadata)
    mod, _ = llm.llm_module(config, TARGET)
    if memplan:
        build = lambda: tvm.compile(  # noqa: E731
            mod, TARGET, tir_pipeline="memplan", relax_pipeline=tvm_memplan.relax_pipeline(pipeline)
        )
    elif not compaction:
        substitutions, tir_pipeline = testing.COMPACTIONS["none"]

        def build():
            with tvm_memplan.pipeline.substituted(substitutions, "TIR pipeline"):
                return tvm.compile(mod, TARGET, tir_pipeline=tir_pipeline, relax_pipeline=pipeline)

    else:
        build = lambda: tvm.compile(mod, TARGET, relax_pipeline=pipeline)  # noqa: E731
    planner = pass_names.PLANNER if memplan else pass_names.STOCK_PLANNER
    passes = trace(build, [planner])
    own = [
        name
        for name, nesting in zip(passes.names, passes.nesting, strict=True)
        if nesting[-2:] == ("mlc_llm_pipeline", "sequential")
    ]
    vm = tvm.relax.VirtualMachine(passes.result, tvm.cpu())  # LLVM compiles the kernels here
    return {
        "executable": passes.result,
        "vm": vm,
        "ran": passes.names,
        "own": own,
        "metadata": metadata,
        "planned": passes.after[planner],
    }


@pytest.fixture(scope="module")
def stock():
    return _build(memplan=False)


@pytest.fixture(scope="module")
def ours():
    return _build(memplan=True)


@pytest.fixture(scope="module")
def uncompacted():
    return _build(memplan=False, compaction=False)


def _prompt(length: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, CONFIG.vocab_size, size=length)


def test_pipeline_is_mlc_llm_order_without_compute_prim_value():
    passes = llm.mlc_llm_passes(tvm.target.Target("llvm"), CONFIG.variable_bounds)
    names = [p.info.name for p in passes]
    assert names == MLC_LLM_ORDER
    assert "ComputePrimValue" not in names


# What tvm_memplan.relax_pipeline builds in place of TVM's passes (docs/pipelines.md).
OURS = {
    "LegalizeOps": "tvm_memplan.LegalizeOps",
    "RewriteDataflowReshape": "tvm_memplan.RewriteDataflowReshape",
    "StaticPlanBlockMemory": "tvm_memplan.StaticPlanBlockMemory",
}


def test_builds_ran_mlc_llm_order(stock, ours):
    """The pipeline's passes ran as it ran, in MLC's order, with ours in place of TVM's in
    the memplan build. Neither build ran ComputePrimValue (our planner's entry checks need
    none)."""
    assert stock["own"] == MLC_LLM_ORDER
    assert ours["own"] == [OURS.get(name, name) for name in MLC_LLM_ORDER]
    assert "ComputePrimValue" not in stock["ran"] and "ComputePrimValue" not in ours["ran"]


def test_memplan_runs_the_model_as_stock_does(stock, ours):
    """Every output of every function, over three generations with fresh prompts (each one
    prefill, three decode steps, a two-sequence batch prefill, three batch decode steps and a
    batch verify, and the same for the hidden-state forms), is the stock build's bit for bit."""
    weights = llm.llm_weights(CONFIG, seed=0)
    for generation, length in enumerate(PROMPT_LENGTHS):
        prompt = _prompt(length, seed=generation)
        expected = llm.run_llm(stock["vm"], CONFIG, weights, prompt, DECODE_STEPS, seed=generation)
        actual = llm.run_llm(ours["vm"], CONFIG, weights, prompt, DECODE_STEPS, seed=generation)
        assert sorted(actual) == sorted(expected) == sorted(llm.LLM_FUNCTIONS[:-1])
        for name, arrays in expected.items():
            assert len(actual[name]) == len(arrays)
            for got, want in zip(actual[name], arrays, strict=True):
                assert np.isfinite(want).all() and np.abs(want).max() > 0, name
                np.testing.assert_array_equal(got, want, err_msg=f"{name}, prompt of {length}")


def _symbolic_allocations(planned: tvm.IRModule) -> dict[str, int]:
    """Per Relax function, the `R.builtin.alloc_tensor` of a symbolic shape a planner left: each
    is a new block of the VM's pooled allocator for every new size a call brings."""
    counts = {}
    for gv, func in planned.functions.items():
        if not isinstance(func, tvm.relax.Function):
            continue
        found = []

        def visit(node, found=found):
            if (
                isinstance(node, tvm.relax.Call)
                and getattr(node.op, "name", None) == "relax.builtin.alloc_tensor"
                and not all(isinstance(e, tvm.tirx.IntImm) for e in node.args[0].values)
            ):
                found.append(node)

        tvm.relax.analysis.post_order_visit(func, visit)
        counts[gv.name_hint] = len(found)
    return counts


def test_bounded_results_are_planned_at_their_bound_as_stock_plans_them(stock, ours):
    """Under `relax.memory_plan_dynamic_func_output` every result whose size is bounded given the
    parameters (the logits, `(seq_len, vocab_size)`) gets a storage at its bound: ours leaves an
    allocation of symbolic shape only where stock leaves one (issue 36)."""
    stock_left = _symbolic_allocations(stock["planned"])
    ours_left = _symbolic_allocations(ours["planned"])
    assert sorted(ours_left) == sorted(stock_left)
    assert {f: n for f, n in ours_left.items() if n > stock_left[f]} == {}


def test_held_memory_does_not_grow_with_the_variety_of_calls():
    """What TVM's pooled allocator holds (every distinct block it handed out, measured with
    analysis.recorded_pool) once a prefill, decodes, a batch prefill and batch decodes have run
    stays the same after prefills of four more lengths and batches of every size up to the
    bound (issue 36: a result left at its actual shape took a new block for each of them)."""
    config = llm.HELD
    build = _build(memplan=True, config=config)
    weights = llm.llm_weights(config, seed=0)
    with recorded_pool() as pool:
        vm = tvm.relax.VirtualMachine(build["executable"], tvm.cpu())
        llm.serve(vm, config, weights, prompt_lengths=[5], batch_sizes=[2])
        held = pool.held_bytes
        lengths = [3, 17, 40, config.prefill_chunk_size]
        llm.serve(vm, config, weights, lengths, range(1, config.max_batch_size + 1), seed=1)
        assert pool.held_bytes == held, dict(pool.sizes())


def test_compaction_keeps_the_results_of_mlc_llm_kernels(ours, uncompacted):
    """MLC-LLM's kernels scheduled for llvm (dlight's CPU GEMV among them) compute with our
    compaction what they compute without any (issue 35: vectorized loops), over a generation."""
    weights = llm.llm_weights(CONFIG, seed=0)
    prompt = _prompt(PROMPT_LENGTHS[1], seed=7)
    expected = llm.run_llm(uncompacted["vm"], CONFIG, weights, prompt, DECODE_STEPS, seed=7)
    actual = llm.run_llm(ours["vm"], CONFIG, weights, prompt, DECODE_STEPS, seed=7)
    for name, arrays in expected.items():
        for got, want in zip(actual[name], arrays, strict=True):
            np.testing.assert_array_equal(got, want, err_msg=name)


def test_metadata_reports_the_planned_bytes(stock, ours):
    """AttachMetadata's "memory_usage" (MLC's estimate: the allocated storage of each function)
    is in the executable's `_metadata()` as in the dict given, for both builds, and ours is
    never more than stock's where MLC-LLM reads it: its largest, the temporary buffer its engine
    reserves twice. (Pool sizing allocates small functions' storages at the module's size, so
    that the pooled allocator reuses one block: per function, ours may be larger.)"""
    for build in (stock, ours):
        usage = build["metadata"]["memory_usage"]
        assert json.loads(build["vm"]["_metadata"]())["memory_usage"] == usage
        assert set(usage) == set(llm.LLM_FUNCTIONS)
    largest = {
        name: max(b["metadata"]["memory_usage"].values())
        for name, b in (("stock", stock), ("ours", ours))
    }
    assert largest["ours"] <= largest["stock"], largest


def test_prefill_past_the_chunk_is_an_error_naming_seq_len(stock, ours):
    """A prefill longer than the prefill chunk, in a cache that would take it: the memplan
    build stops with an error naming seq_len and its bound; the stock build fails on its
    storage."""
    length = CONFIG.prefill_chunk_size + 1
    weights = llm.llm_weights(CONFIG, seed=0)
    embedding = weights[0][_prompt(length, seed=7)][None]
    shape = tvm.runtime.ShapeTuple
    for build, error in (
        (ours, past_bound_error("prefill", "seq_len", length, CONFIG.prefill_chunk_size)),
        (stock, "storage allocation failure"),
    ):
        vm = build["vm"]
        cache = llm.create_kv_cache(vm, CONFIG, prefill_chunk_size=2 * length)
        tvm.get_global_func("vm.builtin.kv_state_add_sequence")(cache, 0)
        tvm.get_global_func("vm.builtin.kv_state_begin_forward")(cache, shape([0]), shape([length]))
        params = [tvm.runtime.tensor(w, tvm.cpu()) for w in weights]
        with pytest.raises(Exception, match=error):
            vm["prefill"](tvm.runtime.tensor(embedding, tvm.cpu()), cache, params)
