"""Symbolic sizes in the report, on an MLC-LLM-style decoder (`tests/models/decoder.py`,
`relax.frontend.nn` with a symbolic `seq_len`): figures at the `tir_var_upper_bound` and
labelled so; without a bound, expressions of `seq_len`, evaluated at values given with
`--shape-var`; `--fit` needs a value or a bound for every variable; the timeline is drawn at
the bound or the given values."""

from __future__ import annotations

import json

import pytest
import tvm
from models.decoder import decoder_module
from test_html import Page

from tvm_memplan import analysis, pipeline
from tvm_memplan.analysis import storage_after_planning
from tvm_memplan.cli import main
from tvm_memplan.instrument import capture
from tvm_memplan.report import (
    ReportError,
    UnknownSizesError,
    build_report,
    check_fit,
    render_html,
    render_text,
)
from tvm_memplan.report.sizes import evaluate

LLVM = tvm.target.Target({"kind": "llvm"})
BOUND = 64
OUR_PLANNER = "tvm_memplan.StaticPlanBlockMemory"


@pytest.fixture(scope="module")
def bounded():
    return build_report(decoder_module(BOUND), LLVM)


@pytest.fixture(scope="module")
def unbounded():
    return build_report(decoder_module(None), LLVM)


@pytest.fixture(scope="module")
def planned_ir():
    """The memplan build's Relax right after our planner, bounded and unbounded: what the VM
    allocates, counted from the IR (the independent count)."""

    def planned(mod):
        return capture(lambda: pipeline.compile(mod, LLVM), [OUR_PLANNER], after=True)[OUR_PLANNER]

    return {"bounded": planned(decoder_module(BOUND)), "unbounded": planned(decoder_module(None))}


def test_a_bounded_decoder_is_reported_at_its_bound(bounded, planned_ir):
    """The VM figure is the plan at seq_len = 64, the bound, and says so; it is what the
    planned IR allocates at that length."""
    summary = bounded.summary
    assert summary.evaluated_at == {"seq_len": BOUND}
    assert summary.value_sources == {"seq_len": "bound"}
    assert not summary.unknown_vars
    counted = storage_after_planning(planned_ir["bounded"]).total_bytes
    assert summary.memplan.vm == evaluate(counted, {"seq_len": BOUND})
    for needs in (summary.stock, summary.memplan):
        assert None not in (needs.weights, needs.vm, needs.workspace, needs.stack, needs.total)
        assert needs.total == needs.weights + needs.vm + needs.workspace + needs.stack
    text = render_text(bounded)
    assert "symbolic sizes evaluated at seq_len=64 (bound)" in text


def test_the_kernels_workspace_is_taken_at_the_bound(bounded):
    """Each workspace allocation of the attention kernel is (1, 4, seq_len, seq_len) floats or
    smaller: at the bound, the kernel's figure is the sum of its allocations' shapes at 64."""
    kernel = next(k for k in bounded.kernels if k.name == "attention_inplace")
    expected = 0
    assert kernel.placement
    for d in kernel.placement:
        assert d.nbytes is None and d.placement == "workspace"
        elements = 1
        for extent in d.shape:
            elements *= extent if isinstance(extent, int) else evaluate(extent, {"seq_len": 64})
        expected += elements * 4
    assert kernel.workspace["memplan"] == expected
    in_memplan = [k for k in bounded.kernels if "memplan" in k.builds]
    assert bounded.summary.memplan.workspace == max(k.workspace["memplan"] for k in in_memplan)
    # Kernels of the stock build only (TVM's in-place pass makes none of ours) have no figure.
    assert all(k.workspace["memplan"] is None for k in bounded.kernels if k not in in_memplan)


def test_an_unbounded_decoder_shows_expressions(unbounded):
    """Without a bound or a value, the figures that depend on seq_len are expressions of it:
    no number, and the report says which variable needs a value."""
    summary = unbounded.summary
    assert summary.unknown_vars == ["seq_len"] and summary.evaluated_at == {}
    assert summary.memplan.vm is None and summary.memplan.total is None
    assert "seq_len" in summary.memplan.symbolic["vm"]
    assert summary.memplan.weights is not None and summary.memplan.stack is not None
    text = render_text(unbounded)
    (vm_line,) = [line for line in text.splitlines() if line.startswith("  VM, planned")]
    assert summary.stock.symbolic["vm"] in vm_line and summary.memplan.symbolic["vm"] in vm_line
    data = json.loads(json.dumps(unbounded.to_json()))
    assert data["summary"]["memplan"]["vm"] is None
    assert data["summary"]["memplan"]["symbolic"]["vm"] == summary.memplan.symbolic["vm"]


@pytest.mark.parametrize("seq_len", [1, 128, 3000])
def test_given_values_evaluate_the_expressions(seq_len, planned_ir):
    """At any length, the VM figure is what the planned IR allocates at that length."""
    report = build_report(decoder_module(None), LLVM, shape_values={"seq_len": seq_len})
    summary = report.summary
    assert summary.evaluated_at == {"seq_len": seq_len}
    assert summary.value_sources == {"seq_len": "given"}
    counted = storage_after_planning(planned_ir["unbounded"]).total_bytes
    assert summary.memplan.vm == evaluate(counted, {"seq_len": seq_len})
    assert summary.memplan.total == sum(
        getattr(summary.memplan, p) for p in ("weights", "vm", "workspace", "stack")
    )


def test_a_value_past_the_bound_is_said_to_raise():
    report = build_report(decoder_module(BOUND), LLVM, shape_values={"seq_len": 100})
    assert any(
        "seq_len = 100 is past its tir_var_upper_bound 64" in n for n in report.summary.notes
    )


def test_values_for_unknown_variables_are_refused():
    with pytest.raises(ReportError, match="name n, which no size of this model depends on"):
        build_report(decoder_module(None), LLVM, shape_values={"n": 4})


def test_fit_needs_a_value_for_every_variable(unbounded):
    with pytest.raises(UnknownSizesError) as err:
        check_fit(unbounded, {"total": 1 << 30})
    assert err.value.variables == ["seq_len"]
    # Even for a figure that does not depend on seq_len: the check is of the whole build.
    with pytest.raises(UnknownSizesError):
        check_fit(unbounded, {"weights": 1 << 30})


@pytest.fixture(scope="module")
def decoder_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("decoder") / "decoder.py"
    path.write_text(
        "from models.decoder import decoder_module\n\n\ndef build():\n"
        "    return decoder_module(None)\n"
    )
    return path


def test_the_command_line_names_the_missing_variables(decoder_file, capsys):
    assert main(["report", str(decoder_file), "--fit", "total=1GiB"]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()[-1:]
    assert line == (
        "tvm-memplan: error: --fit needs a value for each shape variable without a bound: "
        "--shape-var seq_len=N"
    )
    argv = ["report", str(decoder_file), "--fit", "total=1GiB", "--shape-var", "seq_len=128"]
    assert main(argv) == 0
    assert "symbolic sizes evaluated at seq_len=128 (given)" in capsys.readouterr().out


def test_the_timeline_is_drawn_at_the_bound(bounded):
    """The page draws the plan at the bound: each rectangle's bytes are the tensor's size at
    seq_len = 64, and the lanes' totals the plan's bytes there."""
    page = Page(render_html(bounded))
    (f,) = bounded.relax
    plan = f.plan
    assert f.plan_at is not None
    at = {"seq_len": BOUND}
    rects = [
        a
        for a, enclosing in page.find("rect")
        if any(tag == "svg" and attrs.get("data-plan") == "ours" for tag, attrs in enclosing)
    ]
    sized = {str(t.binding): evaluate(t.size, at) for t in plan.tensors}
    assert rects and all(int(r["data-bytes"]) == sized[r["data-binding"]] for r in rects)
    lanes = [a for a, _ in page.find("svg") if a.get("class") == "lane"]
    assert [int(a["data-total"]) for a in lanes] == [
        evaluate(plan.planned_size, at),
        evaluate(plan.stock_size, at),
    ]
    assert "Drawn at seq_len = 64 (bound)." in render_html(bounded)


def test_records_keep_the_expressions(bounded):
    """The JSON carries the plan as the analysis gives it (sizes as expressions) and the plan
    evaluated at the bound."""
    data = bounded.to_json()
    relax = data["relax"][0]
    assert "seq_len" in relax["plan"]["planned_size"]
    assert relax["plan_at"]["planned_bytes"] == bounded.summary.memplan.vm
    assert analysis.FunctionMemoryPlan is type(bounded.relax[0].plan)


def test_compaction_records_give_symbolic_sizes(bounded):
    """CompactedRegion carries its bytes as expressions where symbolic: the shape's elements
    times the element's bytes."""
    kernel = next(k for k in bounded.kernels if k.name == "attention_inplace")
    assert kernel.buffers
    for b in kernel.buffers:
        elements = 1
        for extent in b.region.original_shape:
            elements *= extent if isinstance(extent, int) else evaluate(extent, {"seq_len": 7})
        assert b.region.original_bytes is None
        assert evaluate(b.region.original_size, {"seq_len": 7}) == elements * 4
        assert evaluate(b.stock_size, {"seq_len": 7}) == evaluate(
            b.region.compacted_size, {"seq_len": 7}
        )
