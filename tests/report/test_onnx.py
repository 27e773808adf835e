"""`tvm-memplan report MODEL.onnx`: ONNX models made with onnx.helper (a conv net with a
residual add and a concatenation, a transformer encoder block, a torch-exported
TransformerEncoder on which TVM's in-place pass fails), dynamic inputs, --input-shape, HTML and
fit, and the hint when onnx is missing."""

from __future__ import annotations

import json
import sys
from html import unescape

import onnx
import pytest
from onnx_models import conv_net, torch_transformer_encoder, transformer_encoder

from tvm_memplan.cli import main
from tvm_memplan.command_line import parse_budgets
from tvm_memplan.report import (
    ReportError,
    UnfixedInputsError,
    load_module,
    render_html,
    render_text,
    run_report,
)
from tvm_memplan.report.load import ONNX_INSTALL_HINT

MODELS = {"conv_net": conv_net, "transformer_encoder": transformer_encoder}
SHAPES = {"conv_net": "x=1x3x32x32", "transformer_encoder": "x=2x16x32"}
SHAPE_DICTS = {"conv_net": {"x": [1, 3, 32, 32]}, "transformer_encoder": {"x": [2, 16, 32]}}


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    directory = tmp_path_factory.mktemp("onnx")
    paths = {}
    for name, build in MODELS.items():
        paths[name] = directory / f"{name}.onnx"
        onnx.save(build(), str(paths[name]))
        paths[f"{name}_static"] = directory / f"{name}_static.onnx"
        onnx.save(build(batch=1), str(paths[f"{name}_static"]))
    paths["torch_encoder"] = directory / "torch_encoder.onnx"
    onnx.save(torch_transformer_encoder(), str(paths["torch_encoder"]))
    return paths


@pytest.mark.parametrize("name", sorted(MODELS))
def test_report_on_an_onnx_model(name, files):
    report = run_report(str(files[name]), input_shapes=SHAPE_DICTS[name])
    (main_fn,) = report.relax
    plan = main_fn.plan
    assert main_fn.function == "main"
    assert plan.peak_live_bytes <= plan.applied_bytes <= plan.stock_bytes
    assert report.summary.memplan.vm < report.inplace.without_inplace
    assert report.inplace.conversions["memplan"] > 0
    assert any(k.buffers or k.placement for k in report.kernels)
    assert not report.failures
    html = render_html(report)
    assert html.count('<article class="timeline"') == 1


def test_a_model_with_static_inputs_needs_no_shapes(files):
    report = run_report(str(files["conv_net_static"]))
    assert report.summary.memplan.vm > 0


@pytest.mark.parametrize("name", sorted(MODELS))
def test_unfixed_dynamic_inputs_are_named(name, files, capsys):
    with pytest.raises(UnfixedInputsError) as err:
        run_report(str(files[name]))
    assert [n for n, _ in err.value.inputs] == ["x"] and err.value.inputs[0][1][0] is None
    assert "inputs with dynamic dimensions: x (?x" in str(err.value)
    assert main(["report", str(files[name])]) == 2
    assert "--input-shape x=1x" in capsys.readouterr().err


def test_input_shapes_must_match_the_model(files):
    with pytest.raises(ReportError, match=r"x=1x4x32x32 does not match the model's x: \?x3x32x32"):
        load_module(files["conv_net"], {"x": [1, 4, 32, 32]})
    with pytest.raises(ReportError, match="name y, which conv_net.onnx does not have"):
        load_module(files["conv_net"], {"y": [1]})


def test_input_shapes_apply_to_onnx_only(tmp_path):
    source = tmp_path / "model.py"
    source.write_text("Module = None\n")
    with pytest.raises(ReportError, match="input shapes apply to .onnx models only"):
        load_module(source, {"x": [1]})


def test_the_command_line_with_html_and_fit(files, tmp_path, capsys):
    page = tmp_path / "encoder.html"
    argv = [
        "report",
        str(files["transformer_encoder"]),
        "--input-shape",
        SHAPES["transformer_encoder"],
    ]
    assert main([*argv, "--html", str(page), "--fit", "vm=1MiB,workspace=1MiB"]) == 0
    out = capsys.readouterr().out
    assert "Relax memory plans" in out and "Fit check (memplan build): fits" in out
    assert page.read_text().count('<article class="timeline"') == 1
    assert main([*argv, "--json", "--fit", "vm=1KiB"]) == 1
    fit = json.loads(capsys.readouterr().out)["fit"]
    assert not fit["fits"] and fit["budgets"][0]["contributors"]


def test_an_unreadable_onnx_file_is_one_line(tmp_path, capsys):
    path = tmp_path / "broken.onnx"
    path.write_bytes(b"not a protobuf")
    assert main(["report", str(path)]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and "is not a readable ONNX model" in lines[0]


def test_without_onnx_one_line_says_what_to_install(files, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "onnx", None)  # `import onnx` raises ImportError
    assert main(["report", str(files["conv_net"])]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert lines == [f"tvm-memplan: error: {ONNX_INSTALL_HINT}"]


@pytest.fixture(scope="module")
def torch_encoder(files):
    report = run_report(str(files["torch_encoder"]), budgets=parse_budgets("total=64KiB"))
    return report, render_text(report), report.to_json(), render_html(report)


_STOCK_INPLACE_FAILS = (
    "TVM's DataflowUseInplaceCalls fails on this model: ValueError: In-place index 0 is out of "
    "range"
)


def test_a_failing_stock_pass_is_shown_in_its_rows(torch_encoder):
    """TVM's DataflowUseInplaceCalls raises on the torch-exported encoder: the report shows the
    failure where the in-place calls are, plans the stock build without it, and shows
    everything else."""
    report, text, data, html = torch_encoder
    (failure,) = report.failures
    assert failure.stage == "inplace.stock" and failure.text.startswith(_STOCK_INPLACE_FAILS)
    assert report.inplace.conversions["stock"] is None
    assert report.inplace.conversions["memplan"] > 0
    assert any("planned without an in-place pass" in n for n in report.inplace.notes)
    # Everything else: both builds' figures, the plans, the kernels.
    for build in ("stock", "memplan"):
        needs = getattr(report.summary, build)
        assert None not in (needs.weights, needs.vm, needs.workspace, needs.stack, needs.total)
    assert report.relax[0].plan is not None and report.relax[0].stock_build is not None
    assert report.kernels


def test_the_failure_is_in_text_json_and_html(torch_encoder):
    report, text, data, html = torch_encoder
    inplace_section = text.split("In-place calls (DataflowUseInplaceCalls)", 1)[1]
    assert _STOCK_INPLACE_FAILS in inplace_section.split("\n\n", 1)[0]
    assert data["failures"][0]["stage"] == "inplace.stock"
    assert data["failures"][0]["what"] == "TVM's DataflowUseInplaceCalls"
    inplace_html = unescape(html.split('<section id="inplace">', 1)[1])
    assert 'data-stage="inplace.stock"' in inplace_html and _STOCK_INPLACE_FAILS in inplace_html


def test_the_fit_check_runs_when_a_stock_pass_fails(torch_encoder, files, capsys):
    report, *_ = torch_encoder
    (total,) = report.fit.budgets
    assert total.figure == report.summary.memplan.total and not total.fits
    assert main(["report", str(files["torch_encoder"]), "--fit", "total=1GiB"]) == 0
    assert "Fit check (memplan build): fits" in capsys.readouterr().out
