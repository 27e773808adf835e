"""The ``tvm-memplan`` command."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from .report import ReportError, render_html, render_text, run_report


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tvm-memplan", description="Memory planning for Apache TVM 0.27."
    )
    commands = parser.add_subparsers(dest="command", required=True)
    report = commands.add_parser(
        "report",
        help="show what the memory passes do to a model, next to the stock TVM passes",
        description="Exit status: 0, or 1 when --fit finds a budget exceeded, or 2 on an error.",
    )
    report.add_argument(
        "file",
        nargs="?",
        help="an .onnx model, or a Python file defining a function `build()` that returns an "
        "IRModule, or an IRModule `Module` (default: the bundled example)",
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
    report.add_argument("--json", action="store_true", help="print the report as JSON")
    report.add_argument(
        "--html",
        metavar="FILE",
        help="also write the report as one self-contained HTML page with memory timelines",
    )
    report.add_argument(
        "--fit",
        metavar="BUDGETS",
        help="check the memplan build against budgets, e.g. vm=2MiB,stack=4KiB,workspace=64KiB "
        "(any subset; bytes, or K, KiB, M, MiB, G, GiB); exit 1 when one is exceeded",
    )
    return parser


def _progress(line: str) -> None:
    print(f"tvm-memplan: {line}", file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        report = run_report(
            args.file,
            args.target,
            progress=_progress,
            input_shapes=args.input_shape,
            fit=args.fit,
        )
        if args.html:
            try:
                Path(args.html).write_text(render_html(report), encoding="utf-8")
            except OSError as err:
                raise ReportError(f"cannot write {args.html}: {err.strerror}") from err
    except ReportError as err:
        print(f"tvm-memplan: error: {err}", file=sys.stderr)
        return 2
    print(json.dumps(report.to_json(), indent=2) if args.json else render_text(report))
    return 0 if report.fit is None or report.fit.fits else 1


if __name__ == "__main__":
    sys.exit(main())
