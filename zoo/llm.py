"""An LLM built and compiled the way MLC-LLM builds and compiles one, for checking tvm-memplan
inside MLC-LLM's pipeline.

- ``mlc_llm_pipeline``: MLC-LLM's compile pipeline (``mlc_llm/compiler_pass/pipeline.py``) in its
  order, with TVM's passes where MLC uses TVM's, small stand-ins for MLC's passes that only
  attach attributes or read the module, and nothing else. Like MLC's, it is a module pass that
  builds its passes when it runs, so ``tvm_memplan.relax_pipeline(mlc_llm_pipeline())`` gets
  ours through the constructors. It has no ComputePrimValue: MLC-LLM's pipeline does not run it.
- ``LlamaForCausalLM``: a Llama written with ``relax.frontend.nn`` as MLC-LLM's
  ``model/llama/llama_model.py`` is (fused QKV and gate/up projections, RMSNorm, SiLU MLP,
  attention and RoPE in the paged KV cache of ``relax.frontend.nn.llm``, a symbolic
  ``vocab_size``), exported with MLC's functions and spec (``llm_module``).
- ``run_llm``: drives a compiled module on the CPU as MLC-LLM's engine does: a paged KV cache
  from ``create_paged_kv_cache``, sequences added to it, ``begin_forward``/``end_forward``
  around every call, prefill then decode, one sequence and a batch of two.
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Sequence
from typing import Any

import numpy as np
import tvm
from tvm import relax, te
from tvm.relax.frontend import nn
from tvm.relax.frontend.nn import op
from tvm.relax.frontend.nn.llm.kv_cache import PagedKVCache, RopeMode, TIRPagedKVCache

__all__ = [
    "LLAMA3_8B",
    "LLM_FUNCTIONS",
    "QWEN2_0_5B",
    "SMALL",
    "TEST",
    "LlamaConfig",
    "LlamaForCausalLM",
    "create_kv_cache",
    "decode_steps_per_second",
    "llm_module",
    "llm_weights",
    "memory_usage",
    "mlc_llm_passes",
    "mlc_llm_pipeline",
    "run_llm",
]


# ---- The pipeline -------------------------------------------------------------------------------


def _with_function_attrs(mod: tvm.IRModule, attrs: dict[str, Any]) -> tvm.IRModule:
    functions = {}
    for gv, func in mod.functions.items():
        if isinstance(func, relax.Function):
            for key, value in attrs.items():
                func = func.with_attr(key, value)
        functions[gv] = func
    return tvm.IRModule(functions, attrs=mod.attrs, global_infos=mod.global_infos)


def _attach_variable_bounds(bounds: dict[str, int]) -> tvm.transform.Pass:
    """MLC's AttachVariableBounds: every Relax function gets the bounds of the symbolic
    variables (``tir_var_upper_bound``) the memory planner sizes storage at, and ``vocab_size``
    is declared non-negative."""
    bounds = {name: int(value) for name, value in bounds.items() if value > 0}

    @tvm.transform.module_pass(opt_level=0, name="AttachVariableBounds")
    def attach(mod: tvm.IRModule, _ctx) -> tvm.IRModule:
        attrs = {"tir_var_upper_bound": bounds, "tir_non_negative_var": ["vocab_size"]}
        return _with_function_attrs(mod, attrs)

    return attach


def _attach_memory_plan_attr() -> tvm.transform.Pass:
    """MLC's AttachMemoryPlanAttr: the planner plans the functions' outputs too (at the bounds),
    not only their intermediate tensors."""

    @tvm.transform.module_pass(opt_level=0, name="AttachMemoryPlanAttr")
    def attach(mod: tvm.IRModule, _ctx) -> tvm.IRModule:
        return _with_function_attrs(mod, {"relax.memory_plan_dynamic_func_output": True})

    return attach


#: MLC-LLM's hints for RewriteCUDAGraph (``interface/compile.py``): the symbolic sizes a captured
#: graph of these functions may depend on (one graph per value). Other functions capture only
#: what depends on no symbolic size.
CUDA_GRAPH_CAPTURE_HINTS = {
    "batch_decode": ["batch_size"],
    "batch_decode_to_last_hidden_states": ["batch_size"],
    "batch_verify": ["batch_size", "seq_len"],
    "batch_verify_to_last_hidden_states": ["batch_size", "seq_len"],
}


def _attach_cuda_graph_symbolic_capture_hints(hints: dict[str, list[str]]) -> tvm.transform.Pass:
    """MLC's AttachCUDAGraphSymbolicCaptureHints: each named function gets its hints as the
    attribute RewriteCUDAGraph reads (``relax.rewrite_cuda_graph.capture_symbolic_vars``)."""

    @tvm.transform.module_pass(opt_level=0, name="AttachCUDAGraphSymbolicCaptureHints")
    def attach(mod: tvm.IRModule, _ctx) -> tvm.IRModule:
        functions = {}
        for gv, func in mod.functions.items():
            if isinstance(func, relax.Function) and gv.name_hint in hints:
                func = func.with_attr(
                    "relax.rewrite_cuda_graph.capture_symbolic_vars", hints[gv.name_hint]
                )
            functions[gv] = func
        return tvm.IRModule(functions, attrs=mod.attrs, global_infos=mod.global_infos)

    return attach


def _attach_cuda_graph_alloc_init_func() -> tvm.transform.Pass:
    """MLC's AttachCUDAGraphAllocInitFunc: where RewriteCUDAGraph made a ``cuda_graph_alloc``
    (the storages it allocates once), a ``cuda_graph_alloc_init`` function that MLC-LLM's engine
    calls at start to allocate them."""

    @tvm.transform.module_pass(opt_level=0, name="AttachCUDAGraphAllocInitFunc")
    def attach(mod: tvm.IRModule, _ctx) -> tvm.IRModule:
        alloc = [gv for gv in mod.get_global_vars() if gv.name_hint.startswith("cuda_graph_alloc")]
        if not alloc:
            return mod
        bb = relax.BlockBuilder(mod)
        with bb.function("cuda_graph_alloc_init", []):
            bb.emit_func_output(
                relax.op.call_builtin_with_ctx(
                    "vm.builtin.cuda_graph.get_cached_alloc",
                    args=[alloc[0], relax.prim_value(0)],
                    ty_args=relax.ObjectType(),
                )
            )
        return bb.finalize()

    return attach


def _clean_up_tir_attrs(names: Sequence[str]) -> tvm.transform.Pass:
    """MLC's CleanUpTIRAttrs: FuseOps' ``op_pattern`` annotations are dropped from the
    PrimFuncs once fusion is done."""

    @tvm.transform.module_pass(opt_level=0, name="CleanUpTIRAttrs")
    def clean(mod: tvm.IRModule, _ctx) -> tvm.IRModule:
        functions = {}
        for gv, func in mod.functions.items():
            for name in names:
                if func.attrs is not None and name in func.attrs:
                    func = func.without_attr(name)
            functions[gv] = func
        return tvm.IRModule(functions, attrs=mod.attrs, global_infos=mod.global_infos)

    return clean


def memory_usage(mod: tvm.IRModule) -> dict[str, int]:
    """Bytes each Relax function of a planned module allocates, counted as MLC-LLM's
    ``AttachMetadataWithMemoryUsage`` counts its "temporary buffer": every
    ``R.memory.alloc_storage`` and ``R.builtin.alloc_tensor`` of a static size (symbolic sizes
    are left out, as MLC leaves them out)."""
    usage: dict[str, int] = {}
    for gv, func in mod.functions.items():
        if not isinstance(func, relax.Function):
            continue
        total = 0

        def visit(node):
            nonlocal total
            if not (isinstance(node, relax.Call) and isinstance(node.op, tvm.ir.Op)):
                return
            if node.op.name == "relax.memory.alloc_storage":
                size = node.args[0].values[0]
                if isinstance(size, tvm.tirx.IntImm):
                    total += int(size.value)
            elif node.op.name == "relax.builtin.alloc_tensor":
                extents = node.args[0].values
                if all(isinstance(e, tvm.tirx.IntImm) for e in extents):
                    dtype = tvm.runtime.DataType(node.args[1].value)
                    total += int(np.prod([int(e.value) for e in extents], dtype=np.int64)) * (
                        (dtype.bits + 7) // 8 * dtype.lanes
                    )

        relax.analysis.post_order_visit(func, visit)
        usage[gv.name_hint] = total
    return usage


def _attach_metadata_with_memory_usage(metadata: dict[str, Any]) -> tvm.transform.Pass:
    """MLC's AttachMetadataWithMemoryUsage (pass name ``AttachMetadata``), right after the
    planner: ``metadata["memory_usage"]`` gets each function's planned bytes
    (``memory_usage``), and the module a ``_metadata()`` function returning ``metadata`` as
    JSON, which MLC-LLM's engine reads to size its memory."""

    @tvm.transform.module_pass(opt_level=0, name="AttachMetadata")
    def attach(mod: tvm.IRModule, _ctx) -> tvm.IRModule:
        metadata["memory_usage"] = memory_usage(mod)
        bb = relax.BlockBuilder()
        with bb.function("_metadata", params=[]):
            bb.emit_func_output(tvm.ir.StringImm(json.dumps(metadata)))
        mod = tvm.IRModule(dict(mod.functions), attrs=mod.attrs, global_infos=mod.global_infos)
        mod["_metadata"] = bb.finalize()["_metadata"]
        return mod

    return attach


def mlc_llm_passes(
    target: tvm.target.Target,
    variable_bounds: dict[str, int] | None = None,
    metadata: dict[str, Any] | None = None,
) -> list[tvm.transform.Pass]:
    """MLC-LLM's pipeline as a list of passes, built now (call it while the pipeline runs, so
    that ``tvm_memplan.relax_pipeline`` can put its passes in place through the constructors).

    The order is MLC's. MLC's passes that do nothing for this model on a CPU (flashinfer,
    cuBLAS, CUDA graphs, quantization, tensor and pipeline parallelism off) or that only add
    functions MLC's engine calls besides the model (sampling, logit processing) are left out,
    each named in a comment where it would run. On other targets the schedule is MLC's dlight
    GPU rules, but MLC's GPU-only passes are not here."""
    t = tvm.relax.transform
    dl = tvm.s_tir.dlight
    gpu = target.kind.name != "llvm"
    metadata = {} if metadata is None else metadata
    passes = [
        # Phase 0: information for compilation.
        # DispatchKVCacheCreation: LlamaForCausalLM creates the TIR paged KV cache itself (what
        #   MLC dispatches to without flashinfer).
        # AttachSoftmaxWithTemperature: adds a sampling function, not the model's.
        _attach_variable_bounds(variable_bounds or {}),
        _attach_cuda_graph_symbolic_capture_hints(CUDA_GRAPH_CAPTURE_HINTS),
        # AttachPipelineParallelStages: one stage.
        # AttachLogitProcessFunc, AttachAdditionalPrimFuncs, AttachAllocEmbeddingTensorFunc,
        #   AttachGPUSamplingFunc, AttachSpecDecodeAuxFuncs: functions for the engine.
        _attach_memory_plan_attr(),
        # AttachSequenceLengthPaddingFactor: CUDA sm_100a only.
        tvm.tirx.transform.BindTarget(target),
        # Phase 1: the operator graph.
        # DispatchTritonKernel, FuseFTDequantizeEpilogue, FuseDequantizeTranspose: CUDA or
        #   quantized models. BLASDispatch: cuBLAS off. FuseAddRMSNorm: not on llvm.
        t.FuseTransposeMatmul(),
        # Phase 2: lowering to TIR, TVM's "zero" pipeline.
        tvm.relax.backend.DispatchSampling(),
        tvm.relax.backend.DispatchSortScan(),
        t.LegalizeOps(),
        t.AnnotateTIROpPattern(),
        t.FoldConstant(),
        t.FuseOps(),
        t.FuseTIR(),
        # Phase 3: TIR. FuseDequantizeMatmulEwise, FuseDequantizeTake: quantized models.
        t.DeadCodeElimination(),
        _clean_up_tir_attrs(["op_pattern"]),
        # Phase 4: low-level. LowBatchGemvSpecialize: dlight GPU rules, nothing on a CPU.
        dl.ApplyDefaultSchedule(
            dl.gpu.Matmul(),
            dl.gpu.GEMV(),
            dl.gpu.Reduction(),
            dl.gpu.GeneralReduction(),
            dl.gpu.Fallback(),
        )
        if gpu
        else dl.ApplyDefaultSchedule(dl.cpu.GEMV()),
        # LiftTIRGlobalBufferAlloc: not on llvm.
    ]
    if target.kind.name != "cuda":
        passes.append(tvm.tirx.transform.ForceNarrowIndexToInt32())
    passes += [
        # ScatterTupleGetItem: MLC's own Relax rewrite (each TupleGetItem moved to its first
        #   use), not reproduced: here the only tuple is the packed weights, which nothing
        #   plans. PipelineParallelRewrite: one stage.
        t.RewriteDataflowReshape(),
        t.ToNonDataflow(),
        t.RemovePurityChecking(),
        t.CallTIRRewrite(),
        # IPCAllReduceRewrite: no all-reduce strategy.
        t.StaticPlanBlockMemory(),
        _attach_metadata_with_memory_usage(metadata),
        # Captures only with the PassContext option relax.backend.use_cuda_graph (MLC-LLM sets
        # it from --opt, on by default for cuda).
        t.RewriteCUDAGraph(),
        _attach_cuda_graph_alloc_init_func(),
        t.LowerGPUIPCAllocStorage(),
        t.LowerAllocTensor(),
        t.KillAfterLastUse(),
        t.LowerRuntimeBuiltin(),
        t.VMShapeLower(),
        t.AttachGlobalSymbol(),
        # AttachExternModules: no external modules.
    ]
    return passes


def mlc_llm_pipeline(
    target: tvm.target.Target | str | dict | None = None,
    *,
    variable_bounds: dict[str, int] | None = None,
    metadata: dict[str, Any] | None = None,
) -> tvm.transform.Pass:
    """MLC-LLM's compile pipeline as a Relax pipeline for ``tvm.compile(...,
    relax_pipeline=...)``: a module pass that builds ``mlc_llm_passes`` when it runs, as MLC's
    does. ``target``: the target's passes (None: the target ``tvm.compile`` compiles for).
    ``variable_bounds``: MLC's bounds of ``seq_len``, ``total_seq_len`` and ``batch_size``
    (``LlamaConfig.variable_bounds``). ``metadata``: a dict that gets each function's planned
    bytes under ``"memory_usage"``, as MLC's does.

    Compile time: on llvm the decode GEMVs get dlight's CPU GEMV schedule (64 or 128 lanes, the
    reduction unrolled up to 256 steps), on which LLVM is slow when the VM loads the module:
    seconds per kernel at ``opt-level`` 0, far longer at its default -O3 once the reduction is
    fully unrolled (``SMALL``'s 128-wide layers). The tests build at ``opt-level`` 0."""
    fixed = None if target is None else tvm.target.Target(target)

    @tvm.transform.module_pass(opt_level=0, name="mlc_llm_pipeline")
    def pipeline(mod: tvm.IRModule, _ctx) -> tvm.IRModule:
        current = fixed or tvm.target.Target.current(allow_none=False)
        return tvm.transform.Sequential(mlc_llm_passes(current, variable_bounds, metadata))(mod)

    return pipeline


# ---- The model ----------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class LlamaConfig:
    """The sizes of a Llama-style model and the bounds MLC-LLM compiles it with."""

    vocab_size: int = 512
    hidden_size: int = 128
    intermediate_size: int = 256
    num_hidden_layers: int = 2
    num_attention_heads: int = 4
    num_key_value_heads: int = 2
    head_dim: int = 32
    context_window_size: int = 2048
    prefill_chunk_size: int = 2048
    max_batch_size: int = 4
    dtype: str = "float32"
    rms_norm_eps: float = 1e-5
    rope_theta: float = 10000.0
    tie_word_embeddings: bool = False

    @property
    def param_bytes(self) -> int:
        """Bytes of the weights at ``dtype``: embedding, per layer attention, MLP and norms, the
        final norm, and the lm_head unless tied."""
        q, kv = self.num_attention_heads * self.head_dim, self.num_key_value_heads * self.head_dim
        h = self.hidden_size
        layer = h * q + 2 * h * kv + q * h + 3 * h * self.intermediate_size + 2 * h
        count = self.vocab_size * h * (1 if self.tie_word_embeddings else 2)
        count += self.num_hidden_layers * layer + h
        return count * np.dtype(self.dtype).itemsize

    def kv_cache(self):
        """MLC-LLM's KV-cache sizing for this model (tvm_memplan.analysis.MLCKVCache)."""
        from tvm_memplan.analysis import MLCKVCache

        return MLCKVCache(
            num_layers=self.num_hidden_layers,
            num_attention_heads=self.num_attention_heads,
            num_key_value_heads=self.num_key_value_heads,
            head_dim=self.head_dim,
            vocab_size=self.vocab_size,
            prefill_chunk_size=self.prefill_chunk_size,
            max_num_sequence=self.max_batch_size,
        )

    @property
    def variable_bounds(self) -> dict[str, int]:
        """MLC-LLM's bounds for a model without a sliding window (``interface/compile.py``)."""
        return {
            "total_seq_len": self.context_window_size,
            "seq_len": self.prefill_chunk_size,
            "batch_size": self.max_batch_size,
        }


#: The small default: cheap to compile and run on two cores.
SMALL = LlamaConfig()
#: The tests' size: hidden 64, a prefill chunk of 64. On llvm MLC-LLM's dlight CPU rule schedules
#: GEMV over 64 or 128 lanes and unrolls its reduction, and LLVM spends seconds on each such
#: kernel even at opt-level 0: with the intermediate size equal to heads * head_dim and half as
#: many KV heads, attention and MLP share their two GEMV kernels.
TEST = LlamaConfig(
    vocab_size=256,
    hidden_size=64,
    intermediate_size=64,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    head_dim=16,
    prefill_chunk_size=64,
)
#: The tests' size with a vocabulary whose logits span pages of the VM's pooled allocator (8
#: per row of float32) and 8 sequences: a result left at its actual shape then takes a new
#: pooled block for every batch size and length, which is what held memory is checked for.
HELD = dataclasses.replace(TEST, vocab_size=8192, max_batch_size=8)
#: Llama-3-8B's shapes, for compile-only measurement.
LLAMA3_8B = LlamaConfig(
    vocab_size=128256,
    hidden_size=4096,
    intermediate_size=14336,
    num_hidden_layers=32,
    num_attention_heads=32,
    num_key_value_heads=8,
    head_dim=128,
    context_window_size=8192,
    prefill_chunk_size=2048,
    max_batch_size=80,
    dtype="float16",
    rope_theta=500000.0,
)
#: Qwen2-0.5B's shapes (a 0.5B-class model with a tied lm_head; no QKV bias here), for
#: compile-only measurement.
QWEN2_0_5B = LlamaConfig(
    vocab_size=151936,
    hidden_size=896,
    intermediate_size=4864,
    num_hidden_layers=24,
    num_attention_heads=14,
    num_key_value_heads=2,
    head_dim=64,
    context_window_size=32768,
    prefill_chunk_size=2048,
    max_batch_size=80,
    dtype="float16",
    rms_norm_eps=1e-6,
    rope_theta=1000000.0,
    tie_word_embeddings=True,
)

#: The functions ``llm_module`` exports, MLC-LLM's names.
LLM_FUNCTIONS = (
    "embed",
    "prefill",
    "decode",
    "prefill_to_last_hidden_states",
    "decode_to_last_hidden_states",
    "batch_prefill",
    "batch_decode",
    "batch_prefill_to_last_hidden_states",
    "batch_decode_to_last_hidden_states",
    "batch_verify",
    "batch_verify_to_last_hidden_states",
    "create_paged_kv_cache",
)


class _MLP(nn.Module):
    def __init__(self, config: LlamaConfig):
        self.gate_up_proj = nn.Linear(config.hidden_size, 2 * config.intermediate_size, bias=False)
        self.down_proj = nn.Linear(config.intermediate_size, config.hidden_size, bias=False)

    def forward(self, x: nn.Tensor) -> nn.Tensor:
        gate, up = op.split(self.gate_up_proj(x), 2, axis=-1)
        return self.down_proj(op.silu(gate) * up)


class _Attention(nn.Module):
    """Fused QKV projection; the KV cache applies RoPE, appends K/V and attends."""

    def __init__(self, config: LlamaConfig):
        self.q_heads, self.kv_heads = config.num_attention_heads, config.num_key_value_heads
        self.head_dim = config.head_dim
        qkv = (self.q_heads + 2 * self.kv_heads) * self.head_dim
        self.qkv_proj = nn.Linear(config.hidden_size, qkv, bias=False)
        self.o_proj = nn.Linear(self.q_heads * self.head_dim, config.hidden_size, bias=False)

    def forward(self, x: nn.Tensor, cache: PagedKVCache, layer_id: int) -> nn.Tensor:
        batch, seq_len, _ = x.shape
        heads = self.q_heads + 2 * self.kv_heads
        qkv = op.reshape(self.qkv_proj(x), (batch, seq_len, heads, self.head_dim))
        attended = cache.attention_with_fused_qkv(
            layer_id, qkv, self.q_heads, sm_scale=self.head_dim**-0.5
        )
        return self.o_proj(op.reshape(attended, (batch, seq_len, self.q_heads * self.head_dim)))


class _DecoderLayer(nn.Module):
    def __init__(self, config: LlamaConfig):
        eps = config.rms_norm_eps
        self.input_layernorm = nn.RMSNorm(config.hidden_size, -1, eps, bias=False)
        self.self_attn = _Attention(config)
        self.post_attention_layernorm = nn.RMSNorm(config.hidden_size, -1, eps, bias=False)
        self.mlp = _MLP(config)

    def forward(self, x: nn.Tensor, cache: PagedKVCache, layer_id: int) -> nn.Tensor:
        x = x + self.self_attn(self.input_layernorm(x), cache, layer_id)
        return x + self.mlp(self.post_attention_layernorm(x))


class _Model(nn.Module):
    def __init__(self, config: LlamaConfig):
        # "vocab_size" is symbolic, as in MLC-LLM: the weights' shape gives it at run time.
        self.embed_tokens = nn.Embedding("vocab_size", config.hidden_size)
        self.layers = nn.ModuleList(
            [_DecoderLayer(config) for _ in range(config.num_hidden_layers)]
        )
        self.norm = nn.RMSNorm(config.hidden_size, -1, config.rms_norm_eps, bias=False)

    def forward(self, x: nn.Tensor, cache: PagedKVCache) -> nn.Tensor:
        for layer_id, layer in enumerate(self.layers):
            x = layer(x, cache, layer_id)
        return self.norm(x)


def _last_position(hidden: nn.Tensor) -> nn.Tensor:
    """``hidden[:, -1:, :]``: prefill's logits are the last token's."""

    def compute(x: te.Tensor) -> te.Tensor:
        batch, seq_len, width = x.shape
        return te.compute(
            (batch, 1, width), lambda b, _, i: x[b, seq_len - 1, i], name="last_position"
        )

    return op.tensor_expr_op(compute, "last_position", [hidden])


class LlamaForCausalLM(nn.Module):
    """MLC-LLM's Llama: the functions its engine calls (``LLM_FUNCTIONS``), each taking the
    weights as one packed tuple, and a TIR paged KV cache for ``target``."""

    def __init__(self, config: LlamaConfig, target: tvm.target.Target | str = "llvm"):
        self.config = config
        self.target = tvm.target.Target(target)
        self.model = _Model(config)
        if not config.tie_word_embeddings:
            self.lm_head = nn.Linear(config.hidden_size, "vocab_size", bias=False)

    def _logits(self, hidden: nn.Tensor) -> nn.Tensor:
        if self.config.tie_word_embeddings:
            weight = op.permute_dims(self.model.embed_tokens.weight)
            logits = op.matmul(hidden, weight, out_dtype="float32")
        else:
            logits = self.lm_head(hidden)
        return logits if logits.dtype == "float32" else logits.astype("float32")

    def embed(self, input_ids: nn.Tensor):
        return self.model.embed_tokens(input_ids)

    def prefill(self, input_embed: nn.Tensor, paged_kv_cache: PagedKVCache):
        hidden = self.model(input_embed, paged_kv_cache)
        return self._logits(_last_position(hidden)), paged_kv_cache

    def decode(self, input_embed: nn.Tensor, paged_kv_cache: PagedKVCache):
        return self._logits(self.model(input_embed, paged_kv_cache)), paged_kv_cache

    def prefill_to_last_hidden_states(self, input_embed: nn.Tensor, paged_kv_cache: PagedKVCache):
        return self.model(input_embed, paged_kv_cache), paged_kv_cache

    def decode_to_last_hidden_states(self, input_embed: nn.Tensor, paged_kv_cache: PagedKVCache):
        return self.model(input_embed, paged_kv_cache), paged_kv_cache

    def batch_prefill(
        self, input_embeds: nn.Tensor, logit_positions: nn.Tensor, paged_kv_cache: PagedKVCache
    ):
        hidden = op.take(self.model(input_embeds, paged_kv_cache), logit_positions, axis=1)
        return self._logits(hidden), paged_kv_cache

    def batch_decode(self, input_embeds: nn.Tensor, paged_kv_cache: PagedKVCache):
        return self._logits(self.model(input_embeds, paged_kv_cache)), paged_kv_cache

    def batch_verify(self, input_embeds: nn.Tensor, paged_kv_cache: PagedKVCache):
        return self._logits(self.model(input_embeds, paged_kv_cache)), paged_kv_cache

    def batch_prefill_to_last_hidden_states(
        self, input_embeds: nn.Tensor, paged_kv_cache: PagedKVCache
    ):
        return self.model(input_embeds, paged_kv_cache), paged_kv_cache

    def batch_decode_to_last_hidden_states(
        self, input_embeds: nn.Tensor, paged_kv_cache: PagedKVCache
    ):
        return self.model(input_embeds, paged_kv_cache), paged_kv_cache

    def batch_verify_to_last_hidden_states(
        self, input_embeds: nn.Tensor, paged_kv_cache: PagedKVCache
    ):
        return self.model(input_embeds, paged_kv_cache), paged_kv_cache

    def create_paged_kv_cache(
        self,
        max_batch_size: tvm.tirx.Var,
        max_total_seq_len: tvm.tirx.Var,
        prefill_chunk_size: tvm.tirx.Var,
        page_size: tvm.tirx.Var,
        support_sliding_window: tvm.tirx.Var,
    ) -> PagedKVCache:
        config = self.config
        return TIRPagedKVCache(
            attn_kind="mha",
            max_batch_size=max_batch_size,
            max_total_seq_len=max_total_seq_len,
            prefill_chunk_size=prefill_chunk_size,
            page_size=page_size,
            support_sliding_window=support_sliding_window,
            layer_partition=relax.ShapeExpr([0, config.num_hidden_layers]),
            num_hidden_layers=config.num_hidden_layers,
            num_attention_heads=config.num_attention_heads,
            num_key_value_heads=config.num_key_value_heads,
            qk_head_dim=config.head_dim,
            v_head_dim=config.head_dim,
            mla_original_qk_head_dim=0,
            mla_original_v_head_dim=0,
            rope_mode=RopeMode.NORMAL,
            rope_scale=1,
            rope_theta=config.rope_theta,
            rope_scaling={},
            rope_ext_factors=relax.prim_value(0),
            rotary_dim=config.head_dim,
            enable_disaggregation=False,
            dtype=config.dtype,
            target=self.target,
        )

    def spec(self, param_mode: str = "packed") -> nn.spec.ModuleSpec:
        """MLC-LLM's spec of these functions: symbolic ``seq_len`` and ``batch_size``."""
        hidden, dtype = self.config.hidden_size, self.config.dtype
        cache = nn.spec.Object(object_type=PagedKVCache)
        modes = {"param_mode": param_mode, "effect_mode": "none"}
        prefill = {"input_embed": nn.spec.Tensor([1, "seq_len", hidden], dtype)}
        decode = {"input_embed": nn.spec.Tensor([1, 1, hidden], dtype)}
        batch_prefill = {"input_embeds": nn.spec.Tensor([1, "seq_len", hidden], dtype)}
        batch_decode = {"input_embeds": nn.spec.Tensor(["batch_size", 1, hidden], dtype)}
        positions = {"logit_positions": nn.spec.Tensor(["batch_size"], "int32")}
        sizes = (
            "max_batch_size",
            "max_total_seq_len",
            "prefill_chunk_size",
            "page_size",
            "support_sliding_window",
        )
        spec = {
            "embed": {"input_ids": nn.spec.Tensor(["seq_len"], "int32"), "$": modes},
            "prefill": {**prefill, "paged_kv_cache": cache, "$": modes},
            "decode": {**decode, "paged_kv_cache": cache, "$": modes},
            "prefill_to_last_hidden_states": {**prefill, "paged_kv_cache": cache, "$": modes},
            "decode_to_last_hidden_states": {**decode, "paged_kv_cache": cache, "$": modes},
            "batch_prefill": {**batch_prefill, **positions, "paged_kv_cache": cache, "$": modes},
            "batch_decode": {**batch_decode, "paged_kv_cache": cache, "$": modes},
            "batch_prefill_to_last_hidden_states": {
                **batch_prefill,
                "paged_kv_cache": cache,
                "$": modes,
            },
            "batch_decode_to_last_hidden_states": {
                **batch_decode,
                "paged_kv_cache": cache,
                "$": modes,
            },
            "batch_verify": {**batch_prefill, "paged_kv_cache": cache, "$": modes},
            "batch_verify_to_last_hidden_states": {
                **batch_prefill,
                "paged_kv_cache": cache,
                "$": modes,
            },
            "create_paged_kv_cache": {
                **dict.fromkeys(sizes, int),
                "$": {"param_mode": "none", "effect_mode": "none"},
            },
        }
        return nn.spec.ModuleSpec.from_raw(spec, self)


def llm_module(
    config: LlamaConfig = SMALL,
    target: tvm.target.Target | str = "llvm",
    *,
    param_mode: str = "packed",
) -> tuple[tvm.IRModule, tuple[str, ...]]:
    """The model exported as MLC-LLM exports it (``export_tvm`` of its spec), ready for
    ``tvm.compile(mod, target, relax_pipeline=mlc_llm_pipeline(...,
    variable_bounds=config.variable_bounds))``, and the names of its functions. The bounds and
    ``relax.memory_plan_dynamic_func_output`` are attached by the pipeline, as in MLC-LLM."""
    model = LlamaForCausalLM(config, target)
    model.to(config.dtype)
    mod, _ = model.export_tvm(spec=model.spec(param_mode))
    return mod, LLM_FUNCTIONS


def llm_weights(config: LlamaConfig = SMALL, seed: int = 0) -> list[np.ndarray]:
    """Deterministic random weights in the exported order: normal with scale 0.02, norm
    weights around 1 (so activations keep their size through the layers)."""
    rng = np.random.default_rng(seed)
    model = LlamaForCausalLM(config)
    weights = []
    for name, param in model.named_parameters():
        shape = [d if isinstance(d, int) else config.vocab_size for d in param.shape]
        scale = rng.standard_normal(shape) * 0.02
        value = 1.0 + scale if "norm" in name else scale
        weights.append(value.astype(config.dtype))
    return weights


# ---- Running it ---------------------------------------------------------------------------------

_PAGE_SIZE = 16  # MLC-LLM's page size


def _builtin(name: str):
    return tvm.get_global_func(f"vm.builtin.{name}")


def create_kv_cache(
    vm: relax.VirtualMachine, config: LlamaConfig, *, prefill_chunk_size: int | None = None
):
    """A paged KV cache from the module's ``create_paged_kv_cache``, sized as MLC-LLM's engine
    sizes it from the config (no sliding window)."""
    shape = tvm.runtime.ShapeTuple
    chunk = config.prefill_chunk_size if prefill_chunk_size is None else prefill_chunk_size
    return vm["create_paged_kv_cache"](
        shape([config.max_batch_size]),
        shape([config.context_window_size]),
        shape([chunk]),
        shape([_PAGE_SIZE]),
        shape([0]),
    )


class _Engine:
    """What MLC-LLM's engine does around each model call: embed tokens, tell the cache which
    sequences the call appends to (``begin_forward``), call, ``end_forward``."""

    def __init__(
        self,
        vm: relax.VirtualMachine,
        cache,
        params: list,
        outputs: dict,
        device: tvm.runtime.Device,
    ):
        # params: the weights as the functions take them (one packed tuple, or one by one).
        self.vm, self.cache, self.params, self.outputs = vm, cache, params, outputs
        self.device = device

    def _record(self, name: str, value) -> np.ndarray:
        array = value.numpy()
        self.outputs.setdefault(name, []).append(array)
        return array

    def embed(self, tokens: np.ndarray):
        ids = tvm.runtime.tensor(tokens.astype("int32"), self.device)
        embedded = self.vm["embed"](ids, *self.params)
        self._record("embed", embedded)
        return embedded

    def forward(self, name: str, seq_ids: list[int], lengths: list[int], *args) -> np.ndarray:
        shape = tvm.runtime.ShapeTuple
        _builtin("kv_state_begin_forward")(self.cache, shape(seq_ids), shape(lengths))
        result, self.cache = self.vm[name](*args, self.cache, *self.params)
        _builtin("kv_state_end_forward")(self.cache)
        return self._record(name, result)

    def prefill(self, name: str, seq_ids: list[int], prompts: list[np.ndarray]) -> np.ndarray:
        for seq_id in seq_ids:
            _builtin("kv_state_add_sequence")(self.cache, seq_id)
        embedded = self.embed(np.concatenate(prompts))
        hidden = _builtin("reshape")(embedded, tvm.runtime.ShapeTuple([1, *embedded.shape]))
        lengths = [len(p) for p in prompts]
        if name != "batch_prefill":
            return self.forward(name, seq_ids, lengths, hidden)
        positions = np.cumsum(lengths).astype("int32") - 1
        return self.forward(
            name, seq_ids, lengths, hidden, tvm.runtime.tensor(positions, self.device)
        )

    def verify(self, name: str, seq_ids: list[int], drafts: list) -> np.ndarray:
        """Speculative decoding's check of draft tokens: every draft of every sequence in one
        call (logits, or hidden states, at every position), as MLC-LLM's engine verifies."""
        embedded = self.embed(np.concatenate(drafts).astype("int32"))
        hidden = _builtin("reshape")(embedded, tvm.runtime.ShapeTuple([1, *embedded.shape]))
        return self.forward(name, seq_ids, [len(d) for d in drafts], hidden)

    def decode(self, name: str, seq_ids: list[int], tokens: np.ndarray) -> np.ndarray:
        embedded = self.embed(tokens)
        shape = tvm.runtime.ShapeTuple([len(tokens), 1, embedded.shape[-1]])
        return self.forward(name, seq_ids, [1] * len(seq_ids), _builtin("reshape")(embedded, shape))

    def finish(self, seq_ids: list[int]) -> None:
        for seq_id in seq_ids:
            _builtin("kv_state_remove_sequence")(self.cache, seq_id)


def run_llm(
    executable: tvm.runtime.Executable | relax.VirtualMachine,
    config: LlamaConfig,
    weights: Sequence[np.ndarray],
    prompt: np.ndarray,
    decode_steps: int = 3,
    *,
    batch_prompts: tuple[np.ndarray, np.ndarray] | None = None,
    seed: int = 0,
    param_mode: str = "packed",
    device: tvm.runtime.Device | None = None,
) -> dict[str, list[np.ndarray]]:
    """Run every function of a compiled ``llm_module`` on ``device`` (default: the CPU), in a
    fresh KV cache, as MLC-LLM's engine does, and return every output by function name, in call
    order:

    - sequence 0: ``prefill`` of ``prompt``, then ``decode_steps`` greedy ``decode`` steps;
    - sequences 1 and 2: ``batch_prefill`` of ``batch_prompts`` (default: the prompt's two
      halves reversed), then ``decode_steps`` greedy ``batch_decode`` steps, then one
      ``batch_verify`` of one draft token each (the greedy ones): on the CPU, TVM 0.27's paged
      KV cache attention returns NaN when a call appends more than one token to a sequence that
      already has some (stock builds too), which a longer draft would do;
    - sequences 3, 4 and 5: the ``*_to_last_hidden_states`` forms the same way, fed tokens
      drawn from ``seed`` (they return no logits to choose tokens from);
    - ``embed``: every embedding, in the order made.

    Each sequence is removed from the cache when its calls are done, as the engine removes a
    finished request. ``prompt`` has at least two tokens and at most the prefill chunk.
    ``param_mode``: the one ``llm_module`` exported with.
    """
    device = tvm.cpu() if device is None else device
    vm = (
        executable
        if isinstance(executable, relax.VirtualMachine)
        else relax.VirtualMachine(executable, device)
    )
    params = [tvm.runtime.tensor(w, device) for w in weights]
    if param_mode not in ("packed", "plain"):
        raise ValueError(f'param_mode is "packed" or "plain", got {param_mode!r}')
    prompt = np.asarray(prompt, dtype="int32")
    if not 2 <= len(prompt) <= config.prefill_chunk_size:
        raise ValueError(
            f"prompt of {len(prompt)} tokens: run_llm takes 2 to prefill_chunk_size "
            f"({config.prefill_chunk_size})"
        )
    if batch_prompts is None:
        half = max(1, len(prompt) // 2)
        batch_prompts = (prompt[half:][::-1].copy(), prompt[:half][::-1].copy())
    outputs: dict[str, list[np.ndarray]] = {}
    packed = [params] if param_mode == "packed" else params
    engine = _Engine(vm, create_kv_cache(vm, config), packed, outputs, device)
    rng = np.random.default_rng(seed)

    def greedy(logits: np.ndarray) -> np.ndarray:
        return logits.reshape(-1, logits.shape[-1]).argmax(axis=-1).astype("int32")

    logits = engine.prefill("prefill", [0], [prompt])
    for _ in range(decode_steps):
        logits = engine.decode("decode", [0], greedy(logits))
    engine.finish([0])

    def tokens(count: int) -> np.ndarray:
        return rng.integers(0, config.vocab_size, size=count).astype("int32")

    logits = engine.prefill("batch_prefill", [1, 2], list(batch_prompts))
    for _ in range(decode_steps):
        logits = engine.decode("batch_decode", [1, 2], greedy(logits))
    engine.verify("batch_verify", [1, 2], [[token] for token in greedy(logits)])
    engine.finish([1, 2])

    engine.prefill("prefill_to_last_hidden_states", [3], [prompt])
    for _ in range(decode_steps):
        engine.decode("decode_to_last_hidden_states", [3], tokens(1))
    engine.finish([3])
    engine.prefill("batch_prefill_to_last_hidden_states", [4, 5], list(batch_prompts))
    for _ in range(decode_steps):
        engine.decode("batch_decode_to_last_hidden_states", [4, 5], tokens(2))
    engine.verify("batch_verify_to_last_hidden_states", [4, 5], [tokens(1), tokens(1)])
    engine.finish([4, 5])
    return outputs


def decode_steps_per_second(
    executable: tvm.runtime.Executable | relax.VirtualMachine,
    config: LlamaConfig,
    weights: Sequence[np.ndarray],
    prompt: np.ndarray,
    steps: int,
    *,
    warmup: int = 2,
    device: tvm.runtime.Device | None = None,
) -> float:
    """Greedy ``decode`` steps per second of one sequence after a ``prefill`` of ``prompt``, each
    step as MLC-LLM's engine takes it (embed, ``begin_forward``, the call, ``end_forward``, the
    logits back on the host); the first ``warmup`` steps (which capture CUDA graphs) are not
    timed. ``prompt`` plus every step must fit the context window."""
    device = tvm.cpu() if device is None else device
    vm = (
        executable
        if isinstance(executable, relax.VirtualMachine)
        else relax.VirtualMachine(executable, device)
    )
    params = [[tvm.runtime.tensor(w, device) for w in weights]]
    engine = _Engine(vm, create_kv_cache(vm, config), params, {}, device)
    logits = engine.prefill("prefill", [0], [np.asarray(prompt, dtype="int32")])
    for _ in range(warmup):
        logits = engine.decode("decode", [0], logits.reshape(-1, logits.shape[-1]).argmax(-1))
    start = time.perf_counter()
    for _ in range(steps):
        logits = engine.decode("decode", [0], logits.reshape(-1, logits.shape[-1]).argmax(-1))
    elapsed = time.perf_counter() - start
    engine.finish([0])
    return steps / elapsed


def serve(
    vm: relax.VirtualMachine,
    config: LlamaConfig,
    weights: Sequence[np.ndarray],
    prompt_lengths: Sequence[int],
    batch_sizes: Sequence[int],
    *,
    decode_steps: int = 2,
    seed: int = 0,
    device: tvm.runtime.Device | None = None,
) -> None:
    """An engine's day, for what the VM's allocator holds: per prompt length, a prefill and
    ``decode_steps`` decodes of one sequence; per batch size, a batch prefill of that many
    sequences (prompts of 2 to 5 tokens) and ``decode_steps`` batch decodes. Outputs are not
    kept. Packed weights (``llm_module``'s default)."""
    device = tvm.cpu() if device is None else device
    params = [tvm.runtime.tensor(w, device) for w in weights]
    engine = _Engine(vm, create_kv_cache(vm, config), [params], {}, device)
    rng = np.random.default_rng(seed)

    def tokens(count: int) -> np.ndarray:
        return rng.integers(0, config.vocab_size, size=count).astype("int32")

    next_id = 0
    for length in prompt_lengths:
        engine.prefill("prefill", [next_id], [tokens(length)])
        for _ in range(decode_steps):
            engine.decode("decode", [next_id], tokens(1))
        engine.finish([next_id])
        next_id += 1
    for size in batch_sizes:
        seq_ids = list(range(next_id, next_id + size))
        next_id += size
        engine.prefill("batch_prefill", seq_ids, [tokens(2 + i % 4) for i in range(size)])
        for _ in range(decode_steps):
            engine.decode("batch_decode", seq_ids, tokens(size))
        engine.finish(seq_ids)
    engine.outputs.clear()
