"""Small ONNX models built with onnx.helper for the report's tests: a conv net with a residual
add and a concatenation, and a transformer encoder block. Weights are seeded random
initializers; the batch dimension is dynamic ("N") unless a fixed batch is asked for."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17


def _init(rng, name: str, shape) -> onnx.TensorProto:
    return numpy_helper.from_array((rng.standard_normal(shape) * 0.1).astype(np.float32), name=name)


def _model(nodes, inputs, outputs, initializers, name: str) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, name, inputs, outputs, initializer=initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def conv_net(batch: int | str = "N") -> onnx.ModelProto:
    """conv -> relu -> conv -> add (residual) -> relu -> concat (with the first activation) ->
    1x1 conv -> global average pool -> flatten -> gemm."""
    rng = np.random.default_rng(0)
    inits = [
        _init(rng, "w1", (8, 3, 3, 3)),
        _init(rng, "b1", (8,)),
        _init(rng, "w2", (8, 8, 3, 3)),
        _init(rng, "b2", (8,)),
        _init(rng, "w3", (16, 16, 1, 1)),
        _init(rng, "b3", (16,)),
        _init(rng, "fc_w", (16, 10)),
        _init(rng, "fc_b", (10,)),
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
    return _model(nodes, [x], [y], inits, "conv_net")


def transformer_encoder(batch: int | str = "N", seq: int = 16, dim: int = 32, heads: int = 4):
    """Pre-norm self-attention and a feed-forward block, each with a residual add."""
    rng = np.random.default_rng(1)
    head_dim = dim // heads
    inits = [
        _init(rng, "ln1_scale", (dim,)),
        _init(rng, "ln1_bias", (dim,)),
        _init(rng, "wq", (dim, dim)),
        _init(rng, "wk", (dim, dim)),
        _init(rng, "wv", (dim, dim)),
        _init(rng, "wo", (dim, dim)),
        _init(rng, "ln2_scale", (dim,)),
        _init(rng, "ln2_bias", (dim,)),
        _init(rng, "w_ff1", (dim, 4 * dim)),
        _init(rng, "b_ff1", (4 * dim,)),
        _init(rng, "w_ff2", (4 * dim, dim)),
        _init(rng, "b_ff2", (dim,)),
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
    return _model(nodes, [x], [y], inits, "transformer_encoder")
