"""The report's in-place section: both runs of tvm-memplan's pass in the memplan build's Relax
pipeline (before LegalizeOps on operator calls, CPUs only; before RewriteDataflowReshape on the
final kernels), which run made each conversion, the same figures in text, JSON and on the page,
a failing run, and the plan being the one the memplan build really plans."""

from __future__ import annotations

import json

import pytest
import tvm
from models.stock_bugs import ConstantThroughAView
from test_html import Page, _resolve

import tvm_memplan
from tvm_memplan import transform
from tvm_memplan.analysis import storage_after_planning
from tvm_memplan.instrument import capture
from tvm_memplan.report import build_report, render_html, render_text, run_report
from zoo import models

CUDA = tvm.target.Target({"kind": "cuda"})
LLVM = tvm.target.Target({"kind": "llvm"})
OUR_PLANNER = "tvm_memplan.StaticPlanBlockMemory"


@pytest.fixture(scope="module")
def bundled():
    report = run_report(None)
    return report, render_text(report), render_html(report)


@pytest.fixture(scope="module")
def on_cuda():
    mod, _ = models.residual_net()
    report = build_report(mod, CUDA)
    return mod, report, render_text(report), render_html(report)


def _section(text: str) -> str:
    return text.split("\nIn-place calls (", 1)[1].split("\n\n", 1)[0]


def test_both_runs_are_counted_in_text_json_and_page(bundled):
    """The memplan figure is the sum of the runs'; each run's figure is on every output."""
    report, text, html = bundled
    runs = report.inplace.runs
    assert [r.name for r in runs] == ["before_legalization", "after_scheduling"]
    assert report.inplace.conversions["memplan"] == sum(r.conversions for r in runs) == 4
    section = _section(text)
    assert "2 with TVM's pass (stock build), 4 with tvm-memplan's (memplan build)" in section
    assert "  before LegalizeOps, on operator calls: 4" in section
    assert "  before RewriteDataflowReshape, on call_tir of the final" in section
    totals = text.split("Totals of each pass", 1)[1].splitlines()
    assert [line.split() for line in totals if line.startswith("    before legalization")] == [
        ["before", "legalization", "4"]
    ]
    data = json.loads(json.dumps(report.to_json()))
    page = Page(html)
    for i, run in enumerate(runs):
        assert data["inplace"]["runs"][i]["conversions"] == run.conversions
        ((span, _),) = page.find("span", data_figure=f"inplace.runs.{i}.conversions")
        assert span["data-value"] == str(run.conversions)
    ((span, _),) = page.find("span", data_figure="inplace.conversions.memplan")
    assert span["data-value"] == "4" == str(_resolve(data, "inplace.conversions.memplan"))


def test_each_conversion_names_its_run(bundled):
    """Every call made in place is listed with the run that made it; the second run sees them
    already in place."""
    report, text, _ = bundled
    before, after = report.inplace.runs
    rows = [line.split() for line in _section(text).splitlines() if " in place on " in line]
    made = [str(c.binding) for c in before.candidates["main"] if c.inplace]
    assert [row[:4] for row in rows] == [["before", "legalization", "main", b] for b in made]
    assert not any(c.inplace for c in after.candidates["main"])
    assert "after scheduling: 2 other call bindings stay as they are, 4 already in place" in text


def test_on_a_gpu_target_calls_go_in_place_after_scheduling_only(on_cuda):
    """No run before legalization on GPUs (the report says why); the run after scheduling makes
    fused, thread-bound kernels in place, each listed with its kernel."""
    _, report, text, html = on_cuda
    before, after = report.inplace.runs
    assert before.conversions is None and "not run on GPU targets" in before.skipped
    assert after.conversions == report.inplace.conversions["memplan"] > 0
    converted = [c for c in after.candidates["forward"] if c.inplace]
    assert len(converted) == after.conversions
    for c in converted:
        assert after.what("forward", c).startswith("call_tir fused_")
    assert f"before LegalizeOps, on operator calls: {before.skipped}" in _section(text)
    page = Page(html)
    assert not page.find("span", data_figure="inplace.runs.0.conversions")
    ((span, _),) = page.find("span", data_figure="inplace.runs.1.conversions")
    assert span["data-value"] == str(after.conversions)
    # The stock GPU build has no in-place pass either: dlight could not schedule its kernels.
    assert report.inplace.conversions["stock"] is None and not report.failures


@pytest.mark.parametrize("target", ["llvm", "cuda"])
def test_the_memplan_plan_is_the_one_the_build_plans(target, bundled, on_cuda):
    """The report plans what the memplan build's planner receives after both in-place runs:
    its VM figure is what tvm_memplan.compile allocates."""
    if target == "llvm":
        mod = tvm_memplan.report.load_module(tvm_memplan.examples.DEFAULT_EXAMPLE).mod
        report = bundled[0]
    else:
        mod, report = on_cuda[0], on_cuda[1]
    after = capture(lambda: tvm_memplan.compile(mod, target), [OUR_PLANNER], after=True)
    assert report.summary.memplan.vm == storage_after_planning(after[OUR_PLANNER]).total_bytes


def _failing(monkeypatch, run: str) -> None:
    """Make one run of our in-place pass raise inside the memplan pipeline."""

    @tvm.transform.module_pass(opt_level=0, name="tvm_memplan.DataflowUseInplaceCalls")
    def broken(mod, _ctx):
        raise ValueError("broken on purpose")

    if run == "before_legalization":
        # The pipeline builds LegalizeOps as it runs: its replacement runs the in-place pass
        # inside a pass of the same name (pipeline.py).
        def legalize(*_args, **_options):
            return tvm.transform.Sequential([broken], name="tvm_memplan.LegalizeOps")

        monkeypatch.setattr(transform, "LegalizeOpsAfterInplaceCalls", legalize)
        return
    real = transform.DataflowUseInplaceCalls

    def constructor(**options):
        first = options.get("gpu") is False  # pipeline.py: the run before LegalizeOps
        return real(**options) if first else broken

    monkeypatch.setattr(transform, "DataflowUseInplaceCalls", constructor)


@pytest.mark.parametrize("run", ["before_legalization", "after_scheduling"])
def test_a_failing_run_is_shown_and_the_rest_is_reported(monkeypatch, run):
    """The failure is in the in-place rows; the runs before it count; the memplan build is
    planned on what they returned (TVM's pipeline from there on)."""
    _failing(monkeypatch, run)
    report = run_report(None)
    (failure,) = report.failures
    assert failure.stage == f"inplace.memplan.{run}"
    assert "broken on purpose" in failure.error
    before, after = report.inplace.runs
    if run == "before_legalization":
        assert before.conversions is None and after.skipped == "not run: an earlier run fails"
        assert report.inplace.conversions["memplan"] is None
    else:
        assert before.conversions == 4 and after.conversions is None
        assert report.inplace.conversions["memplan"] == 4
    assert any("from the failing one on" in note for note in report.inplace.notes)
    assert report.relax[0].plan is not None and report.summary.memplan.vm is not None
    text = _section(render_text(report))
    assert f"{failure.what} fails on this model: " in text
    html = render_html(report)
    inplace = html.split('<section id="inplace">', 1)[1]
    assert f'data-stage="inplace.memplan.{run}"' in inplace


def test_the_fit_names_each_runs_refusal(tmp_path):
    """A VM contributor whose op no run computes in place says why, once per reason, naming
    the runs that gave it."""
    import onnx
    from onnx_models import conv_net

    path = tmp_path / "conv_net.onnx"
    onnx.save(conv_net(batch=2), str(path))
    report = run_report(str(path), budgets={"vm": 1})
    (vm,) = report.fit.budgets
    refused = [c for c in vm.contributors if "not computed in place: " in c.could]
    assert refused
    for c in refused:
        reasons = c.could.split("not computed in place: ", 1)[1]
        assert reasons.endswith("(before LegalizeOps, before RewriteDataflowReshape)")


def test_tvms_writes_into_a_constant_are_shown_not_counted_as_a_saving():
    """TVM's pass makes `b` write into a view of the constant `k`: the report names that call
    in its rows and JSON, and the stock figures are those of the call given a copy."""
    report = build_report(ConstantThroughAView, LLVM)
    (write,) = report.inplace.stock_unsafe_writes["main"]
    assert write.code == "constant"
    assert "TVM's pass writes into a constant" in _section(render_text(report))
    data = json.loads(json.dumps(report.to_json()))
    assert data["inplace"]["stock_unsafe_writes"]["main"][0]["code"] == "constant"
    assert 'id="stock-unsafe-writes"' in render_html(report)
