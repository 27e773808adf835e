"""`tvm-memplan report MODEL.onnx`: ONNX models made with onnx.helper (a conv net with a
residual add and a concatenation, a transformer encoder block), dynamic inputs, --input-shape,
HTML and fit, and the hint when onnx is missing."""

from __future__ import annotations

import json
import sys

import onnx
import pytest
from onnx_models import conv_net, transformer_encoder

from tvm_memplan.cli import main
from tvm_memplan.report import ReportError, load_module, render_html, run_report
from tvm_memplan.report.load import ONNX_INSTALL_HINT

MODELS = {"conv_net": conv_net, "transformer_encoder": transformer_encoder}
SHAPES = {"conv_net": "x=1x3x32x32", "transformer_encoder": "x=2x16x32"}


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    directory = tmp_path_factory.mktemp("onnx")
    paths = {}
    for name, build in MODELS.items():
        paths[name] = directory / f"{name}.onnx"
        onnx.save(build(), str(paths[name]))
        paths[f"{name}_static"] = directory / f"{name}_static.onnx"
        onnx.save(build(batch=1), str(paths[f"{name}_static"]))
    return paths


@pytest.mark.parametrize("name", sorted(MODELS))
def test_report_on_an_onnx_model(name, files):
    report = run_report(str(files[name]), input_shapes=[SHAPES[name]])
    (main_plan,) = report.memory
    assert main_plan.function == "main"
    assert main_plan.bound_bytes <= main_plan.ours_bytes <= main_plan.stock_bytes
    assert report.inplace.planned_bytes["ours"] < report.inplace.planned_bytes["none"]
    assert report.inplace.conversions["ours"] > 0
    assert report.compaction.buffers or report.placement.allocations
    html = render_html(report)
    assert html.count('<article class="timeline"') == 1


def test_a_model_with_static_inputs_needs_no_shapes(files):
    report = run_report(str(files["conv_net_static"]))
    assert report.memory[0].ours_bytes > 0


@pytest.mark.parametrize("name", sorted(MODELS))
def test_unfixed_dynamic_inputs_are_named(name, files):
    with pytest.raises(ReportError) as err:
        run_report(str(files[name]))
    message = str(err.value)
    assert "inputs with dynamic dimensions: x (?x" in message
    assert "--input-shape x=1x" in message


def test_input_shapes_must_match_the_model(files):
    with pytest.raises(ReportError, match=r"x=1x4x32x32 does not match the model's x: \?x3x32x32"):
        load_module(files["conv_net"], {"x": [1, 4, 32, 32]})
    with pytest.raises(ReportError, match="names y, which conv_net.onnx does not have"):
        load_module(files["conv_net"], {"y": [1]})
    with pytest.raises(ReportError, match="is not NAME=DIMxDIMx"):
        run_report(str(files["conv_net"]), input_shapes=["x:1x3"])


def test_input_shapes_apply_to_onnx_only(tmp_path):
    source = tmp_path / "model.py"
    source.write_text("Module = None\n")
    with pytest.raises(ReportError, match="--input-shape applies to .onnx models only"):
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
    assert "Relax memory plan" in out and "Fit check (memplan build): fits" in out
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
