"""A small Llama-style decoder written with ``tvm.relax.frontend.nn`` as MLC-LLM writes its
models: token embedding, RMSNorm, multi-head causal attention, a SwiGLU feed-forward and a
language-model head, over a symbolic ``seq_len``. ``build(upper_bound=2048)`` bounds
``seq_len`` through the function attribute ``tir_var_upper_bound`` (MLC-LLM's
``prefill_chunk_size``); ``upper_bound=None`` leaves it unbounded.

As a report input: ``tvm-memplan report tests/report/llm_decoder.py``."""

from __future__ import annotations

import math

import tvm
from tvm.relax.frontend import nn
from tvm.relax.frontend.nn import op

VOCAB, HIDDEN, HEADS, LAYERS, FFN = 256, 64, 4, 2, 128


class Attention(nn.Module):
    def __init__(self, hidden: int, heads: int):
        self.heads = heads
        self.q_proj = nn.Linear(hidden, hidden, bias=False)
        self.k_proj = nn.Linear(hidden, hidden, bias=False)
        self.v_proj = nn.Linear(hidden, hidden, bias=False)
        self.o_proj = nn.Linear(hidden, hidden, bias=False)

    def forward(self, x: nn.Tensor) -> nn.Tensor:
        batch, seq_len, hidden = x.shape
        head_dim = hidden // self.heads

        def heads(t: nn.Tensor, perm) -> nn.Tensor:
            return op.permute_dims(op.reshape(t, (batch, seq_len, self.heads, head_dim)), perm)

        q = heads(self.q_proj(x), [0, 2, 1, 3])
        k = heads(self.k_proj(x), [0, 2, 3, 1])
        v = heads(self.v_proj(x), [0, 2, 1, 3])
        scores = op.matmul(q, k) * (1.0 / math.sqrt(head_dim))
        context = op.matmul(op.softmax(scores, axis=-1), v)
        context = op.reshape(op.permute_dims(context, [0, 2, 1, 3]), (batch, seq_len, hidden))
        return self.o_proj(context)


class FeedForward(nn.Module):
    def __init__(self, hidden: int, ffn: int):
        self.gate_proj = nn.Linear(hidden, ffn, bias=False)
        self.up_proj = nn.Linear(hidden, ffn, bias=False)
        self.down_proj = nn.Linear(ffn, hidden, bias=False)

    def forward(self, x: nn.Tensor) -> nn.Tensor:
        return self.down_proj(op.silu(self.gate_proj(x)) * self.up_proj(x))


class DecoderLayer(nn.Module):
    def __init__(self, hidden: int, heads: int, ffn: int):
        self.input_layernorm = nn.RMSNorm(hidden, -1, bias=False)
        self.self_attn = Attention(hidden, heads)
        self.post_attention_layernorm = nn.RMSNorm(hidden, -1, bias=False)
        self.mlp = FeedForward(hidden, ffn)

    def forward(self, x: nn.Tensor) -> nn.Tensor:
        h = x + self.self_attn(self.input_layernorm(x))
        return h + self.mlp(self.post_attention_layernorm(h))


class Decoder(nn.Module):
    def __init__(self):
        self.embed_tokens = nn.Embedding(VOCAB, HIDDEN)
        self.layers = nn.ModuleList([DecoderLayer(HIDDEN, HEADS, FFN) for _ in range(LAYERS)])
        self.norm = nn.RMSNorm(HIDDEN, -1, bias=False)
        self.lm_head = nn.Linear(HIDDEN, VOCAB, bias=False)

    def forward(self, input_ids: nn.Tensor) -> nn.Tensor:
        h = self.embed_tokens(input_ids)
        for layer in self.layers:
            h = layer(h)
        return self.lm_head(self.norm(h))


def build(upper_bound: int | None = 2048) -> tvm.IRModule:
    """The decoder's prefill: ``forward(input_ids: (1, seq_len) int32, weights...)`` returning
    the logits ``(1, seq_len, VOCAB)``; ``seq_len <= upper_bound`` when one is given."""
    spec = {"forward": {"input_ids": nn.spec.Tensor([1, "seq_len"], "int32")}}
    mod, _ = Decoder().export_tvm(spec=spec)
    if upper_bound is not None:
        func = mod["forward"].with_attr("tir_var_upper_bound", {"seq_len": upper_bound})
        mod = tvm.IRModule({**{gv: f for gv, f in mod.functions.items()}})
        mod["forward"] = func
    return mod
