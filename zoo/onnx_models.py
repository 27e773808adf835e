"""Models as ONNX files import them (built with onnx.helper; needs the ``onnx`` extra): a
U-Net, whose Resize then Concat FuseOps puts in one kernel.

    from tvm.relax.frontend.onnx import from_onnx
    mod = from_onnx(unet(), keep_params_in_input=False)
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17


def random_initializer(rng, name: str, shape) -> onnx.TensorProto:
    return numpy_helper.from_array((rng.standard_normal(shape) * 0.1).astype(np.float32), name=name)


def checked_model(nodes, inputs, outputs, initializers, name: str) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, name, inputs, outputs, initializer=initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def unet(levels: int = 3, size: int = 64, width: int = 8) -> onnx.ModelProto:
    """A U-Net as users export one: per level two 3x3 conv + relu and a 2x2 max pool down; per
    decoder level a nearest Resize up, a Concat with the encoder's activation (upsampled input
    first) and two 3x3 conv + relu; a 1x1 conv head. Batch 1, ``size`` x ``size``."""
    rng = np.random.default_rng(2)
    inits, nodes = [], []

    def double_conv(x: str, inputs: int, outputs: int, name: str) -> str:
        for k, (cin, cout) in enumerate(((inputs, outputs), (outputs, outputs))):
            w, b = f"{name}_w{k}", f"{name}_b{k}"
            inits.extend(
                [random_initializer(rng, w, (cout, cin, 3, 3)), random_initializer(rng, b, (cout,))]
            )
            nodes.append(helper.make_node("Conv", [x, w, b], [f"{name}_c{k}"], pads=[1, 1, 1, 1]))
            nodes.append(helper.make_node("Relu", [f"{name}_c{k}"], [f"{name}_r{k}"]))
            x = f"{name}_r{k}"
        return x

    inits.append(numpy_helper.from_array(np.array([1, 1, 2, 2], dtype=np.float32), "scales"))
    skips, x, channels = [], "x", 3
    for level in range(levels):
        x = double_conv(x, channels, width << level, f"enc{level}")
        skips.append((x, width << level))
        nodes.append(
            helper.make_node("MaxPool", [x], [f"pool{level}"], kernel_shape=[2, 2], strides=[2, 2])
        )
        x, channels = f"pool{level}", width << level
    x = double_conv(x, channels, width << levels, "bottleneck")
    channels = width << levels
    for level in reversed(range(levels)):
        skip, skip_channels = skips[level]
        nodes.append(helper.make_node("Resize", [x, "", "scales"], [f"up{level}"], mode="nearest"))
        nodes.append(helper.make_node("Concat", [f"up{level}", skip], [f"cat{level}"], axis=1))
        x = double_conv(f"cat{level}", channels + skip_channels, skip_channels, f"dec{level}")
        channels = skip_channels
    inits.extend(
        [
            random_initializer(rng, "head_w", (2, channels, 1, 1)),
            random_initializer(rng, "head_b", (2,)),
        ]
    )
    nodes.append(helper.make_node("Conv", [x, "head_w", "head_b"], ["y"]))
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, size, size])]
    outputs = [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2, size, size])]
    return checked_model(nodes, inputs, outputs, inits, "unet")


def onnx_unet():
    """``unet()`` imported by TVM's ONNX frontend, weights as constants: (IRModule, "main")."""
    from tvm.relax.frontend.onnx import from_onnx

    return from_onnx(unet(), keep_params_in_input=False), "main"
