"""A small Llama-style decoder written with `relax.frontend.nn`, compiled the way MLC-LLM compiles
its models: a symbolic `seq_len`, parameters passed as function inputs, and the function
attribute `tir_var_upper_bound` bounding `seq_len` by the prefill chunk."""

from __future__ import annotations

import numpy as np
import tvm
from tvm.relax.frontend import nn
from tvm.relax.frontend.nn import op


class Attention(nn.Module):
    def __init__(self, hidden: int, heads: int):
        self.heads, self.head_dim = heads, hidden // heads
        self.qkv = nn.Linear(hidden, 3 * hidden, bias=False)
        self.out = nn.Linear(hidden, hidden, bias=False)

    def forward(self, x: nn.Tensor) -> nn.Tensor:
        batch, seq_len, hidden = x.shape
        qkv = op.reshape(self.qkv(x), (batch, seq_len, 3 * self.heads, self.head_dim))
        q, k, v = op.split(qkv, 3, axis=2)
        attended = op.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.out(op.reshape(attended, (batch, seq_len, hidden)))


class MLP(nn.Module):
    def __init__(self, hidden: int, intermediate: int):
        self.gate_up = nn.Linear(hidden, 2 * intermediate, bias=False)
        self.down = nn.Linear(intermediate, hidden, bias=False)

    def forward(self, x: nn.Tensor) -> nn.Tensor:
        gate, up = op.split(self.gate_up(x), 2, axis=-1)
        return self.down(op.silu(gate) * up)


class DecoderLayer(nn.Module):
    def __init__(self, hidden: int, heads: int, intermediate: int):
        self.attention_norm = nn.RMSNorm(hidden, axes=-1, bias=False)
        self.attention = Attention(hidden, heads)
        self.mlp_norm = nn.RMSNorm(hidden, axes=-1, bias=False)
        self.mlp = MLP(hidden, intermediate)

    def forward(self, x: nn.Tensor) -> nn.Tensor:
        x = x + self.attention(self.attention_norm(x))
        return x + self.mlp(self.mlp_norm(x))


class Decoder(nn.Module):
    def __init__(self, vocab=128, hidden=64, heads=4, intermediate=128, layers=2):
        self.embed = nn.Embedding(vocab, hidden)
        self.layers = nn.ModuleList(
            [DecoderLayer(hidden, heads, intermediate) for _ in range(layers)]
        )
        self.norm = nn.RMSNorm(hidden, axes=-1, bias=False)
        self.lm_head = nn.Linear(hidden, vocab, bias=False)

    def forward(self, tokens: nn.Tensor) -> nn.Tensor:
        x = self.embed(tokens)
        for layer in self.layers:
            x = layer(x)
        return self.lm_head(self.norm(x))


def decoder_module(upper_bound: int | None = 64, **sizes) -> tvm.IRModule:
    """The decoder's `forward(tokens: (1, seq_len) int32, *params)`; with `upper_bound`,
    `seq_len` is bounded by it through `tir_var_upper_bound`, as MLC-LLM does."""
    spec = {"forward": {"tokens": nn.spec.Tensor((1, "seq_len"), "int32")}}
    mod, _ = Decoder(**sizes).export_tvm(spec)
    if upper_bound is not None:
        bound = {"seq_len": upper_bound}
        mod = tvm.IRModule(
            {
                gv: func.with_attr("tir_var_upper_bound", bound)
                if gv.name_hint == "forward"
                else func
                for gv, func in mod.functions.items()
            }
        )
    return mod


def decoder_inputs(mod: tvm.IRModule, seq_len: int, seed: int = 0) -> list[np.ndarray]:
    """Tokens of length `seq_len` and small random parameters for `forward`."""
    rng = np.random.default_rng(seed)
    params = mod["forward"].params
    vocab = 128
    inputs = [rng.integers(0, vocab, size=(1, seq_len)).astype("int32")]
    for param in params[1:]:
        shape = [int(d) for d in param.ty.shape.values]
        inputs.append((rng.standard_normal(shape) * 0.1).astype(str(param.ty.dtype)))
    return inputs
