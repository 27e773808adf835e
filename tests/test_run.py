"""`tvm-memplan run`: a tool run in this process gets our passes in every pipeline it builds (a
stand-in of `mlc_llm compile` whose pipeline is built while it runs, in MLC-LLM's order; a
script calling `tvm.compile`; a build in another thread), keeps its output and exit status, and
each build gets one summary line and, with --report, the report of the build it made."""

from __future__ import annotations

import contextlib
import importlib.util
import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import llm_compile
import numpy as np
import pytest
import tvm

from tvm_memplan import substitution
from tvm_memplan.cli import main
from tvm_memplan.recording import recording_builds
from tvm_memplan.report.build_summary import BuildSummary, summary_line
from tvm_memplan.report.trace_builds import RECORDED_PASSES
from zoo import llm

ROOT = Path(__file__).resolve().parents[1]
STOCK_COMPILE = tvm.compile
STOCK_PLANNER = tvm.relax.transform.StaticPlanBlockMemory

TINY = """
import sys
import numpy as np
import tvm
from tvm.script import ir as I
from tvm.script import relax as R


@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((64, 64), "float32")):
        a = R.exp(x)
        b = R.exp(a)
        c = R.add(a, b)
        d = R.concat((c, a), axis=0)
        return R.sum(d, axis=0)


def build():
    return tvm.compile(Module, target="llvm")


if __name__ == "__main__":
    ex = build()
    vm = tvm.relax.VirtualMachine(ex, tvm.cpu())
    out = vm["main"](tvm.runtime.tensor(np.full((64, 64), 0.01, "float32")))
    print("result", round(float(out.numpy()[0]), 3))
    sys.exit(int(sys.argv[1]) if len(sys.argv) > 1 else 0)
"""
#: TINY with its main block off: the module and build(), for a script that goes its own way.
TINY_BUILD = TINY.replace('if __name__ == "__main__":', "if False:")


def _run(argv: list[str]) -> tuple[int, str, str]:
    """``tvm-memplan`` in this process: its status, what it printed on stdout and stderr."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(argv)
    return status, out.getvalue(), err.getvalue()


def _script(tmp_path: Path, text: str, name: str = "tool.py") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def _lines(stderr: str) -> list[str]:
    """The summary lines (``tvm-memplan: build 1 (tvm.compile, llvm): ...``)."""
    return [line for line in stderr.splitlines() if re.match(r"tvm-memplan: build \d+ \(", line)]


# ---- the stand-in of `mlc_llm compile` ---------------------------------------------------------


@pytest.fixture(scope="module")
def stock(tmp_path_factory):
    """The stand-in run as it is: TVM's passes."""
    out = tmp_path_factory.mktemp("stock") / "outputs.npz"
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        assert llm_compile.main(["--out", str(out)]) == 0
    return {"outputs": out, "stdout": printed.getvalue()}


@pytest.fixture(scope="module")
def ours(tmp_path_factory):
    """The same tool under `tvm-memplan run`, with the report of its build as JSON, checked
    against MLC-LLM's budget (temp) and solved for the prefill chunk."""
    folder = tmp_path_factory.mktemp("ours")
    out, report = folder / "outputs.npz", folder / "build.json"
    status, stdout, stderr = _run(
        [
            "run",
            "--report",
            str(report),
            *("--fit", "temp=1MiB", "--solve", "seq_len"),
            *("--shape-var", f"vocab_size={llm_compile.CONFIG.vocab_size}"),
            *("--shape-var", f"kv_len={llm_compile.CONFIG.context_window_size}"),
            *("-m", "llm_compile", "--out", str(out)),
        ]
    )
    return {
        "status": status,
        "stdout": stdout,
        "stderr": stderr,
        "outputs": out,
        "report": json.loads(report.read_text()),
    }


def _temporary_buffer(stdout: str) -> int:
    (match,) = re.findall(r"temporary buffer: (\d+) bytes", stdout)
    return int(match)


def test_the_tool_computes_what_it_computes_with_stock_passes(stock, ours):
    """Every output of the three generations (prefill, decode, batches, hidden-state forms) is
    the stock run's bit for bit."""
    assert ours["status"] == 0
    want, got = np.load(stock["outputs"]), np.load(ours["outputs"])
    names = [k for k in want.files if not k.startswith("memory_usage/")]
    assert sorted(names) == sorted(k for k in got.files if not k.startswith("memory_usage/"))
    assert {k.split("/")[0] for k in names} == {"0", "1", "2"}
    for name in names:
        np.testing.assert_array_equal(got[name], want[name], err_msg=name)


def test_the_tool_keeps_its_output_and_its_estimate_drops(stock, ours):
    """The tool's own lines are on stdout, ours on stderr; MLC-LLM's estimate that the tool
    prints (its largest function's planned bytes) is below the stock run's."""
    assert "ran 3 generations" in ours["stdout"] and "tvm-memplan" not in ours["stdout"]
    assert _temporary_buffer(ours["stdout"]) < _temporary_buffer(stock["stdout"])


def _applied(plan: dict) -> int:
    return plan["stock_bytes"] if plan["planner"] == "stock" else plan["planned_bytes"]


def test_one_line_per_build_with_the_planners_figures(ours):
    """One build (relax.build), one line; its figures are the plan records of the build: the
    largest function's bytes as planned, TVM's planner on the same IR, the peak-live bound,
    the calls made in place."""
    (line,) = _lines(ours["stderr"])
    functions = len(llm.LLM_FUNCTIONS)
    assert line.startswith(
        f"tvm-memplan: build 1 (tvm.relax.build, llvm): {functions} Relax functions"
    )
    report = ours["report"]["builds"][0]["report"]
    plans = [f["plan"] for f in report["relax"]]
    planned = max(_applied(p) for p in plans)
    largest = next(f["function"] for f in report["relax"] if _applied(f["plan"]) == planned)
    stock = max(p["stock_bytes"] for p in plans)
    bound = max(p["peak_live_bytes"] for p in plans)
    assert f"VM planned {planned} B (largest: {largest})" in line
    assert f"TVM's planner {stock} B on the same IR" in line
    assert f"peak-live bound {bound} B" in line
    assert f"{report['inplace']['conversions']['memplan']} calls in place" in line
    assert planned < stock


def test_the_report_is_of_the_build_the_tool_made(ours):
    """The report's plans are of the module the tool built, with the bounds its own pipeline
    attached (seq_len = the prefill chunk), and its stock side is the tool's pipeline."""
    data = ours["report"]
    assert data["command"][:2] == ["-m", "llm_compile"]
    (build,) = data["builds"]
    report = build["report"]
    assert [f["function"] for f in report["relax"]] == sorted(llm.LLM_FUNCTIONS)
    assert report["summary"]["evaluated_at"]["seq_len"] == llm_compile.CONFIG.prefill_chunk_size
    assert report["summary"]["value_sources"]["seq_len"] == "bound"
    assert not report["failures"]
    # The stock build: TVM's planner on the tool's pipeline, no in-place pass.
    assert report["inplace"]["conversions"]["stock"] is None


def test_the_report_of_the_run_answers_what_fits(ours):
    """With --fit temp=1MiB --solve seq_len, the report of the real build has the fit check
    and the largest prefill chunk for each planner, and stderr says both per build."""
    report = ours["report"]["builds"][0]["report"]
    assert report["fit"]["fits"] and report["fit"]["budgets"][0]["name"] == "vm"
    largest = report["solution"]["largest"]
    assert largest["memplan"] > largest["stock"] > llm_compile.CONFIG.prefill_chunk_size
    lines = [
        line for line in ours["stderr"].splitlines() if line.startswith("tvm-memplan: build 1:")
    ]
    assert any(f"up to {largest['memplan']}" in line for line in lines)
    assert any("Fit check (memplan build): fits" in line for line in lines)


def test_report_options_need_a_report(tmp_path):
    script = _script(tmp_path, TINY)
    assert "give --report" in _one_line_error(["run", "--fit", "vm=1MiB", str(script)])


def test_stock_constructors_and_entries_come_back(ours):
    """After the run, TVM's pass constructors and build functions are TVM's again."""
    assert tvm.compile is STOCK_COMPILE
    assert tvm.relax.transform.StaticPlanBlockMemory is STOCK_PLANNER
    assert not substitution._installed


# ---- scripts -------------------------------------------------------------------------------------


def test_a_script_calling_tvm_compile_from_the_command_line(tmp_path):
    """The installed command's way in: the tool's stdout and exit status are its own, the
    summary line is on stderr."""
    script = _script(tmp_path, TINY)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "python"), str(ROOT)])}
    done = subprocess.run(
        [sys.executable, "-m", "tvm_memplan.cli", "run", str(script), "3"],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert done.returncode == 3, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1].startswith("result ")
    (line,) = _lines(done.stderr)
    assert "build 1 (tvm.compile, llvm): 1 Relax function planned" in line
    assert "1 of 1 concatenations copy-free" in line


def test_a_build_in_another_thread_gets_our_passes(tmp_path):
    """The substitution is process-wide: a thread the tool starts builds with our planner."""
    script = _script(
        tmp_path,
        TINY_BUILD
        + "\nimport threading\nt = threading.Thread(target=build)\nt.start()\nt.join()\n",
    )
    status, _, err = _run(["run", str(script)])
    assert status == 0
    (line,) = _lines(err)
    assert "1 Relax function planned" in line and "1 of 1 concatenations copy-free" in line


def test_each_build_gets_its_line_and_its_page(tmp_path):
    script = _script(tmp_path, TINY_BUILD + "\nbuild()\nbuild()\n")
    page = tmp_path / "report.html"
    status, _, err = _run(["run", "--report", str(page), str(script)])
    assert status == 0
    assert [line.split(":")[1] for line in _lines(err)] == [
        " build 1 (tvm.compile, llvm)",
        " build 2 (tvm.compile, llvm)",
    ]
    for path in (page, tmp_path / "report-2.html"):
        assert path.read_text().startswith("<!DOCTYPE html>")


def test_the_exit_status_of_sys_exit_with_a_message(tmp_path):
    """As Python: a message given to sys.exit is printed and the status is 1."""
    script = _script(tmp_path, TINY_BUILD + "\nbuild()\nsys.exit('stopped here')\n")
    status, _, err = _run(["run", str(script)])
    assert status == 1 and "stopped here" in err.splitlines()


# ---- bad input ---------------------------------------------------------------------------------


def _one_line_error(argv: list[str], status: int = 2) -> str:
    code, _, err = _run(argv)
    assert code == status
    lines = [line for line in err.splitlines() if line.startswith("tvm-memplan: error:")]
    assert len(lines) == 1, err
    return lines[0]


def test_a_module_that_does_not_exist():
    assert "no module named no_such_tool_here" in _one_line_error(
        ["run", "-m", "no_such_tool_here"]
    )


def test_a_script_that_does_not_exist(tmp_path):
    assert "no such script" in _one_line_error(["run", str(tmp_path / "missing.py")])


def test_a_script_that_fails_to_import(tmp_path):
    """A script that does not compile never runs: one line, exit 2."""
    script = _script(tmp_path, "print('never')\ndef broken(:\n")
    code, out, err = _run(["run", str(script)])
    assert code == 2 and "never" not in out
    (line,) = err.strip().splitlines()
    assert line.startswith("tvm-memplan: error:") and "cannot be imported: SyntaxError" in line


def test_a_tool_that_never_builds(tmp_path):
    script = _script(tmp_path, "print('hello')\n")
    code, out, err = _run(["run", str(script)])
    assert (code, out) == (2, "hello\n")
    assert err.strip() == "tvm-memplan: error: no TVM build ran: nothing to report"


def test_a_failing_tool_that_never_builds_keeps_its_status(tmp_path):
    script = _script(tmp_path, "import sys\nsys.exit(4)\n")
    code, _, err = _run(["run", str(script)])
    assert code == 4 and "no TVM build ran" in err


def test_a_crashing_tool_keeps_its_traceback_and_status(tmp_path):
    """A tool that raises while running (here after it built) shows its own traceback, from
    its own frames, exits 1 as Python would, and its build still gets its line."""
    script = _script(
        tmp_path,
        TINY_BUILD + "\nbuild()\nraise ValueError('boom')\n",
    )
    code, _, err = _run(["run", str(script)])
    assert code == 1
    trace = err[err.index("Traceback") :]
    frames = re.findall(r'File "([^"]+)"', trace)
    assert frames == [str(script)]
    assert "ValueError: boom" in trace
    assert len(_lines(err)) == 1


def test_report_files_must_be_html_or_json(tmp_path):
    script = _script(tmp_path, TINY)
    assert ".html or .json" in _one_line_error(["run", "--report", "r.txt", str(script)])


def test_unknown_options_of_run():
    assert "unknown option --fast" in _one_line_error(["run", "--fast", "tool.py"])
    assert "unknown option -x" in _one_line_error(["run", "-x", "tool.py"])


# ---- optimality (issue 30's records) ---------------------------------------------------------


def test_the_line_shows_how_optimal_the_plans_are():
    """The planner's optimality codes, counted over the functions, and the largest gap."""
    summary = BuildSummary(
        1,
        "tvm.compile",
        "llvm",
        functions=3,
        largest="main",
        planned=192,
        stock_same_ir=256,
        bound=128,
        inplace=0,
        optimality={"at_bound": 2, "best_found": 1},
        gap=64,
    )
    line = summary_line(summary)
    assert line.endswith("optimality: 2 at_bound, 1 best_found (largest gap 64 B)")
    assert "optimality" not in summary_line(BuildSummary(1, "tvm.compile", "llvm", functions=1))


def test_a_real_build_line_carries_the_records_optimality(tmp_path):
    from tvm_memplan import analysis

    (plan,) = analysis.memory_plan(_load_tiny(tmp_path), "llvm")
    script = _script(tmp_path, TINY)
    _, _, err = _run(["run", str(script)])
    (line,) = _lines(err)
    assert f"optimality: 1 {plan.optimality}" in line


def _load_tiny(tmp_path: Path) -> tvm.IRModule:
    path = _script(tmp_path, TINY, "tiny_module.py")
    spec = importlib.util.spec_from_file_location("tiny_module", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # TVMScript reads the source through sys.modules
    spec.loader.exec_module(module)
    return module.Module


def test_the_docs_show_what_the_run_printed(ours):
    """docs/pipelines.md's run of the stand-in is this command's output: every line it shows
    from tvm-memplan is a line the run printed (the tool's own lines name its files)."""
    page = (ROOT / "docs" / "pipelines.md").read_text()
    section = page.split("## MLC-LLM from the command line", 1)[1].split("\n## ", 1)[0]
    (block,) = [b for b in section.split("```")[1::2] if "--out outputs.npz" in b]
    shown = [line for line in block.splitlines() if line.startswith("tvm-memplan: build")]
    assert len(shown) > 5
    printed = ours["stderr"].splitlines()
    for line in shown:
        assert line in printed, line
    assert "temporary buffer: 65536 bytes (batch_prefill)" in block.splitlines()
    assert "temporary buffer: 65536 bytes (batch_prefill)" in ours["stdout"].splitlines()


def test_a_tir_only_build_says_so(tmp_path):
    """tvm.compile of a PrimFunc: no Relax function to plan, and our TIR passes ran."""
    script = _script(
        tmp_path,
        "import tvm\nfrom tvm.script import tirx as T\n\n\n"
        "@T.prim_func\n"
        "def add(A: T.Buffer((64,), 'float32'), B: T.Buffer((64,), 'float32')):\n"
        "    for i in range(64):\n"
        "        B[i] = A[i] + T.float32(1)\n\n\n"
        "tvm.compile(add, target='llvm')\n",
    )
    status, _, err = _run(["run", str(script)])
    assert status == 0
    (line,) = _lines(err)
    assert line.endswith(
        "build 1 (tvm.compile, llvm): a TIR-only build (1 PrimFuncs): no Relax function to "
        "plan; tvm-memplan's compaction and placement ran in its TIR pipeline"
    )


def test_the_report_shows_the_records_optimality(tmp_path):
    """The Relax plans' table of the report, as text and on the page, has an optimality column
    giving each plan's record."""
    from tvm_memplan.report import build_report, render_html, render_text

    mod = _load_tiny(tmp_path)
    report = build_report(mod, tvm.target.Target({"kind": "llvm"}))
    (function,) = report.relax
    text, page = render_text(report), render_html(report)
    header = next(
        line for line in text.splitlines() if line.strip().startswith("function  planned")
    )
    assert header.rstrip().endswith("optimality")
    assert f'<td class="optimality">{function.plan.optimality}' in page


class _Optimal:
    """A plan record with another optimality code and gap than the planner gave (the tiny
    plan is at its bound; the report must show a gap too)."""

    def __init__(self, plan, code: str, gap: int):
        self._plan, self.optimality, self.optimality_gap_bytes = plan, code, gap

    def __getattr__(self, name):
        return getattr(self._plan, name)


def test_the_report_shows_each_plans_optimality_code(tmp_path):
    """The text's plan table and the page's timeline table show a plan's optimality code and
    its gap."""
    from tvm_memplan.report import build_report, render_html, render_text

    report = build_report(_load_tiny(tmp_path), tvm.target.Target({"kind": "llvm"}))
    (function,) = report.relax
    function.plan = _Optimal(function.plan, "best_found", 64)
    text, page = render_text(report), render_html(report)
    rows = text.splitlines()
    at = next(i for i, line in enumerate(rows) if line.strip().startswith("function  planned"))
    assert rows[at].rstrip().endswith("optimality")
    assert rows[at + 1].rstrip().endswith("best_found (+64 B)")
    assert '<td class="optimality">best_found (+64 B)</td>' in page


def test_builds_run_under_the_tools_pass_context(tmp_path):
    """The trace of a build keeps the tool's PassContext: a config key the tool sets
    (StorageRewrite disabled) holds in the build as it would without the run."""
    mod = _load_tiny(tmp_path)
    config = {"tirx.disable_storage_rewrite": True}
    with recording_builds(RECORDED_PASSES) as builds:
        tvm.compile(mod, target="llvm")
        with tvm.transform.PassContext(opt_level=3, config=config):
            tvm.compile(mod, target="llvm")
    plain, configured = builds
    assert "tirx.StorageRewrite" in plain.traced.names
    assert "tirx.StorageRewrite" not in configured.traced.names
    assert configured.context["opt_level"] == 3
    assert bool(configured.context["config"]["tirx.disable_storage_rewrite"])


def test_the_search_budget_reaches_the_tools_builds(tmp_path):
    """Recorded with a budget (`run --exact-search-ms`), each build runs under a PassContext
    holding it, on top of the tool's own settings; the planner sees it there."""
    from tvm_memplan.analysis import search_config

    mod = _load_tiny(tmp_path)
    seen = []

    @tvm.transform.module_pass(opt_level=0)
    def look(m, ctx):
        seen.append(int(ctx.config["tvm_memplan.exact_search_ms"]))
        return m

    recording = recording_builds(RECORDED_PASSES, search_config(7))
    with recording as builds, tvm.transform.PassContext(opt_level=3):
        tvm.compile(
            mod,
            target="llvm",
            relax_pipeline=tvm.transform.Sequential([look, tvm.relax.get_pipeline("default")]),
        )
    (build,) = builds
    assert seen == [7]
    assert build.context["opt_level"] == 3
    assert int(build.context["config"]["tvm_memplan.exact_search_ms"]) == 7


def test_the_stand_ins_pipeline_ran_mlc_llm_order_with_ours(tmp_path):
    """Recorded as `run` records it, the stand-in's one build ran its own pipeline's passes in
    MLC-LLM's order, with ours in place of TVM's (the constructors it builds them with were
    substituted process-wide)."""
    from test_mlc_llm import MLC_LLM_ORDER, OURS

    with recording_builds(RECORDED_PASSES) as builds, contextlib.redirect_stdout(io.StringIO()):
        llm_compile.main(["--out", str(tmp_path / "outputs.npz")])
    (build,) = builds
    traced = build.traced
    own = [
        name
        for name, nesting in zip(traced.names, traced.nesting, strict=True)
        if nesting[-2:] == ("mlc_llm_pipeline", "sequential")
    ]
    assert own == [OURS.get(name, name) for name in MLC_LLM_ORDER]
