"""``tvm-memplan run``: a Python tool (a script, or a module with ``-m``) run in this process, as
coverage and cProfile run one, with tvm-memplan's passes in every Relax and TIR pipeline it
builds; at exit, one line per build, and with ``--report`` the report of those builds.

    tvm-memplan run -m mlc_llm compile model.json -o model.so
    tvm-memplan run --report build.html compile.py --size small

- Every pipeline the tool builds gets our passes: by name, TVM's defaults, and pipelines that
  build their passes as they run (MLC-LLM's), through the pass constructors the ``"memplan"``
  pipelines substitute, made process-wide for the run
  (``pipeline.substituted_everywhere``: every thread, restored when the tool ends).
- Every ``tvm.compile``, ``tvm.relax.build`` and ``tvm.tirx.build`` call (the outermost of a
  thread: ``tvm.compile`` calling ``relax.build`` is one build) is traced under the tool's own
  PassContext (``recording.recording_builds``), recording what our passes receive;
  ``--exact-search-ms`` adds the planner's budget to that PassContext.
- The tool keeps its output and its exit status; a tool that raises keeps its traceback (exit
  1, as Python). What cannot run at all, a module that does not exist or a script that does not
  compile, is a one-line error and exit 2, and so is a tool that succeeds without building.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import os
import runpy
import sys
import traceback
from dataclasses import dataclass, field
from pathlib import Path

import tvm

from .analysis import search_config
from .command_line import (
    PREFIX,
    UsageError,
    add_flags,
    error,
    parse_budgets,
    parse_exact_search_ms,
    parse_shape_vars,
)
from .recording import RecordedBuild, recording_builds
from .report import check_fit, render_html, solvable_budget, solve_budget
from .report.assemble import build_report
from .report.build_summary import BuildSummary, summarize_build, summary_line
from .report.load import LoadedModel, ReportError, one_line
from .report.text import fit_lines, solve_lines
from .report.trace_builds import RECORDED_PASSES, ToolBuild

__all__ = ["HELP", "RunError", "main", "summary"]

HELP = (
    "run a Python tool (SCRIPT or -m MODULE, with its arguments) with tvm-memplan's passes in "
    "every pipeline it builds, and say at exit what each build's memory plan is"
)
USAGE = (
    "tvm-memplan run [--report FILE.html|FILE.json] [--fit BUDGETS] [--solve VARIABLE] "
    "[--shape-var NAME=VALUE ...] [--exact-search-ms MS] (-m MODULE | SCRIPT) [ARGS ...]"
)

#: The run's own option, each taking one value; everything from SCRIPT or -m MODULE on is the
#: tool's.
REPORT = (
    "FILE",
    "write the report of the tool's builds (as `tvm-memplan report` shows a model): "
    "FILE.json (every build) or FILE.html (one page per build: FILE.html, FILE-2.html, ...)",
)
#: The shared flags run takes (command_line.FLAGS); all but --exact-search-ms apply to the
#: report, which sets the budget of the tool's own builds too.
SHARED = ("--fit", "--solve", "--shape-var", "--exact-search-ms")
#: Every option of run, each taking one value.
OPTIONS = ("--report", *SHARED)


class RunError(Exception):
    """What stops ``run`` before or after the tool: one line, exit 2."""


def summary(build: RecordedBuild) -> BuildSummary:
    """What one recorded build did to memory, as its line at exit says it."""
    return summarize_build(build.index, build.entry, build.traced, build.target, build.mod)


# ---- the command line ------------------------------------------------------------------------


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=f"{PREFIX} run",
        usage=USAGE,
        description=HELP
        + ". Exit status: the tool's; 2 when the tool cannot be run, when it succeeds without "
        "building, or when the report cannot be written.",
    )
    parser.add_argument("--report", metavar=REPORT[0], help=REPORT[1])
    add_flags(parser, "--fit", "--solve", "--shape-var", prefix="with --report: ")
    add_flags(parser, "--exact-search-ms")
    parser.add_argument("-m", metavar="MODULE", help="run a module as `python -m MODULE` does")
    return parser


def register(commands) -> None:
    """Adds ``run`` to the ``tvm-memplan`` command's list (``--help``); ``cli.main`` hands its
    arguments to ``main`` as they are, since from SCRIPT or MODULE on they are the tool's."""
    commands.add_parser("run", help=HELP, add_help=False)


@dataclass
class _Tool:
    #: "module" or "script".
    kind: str
    name: str
    args: list[str]


def _split(argv: list[str]) -> tuple[list[str], _Tool]:
    """The run's own options, and the tool with its arguments."""
    own: list[str] = []
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "-m" or (arg.startswith("-m") and not arg.startswith("--")):
            module = arg[2:] or (argv[i + 1] if i + 1 < len(argv) else "")
            if not module:
                raise RunError("-m needs a MODULE")
            return own, _Tool("module", module, argv[i + (1 if arg[2:] else 2) :])
        if arg in ("-h", "--help"):
            _parser().print_help()
            raise SystemExit(0)
        if arg == "--":
            if i + 1 >= len(argv):
                raise RunError(f"nothing to run: {USAGE}")
            return own, _Tool("script", argv[i + 1], argv[i + 2 :])
        if arg.startswith("-") and not arg.startswith("--") and arg != "-":
            raise RunError(f"unknown option {arg} (options: -m, {', '.join(OPTIONS)})")
        if arg.startswith("--"):
            flag, sep, _ = arg.partition("=")
            if flag not in OPTIONS:
                raise RunError(f"unknown option {flag} (options: {', '.join(OPTIONS)})")
            own.append(arg)
            if not sep:
                if i + 1 >= len(argv):
                    raise RunError(f"{flag} needs a value")
                own.append(argv[i + 1])
                i += 1
            i += 1
            continue
        return own, _Tool("script", arg, argv[i + 1 :])
    raise RunError(f"nothing to run: {USAGE}")


def _code(tool: _Tool):
    """The tool's code object and the file it comes from, compiled but not run: a tool that
    cannot be found or compiled fails here, before anything of it runs."""
    if tool.kind == "script":
        path = Path(tool.name)
        if not path.is_file():
            raise RunError(f"no such script: {tool.name}")
        try:
            source = path.read_bytes()
            return compile(source, str(path), "exec", dont_inherit=True), str(path)
        except SyntaxError as err:
            raise RunError(f"{tool.name} cannot be imported: {one_line(err)}") from err
        except OSError as err:
            raise RunError(f"{tool.name} cannot be read: {err.strerror}") from err
    sys.path.insert(0, os.getcwd())  # where `python -m` looks first
    try:
        spec = importlib.util.find_spec(tool.name)
        if spec is not None and spec.submodule_search_locations is not None:
            spec = importlib.util.find_spec(f"{tool.name}.__main__")
    except ModuleNotFoundError:
        spec = None
    except Exception as err:  # a parent package that raises on import
        raise RunError(f"{tool.name} cannot be imported: {one_line(err)}") from err
    finally:
        sys.path.pop(0)
    if spec is None or spec.loader is None:
        raise RunError(f"no module named {tool.name}")
    try:
        code = spec.loader.get_code(spec.name)
    except SyntaxError as err:
        raise RunError(f"{tool.name} cannot be imported: {one_line(err)}") from err
    if code is None:
        raise RunError(f"{tool.name} has no code to run")
    return code, spec.origin or tool.name


def _tool_frames(tb):
    """The traceback from the tool's first frame on (without run's and runpy's)."""
    ours = {__file__, runpy.__file__}
    while tb is not None and tb.tb_frame.f_code.co_filename in ours:
        tb = tb.tb_next
    return tb


def _exit_status(code) -> int:
    """A SystemExit code as Python turns it into a status."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


def _execute(tool: _Tool, code, origin: str) -> int:
    """Run the tool as ``python SCRIPT`` / ``python -m MODULE`` would, here; its exit status."""
    saved_argv, saved_path = sys.argv[:], sys.path[:]
    sys.argv = [origin, *tool.args]
    sys.path.insert(0, os.getcwd() if tool.kind == "module" else str(Path(origin).parent))
    main_module = sys.modules.get("__main__")
    try:
        if tool.kind == "module":
            runpy.run_module(tool.name, run_name="__main__", alter_sys=True)
        else:
            globals_ = {"__name__": "__main__", "__file__": origin, "__builtins__": __builtins__}
            module = type(sys)("__main__")
            module.__dict__.update(globals_)
            sys.modules["__main__"] = module
            exec(code, module.__dict__)  # noqa: S102  (running the user's tool is the point)
        return 0
    except SystemExit as err:
        return _exit_status(err.code)
    except Exception as err:
        sys.stdout.flush()
        traceback.print_exception(type(err), err, _tool_frames(err.__traceback__))
        return 1
    finally:
        sys.argv, sys.path[:] = saved_argv, saved_path
        if main_module is not None:
            sys.modules["__main__"] = main_module


def _report_files(path: Path, count: int) -> list[Path]:
    """FILE.html, FILE-2.html, ... for each build."""
    return [path] + [path.with_name(f"{path.stem}-{i}{path.suffix}") for i in range(2, count + 1)]


@contextlib.contextmanager
def _tool_context(settings: dict):
    """A PassContext as the tool's was when it built."""
    with tvm.transform.PassContext(**settings):
        yield


@dataclass
class _Asked:
    """What the report of each build is asked for beyond the report itself."""

    budgets: dict[str, int] | None = None
    solve_for: str | None = None
    shape_values: dict[str, int] = field(default_factory=dict)
    exact_search_ms: int | None = None


def _reports(builds: list[RecordedBuild], command: list[str], asked: _Asked) -> list:
    """(build, report) for each build that succeeded."""
    reports = []
    for b in builds:
        if b.traced.error is not None:
            continue
        target = b.target or tvm.target.Target({"kind": "llvm"})
        tool = ToolBuild(b.traced, b.relax_pipeline, b.tir_pipeline)
        with _tool_context(b.context):
            report = build_report(
                LoadedModel(b.mod),
                target,
                source=f"{' '.join(command)}: build {b.index} ({b.entry})",
                shape_values=asked.shape_values,
                tool=tool,
            )
            if asked.budgets is not None:
                report.fit = check_fit(report, asked.budgets)
            if asked.solve_for is not None:
                report.solution = solve_budget(
                    report, asked.solve_for, asked.budgets or {}, asked.shape_values
                )
        reports.append((b, report))
    if not reports:
        raise RunError("no build of the tool succeeded: nothing to report")
    return reports


def write_report(reports: list, path: Path, command: list[str]) -> list[Path]:
    """The reports of the builds, as JSON (one file) or HTML (one page per build); the files
    written."""
    try:
        if path.suffix.lower() == ".json":
            data = {
                "command": command,
                "builds": [
                    {"build": b.index, "entry": b.entry, "report": r.to_json()} for b, r in reports
                ],
            }
            path.write_text(json.dumps(data, indent=2), encoding="utf-8")
            return [path]
        files = _report_files(path, len(reports))
        for file, (_, report) in zip(files, reports, strict=True):
            file.write_text(render_html(report), encoding="utf-8")
        return files
    except OSError as err:
        raise RunError(f"cannot write {path}: {err.strerror}") from err


def main(argv: list[str]) -> int:
    """``tvm-memplan run ...``; the exit status."""
    try:
        own, tool = _split(argv)
        options = _parser().parse_args(own)
        report = Path(options.report) if options.report else None
        if report is not None and report.suffix.lower() not in (".html", ".json"):
            raise RunError(f"--report {options.report}: the file must end in .html or .json")
        asked = _Asked(
            parse_budgets(options.fit) if options.fit is not None else None,
            options.solve,
            parse_shape_vars(options.shape_var),
            parse_exact_search_ms(options.exact_search_ms),
        )
        if report is None and (asked.budgets is not None or asked.solve_for or asked.shape_values):
            raise RunError("--fit, --solve and --shape-var apply to the report: give --report")
        if asked.solve_for is not None:
            solvable_budget(asked.solve_for, asked.budgets or {})
        code, origin = _code(tool)
    except (RunError, UsageError, ReportError) as err:
        return error(str(err))
    command = (["-m", tool.name] if tool.kind == "module" else [tool.name]) + tool.args
    config = search_config(asked.exact_search_ms)
    with recording_builds(RECORDED_PASSES, config) as builds:
        status = _execute(tool, code, origin)
    sys.stdout.flush()
    for b in builds:
        print(f"{PREFIX}: {summary_line(summary(b))}", file=sys.stderr)
    if not builds:
        nothing = "no TVM build ran: nothing to report"
        if status == 0:
            return error(nothing)
        print(f"{PREFIX}: {nothing}", file=sys.stderr)
        return status
    if report is not None:
        try:
            reports = _reports(builds, command, asked)
            written = write_report(reports, report, command)
        except (RunError, ReportError) as err:
            return error(err) if status == 0 else status
        for b, r in reports:
            extra = (fit_lines(r.fit) if r.fit is not None else []) + (
                solve_lines(r.solution) if r.solution is not None else []
            )
            for line in extra:
                print(f"{PREFIX}: build {b.index}: {line}", file=sys.stderr)
        print(f"{PREFIX}: wrote {', '.join(str(f) for f in written)}", file=sys.stderr)
        if status == 0 and any(r.fit is not None and not r.fit.fits for _, r in reports):
            return 1
    return status
