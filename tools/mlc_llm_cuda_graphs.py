"""CUDA graphs on MLC-LLM's own models: Llama, Qwen2 and Gemma2 built by MLC-LLM's own compile
path for cuda with ``relax.backend.use_cuda_graph`` (``mlc_llm compile --opt O2``), stock TVM
against tvm-memplan, build only (no GPU needed).

MLC-LLM is imported at run time from the source checkout given as the argument (its ``python``
folder); nothing of it is copied here. Its ``interface.compile.compile`` runs as ``mlc_llm
compile`` runs it: the model class and config from the model's own module, MLC's quantization,
``export_tvm`` with the model's default spec, then its ``mlc_llm`` pipeline with its variable
bounds, CUDA graph capture hints, metadata and pass config. Our ``build_func`` receives that
module and pipeline and builds it twice: stock (``tvm.compile(mod, target,
relax_pipeline=pipeline)``) and ours (``tvm_memplan.relax_pipeline(pipeline)`` and
``tir_pipeline="memplan"``). Per model, stock then ours:

1. whether the whole build (``tvm.compile`` to the executable) succeeds with CUDA graphs on;
2. whether RewriteCUDAGraph's output is well formed (``tvm.relax.analysis.well_formed``);
3. per function, the CUDA graphs (``run_or_capture`` regions) and the kernels inside them
   (``tvm_memplan.analysis.cuda_graphs``): ours must capture every kernel stock captures, in no
   more graphs;
4. the entry checks our planner adds (``vm.builtin.match_shape``) inside a captured graph (a
   check there would run when the graph is captured, not when it is replayed) or after the
   first graph of their function;
5. MLC-LLM's "temporary buffer" figure (AttachMetadataWithMemoryUsage's per-function planned
   bytes, their max as ``mlc_llm compile`` reports it), with CUDA graphs on and off;
6. with ``--planner-time ROUNDS``, the planner pass alone: TVM's StaticPlanBlockMemory and ours
   on the IR MLC-LLM's pipeline hands ours (the best of interleaved rounds; choose the depth
   with ``--set num_hidden_layers=N``);
7. with ``--inplace-time ROUNDS``, the same for the in-place pass: TVM's DataflowUseInplaceCalls
   and ours on the IR MLC-LLM's pipeline hands ours (stock MLC-LLM runs none: TVM's is the
   baseline of what such a pass costs there);
8. with ``--pass-split``, where the whole builds' times differ, each pass by its own time: the
   stock passes ours replaces (``pass_names.STOCK_REPLACED``) in stock's build, ours in their
   place in ours, and the rest of each build.

The package does not import here as a whole (``import mlc_llm`` loads its serving runtime, whose
C++ library is absent, and its model registry imports models written for another TVM), and the
checkout at hand was written for a TVM a little off 0.27. So the script applies, identically to
both builds, the small stubs of ``stubs()`` below and prints them. Every stub either replaces
something the compile path only imports (never runs), gives an API TVM 0.27 moved its old name,
or turns off an MLC-LLM (or TVM dlight) step that fails on TVM 0.27 in the stock build too.

The figures go with RewriteCUDAGraph's limits: it captures no kernel touching a function's
result or a storage of symbolic size, so prefill functions (their ``seq_len`` is no capture
hint) and the kernels writing logits stay outside every graph in both builds.

    PYTHONPATH=python python tools/mlc_llm_cuda_graphs.py [MLC_PYTHON] [--models llama,qwen2]
        [--quantization q4f16_1] [--set prefill_chunk_size=2048] [--functions] [--kernels]
        [--plans] [--planner-time ROUNDS] [--inplace-time ROUNDS] [--build-rounds N]
        [--pass-split] [--unstub PASS]

Exit status: 0 when ours holds everywhere, 1 when it falls short somewhere, 2 on bad input.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import dataclasses
import importlib
import io
import re
import sys
import time
import types
from collections.abc import Callable
from pathlib import Path

import tvm
from tvm import relax

import tvm_memplan
from tvm_memplan import analysis, pass_names
from tvm_memplan.analysis.cuda_graphs import (
    CUDA_GRAPH_ALLOC,
    ENTRY_CHECK,
    USE_CUDA_GRAPH,
    CaptureComparison,
    CaptureSummary,
    compare_capture,
    cuda_graph_capture,
    kernel_name,
)
from tvm_memplan.instrument import trace

DEFAULT_SOURCE = "/tmp/mlc-src/python"
#: MLC-LLM's pass that records the planned bytes (its pass name), and TVM's that captures.
ATTACH_METADATA = "AttachMetadata"
REWRITE = "RewriteCUDAGraph"
#: Interleaved rounds of the whole builds' timing (--build-rounds), the best of them kept.
BUILD_ROUNDS = 2

#: An A100-like target, as MLC-LLM's auto-detection would give on one (no GPU here).
TARGET = {
    "kind": "cuda",
    "arch": "sm_80",
    "max_num_threads": 1024,
    "max_threads_per_block": 1024,
    "thread_warp_size": 32,
    "max_shared_memory_per_block": 49152,
}


# ---- the models: MLC-LLM's classes, small configs (HF config.json keys) ------------------------


@dataclasses.dataclass(frozen=True)
class ModelSource:
    """Where MLC-LLM defines a model family, and a small config for it."""

    module: str
    model_class: str
    config_class: str
    config: dict


_COMMON = {
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 32,
    "hidden_size": 128,
    "intermediate_size": 256,
    "vocab_size": 512,
    "rms_norm_eps": 1e-6,
    "context_window_size": 512,
    "prefill_chunk_size": 128,
    "max_batch_size": 8,
}

MODELS: dict[str, ModelSource] = {
    "llama": ModelSource(
        "mlc_llm.model.llama.llama_model", "LlamaForCausalLM", "LlamaConfig", dict(_COMMON)
    ),
    "qwen2": ModelSource(
        "mlc_llm.model.qwen2.qwen2_model",
        "QWen2LMHeadModel",
        "QWen2Config",
        {**_COMMON, "hidden_act": "silu", "rope_theta": 1000000, "tie_word_embeddings": True},
    ),
    "gemma2": ModelSource(
        "mlc_llm.model.gemma2.gemma2_model",
        "Gemma2ForCausalLM",
        "Gemma2Config",
        {
            **_COMMON,
            "hidden_activation": "gelu_pytorch_tanh",
            "attention_bias": False,
            "query_pre_attn_scalar": 32,
            "attn_logit_softcapping": 50.0,
            "final_logit_softcapping": 30.0,
            "sliding_window": 512,
        },
    ),
    # Beyond the three the check runs by default (--models): a sliding window (Mistral: MLC-LLM's
    # rolling_cache_len and kv_seq_len bounds), Qwen3's norms on q and k, Phi-3's fused qkv.
    "mistral": ModelSource(
        "mlc_llm.model.mistral.mistral_model",
        "MistralForCausalLM",
        "MistralConfig",
        {**_COMMON, "sliding_window_size": 256, "context_window_size": -1},
    ),
    "qwen3": ModelSource(
        "mlc_llm.model.qwen3.qwen3_model",
        "Qwen3LMHeadModel",
        "Qwen3Config",
        {
            **_COMMON,
            "hidden_act": "silu",
            "attention_bias": False,
            "rope_theta": 1000000,
            "tie_word_embeddings": True,
        },
    ),
    "phi3": ModelSource(
        "mlc_llm.model.phi3.phi3_model",
        "Phi3ForCausalLM",
        "Phi3Config",
        {**_COMMON, "model_type": "phi3", "max_position_embeddings": 512},
    ),
}
DEFAULT_MODELS = ("llama", "qwen2", "gemma2")


# ---- stubs, identical for both builds ---------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Stub:
    """One thing replaced to import or run MLC-LLM's compile path on TVM 0.27, and why."""

    name: str
    why: str
    apply: Callable[[], None]


def _shell_package(name: str, path: Path) -> None:
    # A package without its __init__: its submodules import from `path` as usual.
    package = types.ModuleType(name)
    package.__path__ = [str(path)]
    sys.modules[name] = package


@dataclasses.dataclass
class RegistryEntry:
    """Stands for mlc_llm.model.Model, an entry of the registry mlc_llm.model.MODELS (which
    imports every model): the fields mlc_llm compile reads."""

    name: str
    model: type
    config: type
    quantize: dict
    model_task: str = "chat"
    embedding_metadata: object = None


def _packages(source: Path) -> None:
    _shell_package("mlc_llm", source / "mlc_llm")
    _shell_package("mlc_llm.model", source / "mlc_llm" / "model")
    sys.modules["mlc_llm.model"].Model = RegistryEntry


def _no_tqdm() -> None:
    module = types.ModuleType("tqdm")
    module.tqdm = lambda iterable=None, *args, **kwargs: iterable
    sys.modules["tqdm"] = module


class _DataTypeImmType(type):
    # TVM 0.27 writes a dtype argument as GenericConst(DataType, AnyType) (relax.op.builtin
    # .alloc_tensor does); MLC-LLM's DataTypeImm checks and builds the same thing.
    def __instancecheck__(cls, obj) -> bool:
        return isinstance(obj, tvm.ir.GenericConst) and isinstance(obj.value, tvm.DataType)


class _DataTypeImm(metaclass=_DataTypeImmType):
    def __new__(cls, dtype, span=None):
        return tvm.ir.GenericConst(tvm.DataType(str(dtype)), relax.AnyType())


def _moved_names() -> None:
    relax.StringImm = tvm.ir.StringImm
    relax.Constant = tvm.ir.Constant
    relax.DataTypeImm = _DataTypeImm
    tvm.tirx.SBlock = tvm.s_tir.SBlock
    tvm.tirx.SBlockRealize = tvm.s_tir.SBlockRealize
    tvm.ir.Var.name_hint = property(lambda var: var.name)


def _no_matmul_tensorization() -> None:
    from tvm.s_tir.dlight.gpu import matmul

    matmul.MatmulTensorization.apply = lambda self, *args, **kwargs: None


def _identity_pass(name: str) -> Callable[..., tvm.transform.Pass]:
    return lambda *args, **kwargs: tvm.transform.Sequential([], name=f"stubbed {name}")


#: MLC-LLM passes that fail on TVM 0.27 in the stock build (replaced by passes that do nothing
#: in mlc_llm.compiler_pass.pipeline, for both builds), and why they fail.
STUBBED_PASSES: dict[str, str] = {
    "AttachGPUSamplingFunc": "its sample_with_top_p passes a shape variable where call_tir "
    "takes a tensor: CallTIRRewrite rejects it (its sampling functions are left out)",
    "LowBatchGemvSpecialize": "reads PrimFunc.buffer_map, which TVM 0.27's PrimFunc lacks",
    "LiftTIRGlobalBufferAlloc": "reads PrimFunc.buffer_map, which TVM 0.27's PrimFunc lacks",
}


def stubs(source: Path, unstub: set[str]) -> list[Stub]:
    out = [
        Stub(
            "package mlc_llm, mlc_llm.model",
            "imported without their __init__: mlc_llm's loads the serving runtime (C++ library "
            "absent), mlc_llm.model's the registry of every model (some written for another "
            "TVM); mlc_llm.model.Model is RegistryEntry, the model's entry built as the registry "
            "builds it",
            lambda: _packages(source),
        ),
        Stub("module tqdm", "a progress bar the weight loader imports, never runs", _no_tqdm),
        Stub(
            "tvm.relax.StringImm, Constant, DataTypeImm; tvm.tirx.SBlock, SBlockRealize; "
            "Var.name_hint",
            "names TVM 0.27 moved (tvm.ir.StringImm, tvm.ir.Constant, GenericConst of a "
            "DataType; tvm.s_tir.SBlock, SBlockRealize; Var.name); MLC-LLM's KV cache and "
            "passes use the old ones",
            _moved_names,
        ),
        Stub(
            "dlight gpu.Matmul tensorization",
            "TVM 0.27 segfaults in Tensorize on the f16 matmuls for sm_70 and later; the rule's "
            "other schedule is used, as below sm_70",
            _no_matmul_tensorization,
        ),
    ]
    for name, why in STUBBED_PASSES.items():
        if name not in unstub:
            out.append(Stub(f"MLC-LLM pass {name}", why, lambda name=name: _stub_pass(name)))
    return out


def _stub_pass(name: str) -> None:
    pipeline = importlib.import_module("mlc_llm.compiler_pass.pipeline")
    if not hasattr(pipeline, name):
        raise RuntimeError(f"MLC-LLM's pipeline no longer uses {name}: update STUBBED_PASSES")
    setattr(pipeline, name, _identity_pass(name))


# ---- one model, stock and ours ----------------------------------------------------------------


@dataclasses.dataclass
class Build:
    """What one build (stock or ours) gave."""

    error: str | None = None
    #: tvm.relax.analysis.well_formed's first violation in RewriteCUDAGraph's output, and in
    #: its input (None: well formed, or the pass never ran).
    ill_formed: str | None = None
    input_ill_formed: str | None = None
    #: The first violation left once every function's variables are renewed
    #: (relax.utils.copy_with_new_vars): None when the only fault is variables (symbolic ones)
    #: defined in more than one function.
    renewed_ill_formed: str | None = None
    after_rewrite: tvm.IRModule | None = None
    #: cuda_graph_capture of after_rewrite, per function.
    graphs: dict[str, CaptureSummary] = dataclasses.field(default_factory=dict)
    #: MLC-LLM's temporary buffer (max over functions of planned bytes), graphs on and off.
    temp_bytes: dict[bool, int] = dataclasses.field(default_factory=dict)
    #: What TVM's pooled allocator holds once every function has run (analysis.held_by_plan of
    #: the planned module; graphs on: after RewriteCUDAGraph, its cuda_graph_alloc arena kept
    #: beside the pool), graphs on and off.
    held_bytes: dict[bool, int] = dataclasses.field(default_factory=dict)
    #: Seconds of the whole build with CUDA graphs on: the best of interleaved rounds (0: not
    #: timed, a build failed).
    seconds: float = 0.0
    #: In that round, each pass's own seconds (less its inner passes'), per pass name.
    pass_seconds: dict[str, float] = dataclasses.field(default_factory=dict)
    #: Entry checks: all of them; inside a captured function; after the first graph of their
    #: function (too late to guard it).
    checks: int = 0
    checks_in_graphs: int = 0
    checks_after_graph: int = 0
    #: Our planner's record of each function it planned (ours only; graphs on).
    plans: list = dataclasses.field(default_factory=list)
    #: The IR our planner's pass was given, and the target (ours only; graphs on).
    planner_input: tvm.IRModule | None = None
    #: The module our in-place pass received (with CUDA graphs on), where it ran.
    inplace_input: tvm.IRModule | None = None
    target: tvm.target.Target | None = None


@dataclasses.dataclass
class ModelResult:
    name: str
    stock: Build
    ours: Build
    comparisons: list[CaptureComparison]

    @property
    def well_formed_as_stock(self) -> bool:
        """Ours' RewriteCUDAGraph output is well formed, or ill formed only as stock's is: the
        same kind of first violation (names aside), and the same once variables are renewed."""

        def as_stock(ours: str | None, stock: str | None) -> bool:
            return ours is None or (stock is not None and _kind(ours) == _kind(stock))

        ours, stock = self.ours, self.stock
        return as_stock(ours.ill_formed, stock.ill_formed) and as_stock(
            ours.renewed_ill_formed, stock.renewed_ill_formed
        )

    @property
    def holds(self) -> bool:
        ours = self.ours
        return (
            ours.error is None
            and ours.after_rewrite is not None
            and self.well_formed_as_stock
            and ours.checks_in_graphs == 0
            and ours.checks_after_graph == 0
            and all(c.holds for c in self.comparisons)
        )


def _calls_to(func: relax.Function, symbol: str) -> int:
    count = 0

    def visit(expr):
        nonlocal count
        if (
            isinstance(expr, relax.Call)
            and isinstance(expr.op, relax.ExternFunc)
            and str(expr.op.global_symbol) == symbol
        ):
            count += 1

    relax.analysis.post_order_visit(func.body, visit)
    return count


def _count_checks(after: tvm.IRModule, build: Build) -> None:
    top_level = cuda_graph_capture(after)  # every Relax function but those the pass lifted
    for gv, func in after.functions.items():
        if not isinstance(func, relax.Function):
            continue
        n = _calls_to(func, ENTRY_CHECK)
        build.checks += n
        summary = top_level.get(gv.name_hint)
        if summary is None:
            build.checks_in_graphs += n
            continue
        build.checks_after_graph += len(summary.checks_after_a_graph)


def _violation(mod: tvm.IRModule) -> str | None:
    try:
        relax.analysis.well_formed(mod)  # raises at the first violation
    except Exception as err:  # noqa: BLE001 (TVM raises its own error kinds)
        return _one_line(err)
    return None


def _renewed(mod: tvm.IRModule) -> tvm.IRModule:
    functions = {
        gv: relax.utils.copy_with_new_vars(f) if isinstance(f, relax.Function) else f
        for gv, f in mod.functions.items()
    }
    return tvm.IRModule(functions, attrs=mod.attrs)


def _kind(violation: str) -> str:
    """A violation with the names in it (quoted, or after "Var") left out."""
    return re.sub(r'"[^"]*"|\bVar \S+', "_", violation)


def _one_line(err: BaseException) -> str:
    lines = [line.strip() for line in str(err).splitlines() if line.strip()]
    key = next((line for line in lines if "Error" in line or "Check failed" in line), None)
    return f"{type(err).__name__}: {key or (lines[0] if lines else '')}"


def _temporary_buffer(planned: tvm.IRModule) -> int:
    """MLC-LLM's "temporary buffer": its own estimator (AttachMetadataWithMemoryUsage's) run on
    the module that pass received, the max over functions as mlc_llm compile reports it."""
    estimate = importlib.import_module("mlc_llm.compiler_pass.estimate_memory_usage")
    return max(estimate._MemoryEstimator().run(planned).values())


def _measure(build_fn: Callable[[], object], config: dict, target) -> Build:
    """Whole build with CUDA graphs on (RewriteCUDAGraph's output kept, our planner's records
    where it ran), then the build with them off up to MLC-LLM's AttachMetadata (its
    temporary-buffer figure)."""
    result = Build()
    on = {**config, USE_CUDA_GRAPH: True}
    traced = [pass_names.INPLACE, pass_names.PLANNER, REWRITE, ATTACH_METADATA]
    t = trace(build_fn, traced, catch=True, config=on)
    result.inplace_input = t.before.get(pass_names.INPLACE)
    if pass_names.PLANNER in t.before:
        result.planner_input, result.target = t.before[pass_names.PLANNER], target
        result.plans = list(analysis.memory_plan(result.planner_input, target, pipeline=None))
    if t.error is None and not isinstance(t.result, relax.VMExecutable):
        result.error = f"the build returned {type(t.result).__name__}, not an executable"
    if t.error is not None:
        where = f" (in {'/'.join(t.failing[-2:])})" if t.failing else " (after the passes)"
        result.error = _one_line(t.error) + where
    result.after_rewrite = t.after.get(REWRITE)
    if ATTACH_METADATA in t.before:
        result.temp_bytes[True] = _temporary_buffer(t.before[ATTACH_METADATA])
    if result.after_rewrite is not None:
        held = analysis.held_by_plan(result.after_rewrite, resident=(CUDA_GRAPH_ALLOC,))
        result.held_bytes[True] = held.held_bytes
    if result.after_rewrite is not None:
        result.ill_formed = _violation(result.after_rewrite)
        result.input_ill_formed = _violation(t.before[REWRITE])
        if result.ill_formed:
            result.renewed_ill_formed = _violation(_renewed(result.after_rewrite))
        _count_checks(result.after_rewrite, result)
    off = {**config, USE_CUDA_GRAPH: False}
    t = trace(build_fn, [ATTACH_METADATA], stop_after=ATTACH_METADATA, catch=True, config=off)
    if ATTACH_METADATA in t.before:
        result.temp_bytes[False] = _temporary_buffer(t.before[ATTACH_METADATA])
        result.held_bytes[False] = analysis.held_by_plan(t.before[ATTACH_METADATA]).held_bytes
    return result


@tvm.instrument.pass_instrument
class PassSelfTimes:
    """Seconds per pass name, each pass's own: its time less that of the passes it runs inside
    (a Sequential's is next to nothing; TVM's CompactBufferAllocation runs passes too)."""

    def __init__(self):
        self.seconds: dict[str, float] = collections.defaultdict(float)
        self._open: list[list[float]] = []  # per running pass: [start, seconds of inner passes]

    def run_before_pass(self, _mod, _info):
        self._open.append([time.perf_counter(), 0.0])

    def run_after_pass(self, _mod, info):
        start, inner = self._open.pop()
        elapsed = time.perf_counter() - start
        self.seconds[info.name] += elapsed - inner
        if self._open:
            self._open[-1][1] += elapsed


def _time_builds(builds: dict[str, Build], build_fns: dict, config: dict, rounds: int) -> None:
    """Each build's best time over ``rounds`` interleaved rounds, the order flipped every round
    (stock, ours; ours, stock; ...) so that neither always runs after the other, with CUDA
    graphs on, once the measured builds have warmed up what both share; and the seconds of its
    passes in that round."""
    on = {**config, USE_CUDA_GRAPH: True}
    best = {who: float("inf") for who in build_fns}
    order = list(build_fns)
    for round_ in range(rounds):
        for who in order if round_ % 2 == 0 else reversed(order):
            build_fn = build_fns[who]
            times = PassSelfTimes()
            with tvm.transform.PassContext(config=on, instruments=[times]):  # as _measure's
                start = time.perf_counter()
                build_fn()
                seconds = time.perf_counter() - start
            if seconds < best[who]:
                best[who] = seconds
                builds[who].seconds, builds[who].pass_seconds = seconds, dict(times.seconds)


def optimization_flags():
    """--opt O2's CUDA graphs without what needs libraries absent here: flashinfer (JIT
    kernels), cuBLAS (not in TVM's wheel) and CUTLASS (sm_90a only anyway)."""
    flags = importlib.import_module("mlc_llm.interface.compiler_flags")
    return flags.OptimizationFlags(cudagraph=True)


def mlc_compile(
    name: str,
    quantization: str,
    overrides: dict,
    target: tvm.target.Target,
    build_func: Callable[[tvm.IRModule, object, tvm.transform.Pass], None],
    opt=None,
) -> None:
    """MLC-LLM's compile of model `name` for `target` (``interface.compile.compile``, as ``mlc_llm
    compile`` runs it), which hands the exported module, its args and MLC-LLM's pipeline to
    ``build_func`` (under MLC-LLM's PassContext); ``opt``: its OptimizationFlags (default: none
    on). MLC-LLM's printing is left out."""
    source = MODELS[name]
    module = importlib.import_module(source.module)
    model_class = getattr(module, source.model_class)
    mq = importlib.import_module("mlc_llm.quantization.model_quantization")
    quantizations = importlib.import_module("mlc_llm.quantization").QUANTIZATION
    compile_py = importlib.import_module("mlc_llm.interface.compile")
    flags = importlib.import_module("mlc_llm.interface.compiler_flags")
    # MLC-LLM's registry entry (mlc_llm.model.model.MODELS[name]) as mlc_llm compile reads it.
    model_type = RegistryEntry(
        name,
        model_class,
        getattr(module, source.config_class),
        mq.make_quantization_functions(model_class),
    )
    # mlc_llm compile reports the last build's figures after build_func returns; where that
    # build failed before MLC-LLM's AttachMetadata it has none and raises (KeyError): the
    # builds were measured by then.
    with contextlib.suppress(KeyError), contextlib.redirect_stdout(io.StringIO()):
        compile_py.compile(
            config={**source.config, **overrides},
            quantization=quantizations[quantization],
            model_type=model_type,
            target=target,
            opt=flags.OptimizationFlags() if opt is None else opt,
            build_func=build_func,
            system_lib_prefix="",
            output=Path("/dev/null"),
            overrides=flags.ModelConfigOverride(),
        )


def stock_and_ours(mod: tvm.IRModule, target, pipeline: tvm.transform.Pass) -> dict:
    """The two builds of the module MLC-LLM hands its build_func: "stock" (its pipeline as it
    is) and "ours" (the pipeline through tvm_memplan.relax_pipeline, our TIR pipeline)."""
    ours = tvm_memplan.relax_pipeline(pipeline)
    return {
        "stock": lambda: tvm.compile(mod, target, relax_pipeline=pipeline),
        "ours": lambda: tvm.compile(mod, target, relax_pipeline=ours, tir_pipeline="memplan"),
    }


def compile_model(
    name: str, quantization: str, overrides: dict, build_rounds: int = BUILD_ROUNDS
) -> ModelResult:
    """MLC-LLM's compile of model `name`, with our build_func building stock, then ours, then
    timing both over `build_rounds` interleaved rounds."""
    results: dict[str, Build] = {}

    def build_func(mod: tvm.IRModule, args, pipeline: tvm.transform.Pass) -> None:
        config = dict(tvm.transform.PassContext.current().config)  # MLC-LLM's pass config
        target = args.target
        build_fns = stock_and_ours(mod, target, pipeline)
        for who, build_fn in build_fns.items():
            results[who] = _measure(build_fn, config, target)
        if all(results[who].error is None for who in build_fns):
            _time_builds(results, build_fns, config, build_rounds)

    target = tvm.target.Target(TARGET, host="llvm")
    mlc_compile(name, quantization, overrides, target, build_func, optimization_flags())
    if set(results) != {"stock", "ours"}:
        raise RuntimeError(f"mlc_llm compile of {name} ended before both builds ran")
    stock, ours = results["stock"], results["ours"]
    comparisons = []
    if stock.after_rewrite is not None and ours.after_rewrite is not None:
        stock.graphs = cuda_graph_capture(stock.after_rewrite)
        ours.graphs = cuda_graph_capture(ours.after_rewrite)
        comparisons = compare_capture(stock.graphs, ours.graphs)
    return ModelResult(name, stock, ours, comparisons)


# ---- output -----------------------------------------------------------------------------------


def _yes(value: bool | None) -> str:
    return "-" if value is None else ("yes" if value else "NO")


def _formed(build: Build) -> str:
    return "-" if build.after_rewrite is None else _yes(build.ill_formed is None)


def _bytes(build: Build, graphs: bool) -> str:
    value = build.temp_bytes.get(graphs)
    return "-" if value is None else str(value)


def _seconds_ratio(ours: Build, stock: Build) -> str:
    return f"{ours.seconds / stock.seconds:.3f}" if ours.seconds and stock.seconds else "n/a"


def _ratio(ours: Build, stock: Build, graphs: bool) -> str:
    a, b = ours.temp_bytes.get(graphs), stock.temp_bytes.get(graphs)
    return "-" if not a or not b else f"{a / b:.3f}"


def _model_predicts(plan) -> bool:
    """Whether our model of TVM's planner predicted the plan its pass made (the pass runs TVM's
    only where the model says TVM's plan is smaller)."""
    predicted = (plan.stock_model_bytes, plan.stock_model_symbolic_allocations)
    return predicted == (plan.stock_bytes, plan.stock_symbolic_allocations)


def print_plans(results: list[ModelResult]) -> bool:
    """Per function, our planner's record on the input MLC-LLM's pipeline hands it; whether the
    model of TVM's planner predicted TVM's plan of every function."""
    header = (
        f"{'model':<8} {'function':<36} {'bound':>10} {'ours':>10} {'stock':>10} "
        f"{'ours/stock':>10} {'modelled':>8}  optimality"
    )
    print(header)
    print("-" * len(header))
    predicted = True
    for r in results:
        for p in r.ours.plans:
            ours, stock = p.bytes_of("memplan"), p.bytes_of("stock")
            ratio = f"{ours / stock:.3f}" if stock > 0 else ""
            modelled = _model_predicts(p)
            predicted = predicted and modelled
            print(
                f"{r.name:<8} {str(p.function):<36} {int(p.peak_live_bytes):>10} {ours:>10} "
                f"{stock:>10} {ratio:>10} {'yes' if modelled else 'NO':>8}  {p.optimality}"
            )
    print("-" * len(header))
    print(
        "bytes with CUDA graphs on, symbolic sizes at MLC-LLM's bounds: bound: the peak-live "
        "bound; ours: what our planner's pass applies; stock: TVM's planner on the same IR; "
        "modelled: our model of TVM's planner predicted its bytes and symbolic allocations"
    )
    print(f"the model predicts TVM's planner on every function: {'yes' if predicted else 'NO'}")
    return predicted


def _print_pass_time(
    results: list[ModelResult], rounds: int, what: str, passes: dict, input_of
) -> None:
    """TVM's pass and ours (`passes`) alone on the IR MLC-LLM's pipeline hands ours
    (`input_of(build)`), the best of ``rounds`` interleaved rounds each, CUDA graphs on."""
    header = f"{'model':<8} {'functions':>9} {'TVM ms':>9} {'ours ms':>9} {'ours/TVM':>9}"
    print(header)
    print("-" * len(header))
    for r in results:
        mod = input_of(r.ours)
        if mod is None:
            print(f"{r.name:<8} (our {what} did not run)")
            continue
        best = {who: float("inf") for who in passes}
        with r.ours.target, tvm.transform.PassContext(config={USE_CUDA_GRAPH: True}):
            for _ in range(rounds):
                for who, pass_ in passes.items():
                    start = time.perf_counter()
                    pass_(mod)
                    best[who] = min(best[who], time.perf_counter() - start)
        functions = sum(isinstance(f, relax.Function) for f in mod.functions.values())
        print(
            f"{r.name:<8} {functions:>9} {best['tvm'] * 1e3:>9.2f} {best['ours'] * 1e3:>9.2f} "
            f"{best['ours'] / best['tvm']:>9.2f}"
        )
    print("-" * len(header))
    print(f"the {what}: best of {rounds} interleaved rounds, on its input with CUDA graphs on")


def print_planner_time(results: list[ModelResult], rounds: int) -> None:
    """TVM's StaticPlanBlockMemory and ours on the IR MLC-LLM's pipeline hands our planner."""
    passes = {
        "tvm": relax.transform.StaticPlanBlockMemory(),
        "ours": tvm_memplan.transform.StaticPlanBlockMemory(),
    }
    _print_pass_time(results, rounds, "planner pass", passes, lambda b: b.planner_input)


def print_inplace_time(results: list[ModelResult], rounds: int) -> None:
    """TVM's DataflowUseInplaceCalls and ours, as the pipeline runs it (after the GPU
    schedules), on the IR MLC-LLM's pipeline hands our in-place pass. Stock MLC-LLM runs no
    in-place pass: TVM's is the baseline of what such a pass costs on this IR."""
    passes = {
        "tvm": relax.transform.DataflowUseInplaceCalls(),
        "ours": tvm_memplan.transform.DataflowUseInplaceCalls(planner="memplan"),
    }
    _print_pass_time(results, rounds, "in-place pass", passes, lambda b: b.inplace_input)


def print_pass_split(results: list[ModelResult]) -> None:
    """Where the whole builds' times differ: the stock passes ours replaces, in stock's build;
    ours in their place (and whatever of the stock ones still runs), in ours; and every other
    pass, which both builds run. Each build in its fastest timed round, each pass's own time."""
    header = (
        f"{'model':<8} {'build s':>11} {'ratio':>6} | {'replaced ms':>11} {'ours ms':>8} "
        f"{'ratio':>6} | {'the rest s':>11} {'ratio':>6}"
    )
    print(header)
    print("-" * len(header))
    for r in results:
        stock, ours = r.stock.pass_seconds, r.ours.pass_seconds
        if not stock or not ours:
            print(f"{r.name:<8} (not timed: a build failed)")
            continue
        swapped = pass_names.OURS_IN_PLACE_OF_STOCK + pass_names.STOCK_REPLACED
        replaced = sum(stock.get(n, 0.0) for n in pass_names.STOCK_REPLACED)
        instead = sum(ours.get(n, 0.0) for n in swapped)
        rest = [r.stock.seconds - replaced, r.ours.seconds - instead]
        print(
            f"{r.name:<8} {r.stock.seconds:>5.1f}/{r.ours.seconds:<5.1f} "
            f"{r.ours.seconds / r.stock.seconds:>6.3f} | {replaced * 1e3:>11.1f} "
            f"{instead * 1e3:>8.1f} {instead / replaced if replaced else float('inf'):>6.2f} | "
            f"{rest[0]:>5.1f}/{rest[1]:<5.1f} {rest[1] / rest[0]:>6.3f}"
        )
        for who, side, names in (
            ("stock", stock, pass_names.STOCK_REPLACED),
            ("ours", ours, swapped),
        ):
            timed = ", ".join(f"{n} {side[n] * 1e3:.1f}" for n in names if side.get(n))
            print(f"  {who}: {timed}")
    print("-" * len(header))
    print(
        "build s: stock/ours, as above; replaced: the stock passes ours replaces, in stock's "
        "build, ms; ours: our passes in their place (the stock ones too where they still run), "
        "in ours, ms; the rest: the build less those, stock/ours, s (passes both run, code "
        "generation; run to run it alone moves by several percent). Each pass's own time, less "
        "that of the passes it runs."
    )


def print_table(results: list[ModelResult], functions: bool, kernels: bool) -> None:
    header = (
        f"{'model':<8} {'builds':>9} {'well formed':>11} {'graphs':>9} {'captured':>9} "
        f"{'missing':>7} {'in place':>8} {'checks in/after/all':>18} "
        f"{'temp bytes, graphs on':>25} {'ratio':>6} {'temp bytes, graphs off':>25} {'ratio':>6}"
        f" {'build s':>11} {'ratio':>6}  holds"
    )
    print(header)
    print("-" * len(header))
    held_rows = []
    for r in results:
        s, o, c = r.stock, r.ours, r.comparisons
        graphs = f"{sum(x.stock_regions for x in c)}/{sum(x.ours_regions for x in c)}"
        captured = f"{sum(x.stock_captured for x in c)}/{sum(x.ours_captured for x in c)}"
        missing = sum(len(x.missing) for x in c)
        in_place = sum(
            k != kernel_name(k) for summary in o.graphs.values() for k in summary.captured
        )
        held = f"{s.held_bytes.get(True, '-')}/{o.held_bytes.get(True, '-')}"
        held_off = f"{s.held_bytes.get(False, '-')}/{o.held_bytes.get(False, '-')}"
        held_rows.append((r.name, held, held_off))
        on = f"{_bytes(s, True)}/{_bytes(o, True)}"
        off = f"{_bytes(s, False)}/{_bytes(o, False)}"
        checks = f"{o.checks_in_graphs}/{o.checks_after_graph}/{o.checks}"
        print(
            f"{r.name:<8} {_yes(s.error is None) + '/' + _yes(o.error is None):>9} "
            f"{_formed(s) + '/' + _formed(o):>11} {graphs:>9} {captured:>9} "
            f"{missing:>7} {in_place:>8} {checks:>18} {on:>25} "
            f"{_ratio(o, s, True):>6} {off:>25} {_ratio(o, s, False):>6} "
            f"{f'{s.seconds:.1f}/{o.seconds:.1f}':>11} {_seconds_ratio(o, s):>6}  "
            f"{_yes(r.holds)}"
        )
    print("-" * len(header))
    print(
        "pairs are stock/ours. builds: tvm.compile to the executable with CUDA graphs on; well "
        "formed: RewriteCUDAGraph's output; graphs: run_or_capture regions, all functions; "
        "captured: kernels inside them; missing: kernels stock captures that ours launches "
        "outside a graph; in place: kernels ours captures that write in place; checks: ours' "
        "entry checks (vm.builtin.match_shape) inside a captured function / after the first "
        "graph of their function / all; temp bytes: MLC-LLM's temporary buffer (max over "
        "functions of AttachMetadataWithMemoryUsage's planned bytes); build s: seconds of the "
        "whole build with CUDA graphs on, the best of --build-rounds interleaved rounds (order "
        "flipped every round); ratio: ours/stock; holds: "
        "ours builds, is well formed (or ill formed only as stock is, the same violation), has "
        "no check in or after a graph, and captures every kernel stock captures in no more graphs"
    )
    print()
    print(f"{'model':<8} {'held bytes, graphs on':>27} {'held bytes, graphs off':>27}")
    for name, held, held_off in held_rows:
        print(f"{name:<8} {held:>27} {held_off:>27}")
    print(
        "held: what TVM's pooled allocator holds once every function has run, stock/ours "
        "(analysis.held_by_plan: per size rounded to 4096 B, the most blocks one function asks "
        "for; graphs on: RewriteCUDAGraph's cuda_graph_alloc arena beside the pooled storages)"
    )
    for r in results:
        for build, who in ((r.stock, "stock"), (r.ours, "ours")):
            if build.error:
                print(f"{r.name} {who} build failed: {build.error[:300]}")
            if build.ill_formed:
                given = "ill" if build.input_ill_formed else "well"
                renewed = build.renewed_ill_formed
                rest = f"still ill formed: {renewed[:200]}" if renewed else "well formed"
                print(
                    f"{r.name} {who}: RewriteCUDAGraph's output is ill formed (its input {given} "
                    f"formed): {build.ill_formed[:200]}; with every function's variables "
                    f"renewed, {rest}"
                )
    if functions or kernels:
        print()
        print(
            f"{'model':<8} {'function':<36} {'graphs':>7} {'captured':>9} {'holds':>5}  "
            "missing / not launched by ours"
        )
        for r in results:
            for x in r.comparisons:
                if not (x.stock_regions or x.ours_regions):
                    continue
                note = ", ".join(x.missing) or ""
                if x.removed:
                    note += f" / {', '.join(x.removed)}"
                print(
                    f"{r.name:<8} {x.function:<36} {x.stock_regions:>3}/{x.ours_regions:<3} "
                    f"{x.stock_captured:>4}/{x.ours_captured:<4} {_yes(x.holds):>5}  {note}"
                )
                if kernels:
                    _print_regions(r, x.function)


def _regions(summary: CaptureSummary | None) -> list[list[str]]:
    return [[kernel_name(k) for k in region] for region in (summary.regions if summary else [])]


def _print_regions(r: ModelResult, function: str) -> None:
    stock, ours = _regions(r.stock.graphs.get(function)), _regions(r.ours.graphs.get(function))
    builds = [("stock and ours", stock)] if stock == ours else [("stock", stock), ("ours", ours)]
    for who, regions in builds:
        for i, region in enumerate(regions):
            print(f"{'':<8} {'':<4} {who} graph {i}: {' '.join(region)}")


def add_checkout_arguments(parser: argparse.ArgumentParser, quantization: str) -> None:
    """The arguments both MLC-LLM tools take: the checkout, the models, the quantization (its
    default given) and config entries."""
    parser.add_argument(
        "source",
        nargs="?",
        default=DEFAULT_SOURCE,
        help=f"MLC-LLM's python folder (holding mlc_llm/); default {DEFAULT_SOURCE}",
    )
    parser.add_argument(
        "--models",
        default=",".join(DEFAULT_MODELS),
        help=f"comma-separated, of {', '.join(MODELS)} (default {','.join(DEFAULT_MODELS)})",
    )
    parser.add_argument(
        "--quantization",
        default=quantization,
        help=f"an MLC-LLM quantization (default {quantization})",
    )
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a config entry for every model (e.g. prefill_chunk_size=2048), a number",
    )


@dataclasses.dataclass(frozen=True)
class Checkout:
    """The checked command line of an MLC-LLM tool, with MLC-LLM importable."""

    source: Path
    models: list[str]
    quantization: str
    overrides: dict
    stubs: list[Stub]


def open_checkout(
    parser: argparse.ArgumentParser,
    args,
    target,
    unstub: set[str] = frozenset(),
    settings: Callable[[], str] | None = None,
) -> Checkout:
    """Check the arguments of add_checkout_arguments (a one-line error and exit status 2 on bad
    input), apply the stubs so that MLC-LLM imports, and print what the run uses: the checkout,
    TVM, ``target``, the quantization, ``settings()`` (read once MLC-LLM imports), the config
    and the stubs."""
    source = Path(args.source)
    if not (source / "mlc_llm" / "compiler_pass" / "pipeline.py").is_file():
        parser.exit(2, f"error: {source} is not MLC-LLM's python folder (no mlc_llm/ in it)\n")
    names = [n for n in args.models.split(",") if n]
    unknown = sorted(set(names) - set(MODELS))
    if unknown:
        parser.exit(2, f"error: unknown model {', '.join(unknown)} (known: {', '.join(MODELS)})\n")
    overrides = {}
    for item in args.set:
        key, _, value = item.partition("=")
        try:
            overrides[key] = float(value) if "." in value else int(value)
        except ValueError:
            parser.exit(2, f"error: --set {item}: expected KEY=NUMBER\n")
    applied = stubs(source, set(unstub))
    for stub in applied:  # in order: the packages first, then what imports through them
        stub.apply()
    quantizations = importlib.import_module("mlc_llm.quantization").QUANTIZATION
    if args.quantization not in quantizations:
        parser.exit(2, f"error: unknown quantization {args.quantization}\n")
    print(f"MLC-LLM from {source}; TVM {tvm.__version__}; target {target}")
    sizes = {k: v for k, v in {**_COMMON, **overrides}.items() if k != "rms_norm_eps"}
    extra = f"; {settings()}" if settings else ""
    print(f"quantization {args.quantization}{extra}; config {sizes}")
    print("stubs, the same for stock and ours:")
    for stub in applied:
        print(f"  {stub.name}: {stub.why}")
    print()
    return Checkout(source, names, args.quantization, overrides, applied)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_checkout_arguments(parser, "q4f16_1")
    parser.add_argument("--functions", action="store_true", help="per-function lines too")
    parser.add_argument(
        "--plans",
        action="store_true",
        help="per function, our planner's bound, bytes and optimality next to TVM's planner",
    )
    parser.add_argument(
        "--planner-time",
        type=int,
        default=0,
        metavar="ROUNDS",
        help="time TVM's planner pass and ours on the same IR, best of ROUNDS interleaved rounds",
    )
    parser.add_argument(
        "--inplace-time",
        type=int,
        default=0,
        metavar="ROUNDS",
        help="time TVM's in-place pass and ours on the same IR, best of ROUNDS interleaved rounds",
    )
    parser.add_argument(
        "--build-rounds",
        type=int,
        default=BUILD_ROUNDS,
        metavar="N",
        help=f"time the whole builds over N interleaved rounds, best kept (default {BUILD_ROUNDS})",
    )
    parser.add_argument(
        "--pass-split",
        action="store_true",
        help="split the whole builds' times: the stock passes ours replaces, ours, the rest",
    )
    parser.add_argument(
        "--kernels", action="store_true", help="per function, the kernels of each graph too"
    )
    parser.add_argument(
        "--unstub",
        action="append",
        default=[],
        choices=sorted(STUBBED_PASSES),
        help="run this MLC-LLM pass as it is (it fails on TVM 0.27)",
    )
    args = parser.parse_args()
    if args.build_rounds < 1:
        parser.exit(2, f"error: --build-rounds {args.build_rounds}: expected at least 1\n")
    checkout = open_checkout(
        parser, args, TARGET, set(args.unstub), lambda: f"--opt {optimization_flags()}"
    )
    names, overrides = checkout.models, checkout.overrides
    results = [
        compile_model(name, args.quantization, overrides, args.build_rounds) for name in names
    ]
    print_table(results, args.functions, args.kernels)
    holds = all(r.holds for r in results)
    if args.plans:
        print()
        holds = print_plans(results) and holds
    if args.pass_split:
        print()
        print_pass_split(results)
    if args.planner_time > 0:
        print()
        print_planner_time(results, args.planner_time)
    if args.inplace_time > 0:
        print()
        print_inplace_time(results, args.inplace_time)
    print(f"ours holds on every model: {'yes' if holds else 'NO'}")
    return 0 if holds else 1


if __name__ == "__main__":
    sys.exit(main())
