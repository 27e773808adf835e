"""A small model zoo written with ``tvm.relax.frontend.nn``, for the tests and benchmarks.

Each builder returns ``(IRModule, function name)``; the exported function takes the model
input first and the weights after it (``export_tvm``'s layout), so weights are parameters the
caller owns, as in a deployed model. Besides small blocks (an MLP, one transformer block, an
LSTM cell) the zoo holds scaled-down versions of the architectures users deploy: a ResNet, a
MobileNetV2, a MnasNet, a RegNet-Y, a DenseNet, a U-Net, an Inception network, a GhostNet and a
vision transformer.
"""

from __future__ import annotations

from tvm import relax
from tvm.relax.frontend import nn
from tvm.relax.frontend.nn import op


class MLP(nn.Module):
    """Three linear layers with GELU, SiLU and a residual connection."""

    def __init__(self, width: int = 256):
        self.fc1 = nn.Linear(width, 2 * width)
        self.fc2 = nn.Linear(2 * width, 2 * width)
        self.fc3 = nn.Linear(2 * width, width)

    def forward(self, x: nn.Tensor):
        h = nn.gelu(self.fc1(x))
        h = nn.silu(self.fc2(h)) + h
        return nn.relu(self.fc3(h)) * x


class Attention(nn.Module):
    def __init__(self, dim: int, heads: int):
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.out = nn.Linear(dim, dim)

    def forward(self, x: nn.Tensor):
        batch, seq, dim = x.shape
        head_dim = dim // self.heads
        qkv = op.reshape(self.qkv(x), (batch, seq, 3, self.heads, head_dim))
        q, k, v = op.split(qkv, 3, axis=2)
        q = op.permute_dims(op.reshape(q, (batch, seq, self.heads, head_dim)), [0, 2, 1, 3])
        k = op.permute_dims(op.reshape(k, (batch, seq, self.heads, head_dim)), [0, 2, 3, 1])
        v = op.permute_dims(op.reshape(v, (batch, seq, self.heads, head_dim)), [0, 2, 1, 3])
        scores = op.matmul(q, k) * (1.0 / head_dim**0.5)
        context = op.matmul(op.softmax(scores, axis=-1), v)
        context = op.reshape(op.permute_dims(context, [0, 2, 1, 3]), (batch, seq, dim))
        return self.out(context)


class TransformerBlock(nn.Module):
    """GPT-2 style: pre-norm attention and a tanh-GELU feed-forward, each with a residual."""

    def __init__(self, dim: int = 128, heads: int = 4):
        self.norm1 = nn.LayerNorm(dim)
        self.attn = Attention(dim, heads)
        self.norm2 = nn.LayerNorm(dim)
        self.fc1 = nn.Linear(dim, 4 * dim)
        self.fc2 = nn.Linear(4 * dim, dim)

    def forward(self, x: nn.Tensor):
        h = x + self.attn(self.norm1(x))
        return h + self.fc2(op.gelu(self.fc1(self.norm2(h)), approximate="tanh"))


class TransformerStack(nn.Module):
    """`depth` transformer blocks: the large generated model for timing the pass."""

    def __init__(self, depth: int, dim: int = 64, heads: int = 4):
        self.blocks = nn.ModuleList([TransformerBlock(dim, heads) for _ in range(depth)])

    def forward(self, x: nn.Tensor):
        for block in self.blocks:
            x = block(x)
        return x


def hard_swish(x: nn.Tensor) -> nn.Tensor:
    """MobileNetV3's activation: x * relu6(x + 3) / 6."""
    return x * op.relu6(x + 3.0) / 6.0


class SmallCNN(nn.Module):
    """MobileNetV3-like: conv stages with hard-swish, a residual add and a sigmoid gate."""

    def __init__(self, channels: int = 16):
        self.conv1 = nn.Conv2D(3, channels, 3, padding=1)
        self.conv2 = nn.Conv2D(channels, channels, 3, padding=1)
        self.conv3 = nn.Conv2D(channels, channels, 3, padding=1)

    def forward(self, x: nn.Tensor):
        h = hard_swish(self.conv1(x))
        r = nn.relu(self.conv2(h)) + h
        g = op.sigmoid(self.conv3(r))
        return op.tanh(r * g)


class ResidualUnit(nn.Module):
    def __init__(self, width: int):
        self.fc1 = nn.Linear(width, width)
        self.fc2 = nn.Linear(width, width)

    def forward(self, x: nn.Tensor):
        """Returns (output, skip): the skip connection leaves the unit in a tuple."""
        h = nn.relu(self.fc1(x))
        skip = op.exp(op.negative(h))
        return op.maximum(self.fc2(h) + x, skip), skip


class ResidualNet(nn.Module):
    """Residual units passing (output, skip) tuples; the model returns a tuple too."""

    def __init__(self, width: int = 128, depth: int = 3):
        self.units = nn.ModuleList([ResidualUnit(width) for _ in range(depth)])

    def forward(self, x: nn.Tensor):
        skips = None
        for unit in self.units:
            x, skip = unit(x)
            skips = skip if skips is None else skips + skip
        return x, op.sqrt(skips * skips + 1.0)


class LSTMCell(nn.Module):
    """One LSTM step, as run on microcontrollers for keyword spotting: returns (h, c)."""

    def __init__(self, inputs: int = 64, hidden: int = 128):
        self.hidden = hidden
        self.x_proj = nn.Linear(inputs, 4 * hidden)
        self.h_proj = nn.Linear(hidden, 4 * hidden, bias=False)

    def forward(self, x: nn.Tensor, h: nn.Tensor, c: nn.Tensor):
        gates = self.x_proj(x) + self.h_proj(h)
        i, f, g, o = op.split(gates, 4, axis=1)
        c = op.sigmoid(f) * c + op.sigmoid(i) * op.tanh(g)
        return op.sigmoid(o) * op.tanh(c), c


class BasicBlock(nn.Module):
    """ResNet's basic block: two 3x3 convolutions and a residual (a 1x1 projection when the
    stride or the width changes)."""

    def __init__(self, inputs: int, outputs: int, stride: int):
        self.conv1 = nn.Conv2D(inputs, outputs, 3, stride=stride, padding=1)
        self.conv2 = nn.Conv2D(outputs, outputs, 3, padding=1)
        self.project = (
            nn.Conv2D(inputs, outputs, 1, stride=stride)
            if stride != 1 or inputs != outputs
            else None
        )

    def forward(self, x: nn.Tensor):
        skip = self.project(x) if self.project is not None else x
        return nn.relu(self.conv2(nn.relu(self.conv1(x))) + skip)


class _Classifier(nn.Module):
    """The CNN classifiers' skeleton: a stem and its activation, a chain of blocks, global
    average pooling and a linear head. A subclass builds its blocks and calls `_assemble`."""

    stem_activation = staticmethod(nn.relu)

    def _assemble(self, stem: nn.Module, blocks: list[nn.Module], width: int, classes: int):
        """`width`: the channels the last block gives."""
        self.stem = stem
        self.blocks = nn.ModuleList(blocks)
        self.head = nn.Linear(width, classes)

    def forward(self, x: nn.Tensor):
        h = self.stem_activation(self.stem(x))
        for block in self.blocks:
            h = block(h)
        return self.head(_global_average_pool(h))


def _chain(block: type, inputs: int, specs) -> tuple[list[nn.Module], int]:
    """``block(inputs, outputs, *rest)`` for each ``(outputs, *rest)`` of `specs`, each block
    taking the previous one's outputs; and the last block's outputs."""
    blocks = []
    for outputs, *rest in specs:
        blocks.append(block(inputs, outputs, *rest))
        inputs = outputs
    return blocks, inputs


class ResNet(_Classifier):
    """ResNet-18-like: a stem, three stages of two basic blocks (stride 2 between stages),
    global average pooling and a classifier."""

    def __init__(self, widths=(16, 32, 64), classes: int = 10):
        strides = [
            (w, 2 if stage > 0 and i == 0 else 1) for stage, w in enumerate(widths) for i in (0, 1)
        ]
        blocks, width = _chain(BasicBlock, widths[0], strides)
        self._assemble(nn.Conv2D(3, widths[0], 3, padding=1), blocks, width, classes)


def _global_average_pool(x: nn.Tensor) -> nn.Tensor:
    batch, channels, height, width = x.shape
    return op.sum(x, axis=[2, 3]) * (1.0 / (height * width))


class InvertedResidual(nn.Module):
    """MobileNetV2's block: 1x1 expansion, 3x3 depthwise convolution, 1x1 linear projection,
    and a residual when the shape is kept."""

    def __init__(self, inputs: int, outputs: int, stride: int, expand: int = 6):
        hidden = inputs * expand
        self.expand = nn.Conv2D(inputs, hidden, 1)
        self.depthwise = nn.Conv2D(hidden, hidden, 3, stride=stride, padding=1, groups=hidden)
        self.project = nn.Conv2D(hidden, outputs, 1)
        self.residual = stride == 1 and inputs == outputs

    def forward(self, x: nn.Tensor):
        h = op.relu6(self.depthwise(op.relu6(self.expand(x))))
        h = self.project(h)
        return h + x if self.residual else h


class MobileNetV2(_Classifier):
    """MobileNetV2-like at low resolution: a strided stem and seven inverted residuals."""

    # (output channels, stride) per block
    BLOCKS = ((8, 1), (12, 2), (12, 1), (16, 2), (16, 1), (24, 2), (24, 1))

    stem_activation = staticmethod(op.relu6)

    def __init__(self, classes: int = 10):
        blocks, width = _chain(InvertedResidual, 8, self.BLOCKS)
        self._assemble(nn.Conv2D(3, 8, 3, stride=2, padding=1), blocks, width, classes)


class MBConv(nn.Module):
    """MnasNet's block: 1x1 expansion, a 3x3 or 5x5 depthwise convolution, an optional
    squeeze-and-excitation gate, a 1x1 projection, and a residual when the shape is kept."""

    def __init__(self, inputs: int, outputs: int, kernel: int, stride: int, expand: int, se: bool):
        hidden = inputs * expand
        self.expand = nn.Conv2D(inputs, hidden, 1) if expand != 1 else None
        self.depthwise = nn.Conv2D(
            hidden, hidden, kernel, stride=stride, padding=kernel // 2, groups=hidden
        )
        self.squeeze = nn.Conv2D(hidden, max(1, hidden // 4), 1) if se else None
        self.excite = nn.Conv2D(max(1, hidden // 4), hidden, 1) if se else None
        self.project = nn.Conv2D(hidden, outputs, 1)
        self.residual = stride == 1 and inputs == outputs

    def forward(self, x: nn.Tensor):
        h = nn.relu(self.expand(x)) if self.expand is not None else x
        h = nn.relu(self.depthwise(h))
        if self.squeeze is not None:
            batch, channels, height, width = h.shape
            pooled = op.sum(h, axis=[2, 3], keepdims=True) * (1.0 / (height * width))
            h = h * op.sigmoid(self.excite(nn.relu(self.squeeze(pooled))))
        h = self.project(h)
        return h + x if self.residual else h


class MnasNet(_Classifier):
    """MnasNet-A1-like at 64x64: a strided stem, a separable block, then MBConv stages with
    3x3 and 5x5 kernels, some with squeeze-and-excitation."""

    # (output channels, kernel, stride, expansion, squeeze-and-excitation) per block
    BLOCKS = (
        (8, 3, 1, 1, False),
        (12, 3, 2, 6, False),
        (12, 3, 1, 6, False),
        (20, 5, 2, 3, True),
        (20, 5, 1, 3, True),
        (40, 3, 2, 6, False),
        (48, 3, 1, 6, True),
    )

    def __init__(self, classes: int = 10):
        blocks, width = _chain(MBConv, 16, self.BLOCKS)
        self._assemble(nn.Conv2D(3, 16, 3, stride=2, padding=1), blocks, width, classes)


class RegNetYBlock(nn.Module):
    """RegNet-Y's block: a 1x1 convolution, a 3x3 group convolution (groups of `group_width`
    channels, strided at a stage's start), a squeeze-and-excitation gate, a 1x1 projection and
    a residual (a strided 1x1 projection when the shape changes)."""

    def __init__(self, inputs: int, outputs: int, stride: int, group_width: int = 8):
        self.expand = nn.Conv2D(inputs, outputs, 1)
        self.group = nn.Conv2D(
            outputs, outputs, 3, stride=stride, padding=1, groups=outputs // group_width
        )
        squeezed = max(1, inputs // 4)
        self.squeeze = nn.Conv2D(outputs, squeezed, 1)
        self.excite = nn.Conv2D(squeezed, outputs, 1)
        self.project = nn.Conv2D(outputs, outputs, 1)
        self.shortcut = (
            nn.Conv2D(inputs, outputs, 1, stride=stride)
            if stride != 1 or inputs != outputs
            else None
        )

    def forward(self, x: nn.Tensor):
        h = nn.relu(self.group(nn.relu(self.expand(x))))
        batch, channels, height, width = h.shape
        pooled = op.sum(h, axis=[2, 3], keepdims=True) * (1.0 / (height * width))
        h = self.project(h * op.sigmoid(self.excite(nn.relu(self.squeeze(pooled)))))
        skip = self.shortcut(x) if self.shortcut is not None else x
        return nn.relu(h + skip)


class RegNetY(_Classifier):
    """RegNet-Y-like (RegNetY-400MF's stages, narrower) at 64x64: a strided stem, four stages of
    Y blocks, the first of each strided, global average pooling and a classifier. `repeat`
    multiplies the blocks per stage (the benchmarks grow the model with it)."""

    # (width, blocks) per stage
    STAGES = ((16, 1), (32, 2), (64, 4), (128, 1))

    def __init__(self, repeat: int = 1, classes: int = 10):
        strides = [
            (w, 2 if i == 0 else 1) for w, count in self.STAGES for i in range(count * repeat)
        ]
        blocks, width = _chain(RegNetYBlock, 16, strides)
        self._assemble(nn.Conv2D(3, 16, 3, stride=2, padding=1), blocks, width, classes)


class DenseBlock(nn.Module):
    """DenseNet's block: every layer sees the concatenation of all earlier feature maps."""

    def __init__(self, inputs: int, growth: int, layers: int):
        self.bottlenecks = nn.ModuleList(
            [nn.Conv2D(inputs + i * growth, 2 * growth, 1) for i in range(layers)]
        )
        self.convs = nn.ModuleList(
            [nn.Conv2D(2 * growth, growth, 3, padding=1) for _ in range(layers)]
        )

    def forward(self, x: nn.Tensor):
        features = [x]
        for bottleneck, conv in zip(self.bottlenecks, self.convs, strict=True):
            h = op.concat(features, dim=1) if len(features) > 1 else features[0]
            features.append(conv(nn.relu(bottleneck(nn.relu(h)))))
        return op.concat(features, dim=1)


class DenseNet(nn.Module):
    """DenseNet-like: two dense blocks of four layers with a strided transition between."""

    def __init__(self, growth: int = 8, layers: int = 4, classes: int = 10):
        self.stem = nn.Conv2D(3, 2 * growth, 3, padding=1)
        width = 2 * growth
        self.block1 = DenseBlock(width, growth, layers)
        width += layers * growth
        self.transition = nn.Conv2D(width, width // 2, 3, stride=2, padding=1)
        width //= 2
        self.block2 = DenseBlock(width, growth, layers)
        width += layers * growth
        self.head = nn.Linear(width, classes)

    def forward(self, x: nn.Tensor):
        h = self.block1(self.stem(x))
        h = self.block2(nn.relu(self.transition(nn.relu(h))))
        return self.head(_global_average_pool(nn.relu(h)))


class DoubleConv(nn.Module):
    def __init__(self, inputs: int, outputs: int):
        self.conv1 = nn.Conv2D(inputs, outputs, 3, padding=1)
        self.conv2 = nn.Conv2D(outputs, outputs, 3, padding=1)

    def forward(self, x: nn.Tensor):
        return nn.relu(self.conv2(nn.relu(self.conv1(x))))


class UNet(nn.Module):
    """U-Net: two strided downsampling levels, a bottleneck, and a decoder that upsamples
    (nearest) and concatenates the encoder's feature map at each level."""

    def __init__(self, width: int = 8, classes: int = 2):
        self.enc1 = DoubleConv(3, width)
        self.down1 = nn.Conv2D(width, width, 3, stride=2, padding=1)
        self.enc2 = DoubleConv(width, 2 * width)
        self.down2 = nn.Conv2D(2 * width, 2 * width, 3, stride=2, padding=1)
        self.bottleneck = DoubleConv(2 * width, 4 * width)
        self.dec2 = DoubleConv(4 * width + 2 * width, 2 * width)
        self.dec1 = DoubleConv(2 * width + width, width)
        self.head = nn.Conv2D(width, classes, 1)

    def forward(self, x: nn.Tensor):
        e1 = self.enc1(x)
        e2 = self.enc2(self.down1(e1))
        b = self.bottleneck(self.down2(e2))
        d2 = self.dec2(op.concat([op.interpolate(b, scale_factor=2.0), e2], dim=1))
        d1 = self.dec1(op.concat([op.interpolate(d2, scale_factor=2.0), e1], dim=1))
        return self.head(d1)


class InceptionBlock(nn.Module):
    """GoogLeNet's block: four branches (1x1; 1x1 then 3x3; 1x1 then two 3x3; 3x3 max pool then
    1x1) over the same input, concatenated along the channels."""

    def __init__(self, inputs: int, width: int):
        self.branch1 = nn.Conv2D(inputs, width, 1)
        self.reduce3 = nn.Conv2D(inputs, width, 1)
        self.conv3 = nn.Conv2D(width, 2 * width, 3, padding=1)
        self.reduce5 = nn.Conv2D(inputs, width // 2, 1)
        self.conv5a = nn.Conv2D(width // 2, width, 3, padding=1)
        self.conv5b = nn.Conv2D(width, width, 3, padding=1)
        self.pool_proj = nn.Conv2D(inputs, width, 1)

    def forward(self, x: nn.Tensor):
        b1 = nn.relu(self.branch1(x))
        b2 = nn.relu(self.conv3(nn.relu(self.reduce3(x))))
        b3 = nn.relu(self.conv5b(nn.relu(self.conv5a(nn.relu(self.reduce5(x))))))
        pooled = op.wrap_nested(
            relax.op.nn.max_pool2d(x._expr, pool_size=3, strides=1, padding=1), name="max_pool"
        )
        b4 = nn.relu(self.pool_proj(pooled))
        return op.concat([b1, b2, b3, b4], dim=1)


class Inception(nn.Module):
    """Inception-like at 32x32: a stem and two Inception blocks, then a classifier."""

    def __init__(self, width: int = 8, classes: int = 10):
        self.stem = nn.Conv2D(3, 2 * width, 3, padding=1)
        self.block1 = InceptionBlock(2 * width, width)
        self.block2 = InceptionBlock(5 * width, width)
        self.head = nn.Linear(5 * width, classes)

    def forward(self, x: nn.Tensor):
        h = self.block2(self.block1(nn.relu(self.stem(x))))
        return self.head(_global_average_pool(h))


class GhostModule(nn.Module):
    """GhostNet's module: a 1x1 convolution makes half the channels, a cheap depthwise 3x3
    convolution of them makes the other half, and the two are concatenated."""

    def __init__(self, inputs: int, outputs: int, relu: bool = True):
        half = outputs // 2
        self.primary = nn.Conv2D(inputs, half, 1)
        self.cheap = nn.Conv2D(half, half, 3, padding=1, groups=half)
        self.relu = relu

    def forward(self, x: nn.Tensor):
        a = self.primary(x)
        a = nn.relu(a) if self.relu else a
        b = self.cheap(a)
        b = nn.relu(b) if self.relu else b
        return op.concat([a, b], dim=1)


class GhostBottleneck(nn.Module):
    """GhostNet's bottleneck: an expanding ghost module, a strided depthwise convolution when it
    downsamples, a linear ghost module, and a residual (a 1x1 projection when the shape
    changes)."""

    def __init__(self, inputs: int, hidden: int, outputs: int, stride: int):
        self.expand = GhostModule(inputs, hidden)
        self.stride = stride
        if stride > 1:
            self.depthwise = nn.Conv2D(hidden, hidden, 3, stride=stride, padding=1, groups=hidden)
        self.project = GhostModule(hidden, outputs, relu=False)
        self.shortcut = (
            None
            if stride == 1 and inputs == outputs
            else nn.Conv2D(inputs, outputs, 1, stride=stride)
        )

    def forward(self, x: nn.Tensor):
        h = self.expand(x)
        if self.stride > 1:
            h = self.depthwise(h)
        h = self.project(h)
        return h + (x if self.shortcut is None else self.shortcut(x))


class GhostNet(nn.Module):
    """GhostNet-like at 64x64: a strided stem, four ghost bottlenecks (two downsampling), a
    classifier."""

    # (hidden, output channels, stride) per bottleneck
    BLOCKS = ((16, 16, 1), (48, 24, 2), (72, 24, 1), (72, 40, 2))

    def __init__(self, classes: int = 10):
        self.stem = nn.Conv2D(3, 16, 3, stride=2, padding=1)
        blocks = []
        inputs = 16
        for hidden, outputs, stride in self.BLOCKS:
            blocks.append(GhostBottleneck(inputs, hidden, outputs, stride))
            inputs = outputs
        self.blocks = nn.ModuleList(blocks)
        self.head = nn.Linear(inputs, classes)

    def forward(self, x: nn.Tensor):
        h = nn.relu(self.stem(x))
        for block in self.blocks:
            h = block(h)
        return self.head(_global_average_pool(h))


class VisionTransformer(nn.Module):
    """ViT-like: a strided convolution cuts patches, a learned position embedding, transformer
    encoder blocks, a final norm, mean pooling over tokens and a classifier."""

    def __init__(self, image: int = 32, patch: int = 4, dim: int = 64, depth: int = 2):
        self.tokens = (image // patch) ** 2
        self.dim = dim
        self.patchify = nn.Conv2D(3, dim, patch, stride=patch)
        self.position = nn.Parameter((1, self.tokens, dim), "float32")
        self.blocks = nn.ModuleList([TransformerBlock(dim, heads=4) for _ in range(depth)])
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, 10)

    def forward(self, x: nn.Tensor):
        batch = x.shape[0]
        h = op.reshape(self.patchify(x), (batch, self.dim, self.tokens))
        h = op.permute_dims(h, [0, 2, 1]) + self.position
        for block in self.blocks:
            h = block(h)
        pooled = op.sum(self.norm(h), axis=1) * (1.0 / self.tokens)
        return self.head(pooled)


def _export(module: nn.Module, shape, dtype: str = "float32"):
    mod, _ = module.export_tvm(spec={"forward": {"x": nn.spec.Tensor(shape, dtype)}})
    return mod, "forward"


def mlp():
    return _export(MLP(), (8, 256))


def transformer_block():
    return _export(TransformerBlock(), (1, 32, 128))


def small_cnn():
    return _export(SmallCNN(), (1, 3, 32, 32))


def residual_net():
    return _export(ResidualNet(), (8, 128))


def lstm_cell():
    batch, inputs, hidden = 4, 64, 128
    spec = {
        "x": nn.spec.Tensor((batch, inputs), "float32"),
        "h": nn.spec.Tensor((batch, hidden), "float32"),
        "c": nn.spec.Tensor((batch, hidden), "float32"),
    }
    mod, _ = LSTMCell(inputs, hidden).export_tvm(spec={"forward": spec})
    return mod, "forward"


def transformer_stack(depth: int = 24):
    return _export(TransformerStack(depth), (1, 16, 64))


def resnet():
    return _export(ResNet(), (1, 3, 32, 32))


def mobilenet_v2():
    return _export(MobileNetV2(), (1, 3, 64, 64))


def mnasnet():
    return _export(MnasNet(), (1, 3, 64, 64))


def regnet_y(repeat: int = 1):
    return _export(RegNetY(repeat), (1, 3, 64, 64))


def densenet():
    return _export(DenseNet(), (1, 3, 32, 32))


def unet():
    return _export(UNet(), (1, 3, 32, 32))


def inception():
    return _export(Inception(), (1, 3, 32, 32))


def ghostnet():
    return _export(GhostNet(), (1, 3, 64, 64))


def vision_transformer():
    return _export(VisionTransformer(), (1, 3, 32, 32))


ZOO = {
    "mlp": mlp,
    "transformer_block": transformer_block,
    "small_cnn": small_cnn,
    "residual_net": residual_net,
    "lstm_cell": lstm_cell,
    "resnet": resnet,
    "mobilenet_v2": mobilenet_v2,
    "mnasnet": mnasnet,
    "regnet_y": regnet_y,
    "densenet": densenet,
    "unet": unet,
    "inception": inception,
    "ghostnet": ghostnet,
    "vision_transformer": vision_transformer,
}
