"""The report's input: a Python file that builds a module, or an ONNX model imported with TVM's
own ONNX frontend; and the target."""

from __future__ import annotations

import importlib.util
import json
import re
import sys
from pathlib import Path
from typing import Any

import tvm

__all__ = [
    "ONNX_INSTALL_HINT",
    "ReportError",
    "load_module",
    "parse_input_shapes",
    "parse_target",
]

_DEFAULT_TARGET = {"kind": "llvm"}
ONNX_INSTALL_HINT = 'reading .onnx files needs the onnx package: pip install "tvm-memplan[onnx]"'


class ReportError(Exception):
    """A problem with the report's input or a failing stage, shown to the user as one line."""


def one_line(err: BaseException) -> str:
    """The first meaningful line of an exception (TVM errors carry tracebacks and notes)."""
    for line in str(err).strip().splitlines():
        line = line.strip()
        if line and not line.startswith(("Traceback", "File ", "note:")):
            return f"{type(err).__name__}: {line}"
    return type(err).__name__


def load_module(path: str | Path, input_shapes: dict[str, list[int]] | None = None) -> tvm.IRModule:
    """The IRModule a file holds: a Python file defining ``build() -> IRModule`` or a ``Module``
    (TVMScript), or an ``.onnx`` model (``input_shapes`` fixes its dynamic input dimensions)."""
    path = Path(path)
    if not path.is_file():
        raise ReportError(f"no such file: {path}")
    if path.suffix.lower() == ".onnx":
        return _load_onnx(path, input_shapes or {})
    if input_shapes:
        raise ReportError("--input-shape applies to .onnx models only")
    return _load_python(path)


def _load_python(path: Path) -> tvm.IRModule:
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
    if not isinstance(mod, tvm.IRModule):
        raise ReportError(f"{path}: {source} is a {type(mod).__name__}, not a tvm.IRModule")
    return mod


def _load_onnx(path: Path, input_shapes: dict[str, list[int]]) -> tvm.IRModule:
    try:
        import onnx
    except ImportError as err:
        raise ReportError(ONNX_INSTALL_HINT) from err
    from tvm.relax.frontend.onnx import from_onnx

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
            f"--input-shape names {', '.join(unknown)}, which {path.name} does not have "
            f"(its inputs: {', '.join(sorted(names)) or 'none'})"
        )
    shape_dict, dynamic, example = {}, [], []
    for tensor in inputs:
        dims = tensor.type.tensor_type.shape.dim
        declared = [
            d.dim_value if d.HasField("dim_value") and d.dim_value > 0 else None for d in dims
        ]
        if tensor.name in input_shapes:
            shape = input_shapes[tensor.name]
            if len(shape) != len(declared) or any(
                want is not None and want != got for want, got in zip(declared, shape, strict=False)
            ):
                raise ReportError(
                    f"--input-shape {tensor.name}={_shape_text(shape)} does not match the "
                    f"model's {tensor.name}: {_shape_text(declared)}"
                )
            shape_dict[tensor.name] = shape
        elif None in declared:
            dynamic.append(f"{tensor.name} ({_shape_text(declared)})")
            example.append(f"--input-shape {tensor.name}={_shape_text([d or 1 for d in declared])}")
        else:
            shape_dict[tensor.name] = declared
    if dynamic:
        raise ReportError(
            f"{path.name} has inputs with dynamic dimensions: {', '.join(dynamic)}; fix them "
            f"with {' '.join(example)} (your sizes in place of the 1s)"
        )
    try:
        mod = from_onnx(model, shape_dict=shape_dict, keep_params_in_input=False)
    except Exception as err:
        raise ReportError(f"TVM's ONNX frontend failed on {path.name}: {one_line(err)}") from err
    return mod


def _shape_text(shape: list) -> str:
    return "x".join("?" if d is None else str(d) for d in shape) or "scalar"


_SHAPE = re.compile(r"^([^=]+)=(\d+(?:x\d+)*)$")


def parse_input_shapes(specs: list[str] | None) -> dict[str, list[int]]:
    """``["x=1x3x224x224", ...]`` -> ``{"x": [1, 3, 224, 224]}``."""
    shapes: dict[str, list[int]] = {}
    for spec in specs or []:
        match = _SHAPE.match(spec.strip())
        if match is None:
            raise ReportError(
                f"--input-shape {spec!r} is not NAME=DIMxDIMx... (for example x=1x3x224x224)"
            )
        shapes[match.group(1)] = [int(d) for d in match.group(2).split("x")]
    return shapes


def parse_target(text: str | None) -> tvm.target.Target:
    """A target from its JSON form, e.g. ``{"kind": "c"}`` (default: llvm, the host CPU)."""
    config: Any = _DEFAULT_TARGET
    if text is not None:
        try:
            config = json.loads(text)
        except json.JSONDecodeError as err:
            raise ReportError(f"--target is not valid JSON: {err}") from err
        if not isinstance(config, dict):
            raise ReportError('--target must be a JSON object such as {"kind": "llvm"}')
    try:
        return tvm.target.Target(config)
    except Exception as err:
        raise ReportError(f"--target is not a valid target: {one_line(err)}") from err
