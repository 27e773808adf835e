"""`tvm-memplan report --fit`: budgets, exit codes, the largest contributors, JSON."""

from __future__ import annotations

import json

import pytest

from tvm_memplan.cli import main
from tvm_memplan.report import ReportError, check_fit, parse_budgets, parse_size, run_report


@pytest.fixture(scope="module")
def bundled():
    return run_report(None)


@pytest.mark.parametrize(
    ("text", "nbytes"),
    [
        ("4096", 4096),
        ("4K", 4000),
        ("4KB", 4000),
        ("4KiB", 4096),
        ("2M", 2_000_000),
        ("2MiB", 2 * 1024**2),
        ("1.5KiB", 1536),
        ("1GiB", 1024**3),
        (" 64 kib ", 65536),
    ],
)
def test_sizes(text, nbytes):
    assert parse_size(text) == nbytes


@pytest.mark.parametrize("text", ["", "K", "4Q", "-1", "1.3B", "4 KiB 2", "0x10"])
def test_bad_sizes(text):
    with pytest.raises(ValueError):
        parse_size(text)


def test_budgets_take_any_subset():
    assert parse_budgets("vm=2MiB,stack=4KiB,workspace=64KiB") == {
        "vm": 2 * 1024**2,
        "stack": 4096,
        "workspace": 65536,
    }
    assert parse_budgets("stack=0") == {"stack": 0}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("vm", "is not NAME=SIZE"),
        ("ram=1M", "'ram=1M' is not NAME=SIZE with NAME one of vm, stack, workspace"),
        ("vm=lots", "'lots' is not a size"),
        ("vm=1M,vm=2M", "vm is given twice"),
    ],
)
def test_malformed_budgets(text, message):
    with pytest.raises(ReportError, match=message):
        parse_budgets(text)


def test_figures_are_the_reports(bundled):
    """vm is the memplan build's planned VM bytes; stack and workspace the most one PrimFunc
    takes under our placement."""
    result = check_fit(bundled, {"vm": 10**9, "stack": 10**9, "workspace": 10**9})
    figures = {b.name: b.figure for b in result.budgets}
    assert figures["vm"] == bundled.inplace.planned_bytes["ours"]
    per_function = {}
    for a in bundled.placement.allocations:
        if a.ours == "stack":
            per_function[a.function] = per_function.get(a.function, 0) + a.bytes
    assert figures["stack"] == max(per_function.values())
    assert result.fits and all(not b.contributors for b in result.budgets)


def test_an_exceeded_budget_lists_its_largest_contributors(bundled):
    result = check_fit(bundled, {"vm": 1000, "workspace": 1 << 30})
    vm, workspace = result.budgets
    assert not result.fits and not vm.fits and workspace.fits
    sizes = [c.bytes for c in vm.contributors]
    assert sizes == sorted(sizes, reverse=True) and len(sizes) <= 5
    returned = [c for c in vm.contributors if not c.shrinkable]
    assert returned and all("reaches the function result" in c.note for c in returned)


def test_exit_codes(capsys):
    assert main(["report", "--fit", "vm=1GiB,stack=1GiB,workspace=1GiB"]) == 0
    assert "Fit check (memplan build): fits" in capsys.readouterr().out
    assert main(["report", "--fit", "stack=16"]) == 1
    out = capsys.readouterr().out
    assert "DOES NOT FIT" in out and "stack: 1088 B exceeds the budget of 16 B" in out
    assert "C_local" in out


def test_malformed_budgets_exit_2_with_one_line(capsys):
    assert main(["report", "--fit", "vm=2Mb,heap=1K"]) == 2
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert captured.out == "" and len(lines) == 1
    assert lines[0].startswith("tvm-memplan: error: --fit")


def test_fit_in_json(capsys):
    assert main(["report", "--json", "--fit", "vm=64KiB"]) == 1
    fit = json.loads(capsys.readouterr().out)["fit"]
    assert fit["fits"] is False
    (vm,) = fit["budgets"]
    assert (vm["name"], vm["budget"], vm["fits"]) == ("vm", 65536, False)
    assert vm["contributors"][0]["bytes"] >= vm["contributors"][-1]["bytes"]


def test_without_fit_the_json_has_none(capsys):
    assert main(["report", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["fit"] is None
