"""The ``tvm-memplan`` command."""

from __future__ import annotations

import argparse
import json
import sys

from .report import ReportError, render_text, run_report


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tvm-memplan", description="Memory planning for Apache TVM 0.27."
    )
    commands = parser.add_subparsers(dest="command", required=True)
    report = commands.add_parser(
        "report",
        help="show what the memory passes do to a model, next to the stock TVM passes",
    )
    report.add_argument(
        "file",
        nargs="?",
        help="a Python file defining a function `build()` that returns an IRModule, or an "
        "IRModule `Module` (default: the bundled example)",
    )
    report.add_argument(
        "--target", help='target as JSON (default: {"kind": "llvm"}), e.g. \'{"kind": "c"}\''
    )
    report.add_argument("--json", action="store_true", help="print the report as JSON")
    return parser


def _progress(line: str) -> None:
    print(f"tvm-memplan: {line}", file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        report = run_report(args.file, args.target, progress=_progress)
    except ReportError as err:
        print(f"tvm-memplan: error: {err}", file=sys.stderr)
        return 2
    print(json.dumps(report, indent=2) if args.json else render_text(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
