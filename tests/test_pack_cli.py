"""`tvm-memplan pack` (python/tvm_memplan/pack.py): a CSV of id,lower,upper,size in, offsets
out; does-not-fit is exit 1 with the reason, a malformed file exit 2 with one line."""

from __future__ import annotations

import csv

import pytest

from tvm_memplan.cli import main

PROBLEM = "id,lower,upper,size\na,0,3,256\nb,1,4,128\nc,3,5,256\n"


@pytest.fixture
def problem(tmp_path):
    path = tmp_path / "problem.csv"
    path.write_text(PROBLEM)
    return path


def test_a_good_csv_is_placed_and_written_with_offsets(problem, tmp_path, capsys):
    """Offsets in the output CSV, no two buffers live together overlapping; the summary gives
    the size, the bound and the optimality."""
    out = tmp_path / "offsets.csv"
    assert main(["pack", str(problem), "--output", str(out)]) == 0
    assert "3 buffers in 384 bytes (peak-live bound 384; at_bound" in capsys.readouterr().out
    rows = list(csv.DictReader(out.read_text().splitlines()))
    assert [(r["id"], int(r["offset"])) for r in rows] == [("a", 0), ("b", 256), ("c", 0)]


def test_a_capacity_below_the_bound_does_not_fit(problem, capsys):
    """Exit 1, and the message names the bound."""
    assert main(["pack", str(problem), "--capacity", "300"]) == 1
    err = capsys.readouterr().err
    assert "does not fit" in err and "peak-live bound, 384 bytes" in err


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("id,lower,size\na,0,3\n", "must name the columns id,lower,upper,size (missing upper)"),
        ("id,lower,upper,size\na,0,x,3\n", "problem.csv:2: upper must be an integer, got 'x'"),
        ("id,lower,upper,size\na,4,4,3\n", "problem.csv:2: buffer 'a' has an empty lifetime"),
        ("id,lower,upper,size\na,0,1,3\na,1,2,3\n", "problem.csv:3: id 'a' already on line 2"),
        ("id,lower,upper,size\n", "no buffers"),
    ],
)
def test_a_bad_csv_is_one_line_and_exit_2(tmp_path, capsys, text, message):
    path = tmp_path / "problem.csv"
    path.write_text(text)
    assert main(["pack", str(path)]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_a_missing_file_is_exit_2(tmp_path, capsys):
    assert main(["pack", str(tmp_path / "none.csv")]) == 2
    assert "cannot read" in capsys.readouterr().err
