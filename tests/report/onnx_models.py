"""Small ONNX models built with onnx.helper for the report's tests: a conv net with a residual
add and a concatenation, and a transformer encoder block. Weights are seeded random
initializers; the batch dimension is dynamic ("N") unless a fixed batch is asked for."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from zoo.onnx_models import checked_model, random_initializer


def conv_net(batch: int | str = "N") -> onnx.ModelProto:
    """conv -> relu -> conv -> add (residual) -> relu -> concat (with the first activation) ->
    1x1 conv -> global average pool -> flatten -> gemm."""
    rng = np.random.default_rng(0)
    inits = [
        random_initializer(rng, "w1", (8, 3, 3, 3)),
        random_initializer(rng, "b1", (8,)),
        random_initializer(rng, "w2", (8, 8, 3, 3)),
        random_initializer(rng, "b2", (8,)),
        random_initializer(rng, "w3", (16, 16, 1, 1)),
        random_initializer(rng, "b3", (16,)),
        random_initializer(rng, "fc_w", (16, 10)),
        random_initializer(rng, "fc_b", (10,)),
    ]
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"]),
        helper.make_node("Conv", ["r1", "w2", "b2"], ["c2"], pads=[1, 1, 1, 1]),
        helper.make_node("Add", ["c2", "r1"], ["res"]),
        helper.make_node("Relu", ["res"], ["r2"]),
        helper.make_node("Concat", ["r2", "r1"], ["cat"], axis=1),
        helper.make_node("Conv", ["cat", "w3", "b3"], ["c3"]),
        helper.make_node("GlobalAveragePool", ["c3"], ["pool"]),
        helper.make_node("Flatten", ["pool"], ["flat"]),
        helper.make_node("Gemm", ["flat", "fc_w", "fc_b"], ["y"]),
    ]
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, 3, 32, 32])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [batch, 10])
    return checked_model(nodes, [x], [y], inits, "conv_net")


def transformer_encoder(batch: int | str = "N", seq: int = 16, dim: int = 32, heads: int = 4):
    """Pre-norm self-attention and a feed-forward block, each with a residual add."""
    rng = np.random.default_rng(1)
    head_dim = dim // heads
    inits = [
        random_initializer(rng, "ln1_scale", (dim,)),
        random_initializer(rng, "ln1_bias", (dim,)),
        random_initializer(rng, "wq", (dim, dim)),
        random_initializer(rng, "wk", (dim, dim)),
        random_initializer(rng, "wv", (dim, dim)),
        random_initializer(rng, "wo", (dim, dim)),
        random_initializer(rng, "ln2_scale", (dim,)),
        random_initializer(rng, "ln2_bias", (dim,)),
        random_initializer(rng, "w_ff1", (dim, 4 * dim)),
        random_initializer(rng, "b_ff1", (4 * dim,)),
        random_initializer(rng, "w_ff2", (4 * dim, dim)),
        random_initializer(rng, "b_ff2", (dim,)),
        numpy_helper.from_array(np.array([0, 0, heads, head_dim], dtype=np.int64), "heads_shape"),
        numpy_helper.from_array(np.array([0, 0, dim], dtype=np.int64), "model_shape"),
        numpy_helper.from_array(np.array(np.sqrt(head_dim), dtype=np.float32), "scale"),
    ]
    nodes = [
        helper.make_node("LayerNormalization", ["x", "ln1_scale", "ln1_bias"], ["n1"], axis=-1),
        helper.make_node("MatMul", ["n1", "wq"], ["q"]),
        helper.make_node("MatMul", ["n1", "wk"], ["k"]),
        helper.make_node("MatMul", ["n1", "wv"], ["v"]),
        helper.make_node("Reshape", ["q", "heads_shape"], ["qh"]),
        helper.make_node("Reshape", ["k", "heads_shape"], ["kh"]),
        helper.make_node("Reshape", ["v", "heads_shape"], ["vh"]),
        helper.make_node("Transpose", ["qh"], ["qt"], perm=[0, 2, 1, 3]),
        helper.make_node("Transpose", ["kh"], ["kt"], perm=[0, 2, 3, 1]),
        helper.make_node("Transpose", ["vh"], ["vt"], perm=[0, 2, 1, 3]),
        helper.make_node("MatMul", ["qt", "kt"], ["scores"]),
        helper.make_node("Div", ["scores", "scale"], ["scaled"]),
        helper.make_node("Softmax", ["scaled"], ["attn"], axis=-1),
        helper.make_node("MatMul", ["attn", "vt"], ["ctx"]),
        helper.make_node("Transpose", ["ctx"], ["ctx_t"], perm=[0, 2, 1, 3]),
        helper.make_node("Reshape", ["ctx_t", "model_shape"], ["ctx_m"]),
        helper.make_node("MatMul", ["ctx_m", "wo"], ["proj"]),
        helper.make_node("Add", ["x", "proj"], ["h"]),
        helper.make_node("LayerNormalization", ["h", "ln2_scale", "ln2_bias"], ["n2"], axis=-1),
        helper.make_node("MatMul", ["n2", "w_ff1"], ["f1"]),
        helper.make_node("Add", ["f1", "b_ff1"], ["f1b"]),
        helper.make_node("Relu", ["f1b"], ["f1r"]),
        helper.make_node("MatMul", ["f1r", "w_ff2"], ["f2"]),
        helper.make_node("Add", ["f2", "b_ff2"], ["f2b"]),
        helper.make_node("Add", ["h", "f2b"], ["y"]),
    ]
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, seq, dim])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [batch, seq, dim])
    return checked_model(nodes, [x], [y], inits, "transformer_encoder")


def torch_transformer_encoder(layers: int = 2, seq: int = 16, dim: int = 64, heads: int = 4):
    """What ``torch.onnx.export`` (opset 17) makes of ``torch.nn.TransformerEncoder`` with
    ``batch_first=True``, built node by node with torch's node names: self-attention with one
    packed in-projection whose q, k and v are picked with Gather of a scalar index (TVM's ONNX
    frontend turns each into ``R.add(R.const(i), R.take(shape, 0))``, on which TVM 0.27's
    DataflowUseInplaceCalls raises "In-place index 0 is out of range"), post-norm LayerNorm
    and a ReLU feed-forward, each with a residual add."""
    rng = np.random.default_rng(2)
    head_dim, ffn = dim // heads, 2 * dim
    inits, nodes = [], []

    def const(name, value, dtype=np.int64):
        inits.append(numpy_helper.from_array(np.array(value, dtype=dtype), name))
        return name

    def node(op, name, inputs, **attrs):
        output = f"{name}_output_0"
        nodes.append(helper.make_node(op, inputs, [output], name=name, **attrs))
        return output

    x = node("Transpose", "/Transpose_in", ["x"], perm=[1, 0, 2])  # (seq, 1, dim)
    for i in range(layers):
        p = f"/layers.{i}"
        inits += [
            random_initializer(rng, f"layers.{i}.in_proj_weight_t", (dim, 3 * dim)),
            random_initializer(rng, f"layers.{i}.self_attn.in_proj_bias", (3 * dim,)),
            random_initializer(rng, f"layers.{i}.out_proj_weight_t", (dim, dim)),
            random_initializer(rng, f"layers.{i}.self_attn.out_proj.bias", (dim,)),
            random_initializer(rng, f"layers.{i}.norm1.weight", (dim,)),
            random_initializer(rng, f"layers.{i}.norm1.bias", (dim,)),
            random_initializer(rng, f"layers.{i}.linear1_weight_t", (dim, ffn)),
            random_initializer(rng, f"layers.{i}.linear1.bias", (ffn,)),
            random_initializer(rng, f"layers.{i}.linear2_weight_t", (ffn, dim)),
            random_initializer(rng, f"layers.{i}.linear2.bias", (dim,)),
            random_initializer(rng, f"layers.{i}.norm2.weight", (dim,)),
            random_initializer(rng, f"layers.{i}.norm2.bias", (dim,)),
        ]

        def layer_norm(t, norm, i=i, p=p):
            """PyTorch's export of `layers.i.<norm>`, over the last axis."""
            weights = [f"layers.{i}.{norm}.weight", f"layers.{i}.{norm}.bias"]
            return node(
                "LayerNormalization", f"{p}/{norm}/LayerNormalization", [t, *weights], axis=-1
            )

        a = f"{p}/self_attn"
        qkv = node("MatMul", f"{a}/MatMul", [x, f"layers.{i}.in_proj_weight_t"])
        qkv = node("Add", f"{a}/Add", [f"layers.{i}.self_attn.in_proj_bias", qkv])
        qkv = node("Reshape", f"{a}/Reshape", [qkv, const(f"{a}/shape3", [seq, 1, 3, dim])])
        qkv = node("Unsqueeze", f"{a}/Unsqueeze", [qkv, const(f"{a}/axes0", [0])])
        qkv = node("Transpose", f"{a}/Transpose_1", [qkv], perm=[3, 1, 2, 0, 4])
        qkv = node("Squeeze", f"{a}/Squeeze", [qkv, const(f"{a}/axes3", [3])])  # (3, seq, 1, dim)
        picked = []
        for j, suffix in enumerate(("", "_1", "_2")):
            index = const(f"{a}/index{j}", j)  # a scalar: the frontend's wrap-around check
            t = node("Gather", f"{a}/Gather{suffix}", [qkv, index], axis=0)  # (seq, 1, dim)
            t = node(
                "Reshape", f"{a}/Reshape_h{j}", [t, const(f"{a}/heads{j}", [seq, heads, head_dim])]
            )
            picked.append(node("Transpose", f"{a}/Transpose_h{j}", [t], perm=[1, 0, 2]))
        q, k, v = picked  # (heads, seq, head_dim)
        kt = node("Transpose", f"{a}/Transpose_k", [k], perm=[0, 2, 1])
        scores = node("MatMul", f"{a}/MatMul_qk", [q, kt])
        scale = const(f"{a}/scale", np.sqrt(head_dim), np.float32)
        scores = node("Div", f"{a}/Div", [scores, scale])
        attn = node("Softmax", f"{a}/Softmax", [scores], axis=-1)
        ctx = node("MatMul", f"{a}/MatMul_v", [attn, v])
        ctx = node("Transpose", f"{a}/Transpose_ctx", [ctx], perm=[1, 0, 2])
        ctx = node("Reshape", f"{a}/Reshape_ctx", [ctx, const(f"{a}/model", [seq, 1, dim])])
        out = node("MatMul", f"{a}/MatMul_out", [ctx, f"layers.{i}.out_proj_weight_t"])
        out = node("Add", f"{a}/Add_out", [out, f"layers.{i}.self_attn.out_proj.bias"])
        h = node("Add", f"{p}/Add", [x, out])
        h = layer_norm(h, "norm1")
        f = node("MatMul", f"{p}/linear1/MatMul", [h, f"layers.{i}.linear1_weight_t"])
        f = node("Add", f"{p}/linear1/Add", [f"layers.{i}.linear1.bias", f])
        f = node("Relu", f"{p}/Relu", [f])
        f = node("MatMul", f"{p}/linear2/MatMul", [f, f"layers.{i}.linear2_weight_t"])
        f = node("Add", f"{p}/linear2/Add", [f"layers.{i}.linear2.bias", f])
        h = node("Add", f"{p}/Add_1", [h, f])
        x = layer_norm(h, "norm2")
    nodes.append(helper.make_node("Transpose", [x], ["y"], name="/Transpose_out", perm=[1, 0, 2]))
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, seq, dim])]
    outputs = [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, seq, dim])]
    return checked_model(nodes, inputs, outputs, inits, "torch_transformer_encoder")
