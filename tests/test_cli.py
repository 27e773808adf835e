"""The tvm-memplan command: `report` on the bundled example, on user files, and its errors."""

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tvm_memplan import report as report_module
from tvm_memplan.cli import main


@pytest.fixture(scope="module")
def bundled():
    """The JSON report of the bundled example (built once)."""
    return report_module.run_report(None)


def _by(rows, key):
    return {getattr(row, key): row for row in rows}


def test_bundled_example_compaction_is_judged_against_stock(bundled):
    buffers = _by(bundled.compaction.buffers, "buffer")
    assert (buffers["C_local"].original_bytes, buffers["C_local"].ours_bytes) == (65536, 1024)
    # The clamped halo: the stock pass keeps a whole row, ours the 18 elements of the tile.
    assert (buffers["H"].stock_bytes, buffers["H"].ours_bytes) == (512, 72)
    totals = bundled.compaction.totals
    assert totals["ours_bytes"] < totals["stock_bytes"] < totals["original_bytes"]


def test_bundled_example_placement_shows_stock_and_ours(bundled):
    c_local = _by(bundled.placement.allocations, "buffer")["C_local"]
    assert (c_local.scope, c_local.bytes, c_local.stock, c_local.ours) == (
        "local",
        1024,
        "workspace",
        "stack",
    )
    assert "max_stack_alloca 1024" in c_local.reason


def test_bundled_example_inplace_conversions_and_planned_bytes(bundled):
    inplace = bundled.inplace
    assert inplace.conversions == {"stock": 2, "ours": 4}
    planned = inplace.planned_bytes
    assert planned["bound"] <= planned["ours"] < planned["stock"] <= planned["none"]
    converted = [b.binding for b in inplace.bindings if b.inplace]
    assert converted == ["z", "a", "o", "p"]


def test_bundled_example_memory_plan_is_ours_on_the_memplan_ir(bundled):
    (main,) = bundled.memory
    assert (main.function, main.planner) == ("main", "memplan")
    assert main.ours_bytes == bundled.inplace.planned_bytes["ours"]
    assert main.stock_build_bytes == bundled.inplace.planned_bytes["stock"]
    assert max(main.live_bytes) <= main.bound_bytes <= main.ours_bytes


def test_summary_has_a_line_per_function(bundled):
    kinds = {row.function: row.kind for row in bundled.summary}
    assert kinds == {
        "main": "relax",
        "matmul": "tir",
        "smooth_rows": "tir",
        "softmax_inplace": "tir",
    }
    matmul = _by(bundled.summary, "function")["matmul"]
    assert (matmul.stack_stock, matmul.stack_ours) == (64, 1088)


def test_text_report_has_a_table_per_pass_and_totals(capsys):
    assert main(["report"]) == 0
    out = capsys.readouterr().out
    for heading in (
        "Buffer compaction",
        "Allocation placement",
        "Relax memory plan",
        "In-place calls",
        "Totals",
    ):
        assert heading in out
    assert "in-place conversions" in out


def test_json_report_is_the_same_data(capsys, bundled):
    assert main(["report", "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    printed.pop("seconds")
    expected = json.loads(json.dumps(bundled.to_json()))
    expected.pop("seconds")
    assert printed == expected


TIR_ONLY = """
from tvm.script import ir as I
from tvm.script import tirx as T

@I.ir_module
class Module:
    @T.prim_func
    def main(A: T.Buffer((64,), "float32"), C: T.Buffer((64,), "float32")):
        for io in range(4):
            B = T.alloc_buffer((64,), "float32", scope="local")
            for ii in range(16):
                B[io * 16 + ii] = A[io * 16 + ii]
            for ii in range(16):
                C[io * 16 + ii] = B[io * 16 + ii]
"""


def test_report_on_a_tir_file_for_another_target(tmp_path, capsys):
    source = tmp_path / "model.py"
    source.write_text(TIR_ONLY)
    assert main(["report", str(source), "--target", '{"kind": "c"}', "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["target"] == "c"
    assert report["inplace"] is None
    assert report["memory"] == []
    (b,) = report["compaction"]["buffers"]
    assert (b["buffer"], b["original_bytes"], b["ours_bytes"]) == ("B", 256, 64)


FAILS_TO_COMPILE = """
from tvm.script import ir as I
from tvm.script import tirx as T

@I.ir_module
class Module:
    @T.prim_func
    def main(A: T.Buffer((64,), "float32"), n: T.int32):
        S = T.alloc_buffer((n,), "float32", scope="global.stack")
        S[0] = A[0]
        A[1] = S[0]
"""


@pytest.mark.parametrize(
    ("source", "args", "message"),
    [
        (None, ["missing.py"], "no such file: missing.py"),
        ("x = 1\n", [], "defines neither `Module` nor `build()`"),
        ("def build():\n    return 3\n", [], "build() is a int, not a tvm.IRModule"),
        ("raise ValueError('boom')\n", [], "failed to load: ValueError: boom"),
        ("Module = None\n", ["--target", "{nope"], "--target is not valid JSON"),
        ("Module = None\n", ["--target", '{"kind": "no_such_kind"}'], "not a valid target"),
        ("Module = None\n", ["--target", "[1]"], "--target must be a JSON object"),
        (
            FAILS_TO_COMPILE,
            [],
            'compiling with the "memplan" pipelines failed: ValueError: main: buffer `S`',
        ),
    ],
)
def test_errors_are_one_line_and_exit_2(tmp_path, capsys, source, args, message):
    argv = ["report"]
    if source is not None:
        path = tmp_path / "input.py"
        path.write_text(source)
        argv.append(str(path))
    assert main(argv + args) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("tvm-memplan: error: ")
    assert message in lines[0]


def test_a_stage_slower_than_a_second_reports_progress():
    lines = []
    with report_module._stage("thinking", lines.append):
        time.sleep(1.3)
    with report_module._stage("quick", lines.append):
        pass
    assert lines == ["thinking..."]


def test_the_installed_console_script_runs():
    """`tvm-memplan`, as pip installs it next to the interpreter (the README's main job)."""
    command = Path(sys.executable).with_name("tvm-memplan")
    assert command.is_file(), f"{command} is missing: install the package (pip install .)"
    result = subprocess.run([str(command), "report"], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert "Totals" in result.stdout
