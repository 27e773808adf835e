"""`tvm-memplan report --fit temp=SIZE --solve seq_len` on the zoo's LLM (bounded as MLC-LLM's
pipeline bounds it): the answer is the planners' own boundary (N fits, N + 1 does not), checked
against the planner run at those sizes; the figures are formulas of the variable where one
holds; the page draws the curve, and a browser finds the answer where the curve crosses the
budget."""

from __future__ import annotations

import html
import json
from pathlib import Path

import pytest
import tvm
from browser import Browser
from test_html import Page, _require_chromium, _resolve

from tvm_memplan import analysis
from tvm_memplan.cli import main
from tvm_memplan.report import ReportError, build_report, render_html, render_text, solve
from tvm_memplan.report.solve import figure_at
from zoo import llm

CONFIG = llm.TEST
LLVM = tvm.target.Target({"kind": "llvm"})
VALUES = {"vocab_size": CONFIG.vocab_size, "kv_len": CONFIG.context_window_size}
LIMIT = 1 << 20


def _bounded_llm() -> tvm.IRModule:
    """The zoo's Llama with the attributes MLC-LLM's pipeline attaches first (the bounds of
    seq_len, total_seq_len and batch_size, and the planned outputs)."""
    mod, _ = llm.llm_module(CONFIG, LLVM)
    for attach in llm.mlc_llm_passes(LLVM, CONFIG.variable_bounds)[:2]:
        mod = attach(mod)
    return mod


@pytest.fixture(scope="module")
def solved():
    report = build_report(_bounded_llm(), LLVM, shape_values=VALUES)
    report.solution = solve(report, "seq_len", "vm", LIMIT, VALUES)
    return report


def _planned_at(report, build: str, seq_len: int) -> int:
    """The build's VM figure with seq_len bounded at ``seq_len``, from the planner directly:
    the build's planner input with every function's bound set, planned, and evaluated at the
    other values (``memory_plan_at``); the largest function's."""
    return max(_functions_at(report, build, seq_len).values())


def _functions_at(report, build: str, seq_len: int) -> dict[str, int]:
    """Per function, its bytes as ``_planned_at`` plans them."""
    mod = report.planner_inputs[build]
    functions = {}
    for gv, func in mod.functions.items():
        if isinstance(func, tvm.relax.Function):
            bounds = dict(func.attrs["tir_var_upper_bound"]) if func.attrs else {}
            func = func.with_attr("tir_var_upper_bound", {**bounds, "seq_len": seq_len})
        functions[gv] = func
    plans = analysis.memory_plan(tvm.IRModule(functions), LLVM, pipeline=None)
    figures = {}
    for plan in plans:
        at = analysis.memory_plan_at(plan, {"vocab_size": CONFIG.vocab_size})
        figures[str(plan.function)] = (
            int(at.stock_bytes) if build == "stock" else int(at.applied_bytes)
        )
    return figures


@pytest.mark.parametrize("build", ["stock", "memplan"])
def test_the_answer_is_the_planners_boundary(solved, build):
    """N fits the budget and N + 1 does not, both with the planners run at those bounds."""
    n = solved.solution.largest[build]
    assert n is not None and not solved.solution.capped[build]
    assert _planned_at(solved, build, n) <= LIMIT < _planned_at(solved, build, n + 1)


def test_ours_fits_a_longer_prefill_chunk(solved):
    largest = solved.solution.largest
    assert largest["memplan"] > largest["stock"]


def test_at_the_built_bound_the_figures_are_the_summarys(solved):
    """Planned again at the bound the module was built with, each build's figure is the
    summary's VM figure."""
    at_bound = figure_at(solved, "seq_len", CONFIG.prefill_chunk_size, VALUES)
    assert at_bound == {"stock": solved.summary.stock.vm, "memplan": solved.summary.memplan.vm}
    (point,) = [p for p in solved.solution.curve if p.value == CONFIG.prefill_chunk_size]
    assert (point.stock, point.memplan) == (solved.summary.stock.vm, solved.summary.memplan.vm)


def _formula(text: str) -> tuple[int, int, int]:
    """``a*seq_len + b for seq_len >= start`` -> (a, b, start); a constant is (0, b, 1)."""
    formula, _, start = text.partition(" for seq_len >= ")
    a, b = 0, 0
    for term in formula.split(" + "):
        if term == "seq_len":
            a = 1
        elif term.endswith("*seq_len"):
            a = int(term.removesuffix("*seq_len"))
        else:
            b = int(term)
    return a, b, int(start or 1)


@pytest.mark.parametrize("build", ["stock", "memplan"])
def test_the_formula_holds_between_the_points_planned(solved, build):
    """The model's figure as a formula of seq_len holds at values the curve did not plan
    (checked with the planner at those bounds)."""
    a, b, start = _formula(solved.solution.formulas[build]["model"])
    planned = {p.value for p in solved.solution.curve}
    top = max(planned)
    for value in (start + 3, (start + top) // 2 + 1, top - 1):
        assert value not in planned and start <= value <= top
        assert _planned_at(solved, build, value) == a * value + b, value


def test_functions_without_seq_len_have_no_formula(solved):
    """Only functions whose planned bytes change with seq_len are listed."""
    for build in ("stock", "memplan"):
        assert "decode" not in solved.solution.formulas[build]
        assert "prefill" in solved.solution.formulas[build]


def test_the_text_gives_both_answers_and_the_boundary(solved):
    text = render_text(solved)
    s = solved.solution
    for build, label in (("stock", "stock (TVM's planner)"), ("memplan", "memplan (ours)")):
        n = s.largest[build]
        (row,) = [line for line in text.splitlines() if line.strip().startswith(label)]
        assert f"up to {n}" in row and f"at {n + 1}" in row


def test_solving_an_unplanned_variable_is_refused(solved):
    with pytest.raises(ValueError, match="no planned size depends on n_tokens"):
        solve(solved, "n_tokens", "vm", LIMIT, VALUES)


def test_only_the_vm_budget_is_solved(solved):
    with pytest.raises(ValueError, match="only the vm budget"):
        solve(solved, "seq_len", "total", LIMIT, VALUES)


@pytest.fixture(scope="module")
def llm_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("llm") / "llm_model.py"
    path.write_text(
        "from test_solve import _bounded_llm\n\n\ndef build():\n    return _bounded_llm()\n"
    )
    return path


def _values() -> list[str]:
    return [arg for k, v in VALUES.items() for arg in ("--shape-var", f"{k}={v}")]


def test_the_command_solves_with_temp(llm_file, capsys, solved):
    """`--fit temp=1MiB --solve seq_len` (temp: MLC-LLM's name for the VM figure) prints the
    same answers, and the JSON carries them."""
    argv = ["report", str(llm_file), "--fit", "temp=1MiB", "--solve", "seq_len", *_values()]
    assert main([*argv, "--json"]) in (0, 1)
    data = json.loads(capsys.readouterr().out)
    assert data["solution"]["largest"] == solved.solution.largest
    assert data["solution"]["budget"] == "vm" and data["solution"]["limit"] == LIMIT


def _our_lines(stderr: str) -> list[str]:
    """The errors the command printed."""
    return [line for line in stderr.splitlines() if line.startswith("tvm-memplan: error:")]


def test_solve_needs_a_vm_budget(llm_file, capsys):
    assert main(["report", str(llm_file), "--fit", "stack=4KiB", "--solve", "seq_len"]) == 2
    (line,) = _our_lines(capsys.readouterr().err)
    assert "--solve seq_len needs a budget it can solve for: --fit vm=SIZE" in line


def test_solve_of_an_unknown_variable_is_one_line(llm_file, capsys):
    argv = ["report", str(llm_file), "--fit", "vm=1MiB", "--solve", "nope", *_values()]
    assert main(argv) == 2
    (line,) = _our_lines(capsys.readouterr().err)
    assert line.startswith("tvm-memplan: error: --solve nope: no planned size depends on nope")


@pytest.fixture(scope="module")
def page(solved):
    return render_html(solved)


def test_the_page_carries_the_answers_as_the_json(solved, page):
    data = json.loads(json.dumps(solved.to_json()))
    figures = [a for _, a, _ in Page(page).elements if a.get("data-figure", "").startswith("sol")]
    assert {a["data-figure"] for a in figures} == {
        "solution.limit",
        "solution.largest.stock",
        "solution.largest.memplan",
    }
    for a in figures:
        assert a["data-value"] == str(_resolve(data, a["data-figure"]))


def test_a_browser_sees_each_curve_cross_the_budget_at_its_answer(solved, page, tmp_path):
    """Chromium draws the curve: for each build, the point at its answer is on or below the
    budget line and the next one above it, and its answer line stands at that point."""
    path = tmp_path / "solve.html"
    path.write_text(page)
    with Browser(_require_chromium()) as b:
        b.open(path.as_uri())
        b.evaluate("document.querySelector('svg.solve-curve').scrollIntoView()")
        budget = b.evaluate(
            "document.querySelector('svg.solve-curve line.budget').getBoundingClientRect().y"
        )
        for build in ("stock", "memplan"):
            n = solved.solution.largest[build]
            where = b.evaluate(
                f"""(() => {{
                const at = x => document.querySelector(
                    `svg.solve-curve circle[data-build={build}][data-x="${{x}}"]`
                ).getBoundingClientRect();
                const answer = document.querySelector(
                    'svg.solve-curve line.answer[data-build={build}]'
                ).getBoundingClientRect();
                const p = at({n}), q = at({n + 1});
                return [p.y + p.height / 2, q.y + q.height / 2, p.x + p.width / 2, answer.x];
                }})()"""
            )
            fits_y, past_y, fits_x, answer_x = where
            assert fits_y >= budget - 0.5 and past_y < budget, build
            assert abs(fits_x - answer_x) < 1.5, build


def test_a_report_without_relax_cannot_be_solved():
    from tvm_memplan.report import run_report

    with pytest.raises(ReportError):
        run_report(None, budgets={"stack": 1 << 20}, solve_for="seq_len")


def test_the_docs_example_is_the_solvers_output(solved):
    """Every line of docs/report.md's --solve example is a line of this report."""
    page = (Path(__file__).resolve().parents[2] / "docs" / "report.md").read_text()
    section = page.split("## What fits: `--solve`", 1)[1].split("\n## ", 1)[0]
    (block,) = [b for b in section.split("```")[1::2] if "Solve seq_len" in b]
    actual = render_text(solved).splitlines()
    for line in block.strip().splitlines():
        assert line in actual, line


def test_every_report_gives_the_functions_formulas_of_seq_len(solved):
    """Without --solve, the report gives each function's planned bytes as a formula of each
    bounded variable; a formula of seq_len holds at values it was not planned at."""
    per = solved.formulas["seq_len"]
    assert "left_out" not in solved.formulas  # vocab_size has a value
    checked = 0
    for build in ("stock", "memplan"):
        assert {"prefill", "batch_prefill", "embed"} <= set(per[build])
        for value in (50, 100):
            planned = _functions_at(solved, build, value)
            for name, formula in per[build].items():
                if formula is None:
                    continue
                a, b, start = _formula(formula)
                if value >= start:
                    assert planned[name] == a * value + b, (build, name, value)
                    checked += 1
    assert checked >= 10
    lines = render_text(solved).splitlines()
    (row,) = [line for line in lines if line.split()[:2] == ["seq_len", "prefill"]]
    assert per["stock"]["prefill"] in row and per["memplan"]["prefill"] in row


def test_what_depends_on_a_variable_without_a_value_is_left_out_and_said():
    report = build_report(_bounded_llm(), LLVM)
    assert report.formulas["left_out"] == ["vocab_size"]
    assert "without what depends on vocab_size" in render_text(report)
    assert "seq_len" in report.formulas


def test_the_page_lists_the_formulas(solved, page):
    """The page's formulas table has a row per variable and function, with both builds'."""
    rows = Page(page).find("tr", data_variable="seq_len", data_function="prefill")
    assert len(rows) == 1
    per = solved.formulas["seq_len"]
    row = page.split('data-variable="seq_len" data-function="prefill">', 1)[1].split("</tr>")[0]
    row = html.unescape(row)
    assert per["stock"]["prefill"] in row and per["memplan"]["prefill"] in row
