"""The tvm-memplan command: `report` on the bundled example, on user files, and its errors."""

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tvm_memplan import report as report_module
from tvm_memplan.cli import main
from tvm_memplan.command_line import UsageError, parse_input_shapes, parse_shape_vars, parse_target


@pytest.fixture(scope="module")
def bundled():
    """The report of the bundled example (built once)."""
    return report_module.run_report(None)


def _kernel(report, name):
    return next(k for k in report.kernels if k.name == name)


def _buffers(report):
    return {str(b.region.name): b for k in report.kernels for b in k.buffers}


def test_bundled_example_compaction_is_judged_against_stock(bundled):
    buffers = _buffers(bundled)
    c_local = buffers["C_local"].region
    assert (c_local.original_bytes, c_local.compacted_bytes) == (65536, 1024)
    # The clamped halo: the stock pass keeps a whole row, ours the 18 elements of the tile.
    assert (buffers["H"].stock_bytes, buffers["H"].region.compacted_bytes) == (512, 72)


def test_bundled_example_placement_shows_both_builds(bundled):
    """The memplan build keeps the small local accumulator on the stack; the stock build (TVM's
    compaction and TVM's rule) puts it in the workspace."""
    matmul = _kernel(bundled, "matmul")
    (c_local,) = [d for d in matmul.placement if d.name == "C_local"]
    assert (c_local.scope, c_local.nbytes, c_local.placement) == ("local", 1024, "stack")
    assert "max_stack_alloca 1024" in c_local.reason
    (stock,) = [d for d in matmul.stock_placement if d.name == "C_local"]
    assert (stock.nbytes, stock.stock_placement) == (1024, "workspace")
    assert matmul.stack == {"stock": 64, "memplan": 1088}
    assert matmul.workspace == {"stock": 1024, "memplan": 0}


def test_bundled_example_inplace_conversions(bundled):
    """Our pass makes the four operator calls in place before legalization; after it, the
    matmul and the row stencil (PrimFuncs called with call_tir) cannot be."""
    inplace = bundled.inplace
    assert inplace.conversions == {"stock": 2, "memplan": 4}
    before, after = inplace.runs
    assert (before.name, before.conversions, after.name, after.conversions) == (
        "before_legalization",
        4,
        "after_scheduling",
        0,
    )
    converted = [str(c.binding) for c in before.candidates["main"] if c.inplace]
    assert converted == ["z", "a", "o", "p"]
    assert [str(c.binding) for c in after.candidates["main"] if after.already_inplace(c)] == [
        "z",
        "a",
        "o",
        "p",
    ]


def test_bundled_example_memory_plan_is_ours_on_the_memplan_ir(bundled):
    (main_fn,) = bundled.relax
    plan = main_fn.plan
    assert (main_fn.function, plan.planner) == ("main", "memplan")
    assert bundled.summary.memplan.vm == int(plan.applied_bytes) == 131072
    assert bundled.summary.stock.vm == int(main_fn.stock_build.stock_bytes) == 196608
    assert max(plan.live_bytes()) <= plan.peak_live_bytes <= plan.applied_bytes


def test_tensors_are_named_by_the_bindings_that_write_them(bundled):
    """`alloc` holds the matmul's result, then z and a computed in place in it."""
    (main_fn,) = bundled.relax
    names = {
        str(t.binding): [w.binding for w in writers]
        for t, writers in zip(main_fn.plan.tensors, main_fn.writers, strict=True)
    }
    assert names == {"alloc": ["y", "z", "a"], "alloc1": ["s", "o", "p"]}


def test_text_report_leads_with_the_memory_to_run_the_model(capsys):
    assert main(["report"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[2] == "Memory to run the model: the stock TVM build and the memplan build"
    text = "\n".join(out)
    for heading in (
        "Relax memory plans",
        "In-place calls",
        "Kernels (4)",
        "Buffer compaction",
        "Allocation placement",
        "Totals of each pass",
    ):
        assert heading in text
    (total,) = [line for line in out if line.startswith("  total ")]
    assert total.split()[1:] == ["263168", "(257.0", "KiB)", "197696", "(193.1", "KiB)", "0.751"]


def test_json_report_is_the_same_data(capsys, bundled):
    assert main(["report", "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    printed.pop("seconds")
    expected = json.loads(json.dumps(bundled.to_json()))
    expected.pop("seconds")
    assert printed == expected


def test_json_carries_the_records_under_their_cpp_names(bundled):
    """Records are not copied into renamed fields: the JSON of a plan has the reflected
    FunctionMemoryPlan fields."""
    data = bundled.to_json()
    plan = data["relax"][0]["plan"]
    assert {"planned_bytes", "peak_live_bytes", "stock_bytes", "tensors", "storages"} <= set(plan)
    region = data["kernels"][0]["buffers"][0]["region"]
    assert {"original_bytes", "compacted_bytes", "reason"} <= set(region)


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
    assert report["relax"] == []
    ((b,),) = [k["buffers"] for k in report["kernels"] if k["buffers"]]
    assert (b["region"]["name"], b["region"]["original_bytes"], b["region"]["compacted_bytes"]) == (
        "B",
        256,
        64,
    )
    (row,) = report["summary"]["functions"]
    assert (row["function"], row["kind"], row["memplan"]["stack"]) == ("main", "tir", 64)


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


def test_a_pass_failing_is_shown_and_the_rest_reported(tmp_path, capsys):
    """Our placement refuses a dynamic "global.stack" buffer: the report says so where the
    placement is shown, and still shows the rest (the stock build, compaction)."""
    path = tmp_path / "input.py"
    path.write_text(FAILS_TO_COMPILE)
    assert main(["report", str(path)]) == 0
    out = capsys.readouterr().out
    assert (
        "tvm-memplan's TagAllocationPlacement (in the memplan build) fails on this model: " in out
    )
    assert "ValueError: main: buffer `S`" in out
    assert "Totals of each pass" in out


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
        ("Module = None\n", ["--shape-var", "n"], "--shape-var 'n' is not NAME=VALUE"),
        ("Module = None\n", ["--input-shape", "x:1"], "--input-shape 'x:1' is not NAME=DIM"),
        ("Module = None\n", ["--exact-search-ms", "-5"], "--exact-search-ms must be a whole"),
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


def test_parsers():
    assert parse_input_shapes(["x=1x3x8x8", "y=4"]) == {"x": [1, 3, 8, 8], "y": [4]}
    assert parse_shape_vars(["seq_len=128", " n = 4 "]) == {"seq_len": 128, "n": 4}
    with pytest.raises(UsageError, match="seq_len is given twice"):
        parse_shape_vars(["seq_len=1", "seq_len=2"])
    assert parse_target(None) is None
    assert parse_target('{"kind": "c"}').kind.name == "c"


def test_library_errors_name_no_flags():
    """Parsing and flag names belong to the command line: the library's errors say what is
    wrong in the library's terms."""
    with pytest.raises(report_module.ReportError) as err:
        report_module.load_module(Path(__file__), {"x": [1]})
    assert "--" not in str(err.value) and "input shapes apply to .onnx models only" in str(
        err.value
    )


def test_a_stage_slower_than_a_second_reports_progress():
    lines = []
    with report_module.stage("thinking", lines.append):
        time.sleep(1.3)
    with report_module.stage("quick", lines.append):
        pass
    assert lines == ["thinking..."]


def test_the_installed_console_script_runs():
    """`tvm-memplan`, as pip installs it next to the interpreter (the README's main job)."""
    command = Path(sys.executable).with_name("tvm-memplan")
    assert command.is_file(), f"{command} is missing: install the package (pip install .)"
    result = subprocess.run([str(command), "report"], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert "Memory to run the model" in result.stdout
