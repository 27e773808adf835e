"""The tvm-memplan command."""

import json
import subprocess
import sys

import pytest

from tvm_memplan.cli import main


def test_report_on_the_bundled_example(capsys):
    assert main(["report"]) == 0
    out = capsys.readouterr().out
    assert "C_local" in out and "A_global" in out
    assert "Total allocated: 131072 bytes" in out


def test_json_report_has_the_same_numbers(capsys):
    assert main(["report", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert {a["name"]: a["size_bytes"] for a in report["allocations"]} == {
        "C_local": 65536,
        "A_global": 65536,
    }
    assert report["totals"]["allocated_bytes"] == 131072


def test_report_on_a_file_defining_module(tmp_path, capsys):
    source = tmp_path / "model.py"
    source.write_text(
        "from tvm.script import ir as I\n"
        "from tvm.script import tirx as T\n\n"
        "@I.ir_module\n"
        "class Module:\n"
        "    @T.prim_func\n"
        "    def main(A: T.Buffer((4,), 'float32')):\n"
        "        B = T.alloc_buffer((4,), 'float32')\n"
        "        B[0] = A[0]\n"
    )
    assert main(["report", str(source), "--target", '{"kind": "llvm"}', "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["target"] == "llvm"
    assert [a["name"] for a in report["allocations"]] == ["B"]


@pytest.mark.parametrize(
    ("source", "args", "message"),
    [
        (None, ["missing.py"], "no such file: missing.py"),
        ("x = 1\n", [], "defines neither `Module` nor `build()`"),
        ("def build():\n    return 3\n", [], "build() is a int, not a tvm.IRModule"),
        ("raise ValueError('boom')\n", [], "failed to load: ValueError: boom"),
        ("Module = None\n", ["--target", "{nope"], "--target is not valid JSON"),
        ("Module = None\n", ["--target", '{"kind": "no_such_kind"}'], "not a valid target"),
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


def test_the_command_runs_as_a_program():
    result = subprocess.run(
        [sys.executable, "-m", "tvm_memplan.cli", "report"], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
    assert "Total allocated" in result.stdout
