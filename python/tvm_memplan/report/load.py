"""The report's input: a Python file that builds a module (or a ``torch.export`` program), an ONNX
model imported with TVM's ONNX frontend, or a ``.pt2`` file imported with TVM's torch frontend.

TVM 0.27's frontends keep no source names in the IR they make (no spans; the bindings are
``lv``, ``lv1``, ...; only inputs and weights keep their names). The names are still known
while the importer runs: the ONNX importer maps each ONNX value to the Relax variable that holds
it, the torch importer each graph node (whose ``nn_module_stack`` holds the module path) to its
variable. The loader reads those maps as the import finishes and returns them as
``LoadedModel.sources``.
"""

from __future__ import annotations

import contextlib
import importlib.util
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import tvm

from .format import shape
from .origins import bindings

__all__ = [
    "ONNX_INSTALL_HINT",
    "LoadedModel",
    "ReportError",
    "UnfixedInputsError",
    "load_module",
    "one_line",
]

ONNX_INSTALL_HINT = 'reading .onnx files needs the onnx package: pip install "tvm-memplan[onnx]"'
TORCH_INSTALL_HINT = "reading torch programs needs torch: pip install torch"


class ReportError(Exception):
    """A problem with the report's input, shown to the user as one line."""


class UnfixedInputsError(ReportError):
    """An ONNX model with inputs whose dimensions are not fixed: ``inputs`` lists
    ``(name, declared dims)`` with None for each dynamic dimension."""

    def __init__(self, model: str, inputs: list[tuple[str, list[int | None]]]):
        self.model = model
        self.inputs = inputs
        listed = ", ".join(f"{name} ({shape(dims)})" for name, dims in inputs)
        super().__init__(f"{model} has inputs with dynamic dimensions: {listed}; give their shapes")


#: Per Relax function, per binding variable name: the name the source model gives it.
SourceNames = dict[str, dict[str, str]]


@dataclass
class LoadedModel:
    """A module to report on, with what its importer knew about the source model."""

    mod: tvm.IRModule
    #: Per Relax function, per variable name: the ONNX node or torch module that made it.
    sources: SourceNames = field(default_factory=dict)
    #: The source model's names of the module's constants (ONNX initializers), by constant.
    constant_names: dict = field(default_factory=dict)


def one_line(err: BaseException) -> str:
    """The first meaningful line of an exception (TVM errors carry tracebacks and notes)."""
    for line in str(err).strip().splitlines():
        line = line.strip()
        if line and not line.startswith(("Traceback", "File ", "note:")):
            return f"{type(err).__name__}: {line}"
    return type(err).__name__


def load_module(path: str | Path, input_shapes: dict[str, list[int]] | None = None) -> LoadedModel:
    """The model a file holds: a Python file defining ``build()`` (returning an IRModule, a
    PrimFunc or a ``torch.export.ExportedProgram``) or an IRModule ``Module`` (TVMScript); an
    ``.onnx`` model (``input_shapes`` fixes its dynamic input dimensions); a ``.pt2`` program
    saved with ``torch.export.save``."""
    path = Path(path)
    if not path.is_file():
        raise ReportError(f"no such file: {path}")
    suffix = path.suffix.lower()
    if suffix == ".onnx":
        return _load_onnx(path, input_shapes or {})
    if input_shapes:
        raise ReportError("input shapes apply to .onnx models only")
    if suffix == ".pt2":
        torch = _import_torch()
        try:
            program = torch.export.load(str(path))
        except Exception as err:
            raise ReportError(
                f"{path} is not a readable torch.export program: {one_line(err)}"
            ) from err
        return _import_exported_program(program, path.name)
    return _load_python(path)


def _load_python(path: Path) -> LoadedModel:
    spec = importlib.util.spec_from_file_location(f"tvm_memplan_input_{path.stem}", path)
    if spec is None or spec.loader is None:
        raise ReportError(f"{path} is not a Python file")
    module = importlib.util.module_from_spec(spec)
    # TVMScript reads the decorated functions' source through sys.modules.
    sys.modules[spec.name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as err:  # the user's file: any failure is reported, not raised
        raise ReportError(f"{path} failed to load: {one_line(err)}") from err
    if hasattr(module, "build"):
        try:
            mod = module.build()
        except Exception as err:
            raise ReportError(f"{path}: build() failed: {one_line(err)}") from err
        source = "build()"
    elif hasattr(module, "Module"):
        mod, source = module.Module, "Module"
    else:
        raise ReportError(f"{path} defines neither `Module` nor `build()`")
    if isinstance(mod, tvm.tirx.PrimFunc):
        mod = tvm.IRModule({"main": mod})
    if type(mod).__name__ == "ExportedProgram":
        return _import_exported_program(mod, f"{path.name}: {source}")
    if not isinstance(mod, tvm.IRModule):
        raise ReportError(f"{path}: {source} is a {type(mod).__name__}, not a tvm.IRModule")
    return LoadedModel(mod)


@contextlib.contextmanager
def _importer_instance(cls: type, method: str) -> Iterator[list]:
    """While active, every ``cls.method`` call records its ``self`` (the importer, whose maps
    from source names to Relax variables are read once it has finished)."""
    seen: list = []
    original: Callable = getattr(cls, method)

    def recording(self, *args, **kwargs):
        seen.append(self)
        return original(self, *args, **kwargs)

    setattr(cls, method, recording)
    try:
        yield seen
    finally:
        setattr(cls, method, original)


def _attribute(func: tvm.relax.Function, named: dict) -> dict[str, str]:
    """Every binding of ``func`` named after the source node whose result it computes or helps
    compute. ``named`` maps what an importer recorded for a node's result (the variable, or the
    expression the variable is bound to) to the node's name. An importer emits a node's
    bindings in order, its result last, so a binding belongs to the first named result at or
    after it."""
    sources: dict[str, str] = {}
    pending: list[str] = []
    for binding in bindings(func):
        pending.append(binding.var.name)
        name = named.get(binding.var, named.get(binding.value))
        if name is not None:
            for p in pending:
                sources.setdefault(p, name)
            pending = []
    return sources


def _load_onnx(path: Path, input_shapes: dict[str, list[int]]) -> LoadedModel:
    try:
        import onnx
    except ImportError as err:
        raise ReportError(ONNX_INSTALL_HINT) from err
    from tvm.relax.frontend.onnx import from_onnx, onnx_frontend

    try:
        model = onnx.load(str(path))
    except Exception as err:
        raise ReportError(f"{path} is not a readable ONNX model: {one_line(err)}") from err
    initializers = {init.name for init in model.graph.initializer}
    inputs = [i for i in model.graph.input if i.name not in initializers]
    names = {i.name for i in inputs}
    unknown = sorted(set(input_shapes) - names)
    if unknown:
        raise ReportError(
            f"input shapes name {', '.join(unknown)}, which {path.name} does not have "
            f"(its inputs: {', '.join(sorted(names)) or 'none'})"
        )
    shape_dict, dynamic = {}, []
    for tensor in inputs:
        dims = tensor.type.tensor_type.shape.dim
        declared = [
            d.dim_value if d.HasField("dim_value") and d.dim_value > 0 else None for d in dims
        ]
        if tensor.name in input_shapes:
            given = input_shapes[tensor.name]
            if len(given) != len(declared) or any(
                want is not None and want != got for want, got in zip(declared, given, strict=False)
            ):
                raise ReportError(
                    f"the shape {tensor.name}={shape(given)} does not match the "
                    f"model's {tensor.name}: {shape(declared)}"
                )
            shape_dict[tensor.name] = given
        elif None in declared:
            dynamic.append((tensor.name, declared))
        else:
            shape_dict[tensor.name] = declared
    if dynamic:
        raise UnfixedInputsError(path.name, dynamic)
    try:
        with _importer_instance(onnx_frontend.ONNXGraphImporter, "from_onnx") as importers:
            mod = from_onnx(model, shape_dict=shape_dict, keep_params_in_input=False)
    except Exception as err:
        raise ReportError(f"TVM's ONNX frontend failed on {path.name}: {one_line(err)}") from err
    named: dict = {}
    values = importers[0]._nodes if importers else {}
    constant_names: dict = {}
    for value_name, expr in values.items():
        if isinstance(expr, tvm.ir.GenericConst):
            constant_names.setdefault(expr, value_name)
    for node in model.graph.node:
        for output in node.output:
            expr = values.get(output)
            if isinstance(expr, tvm.relax.Expr) and not isinstance(expr, tvm.ir.GenericConst):
                named.setdefault(expr, node.name or output)
    sources = {
        gv.name_hint: _attribute(func, named)
        for gv, func in mod.functions.items()
        if isinstance(func, tvm.relax.Function)
    }
    return LoadedModel(mod, sources, constant_names)


def _import_torch():
    try:
        import torch
    except ImportError as err:
        raise ReportError(TORCH_INSTALL_HINT) from err
    return torch


def _import_exported_program(program, what: str) -> LoadedModel:
    """A ``torch.export`` program through TVM's torch frontend, weights as constants; each
    binding named after the module (``nn_module_stack``) of the graph node it comes from."""
    _import_torch()
    from tvm.relax.frontend.torch import exported_program_translator as translator

    importer_cls = translator.ExportedProgramImporter
    try:
        with _importer_instance(importer_cls, "from_exported_program") as importers:
            mod = translator.from_exported_program(program, keep_params_as_input=False)
    except Exception as err:
        raise ReportError(f"TVM's torch frontend failed on {what}: {one_line(err)}") from err
    named: dict = {}
    env = importers[0].env if importers else {}
    for node, expr in env.items():
        if isinstance(expr, tvm.relax.Expr) and not isinstance(expr, tvm.ir.GenericConst):
            named.setdefault(expr, _module_path(node))
    sources = {
        gv.name_hint: _attribute(func, named)
        for gv, func in mod.functions.items()
        if isinstance(func, tvm.relax.Function)
    }
    return LoadedModel(mod, sources)


def _module_path(node) -> str:
    """The innermost module of a torch.fx node (``features.0.0``), else the node's name."""
    stack = node.meta.get("nn_module_stack") or {}
    if stack:
        path, _ = list(stack.values())[-1]
        if path:
            return str(path)
    return str(node.name)
