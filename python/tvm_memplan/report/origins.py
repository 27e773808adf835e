"""Names users recognise for the tensors and buffers of a build: the high-level op each came from
(with its shape and dtype), the kernel that writes it, and the name the source model gives it.

The planners and the TIR passes see a model late in the pipeline, where a tensor is
``alloc263`` and a kernel ``conv2d4``. The way back is exact, through the IR the planner
receives (Relax after CallTIRRewrite):

    alloc263 = R.builtin.alloc_tensor(...)     # the planner's tensor
    conv2d4(lv12, w, alloc263)                 # the kernel that writes it
    lv13 = alloc263                            # the model's binding, named as when imported
    add_inplace(lv13, b)                       # a later op computed in place
    lv14 = lv13                                #   in the same memory

Bindings keep their names through the pipeline (BlockBuilder names them uniquely per function
at import), so ``lv13`` is the variable of the imported module's ``lv13 = R.nn.conv2d(...)``,
and ``LoadedModel.sources`` names its ONNX node or torch module. A name bound twice in one
function is ambiguous and gets no origin.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

import tvm

__all__ = [
    "Origin",
    "binding_origins",
    "bindings",
    "describe",
    "kernel_writers",
    "tensor_writers",
]


@dataclass(frozen=True)
class Origin:
    """One binding of the imported model."""

    #: The Relax variable, as imported.
    binding: str
    #: The high-level op ("nn.conv2d"), or the function it calls.
    op: str = ""
    #: What kind of op, for grouping kernels: the op with what tells its kernels apart
    #: ("nn.conv2d depthwise 3x3", "nn.conv2d 1x1").
    kind: str = ""
    shape: list = field(default_factory=list)
    dtype: str = ""
    #: The source model's name for it (ONNX node, torch module), "" when unknown.
    source: str = ""
    #: Whether the op reads constants only (so it could be folded into a weight).
    from_constants: bool = False
    #: Whether it transposes the last two axes of a tensor for a matmul to read as its second
    #: argument (a Linear layer's weight), which TVM's FuseTransposeMatmul folds into the matmul.
    transposed_for_matmul: bool = False


_CALLS = ("relax.call_tir", "relax.call_tir_inplace", "relax.call_dps_packed")


def _short_op(call: tvm.relax.Call) -> str:
    """``nn.conv2d`` for ``R.nn.conv2d``; the callee for a call of a function (``clip`` for
    ``R.call_tir(cls.clip, ...)``, as the ONNX frontend emits some ops)."""
    op = call.op
    if isinstance(op, tvm.ir.Op):
        name = str(op.name)
        if name in _CALLS and call.args:
            callee = call.args[0]
            if isinstance(callee, tvm.ir.GlobalVar):
                return str(callee.name_hint)
            if hasattr(callee, "global_symbol"):
                return str(callee.global_symbol)
        return name.removeprefix("relax.")
    if isinstance(op, tvm.ir.GlobalVar):
        return str(op.name_hint)
    return ""


def _shape(ty) -> tuple[list, str]:
    if not isinstance(ty, tvm.relax.TensorType):
        return [], ""
    shape = ty.shape
    dims = [] if shape is None else [_dim(v) for v in shape.values]
    return dims, str(ty.dtype)


def _dim(value):
    return int(value.value) if isinstance(value, tvm.prim.IntImm) else str(value)


def _kind(call: tvm.relax.Call, op: str) -> str:
    """The op, qualified where one op makes kernels users tell apart (convolutions)."""
    if not op.startswith("nn.conv"):
        return op
    weight = _shape(call.args[1].ty)[0] if len(call.args) > 1 else []
    window = "x".join(str(d) for d in weight[2:])
    groups = int(getattr(call.attrs, "groups", 1))
    if groups > 1 and len(weight) > 1 and weight[1] == 1:
        return f"{op} depthwise {window}"
    if groups > 1:
        return f"{op} grouped {window}"
    return f"{op} {window}".strip()


def bindings(func: tvm.relax.Function):
    """Every binding of a Relax function in program order, into ``if`` branches."""

    def walk(seq):
        if not isinstance(seq, tvm.relax.SeqExpr):
            return
        for block in seq.blocks:
            for binding in block.bindings:
                yield binding
                if isinstance(binding.value, tvm.relax.If):
                    yield from walk(binding.value.true_branch)
                    yield from walk(binding.value.false_branch)

    yield from walk(func.body)


def _reads_constants_only(call: tvm.relax.Call) -> bool:
    """Whether every tensor argument of a call is a constant (shapes and other values aside)."""
    tensors = [a for a in call.args if isinstance(a.ty, tvm.relax.TensorType)]
    return bool(tensors) and all(isinstance(a, tvm.ir.GenericConst) for a in tensors)


def _swaps_last_two_axes(call: tvm.relax.Call) -> bool:
    """A permute_dims that swaps the last two axes and keeps the others (FuseTransposeMatmul's
    condition)."""
    ndim = call.args[0].ty.ndim if isinstance(call.args[0].ty, tvm.relax.TensorType) else -1
    if ndim < 2:
        return False
    axes = call.attrs.axes
    if axes is None:
        return ndim == 2
    expected = list(range(ndim))
    expected[-1], expected[-2] = expected[-2], expected[-1]
    return [int(a) for a in axes] == expected


def _matmul_right_operands(func: tvm.relax.Function) -> set[str]:
    """The variables a matmul of `func` reads as its second argument."""
    names = set()
    for binding in bindings(func):
        value = binding.value
        if (
            isinstance(value, tvm.relax.Call)
            and isinstance(value.op, tvm.ir.Op)
            and str(value.op.name) == "relax.matmul"
            and isinstance(value.args[1], tvm.relax.Var)
        ):
            names.add(value.args[1].name)
    return names


def binding_origins(
    mod: tvm.IRModule, sources: dict[str, dict[str, str]] | None = None
) -> dict[str, dict[str, Origin]]:
    """Per Relax function of the imported module, per binding name: its origin."""
    sources = sources or {}
    result: dict[str, dict[str, Origin]] = {}
    for gv, func in mod.functions.items():
        if not isinstance(func, tvm.relax.Function):
            continue
        named = sources.get(gv.name_hint, {})
        matmul_weights = _matmul_right_operands(func)
        origins: dict[str, Origin] = {}
        seen: set[str] = set()
        for binding in bindings(func):
            name = binding.var.name
            if name in seen:
                origins.pop(name, None)  # bound twice: ambiguous
                continue
            seen.add(name)
            value = binding.value
            op = _short_op(value) if isinstance(value, tvm.relax.Call) else ""
            shape, dtype = _shape(binding.var.ty)
            kind = _kind(value, op) if isinstance(value, tvm.relax.Call) else op
            folds = isinstance(value, tvm.relax.Call) and _reads_constants_only(value)
            transposed = (
                op == "permute_dims" and name in matmul_weights and _swaps_last_two_axes(value)
            )
            origins[name] = Origin(
                name, op, kind, shape, dtype, named.get(name, ""), folds, transposed
            )
        result[gv.name_hint] = origins
    return result


def _alias_of(value) -> list:
    """The variables a binding's value merely renames (``lv = alloc``, ``t = (a, b)``)."""
    if isinstance(value, tvm.relax.Var):
        return [value]
    if isinstance(value, tvm.relax.Tuple):
        return [f for f in value.fields if isinstance(f, tvm.relax.Var)]
    return []


def tensor_writers(func: tvm.relax.Function) -> dict[str, list[str]]:
    """For a function of the planner's input: per variable, the model's bindings that name its
    memory, in order (the op that made it first, then ops computed in place in it). A tuple
    result names each of its fields' memory, and so does the binding that takes a field out."""
    names: dict[str, list[str]] = defaultdict(list)
    root: dict[str, str] = {}
    fields: dict[str, list[str]] = {}

    def root_of(var) -> str:
        return root.get(var.name, var.name)

    for binding in bindings(func):
        var, value = binding.var.name, binding.value
        if isinstance(value, tvm.relax.Var):
            root[var] = root_of(value)
            names[root[var]].append(var)
        elif isinstance(value, tvm.relax.Tuple) and all(
            isinstance(f, tvm.relax.Var) for f in value.fields
        ):
            fields[var] = [root_of(f) for f in value.fields]
            for field_root in fields[var]:
                names[field_root].append(var)
        elif (
            isinstance(value, tvm.relax.TupleGetItem)
            and isinstance(value.tuple_value, tvm.relax.Var)
            and value.tuple_value.name in fields
            and value.index < len(fields[value.tuple_value.name])
        ):
            root[var] = fields[value.tuple_value.name][value.index]
            names[root[var]].append(var)
    return dict(names)


def kernel_writers(func: tvm.relax.Function) -> dict[str, list[str]]:
    """For a function of the planner's input: per kernel (PrimFunc) it calls, the model's
    bindings whose values the calls compute (the binding right after each call names its
    result, as CallTIRRewrite emits them)."""
    writers: dict[str, list[str]] = defaultdict(list)
    pending = None
    for binding in bindings(func):
        value = binding.value
        if isinstance(value, tvm.relax.Call) and isinstance(value.op, tvm.ir.GlobalVar):
            pending = value.op.name_hint
            continue
        aliased = _alias_of(value)
        if pending is not None and aliased:
            writers[pending].append(binding.var.name)
        pending = None
    return dict(writers)


def describe(origin: Origin | None) -> str:
    """``nn.conv2d 1x32x112x112 float32 (/features.0/Conv)``, "" without an origin."""
    if origin is None:
        return ""
    parts = [origin.op or origin.binding]
    if origin.shape:
        parts.append("x".join(str(d) for d in origin.shape))
    if origin.dtype:
        parts.append(origin.dtype)
    text = " ".join(parts)
    return f"{text} ({origin.source})" if origin.source else text
