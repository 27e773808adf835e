"""The ``tvm-memplan`` command."""

from __future__ import annotations

import argparse
import json
import sys

from . import examples
from .report import ReportError, build_report, load_module, parse_target, render_text


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tvm-memplan", description="Memory planning for Apache TVM 0.27."
    )
    commands = parser.add_subparsers(dest="command", required=True)
    report = commands.add_parser("report", help="show what the memory passes do to a model")
    report.add_argument(
        "file",
        nargs="?",
        help="a Python file defining an IRModule `Module` or a function `build()` "
        "(default: the bundled example)",
    )
    report.add_argument("--target", help='target as JSON, e.g. \'{"kind": "llvm"}\'')
    report.add_argument("--json", action="store_true", help="print the report as JSON")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        target = parse_target(args.target)
        mod = load_module(args.file or examples.DEFAULT_EXAMPLE)
        report = build_report(mod, target)
    except ReportError as err:
        print(f"tvm-memplan: error: {err}", file=sys.stderr)
        return 2
    print(json.dumps(report, indent=2) if args.json else render_text(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
