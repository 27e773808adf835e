"""`tvm-memplan pack` (python/tvm_memplan/pack.py): a CSV of id,lower,upper,size in, offsets
out; does-not-fit is exit 1 with the reason, a malformed file exit 2 with one line."""

from __future__ import annotations

import csv
import io
import json

import pytest

from tvm_memplan.cli import main
from tvm_memplan.pack import Progress

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


def test_json_prints_the_record_instead_of_the_summary(problem, capsys):
    """--json: one JSON object with the figures and each phase's work, no summary line."""
    assert main(["pack", str(problem), "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert (record["buffers"], record["size"], record["bound"]) == (3, 384, 384)
    assert (record["optimality"], record["gap_bytes"], record["fits"]) == ("at_bound", 0, True)
    assert record["greedy"]["orders"] == 1 and record["greedy"]["steps"] > 0
    assert record["exact_search"]["steps"] == 0


def test_json_when_it_does_not_fit_is_the_record_and_exit_1(problem, capsys):
    """The record of the best placement found, fits false, and the reason on stderr."""
    assert main(["pack", str(problem), "--capacity", "300", "--json"]) == 1
    out, err = capsys.readouterr()
    record = json.loads(out)
    assert record["fits"] is False and record["size"] == 384
    assert "peak-live bound" in record["why_not"] and "does not fit" in err


class _Terminal(io.StringIO):
    def isatty(self):
        return True


def test_progress_shows_after_its_delay_on_one_line_and_clears():
    """Nothing before the delay; then one line rewritten in place with the phase, the best size
    and its gap to the bound; close blanks it."""
    now = [0.0]
    stream = _Terminal()
    progress = Progress(stream, delay=1.0, clock=lambda: now[0])
    progress("greedy orders", 200, 100)
    assert stream.getvalue() == ""
    now[0] = 2.0
    progress("greedy orders", 150, 100)
    progress("exact search", 120, 100)
    shown = stream.getvalue()
    assert shown.count("\r") == 2 and "\n" not in shown
    assert shown.rsplit("\r", 1)[1].startswith("tvm-memplan: pack: exact search, best 120 bytes")
    assert "20 over the bound (20.00%)" in shown
    progress.close()
    assert stream.getvalue().endswith("\r")
    assert stream.getvalue().rsplit("\r", 2)[1].strip() == ""


def test_progress_writes_nothing_off_a_terminal():
    now = [5.0]
    stream = io.StringIO()
    progress = Progress(stream, delay=0.0, clock=lambda: now[0])
    progress("greedy orders", 200, 100)
    progress.close()
    assert stream.getvalue() == ""
