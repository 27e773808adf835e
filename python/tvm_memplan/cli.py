"""The ``tvm-memplan`` command: ``report`` (its own flags are declared here, the shared ones in
``command_line``) and the dispatch to ``run`` and ``pack``."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from . import pack, run
from .command_line import (
    PREFIX,
    UsageError,
    add_flags,
    error,
    parse_budgets,
    parse_exact_search_ms,
    parse_input_shapes,
    parse_shape_vars,
    parse_target,
    progress,
)
from .report import ReportError, render_html, render_text, run_report, solvable_budget

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PREFIX, description="Memory planning for Apache TVM 0.27."
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
    report.add_argument("--json", action="store_true", help="print the report as JSON")
    report.add_argument(
        "--html",
        metavar="FILE",
        help="also write the report as one self-contained HTML page with memory timelines",
    )
    add_flags(report, "--shape-var", "--fit", "--solve", "--exact-search-ms")
    run.register(commands)
    pack.add_parser(commands)
    return parser


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
            exact_search_ms=parse_exact_search_ms(args.exact_search_ms),
            progress=progress,
        )
        if args.html:
            try:
                Path(args.html).write_text(render_html(report), encoding="utf-8")
            except OSError as err:
                raise ReportError(f"cannot write {args.html}: {err.strerror}") from err
    except (ReportError, UsageError) as err:
        return error(err)
    print(json.dumps(report.to_json(), indent=2) if args.json else render_text(report))
    return 0 if report.fit is None or report.fit.fits else 1


if __name__ == "__main__":
    sys.exit(main())
