"""A small model zoo written with ``tvm.relax.frontend.nn``, for the in-place benchmark.

Each builder returns ``(IRModule, function name)``; the exported function takes the model
input first and the weights after it (``export_tvm``'s layout), so weights are parameters the
caller owns, as in a deployed model.
"""

from __future__ import annotations

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


ZOO = {
    "mlp": mlp,
    "transformer_block": transformer_block,
    "small_cnn": small_cnn,
    "residual_net": residual_net,
    "lstm_cell": lstm_cell,
}
