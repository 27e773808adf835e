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


def _perfect_csv(tmp_path, count=40):
    from zoo.packings import perfect_packing

    path = tmp_path / "perfect.csv"
    rows = [f"{i},{lower},{upper},{size}" for i, lower, upper, size in perfect_packing(count, 0)]
    path.write_text("id,lower,upper,size\n" + "\n".join(rows) + "\n")
    return path


def test_exact_search_ms_0_keeps_the_greedy_orders(tmp_path, capsys):
    """--exact-search-ms 0: no exact search, the greedy orders' best, said best_found; by
    default the same problem is searched to its bound."""
    path = _perfect_csv(tmp_path)
    assert main(["pack", str(path), "--alignment", "64", "--exact-search-ms", "0"]) == 0
    greedy = capsys.readouterr().out
    assert "best_found" in greedy and "exact search" not in greedy
    assert main(["pack", str(path), "--alignment", "64"]) == 0
    assert "at_bound; exact search" in capsys.readouterr().out


@pytest.mark.parametrize("value", ["-1", "1.5", "ten"])
def test_a_bad_exact_search_ms_is_one_line_and_exit_2(problem, capsys, value):
    assert main(["pack", str(problem), "--exact-search-ms", value]) == 2
    err = capsys.readouterr().err
    assert "--exact-search-ms must be a whole number of milliseconds >= 0" in err
    assert err.count("\n") == 1
