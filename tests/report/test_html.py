"""`tvm-memplan report --html`: the page's structure, every figure against the JSON, one
timeline per Relax function, self-containment, and a real browser opening the page and
hovering a tensor."""

from __future__ import annotations

import json
import os
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest
import tvm
from browser import Browser, chromium
from png import colors

from tvm_memplan.cli import main
from tvm_memplan.command_line import parse_budgets
from tvm_memplan.report import build_report, render_html, run_report
from tvm_memplan.report.model import SUMMARY_FIGURES
from zoo import models

TWO_FUNCTIONS = """
from tvm.script import ir as I
from tvm.script import relax as R


@I.ir_module
class Module:
    @R.function
    def first(x: R.Tensor((64, 64), "float32"), c: R.Tensor((), "bool")):
        a = R.exp(x)
        if c:
            b = R.exp(a)
            d = R.sigmoid(b)
            r = R.add(d, a)
        else:
            r = R.negative(a)
        e = R.concat((r, a), axis=0)
        return R.sum(e, axis=0)

    @R.function
    def second(x: R.Tensor((32, 32), "float32")):
        a = R.exp(x)
        b = R.exp(a)
        return R.add(a, b)
"""


class Page(HTMLParser):
    """The elements of a page, as (tag, attributes, enclosing tags), and their text."""

    def __init__(self, html: str):
        super().__init__()
        self.elements: list[tuple[str, dict, tuple]] = []
        self.stack: list[tuple[str, dict]] = []
        self.titles: list[tuple[tuple, str]] = []
        self.feed(html)

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        self.elements.append((tag, attrs, tuple(self.stack)))
        if tag not in ("meta", "br", "img", "input", "link"):  # HTML's void elements
            self.stack.append((tag, attrs))

    def handle_startendtag(self, tag, attrs):
        self.elements.append((tag, dict(attrs), tuple(self.stack)))

    def handle_endtag(self, tag):
        if any(t == tag for t, _ in self.stack):
            while self.stack.pop()[0] != tag:
                pass

    def handle_data(self, data):
        if self.stack and self.stack[-1][0] == "title":
            self.titles.append((tuple(self.stack[:-1]), data))

    def find(self, tag, **attrs):
        return [
            (a, inside)
            for t, a, inside in self.elements
            if t == tag and all(a.get(k.replace("_", "-")) == v for k, v in attrs.items())
        ]


def _resolve(data, path: str):
    for part in path.split("."):
        data = data[int(part)] if isinstance(data, list) else data[part]
    return data


@pytest.fixture(scope="module")
def two_functions(tmp_path_factory):
    source = tmp_path_factory.mktemp("html") / "model.py"
    source.write_text(TWO_FUNCTIONS)
    report = run_report(str(source), budgets=parse_budgets("vm=16KiB,stack=64K"))
    return report, render_html(report)


@pytest.fixture(scope="module")
def bundled():
    report = run_report(None)
    return report, render_html(report)


@pytest.fixture(scope="module")
def densenet():
    """The zoo's DenseNet: copy-free concatenations, tensors sharing bytes."""
    mod, _ = models.densenet()
    report = build_report(mod, tvm.target.Target({"kind": "llvm"}))
    return report, render_html(report)


@pytest.mark.parametrize("case", ["bundled", "two_functions", "densenet"])
def test_every_figure_is_the_json(case, request):
    report, html = request.getfixturevalue(case)
    data = json.loads(json.dumps(report.to_json()))
    figures = [a for t, a, _ in Page(html).elements if "data-figure" in a]
    assert len(figures) > 10
    for a in figures:
        value = _resolve(data, a["data-figure"])
        assert a["data-value"] == ("" if value is None else str(value)), a["data-figure"]


def test_the_summary_leads_the_page_with_both_builds(two_functions):
    report, html = two_functions
    page = Page(html)
    rows = {a["data-row"] for a, _ in page.find("tr") if "data-row" in a}
    assert rows == {key for key, _ in SUMMARY_FIGURES}
    for build in ("stock", "memplan"):
        for key in ("total", "held"):
            ((cell, _),) = page.find("td", data_figure=f"summary.{build}.{key}")
            assert cell["data-value"] == str(getattr(getattr(report.summary, build), key))


def test_one_timeline_per_relax_function_with_both_plans(two_functions):
    report, html = two_functions
    page = Page(html)
    articles = page.find("article")
    assert [a["data-function"] for a, _ in articles] == [f.function for f in report.relax]
    assert [f.function for f in report.relax] == ["first", "second"]
    for f in report.relax:
        plan = f.plan
        inside = [
            (a, enclosing)
            for a, enclosing in page.find("svg")
            if ("article", {"class": "timeline", "data-function": f.function}) in enclosing
        ]
        assert [a["class"] for a, _ in inside] == ["live", "lane", "lane"]
        assert [a.get("data-plan") for a, _ in inside[1:]] == ["ours", "stock"]
        # Each lane's total is the plan record's own figure.
        assert [int(a["data-total"]) for a, _ in inside[1:]] == [
            int(plan.planned_bytes),
            int(plan.stock_bytes),
        ]
        drawn = [t for t in plan.tensors if t.bytes > 0]
        for kind in ("ours", "stock"):
            rects = [
                a
                for a, enclosing in page.find("rect")
                if "data-binding" in a  # not a group's outline
                and any(tag == "svg" and attrs.get("data-plan") == kind for tag, attrs in enclosing)
                and ("article", {"class": "timeline", "data-function": f.function}) in enclosing
            ]
            assert sorted(r["data-binding"] for r in rects) == sorted(str(t.binding) for t in drawn)
            for r in rects:
                tensor = next(t for t in drawn if t.binding == r["data-binding"])
                assert int(r["data-bytes"]) == tensor.bytes
                storage = tensor.storage if kind == "ours" else tensor.stock_storage
                assert int(r["data-storage"]) == storage
                if kind == "ours" and storage >= 0:
                    base = sum(int(s.bytes) for s in list(plan.storages)[:storage])
                    assert int(r["data-offset"]) == base + tensor.offset


def test_each_rectangle_names_its_tensor(two_functions):
    """The tooltip names the op that made the tensor, its shape and the kernel writing it."""
    report, html = two_functions
    page = Page(html)
    checked = 0
    for f in report.relax:
        tensors = {
            str(t.binding): (t, writers)
            for t, writers in zip(f.plan.tensors, f.writers, strict=True)
        }
        article = ("article", {"class": "timeline", "data-function": f.function})
        for enclosing, text in page.titles:
            if enclosing[-1][0] != "rect" or article not in enclosing:
                continue
            binding = text.split(":", 1)[0]
            t, writers = tensors[binding]
            shape = "x".join(str(d) for d in t.shape)
            assert f"{shape} {t.dtype}, {t.bytes} B, written by kernel {t.op}" in text
            assert writers and text.startswith(f"{binding}: {writers[0].op}")
            checked += 1
    assert checked == 2 * sum(len(f.plan.tensors) for f in report.relax)


def test_the_page_is_self_contained(two_functions):
    _, html = two_functions
    page = Page(html)
    assert not page.find("script") and not page.find("link") and not page.find("img")
    assert not any("src" in a for _, a, _ in page.elements)
    assert html.count("http") == html.count('xmlns="http://www.w3.org/2000/svg"')


def test_tensor_tables_are_largest_first(two_functions):
    report, html = two_functions
    for f in report.relax:
        article = f'<article class="timeline" data-function="{f.function}">'
        section = html.split(article, 1)[1].split("</article>", 1)[0]
        rows = section.split('<table class="tensors">', 1)[1].split("<tr>")[2:]
        sizes = [int(row.split('class="num">', 1)[1].split("<", 1)[0]) for row in rows]
        assert sizes == sorted(sizes, reverse=True)


def test_the_fit_check_is_on_the_page(two_functions):
    report, html = two_functions
    assert report.fit is not None and not report.fit.fits
    assert 'id="fit"' in html and "does not fit" in html
    assert "could still shrink it" in html


def test_html_is_written_next_to_the_text(tmp_path, capsys):
    out = tmp_path / "report.html"
    assert main(["report", "--html", str(out)]) == 0
    assert "Memory to run the model" in capsys.readouterr().out
    assert out.read_text().startswith("<!DOCTYPE html>")


def test_an_unwritable_html_path_is_one_line(tmp_path, capsys):
    assert main(["report", "--html", str(tmp_path / "missing" / "r.html")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "cannot write" in err[0]


def _require_chromium() -> str:
    """Debian's chromium. CI (.ci/run) installs it and sets TVM_MEMPLAN_REQUIRE_BROWSER, so
    there the browser tests cannot be skipped."""
    browser = chromium()
    if browser is None:
        if os.environ.get("TVM_MEMPLAN_REQUIRE_BROWSER"):
            pytest.fail("chromium is not installed (apt-get install chromium)")
        pytest.skip(reason="chromium is not installed (apt-get install chromium); CI requires it")
    return browser


def test_the_page_renders_in_a_real_browser(two_functions, tmp_path):
    """Headless Chromium draws the page: the screenshot is not blank."""
    browser = _require_chromium()
    _, html = two_functions
    page = tmp_path / "report.html"
    page.write_text(html)
    shot = tmp_path / "shot.png"
    result = subprocess.run(
        [
            browser,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            "--window-size=1200,1600",
            f"--screenshot={shot}",
            page.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert colors(Path(shot).read_bytes()) > 30


def test_a_browser_shows_the_summary_first_and_hovers_a_tensor(two_functions, tmp_path):
    """Chromium opens the page: the first heading is the memory to run the model with the
    total of each build as the summary says; moving the mouse over a timeline rectangle hovers
    that tensor, whose tooltip names it."""
    report, html = two_functions
    page = tmp_path / "report.html"
    page.write_text(html)
    with Browser(_require_chromium()) as b:
        b.open(page.as_uri())
        first = b.evaluate("document.querySelector('h2').textContent")
        assert first == "Memory to run the model: the stock TVM build and the memplan build"
        totals = b.evaluate(
            "[...document.querySelectorAll('tr[data-row=total] td[data-figure]')]"
            ".map(td => td.textContent.trim())"
        )
        stock, memplan = report.summary.stock.total, report.summary.memplan.total
        assert totals[0].startswith(str(stock)) and totals[1].startswith(str(memplan))
        b.evaluate("document.querySelector('svg.lane[data-plan=ours]').scrollIntoView()")
        x, y = b.evaluate(
            "(() => { const r = document.querySelector('svg.lane[data-plan=ours] rect')"
            ".getBoundingClientRect(); return [r.x + r.width / 2, r.y + r.height / 2]; })()"
        )
        b.hover(x, y)
        hovered = b.evaluate(
            "(() => { const h = [...document.querySelectorAll('rect:hover')];"
            " return h.map(r => [r.dataset.binding, r.querySelector('title').textContent,"
            " getComputedStyle(r).strokeWidth]); })()"
        )
    assert len(hovered) == 1
    binding, title, stroke = hovered[0]
    assert title.startswith(f"{binding}: ") and stroke == "1.5px"
