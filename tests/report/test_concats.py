"""The report's concatenations: what became of each one in the memplan build (copy-free, or the
copy it keeps and why), the same in text, JSON and on the page; tensors that share bytes drawn
so on the timeline; the fit advice naming what would make a copy go, or that it is gone."""

from __future__ import annotations

import json
import re
from pathlib import Path

import onnx
import pytest
import tvm
from onnx_models import conv_net
from test_html import Page
from tvm.script import ir as I
from tvm.script import relax as R

from tvm_memplan.analysis import codes
from tvm_memplan.report import build_report, check_fit, render_html, render_text, run_report
from tvm_memplan.report.views import concat_rows, lift
from zoo import models

LLVM = tvm.target.Target({"kind": "llvm"})
DOCS = Path(__file__).resolve().parents[2] / "docs"


@pytest.fixture(scope="module")
def conv_nets(tmp_path_factory):
    """The ONNX conv net at batch 1 (its concatenation is copy-free) and batch 2 (the slices of
    its inputs are not contiguous: it keeps its copy)."""
    directory = tmp_path_factory.mktemp("concat")
    reports = {}
    for batch in (1, 2):
        path = directory / f"conv_net_{batch}.onnx"
        onnx.save(conv_net(batch=batch), str(path))
        reports[batch] = run_report(str(path), budgets={"vm": 1})
    return reports


@pytest.fixture(scope="module")
def densenet():
    mod, _ = models.densenet()
    report = build_report(mod, LLVM)
    return report, render_html(report)


def test_the_documented_codes_are_the_cpp_table():
    """The pass page's table of concatenation decisions (docs/passes/static_plan_block_memory.md)
    is the C++ table's codes and sentences, in its order."""
    page = (DOCS / "passes" / "static_plan_block_memory.md").read_text()
    table = page.split("| decision | condition |", 1)[1].split("\n\n", 1)[0]
    shown = dict(re.findall(r"^\| `(\w+)` \| (.*) \|$", table, re.MULTILINE))
    assert list(shown.items()) == [(v, c.sentence) for v, c in codes("concat").items()]


def test_every_refusal_code_has_what_would_lift_it():
    """Each code that keeps a copy says what would make it copy-free (or why nothing can), and
    the report reads it from the C++ table."""
    for value, code in codes("concat").items():
        assert bool(code.remedy) == (value != "copy_free"), value
        assert lift(value) == code.remedy
    assert lift("no_such_code") == ""


@pytest.mark.parametrize(
    ("batch", "copy_free", "decision"), [(1, True, "copy_free"), (2, False, "not_contiguous")]
)
def test_each_concatenation_is_reported_with_its_decision(conv_nets, batch, copy_free, decision):
    report = conv_nets[batch]
    (f,) = report.relax
    (record,) = f.plan.concats
    assert (bool(record.copy_free), str(record.decision)) == (copy_free, decision)
    assert (report.concats.count, report.concats.copy_free) == (1, int(copy_free))
    # Named after the source model: the ONNX Concat's output.
    (row,) = concat_rows(report)
    assert row.made_by.op == "concat" and row.made_by.source == "cat"
    text = render_text(report)
    section = text.split("Concatenations (", 1)[1].split("\nIn-place calls", 1)[0]
    assert f"{int(copy_free)} of 1 copy-free in the memplan build" in section
    assert "the stock build copies every one" in section
    (line,) = [line for line in section.splitlines() if line.startswith("  main ")]
    assert "concat" in line and "(cat)" in line
    if copy_free:
        assert line.endswith("copy-free")
    else:
        assert line.endswith(f"copies: {record.reason} (not_contiguous)")
        assert f"1 keeps its copy (not_contiguous); what would lift it: {lift(decision)}" in (
            section
        )
    page = Page(render_html(report))
    ((tr, _),) = page.find("tr", data_output=str(record.output))
    assert tr["data-copy-free"] == ("yes" if copy_free else "no")
    data = json.loads(json.dumps(report.to_json()))
    assert data["concats"]["count"] == 1 and data["concats"]["copy_free"] == int(copy_free)
    assert data["relax"][0]["plan"]["concats"][0]["decision"] == decision


def test_a_concatenation_that_copies_is_advice_for_the_fit(conv_nets):
    """Batch 2: the concatenation's output and inputs are live at the peak; each names the
    copy the concatenation keeps, why, and what would make it copy-free."""
    (vm,) = conv_nets[2].fit.budgets
    (record,) = conv_nets[2].relax[0].plan.concats
    involved = {str(record.output), *(str(i) for i in record.inputs)}
    advised = [c for c in vm.contributors if c.name in involved]
    assert advised
    for c in advised:
        assert f"{record.output} = {record.callee}(" in c.could
        assert f"keeps its copy (not_contiguous: {record.reason})" in c.could
        assert f"it would be copy-free with {lift('not_contiguous')}" in c.could
        assert "copy-free concatenation" not in c.done


def test_a_copy_free_concatenation_is_already_done(conv_nets):
    """Batch 1: the output of the copy-free concatenation says the copy is gone, and nothing
    about the concatenation is left to do."""
    (vm,) = conv_nets[1].fit.budgets
    (record,) = conv_nets[1].relax[0].plan.concats
    (output,) = [c for c in vm.contributors if c.name == str(record.output)]
    assert f"made by the copy-free concatenation {record.output} = {record.callee}(" in output.done
    assert "nothing is copied" in output.done
    assert "concatenation" not in output.could


def test_an_input_of_several_copy_free_concatenations_names_them_once(densenet):
    """DenseNet: a feature sits in the prefix of every later concatenation of its block; its
    fit entry names all their outputs in one phrase, as done."""
    report, _ = densenet
    plan = report.relax[0].plan
    (vm,) = check_fit(report, {"vm": 1}).budgets
    checked = 0
    for c in vm.contributors:
        outputs = [str(k.output) for k in plan.concats if c.name in [str(i) for i in k.inputs]]
        if len(outputs) < 2:
            continue
        listed = ", ".join(f"`{o}`" for o in outputs[:-1]) + f" and `{outputs[-1]}`"
        assert f"computed directly into its slice of {listed} (copy-free concatenations)" in (
            c.done
        )
        assert c.done.count("copy-free") == 1 and "concatenation" not in c.could
        checked += 1
    assert checked >= 2


def test_bytes_with_copies_are_our_planner_without_copy_free_concat(densenet):
    """The memplan build's VM bytes against the same planner keeping every copy, on the same
    IR: the figure is what the planner plans with copy_free_concat=False."""
    report, html = densenet
    (f,) = report.relax
    assert f.with_copies == 491560 and report.summary.memplan.vm == 393256
    text = render_text(report)
    assert (
        "forward: the memplan build plans 393256 B; with every concatenation copying "
        "(copy_free_concat=False) 491560 B, 0.800"
    ) in text
    assert report.concats.count == report.concats.copy_free == 8
    page = Page(html)
    ((cell, _),) = page.find("td", data_figure="relax.0.with_copies")
    assert cell["data-value"] == "491560"
    ((count, _),) = page.find("span", data_figure="concats.copy_free")
    assert count["data-value"] == "8"


def test_tensors_that_share_bytes_are_drawn_sharing_them(densenet):
    """On our plan's lane, a concatenation's inputs are drawn inside its output's rectangle
    rows (at their slice), translucent, in one outline per group whose tooltip names the
    copy-free concatenations; each member's tooltip says what it shares."""
    report, html = densenet
    plan = report.relax[0].plan
    page = Page(html)
    ours = [
        (a, inside)
        for a, inside in page.find("rect")
        if any(tag == "svg" and attrs.get("data-plan") == "ours" for tag, attrs in inside)
    ]
    drawn = {a["data-binding"]: a for a, _ in ours if "data-binding" in a}
    tensors = {str(t.binding): t for t in plan.tensors}
    for c in plan.concats:
        output = drawn[str(c.output)]
        assert output["class"] == "grouped"
        for name in c.inputs:
            rect = drawn[str(name)]
            slice_start = int(rect["data-offset"])
            assert rect["data-group"] == output["data-group"]
            assert int(output["data-offset"]) <= slice_start
            assert slice_start + int(rect["data-bytes"]) <= int(output["data-offset"]) + int(
                output["data-bytes"]
            )
            assert slice_start - int(output["data-offset"]) == (
                tensors[str(name)].group_offset - tensors[str(c.output)].group_offset
            )
    outlines = [a for a, _ in ours if a.get("class") == "group"]
    assert sorted(a["data-group"] for a in outlines) == ["0", "1"]
    titles = [text for inside, text in page.titles if inside[-1][1].get("class") == "group"]
    first = next(c for c in plan.concats)
    assert any(f"{first.output} = {first.callee}(" in t for t in titles)
    member = next(
        text
        for inside, text in page.titles
        if inside[-1][1].get("data-binding") == str(first.inputs[0])
        and any(attrs.get("data-plan") == "ours" for _, attrs in inside)
    )
    assert "shares bytes with the tensors of group" in member
    assert f"written at its slice of {first.output} = {first.callee}(...), copy-free" in member


def test_the_live_curve_counts_shared_bytes_once(densenet):
    report, _ = densenet
    plan = report.relax[0].plan
    assert max(plan.live_bytes()) <= plan.peak_live_bytes


def test_without_concatenations_there_is_no_section():
    mod, _ = models.mlp()
    report = build_report(mod, LLVM)
    assert report.concats.count == 0
    assert "Concatenations (" not in render_text(report)
    assert 'id="concats"' not in render_html(report)
    assert all(f.with_copies is None for f in report.relax)


def test_the_same_ir_is_planned_without_copy_free_concat():
    """with_copies comes from our planner with copy_free_concat=False on exactly the IR the
    memplan build's planner receives: the same tensors, every concatenation "disabled"."""
    mod, _ = models.unet()
    report = build_report(mod, LLVM)
    (f,) = report.relax
    assert f.copies_plan is not None
    assert {str(c.decision) for c in f.copies_plan.concats} == {"disabled"}
    assert [str(t.binding) for t in f.copies_plan.tensors] == [
        str(t.binding) for t in f.plan.tensors
    ]
    assert (report.summary.memplan.vm, f.with_copies) == (139264, 204800)
    assert "copies_plan" not in report.to_json()["relax"][0]


def test_a_browser_hovers_a_tensor_that_shares_bytes(densenet, tmp_path):
    """Chromium opens DenseNet's page; the mouse over the last tensor drawn in a group hovers
    that tensor (the group's outline does not take the pointer), and its tooltip names the
    concatenation whose bytes it shares."""
    from browser import Browser
    from test_html import _require_chromium

    _, html = densenet
    page = tmp_path / "densenet.html"
    page.write_text(html)
    with Browser(_require_chromium()) as b:
        b.open(page.as_uri())
        b.evaluate("document.querySelector('svg.lane[data-plan=ours]').scrollIntoView()")
        binding, x, y = b.evaluate(
            "(() => { const all = document.querySelectorAll("
            "'svg.lane[data-plan=ours] rect.grouped'); const r = all[all.length - 1];"
            " const box = r.getBoundingClientRect();"
            " return [r.dataset.binding, box.x + box.width / 2, box.y + box.height / 2]; })()"
        )
        b.hover(x, y)
        hovered = b.evaluate(
            "[...document.querySelectorAll('rect:hover')]"
            ".map(r => [r.dataset.binding, r.querySelector('title').textContent])"
        )
    assert len(hovered) == 1
    name, title = hovered[0]
    assert name == binding and title.startswith(f"{binding}: ")
    assert "shares bytes with the tensors of group" in title
    assert "copy-free" in title


@I.ir_module
class BatchedDenseBlock:
    """DenseNet's prefix concatenations at batch 2: no input is one contiguous slice."""

    @R.function
    def main(x: R.Tensor((2, 16, 64), "float32")):
        with R.dataflow():
            a = R.exp(x)
            b = R.sigmoid(a)
            c1 = R.concat((a, b), axis=1)
            c = R.tanh(R.sum(c1, axis=1, keepdims=True) + a)
            c2 = R.concat((a, b, c), axis=1)
            d = R.sum(c2, axis=1)
            R.output(d)
        return d


def test_concatenations_that_copy_for_one_reason_are_named_together():
    """`a` feeds two concatenations that keep their copies for the same reason: its fit entry
    names both outputs in one phrase, then what would make them copy-free, once."""
    report = build_report(BatchedDenseBlock, LLVM)
    plan = report.relax[0].plan
    assert [str(c.decision) for c in plan.concats] == ["not_contiguous"] * 2
    (vm,) = check_fit(report, {"vm": 1}).budgets
    first, second = plan.concats
    shared = [c for c in vm.contributors if c.name in set(map(str, first.inputs))]
    assert shared
    for c in shared:
        assert (
            f"the concatenations into `{first.output}` and `{second.output}` keep their copies "
            f"(not_contiguous: {first.reason})"
        ) in c.could
        assert c.could.count("would be copy-free with") == 1
        assert f"they would be copy-free with {lift('not_contiguous')}" in c.could
