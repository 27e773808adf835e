"""The ``tvm-memplan`` command: parses its arguments (flag names live here only) and runs
``tvm_memplan.report``."""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

import tvm

from . import pack, run
from .report import (
    BUDGET_ALIASES,
    BUDGETS,
    ReportError,
    UnfixedInputsError,
    UnknownSizesError,
    render_html,
    render_text,
    run_report,
    solvable_budget,
)
from .report.format import shape
from .report.load import one_line

__all__ = [
    "main",
    "message",
    "parse_budgets",
    "parse_input_shapes",
    "parse_shape_vars",
    "parse_size",
]


class UsageError(Exception):
    """A malformed argument, named by its flag."""


_UNITS = {
    "": 1,
    "b": 1,
    "k": 1000,
    "kb": 1000,
    "kib": 1024,
    "m": 1000**2,
    "mb": 1000**2,
    "mib": 1024**2,
    "g": 1000**3,
    "gb": 1000**3,
    "gib": 1024**3,
}
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*$")
_SHAPE = re.compile(r"^([^=]+)=(\d+(?:x\d+)*)$")
_SHAPE_VAR = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(\d+)\s*$")


def parse_size(text: str) -> int:
    """``"64KiB"`` -> 65536; plain bytes, K/M/G (powers of 1000) or KiB/MiB/GiB (of 1024).
    ValueError for anything else."""
    match = _SIZE.match(text)
    unit = match.group(2).lower() if match else None
    if match is None or unit not in _UNITS:
        raise ValueError(text)
    value = float(match.group(1)) * _UNITS[unit]
    if value != int(value):
        raise ValueError(text)
    return int(value)


def parse_budgets(text: str) -> dict[str, int]:
    """``--fit "vm=2MiB,stack=4KiB"`` -> ``{"vm": 2097152, "stack": 4096}``."""
    budgets: dict[str, int] = {}
    for item in text.split(","):
        name, sep, size = item.partition("=")
        name = BUDGET_ALIASES.get(name.strip(), name.strip())
        if not sep or name not in BUDGETS:
            raise UsageError(
                f"--fit {text!r}: {item.strip()!r} is not NAME=SIZE with NAME one of "
                f"{', '.join([*BUDGETS, *BUDGET_ALIASES])} (for example "
                "vm=2MiB,stack=4KiB,total=16MiB)"
            )
        if name in budgets:
            raise UsageError(f"--fit {text!r}: {name} is given twice")
        try:
            budgets[name] = parse_size(size)
        except ValueError:
            raise UsageError(
                f"--fit {text!r}: {size.strip()!r} is not a size (bytes, or a number with K, "
                "KiB, M, MiB, G or GiB)"
            ) from None
    return budgets


def parse_input_shapes(specs: list[str] | None) -> dict[str, list[int]]:
    """``--input-shape x=1x3x224x224`` (repeatable) -> ``{"x": [1, 3, 224, 224]}``."""
    shapes: dict[str, list[int]] = {}
    for spec in specs or []:
        match = _SHAPE.match(spec.strip())
        if match is None:
            raise UsageError(
                f"--input-shape {spec!r} is not NAME=DIMxDIMx... (for example x=1x3x224x224)"
            )
        shapes[match.group(1)] = [int(d) for d in match.group(2).split("x")]
    return shapes


def parse_shape_vars(specs: list[str] | None) -> dict[str, int]:
    """``--shape-var seq_len=128`` (repeatable) -> ``{"seq_len": 128}``."""
    values: dict[str, int] = {}
    for spec in specs or []:
        match = _SHAPE_VAR.match(spec)
        if match is None:
            raise UsageError(f"--shape-var {spec!r} is not NAME=VALUE (for example seq_len=128)")
        if match.group(1) in values:
            raise UsageError(f"--shape-var {match.group(1)} is given twice")
        values[match.group(1)] = int(match.group(2))
    return values


def parse_target(text: str | None) -> tvm.target.Target | None:
    """``--target '{"kind": "c"}'``; None: the report's default (llvm)."""
    if text is None:
        return None
    try:
        config: Any = json.loads(text)
    except json.JSONDecodeError as err:
        raise UsageError(f"--target is not valid JSON: {err}") from err
    if not isinstance(config, dict):
        raise UsageError('--target must be a JSON object such as {"kind": "llvm"}')
    try:
        return tvm.target.Target(config)
    except Exception as err:
        raise UsageError(f"--target is not a valid target: {one_line(err)}") from err


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tvm-memplan", description="Memory planning for Apache TVM 0.27."
    )
    commands = parser.add_subparsers(dest="command", required=True)
    report = commands.add_parser(
        "report",
        help="show the memory a model needs with the stock TVM build and the memplan build, "
        "and what each memory pass does",
        description="Exit status: 0, or 1 when --fit finds a budget exceeded, or 2 on an error.",
    )
    report.add_argument(
        "file",
        nargs="?",
        help="an .onnx model, a .pt2 torch.export program, or a Python file defining `build()` "
        "(returning an IRModule or a torch.export program) or an IRModule `Module` "
        "(default: the bundled example)",
    )
    report.add_argument(
        "--target", help='target as JSON (default: {"kind": "llvm"}), e.g. \'{"kind": "c"}\''
    )
    report.add_argument(
        "--input-shape",
        action="append",
        metavar="NAME=1x3x224x224",
        help="fix the shape of an ONNX input with dynamic dimensions (repeat for more inputs)",
    )
    report.add_argument(
        "--shape-var",
        action="append",
        metavar="NAME=VALUE",
        help="evaluate symbolic sizes at this value of a shape variable, e.g. seq_len=128 "
        "(repeat for more; bounded variables default to their tir_var_upper_bound)",
    )
    report.add_argument("--json", action="store_true", help="print the report as JSON")
    report.add_argument(
        "--html",
        metavar="FILE",
        help="also write the report as one self-contained HTML page with memory timelines",
    )
    report.add_argument(
        "--fit",
        metavar="BUDGETS",
        help="check the memplan build against budgets, e.g. total=16MiB,vm=8MiB,stack=4KiB "
        f"(any subset of {', '.join(BUDGETS)}; bytes, or K, KiB, M, MiB, G, GiB); exit 1 "
        "when one is exceeded; temp is vm (MLC-LLM's temporary buffer)",
    )
    report.add_argument(
        "--solve",
        metavar="VARIABLE",
        help="with --fit vm=SIZE (or temp=SIZE): the largest bound of this shape variable "
        "(e.g. seq_len, the prefill chunk) for which each build's VM figure fits, planned again "
        "at each value; other variables at their bounds unless given with --shape-var",
    )
    run.register(commands)
    pack.add_parser(commands)
    return parser


def _progress(line: str) -> None:
    print(f"tvm-memplan: {line}", file=sys.stderr, flush=True)


def message(err: Exception) -> str:
    """The error as the command line says it: with the flags that fix it."""
    if isinstance(err, UnfixedInputsError):
        example = " ".join(
            f"--input-shape {name}={shape([d or 1 for d in dims])}" for name, dims in err.inputs
        )
        return f"{err}: {example} (your sizes in place of the 1s)"
    if isinstance(err, UnknownSizesError):
        example = " ".join(f"--shape-var {v}=N" for v in err.variables)
        return f"--fit needs a value for each shape variable without a bound: {example}"
    return str(err)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["run"]:  # from SCRIPT or -m MODULE on, the arguments are the tool's
        return run.main(argv[1:])
    args = _parser().parse_args(argv)
    if args.command == "pack":
        return pack.run(args)
    try:
        budgets = parse_budgets(args.fit) if args.fit is not None else None
        if args.solve is not None:
            solvable_budget(args.solve, budgets or {})  # before the build: a usage error
        report = run_report(
            args.file,
            parse_target(args.target),
            input_shapes=parse_input_shapes(args.input_shape),
            shape_values=parse_shape_vars(args.shape_var),
            budgets=budgets,
            solve_for=args.solve,
            progress=_progress,
        )
        if args.html:
            try:
                Path(args.html).write_text(render_html(report), encoding="utf-8")
            except OSError as err:
                raise ReportError(f"cannot write {args.html}: {err.strerror}") from err
    except (ReportError, UsageError) as err:
        print(f"tvm-memplan: error: {message(err)}", file=sys.stderr)
        return 2
    print(json.dumps(report.to_json(), indent=2) if args.json else render_text(report))
    return 0 if report.fit is None or report.fit.fits else 1


if __name__ == "__main__":
    sys.exit(main())
