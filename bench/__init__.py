"""The benchmark suite: ``python -m bench`` runs every benchmark script of this directory in
its own process and writes what each printed to ``docs/benchmarks.md``.

    python -m bench                        # all benchmarks, full size; writes docs/benchmarks.md
    python -m bench --quick --only compact # print only (add --output PATH to write a file)
    python -m bench --list

A benchmark is a script ``bench/<name>.py`` (names starting with ``_`` are not benchmarks) that
runs our pass and the stock TVM pass side by side in one process and prints ratios. The first
paragraph of its docstring says what it measures; it becomes the sentence under the
benchmark's heading. A script whose argument parser declares ``--quick`` gets it under
``python -m bench --quick``. A script that exits non-zero fails the suite; nothing is written
then. Scripts are read with ``ast``, not imported: discovery needs neither TVM nor a build.
"""

from __future__ import annotations

import argparse
import ast
import datetime
import importlib.metadata
import os
import platform
import re
import shlex
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

__all__ = [
    "BENCH_DIR",
    "DEFAULT_OUTPUT",
    "Benchmark",
    "Environment",
    "Result",
    "describe_environment",
    "discover",
    "main",
    "render",
    "run",
]

BENCH_DIR = Path(__file__).resolve().parent
ROOT = BENCH_DIR.parent
DEFAULT_OUTPUT = ROOT / "docs" / "benchmarks.md"
QUICK = "--quick"
# Distributions whose versions the results depend on.
DISTRIBUTIONS = ("apache-tvm", "apache-tvm-ffi", "tvm-memplan", "numpy")
# Lines of a failed benchmark's stderr repeated in the failure report.
ERROR_TAIL = 20


@dataclass(frozen=True)
class Benchmark:
    name: str
    path: Path
    #: The first paragraph of the script's docstring: what the benchmark measures.
    summary: str
    #: Whether the script's argument parser declares --quick.
    quick: bool


def _declares_quick(tree: ast.AST) -> bool:
    return any(
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "add_argument"
        and any(isinstance(arg, ast.Constant) and arg.value == QUICK for arg in node.args)
        for node in ast.walk(tree)
    )


def discover(directory: Path = BENCH_DIR) -> list[Benchmark]:
    """The benchmarks of ``directory``, by name."""
    benchmarks = []
    for path in sorted(Path(directory).glob("*.py")):
        if path.name.startswith("_"):
            continue
        tree = ast.parse(path.read_text(), filename=str(path))
        docstring = ast.get_docstring(tree)
        if not docstring:
            raise ValueError(
                f"{path}: a benchmark needs a docstring whose first paragraph says what it "
                "measures (or a name starting with '_' if it is not a benchmark)"
            )
        summary = " ".join(docstring.split("\n\n")[0].split())
        benchmarks.append(Benchmark(path.stem, path, summary, _declares_quick(tree)))
    return benchmarks


# ---- running ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Result:
    benchmark: Benchmark
    args: tuple[str, ...]
    returncode: int
    #: What the script printed on stdout: the tables.
    output: str
    #: What it printed on stderr (warnings, a traceback); not part of the results.
    errors: str
    seconds: float

    @property
    def ok(self) -> bool:
        return self.returncode == 0


def run(benchmark: Benchmark, quick: bool = False, echo: TextIO | None = None) -> Result:
    """Run one benchmark script in its own process with this Python, from the repository root;
    its stdout is captured (and copied to ``echo`` line by line as it comes)."""
    args = (QUICK,) if quick and benchmark.quick else ()
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    start = time.monotonic()
    with tempfile.TemporaryFile("w+") as stderr:
        process = subprocess.Popen(
            [sys.executable, str(benchmark.path), *args],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
        )
        lines = []
        for line in process.stdout:
            lines.append(line)
            if echo is not None:
                echo.write(line)
                echo.flush()
        returncode = process.wait()
        stderr.seek(0)
        errors = stderr.read()
    return Result(benchmark, args, returncode, "".join(lines), errors, time.monotonic() - start)


# ---- rendering ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Environment:
    """Where and how the results were produced: the page's header."""

    command: str
    date: str
    versions: tuple[tuple[str, str], ...]
    commit: str | None
    python: str
    system: str
    cpu: str
    cpus: int


def _version(distribution: str) -> str:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def _cpu_model() -> str:
    try:
        cpuinfo = Path("/proc/cpuinfo").read_text()
    except OSError:
        return platform.processor() or "unknown CPU"
    match = re.search(r"^model name\s*:\s*(.+)$", cpuinfo, re.MULTILINE)
    return match.group(1).strip() if match else platform.processor() or "unknown CPU"


def _commit() -> str | None:
    def git(*args: str) -> str:
        return subprocess.run(
            ["git", *args], cwd=ROOT, capture_output=True, text=True, check=True
        ).stdout.strip()

    try:
        commit = git("rev-parse", "--short=12", "HEAD")
        # Changed sources make the figures those of another program; a changed page does not.
        dirty = git("status", "--porcelain", "--untracked-files=no", "--", ".", ":!docs")
    except (OSError, subprocess.CalledProcessError):
        return None
    return f"{commit} with local changes" if dirty else commit


def describe_environment(command: str) -> Environment:
    return Environment(
        command=command,
        date=datetime.datetime.now(datetime.timezone.utc).date().isoformat(),
        versions=tuple((name, _version(name)) for name in DISTRIBUTIONS),
        commit=_commit(),
        python=platform.python_version(),
        system=f"{platform.system()} {platform.machine()}",
        cpu=_cpu_model(),
        cpus=os.cpu_count() or 0,
    )


def _invocation(result: Result) -> str:
    """The command that runs the benchmark alone, from the repository root."""
    path = result.benchmark.path
    shown = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
    return shlex.join(["python", str(shown), *result.args])


def _fenced(text: str) -> str:
    """``text`` as a code block, with a fence longer than any backtick run in it."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    lines = [line.rstrip() for line in text.strip("\n").splitlines()]
    return "\n".join([f"{fence}text", *lines, fence])


def render(results: list[Result], environment: Environment) -> str:
    """The results page: a generated-file header, then per benchmark a heading, the sentence
    saying what it measures and what the script printed."""
    versions = ", ".join(f"{name} {version}" for name, version in environment.versions)
    commit = f", commit {environment.commit}" if environment.commit else ""
    lines = [
        f"<!-- Generated by `{environment.command}`: do not edit by hand, run it again. -->",
        "",
        "# Benchmark results",
        "",
        f"- command: `{environment.command}` from the repository root (regenerates this page)",
        f"- date: {environment.date}{commit}",
        f"- versions: {versions}",
        f"- machine: {environment.cpus} CPUs ({environment.cpu}), {environment.system}, "
        f"Python {environment.python}",
        "",
        "Each benchmark runs tvm-memplan's pass and the stock TVM pass side by side in one "
        "process and prints ratios; absolute times depend on the machine and its load, the "
        "ratios much less. Below is what each script printed, unedited.",
    ]
    for result in results:
        benchmark = result.benchmark
        lines += [
            "",
            f"## {benchmark.name}",
            "",
            f"{benchmark.summary} (`{_invocation(result)}`, {result.seconds:.0f} s.)",
            "",
            _fenced(result.output),
        ]
    return "\n".join(lines) + "\n"


# ---- command line -------------------------------------------------------------------------------


def _parser(names: list[str]) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m bench",
        description="Run the benchmarks, each in its own process, and write their tables.",
    )
    parser.add_argument(
        QUICK, action="store_true", help="pass --quick to the benchmarks that take it"
    )
    parser.add_argument(
        "--only",
        action="append",
        metavar="NAME",
        choices=names,
        help=f"run only this benchmark (repeatable): {', '.join(names)}",
    )
    parser.add_argument(
        "--output",
        type=Path,
        help="the page to write (default: docs/benchmarks.md for a full run; "
        "a --quick or --only run writes nothing unless given)",
    )
    parser.add_argument("--list", action="store_true", help="list the benchmarks and exit")
    parser.add_argument(
        "--gpu",
        action="store_true",
        help="run only the GPU check (bench/_gpu.py: cuda builds with and without CUDA graphs, "
        "run on the GPU); without a GPU it measures nothing and says so",
    )
    return parser


def gpu_check(directory: Path = BENCH_DIR) -> Benchmark:
    """The GPU check: not part of the suite's page, since most machines that run the suite
    have no GPU; ``python -m bench --gpu`` runs it."""
    path = Path(directory) / "_gpu.py"
    tree = ast.parse(path.read_text(), filename=str(path))
    summary = " ".join(ast.get_docstring(tree).split("\n\n")[0].split())
    return Benchmark("gpu", path, summary, _declares_quick(tree))


def _command(argv: list[str]) -> str:
    shown = []
    skip = False
    for arg in argv:  # the output path is where the page is, not how it was made
        if skip:
            skip = False
        elif arg == "--output":
            skip = True
        elif not arg.startswith("--output="):
            shown.append(arg)
    return shlex.join(["python", "-m", "bench", *shown])


def _report_failure(result: Result, out: TextIO) -> None:
    print(
        f"bench: {result.benchmark.name} FAILED with exit code {result.returncode}: "
        f"{_invocation(result)}",
        file=out,
    )
    for line in result.errors.rstrip("\n").splitlines()[-ERROR_TAIL:]:
        print(f"    {line}", file=out)


def main(argv: list[str] | None = None, directory: Path = BENCH_DIR) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    benchmarks = discover(directory)
    args = _parser([b.name for b in benchmarks]).parse_args(argv)
    if args.list:
        for b in benchmarks:
            print(f"{b.name:<12} {'--quick  ' if b.quick else '         '}{b.summary}")
        return 0
    if args.gpu:
        result = run(gpu_check(directory), args.quick, echo=sys.stdout)
        if not result.ok:
            _report_failure(result, sys.stderr)
        return 0 if result.ok else 1
    selected = [b for b in benchmarks if not args.only or b.name in args.only]
    output = args.output
    if output is None and not (args.quick or args.only):
        output = DEFAULT_OUTPUT

    results = []
    for index, benchmark in enumerate(selected, 1):
        print(f"[{index}/{len(selected)}] {benchmark.name}: {benchmark.path}", flush=True)
        result = run(benchmark, args.quick, echo=sys.stdout)
        print(
            f"[{index}/{len(selected)}] {benchmark.name}: "
            f"{'ok' if result.ok else 'FAILED'} in {result.seconds:.0f} s\n",
            flush=True,
        )
        results.append(result)

    failed = [r for r in results if not r.ok]
    for result in failed:
        _report_failure(result, sys.stderr)
    if failed:
        names = ", ".join(r.benchmark.name for r in failed)
        print(
            f"bench: {len(failed)} of {len(results)} failed ({names}); nothing written",
            file=sys.stderr,
        )
        return 1
    if output is not None:
        page = render(results, describe_environment(_command(argv)))
        Path(output).parent.mkdir(parents=True, exist_ok=True)
        Path(output).write_text(page)
        print(f"bench: wrote {output}")
    return 0
