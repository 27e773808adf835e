"""`tvm-memplan report --fit`: budgets, exit codes, the largest contributors with what is done
and what could still shrink them, JSON."""

from __future__ import annotations

import json

import pytest

from tvm_memplan.cli import main
from tvm_memplan.command_line import UsageError, parse_budgets, parse_size
from tvm_memplan.report import check_fit, run_report


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
    assert parse_budgets("vm=2MiB,stack=4KiB,workspace=64KiB,weights=1M,total=3M") == {
        "vm": 2 * 1024**2,
        "stack": 4096,
        "workspace": 65536,
        "weights": 1_000_000,
        "total": 3_000_000,
    }
    assert parse_budgets("stack=0") == {"stack": 0}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("vm", "is not NAME=SIZE"),
        (
            "ram=1M",
            "'ram=1M' is not NAME=SIZE with NAME one of weights, vm, workspace, stack, total",
        ),
        ("vm=lots", "'lots' is not a size"),
        ("vm=1M,vm=2M", "vm is given twice"),
    ],
)
def test_malformed_budgets(text, message):
    with pytest.raises(UsageError, match=message):
        parse_budgets(text)


def test_figures_are_the_summarys(bundled):
    """Each budget checks the memplan build's figure of the summary: the same number the
    summary shows."""
    budgets = {name: 10**9 for name in ("weights", "vm", "workspace", "stack", "total")}
    result = check_fit(bundled, budgets)
    figures = {b.name: b.figure for b in result.budgets}
    memplan = bundled.summary.memplan
    assert figures == {
        "weights": memplan.weights,
        "vm": memplan.vm,
        "workspace": memplan.workspace,
        "stack": memplan.stack,
        "total": memplan.total,
    }
    assert result.fits and all(not b.contributors for b in result.budgets)


def test_an_exceeded_budget_lists_its_largest_contributors(bundled):
    result = check_fit(bundled, {"vm": 1000, "workspace": 1 << 30})
    vm, workspace = result.budgets
    assert not result.fits and not vm.fits and workspace.fits
    sizes = [c.bytes for c in vm.contributors]
    assert sizes == sorted(sizes, reverse=True) and len(sizes) <= 5
    returned = [c for c in vm.contributors if "reaches the function result" in c.done]
    assert returned and all(c.origin for c in vm.contributors)


def test_the_stack_advice_names_the_limit_that_moves_a_buffer(bundled):
    (stack,) = check_fit(bundled, {"stack": 16}).budgets
    c_local = next(c for c in stack.contributors if c.name == "C_local")
    assert c_local.function == "matmul" and c_local.bytes == 1024
    assert "compacted from 65536 B" in c_local.done
    assert c_local.could == (
        "tvm_memplan.max_stack_alloca < 1024 would put it in the workspace instead (the "
        "workspace figure grows by as much)"
    )


def test_a_workspace_buffer_that_fits_the_stack_is_said_to(bundled):
    """T_softmax_exp (64 KiB, "global") lives in the workspace only because of the limit: a
    larger max_stack_alloca would put it on the stack, and the advice says so."""
    (workspace,) = check_fit(bundled, {"workspace": 16}).budgets
    (exp,) = [c for c in workspace.contributors if c.name == "T_softmax_exp"]
    assert exp.could == (
        "tvm_memplan.max_stack_alloca >= 65536 would put it on the stack instead (the stack "
        "figure grows by as much)"
    )
    # Under a total budget, moving it to the stack shrinks nothing: not offered.
    (total,) = check_fit(bundled, {"total": 16}).budgets
    (exp,) = [c for c in total.contributors if c.name == "T_softmax_exp"]
    assert "max_stack_alloca" not in exp.could
    assert "kept whole (the accesses cover the whole buffer)" in exp.done


def test_exit_codes(capsys):
    assert main(["report", "--fit", "vm=1GiB,stack=1GiB,workspace=1GiB,total=1GiB"]) == 0
    assert "Fit check (memplan build): fits" in capsys.readouterr().out
    assert main(["report", "--fit", "stack=16"]) == 1
    out = capsys.readouterr().out
    assert "DOES NOT FIT" in out and "stack: 1088 B exceeds the budget of 16 B" in out
    assert "C_local (matmul): 1024 B" in out


def test_malformed_budgets_exit_2_with_one_line(capsys):
    assert main(["report", "--fit", "vm=2Mb,heap=1K"]) == 2
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert captured.out == "" and len(lines) == 1
    assert lines[0].startswith("tvm-memplan: error: --fit")


def test_fit_in_json(capsys):
    assert main(["report", "--json", "--fit", "total=64KiB"]) == 1
    fit = json.loads(capsys.readouterr().out)["fit"]
    assert fit["fits"] is False
    (total,) = fit["budgets"]
    assert (total["name"], total["budget"], total["fits"]) == ("total", 65536, False)
    assert total["contributors"][0]["bytes"] >= total["contributors"][-1]["bytes"]
    assert {"done", "could", "origin"} <= set(total["contributors"][0])


def test_without_fit_the_json_has_none(capsys):
    assert main(["report", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["fit"] is None


def test_vm_contributors_are_the_tensors_live_at_the_peak(bundled):
    """Only tensors live at the plan's peak (or allocated on their own) make the VM figure:
    shrinking any other would not lower it."""
    (f,) = bundled.relax
    plan = f.plan
    live = list(plan.live_bytes())
    peak = live.index(max(live))
    (vm,) = check_fit(bundled, {"vm": 16}).budgets
    by_name = {str(t.binding): t for t in plan.tensors}
    assert vm.contributors
    for c in vm.contributors:
        t = by_name[c.name]
        assert t.storage < 0 or t.first <= peak <= t.last
        if t.storage >= 0:
            assert f"live at the peak (program point {peak})" in c.done


def test_a_transposed_weight_read_by_a_matmul_is_advised_away():
    """The zoo's MLP: a Linear layer's transposed weight (`permute_dims` of a parameter, read by
    a matmul) is the largest tensor at the peak; its advice names FuseTransposeMatmul. Other
    tensors at the peak are not given it."""
    import tvm

    from tvm_memplan.report import build_report
    from zoo.models import ZOO

    mod, _ = ZOO["mlp"]()
    report = build_report(mod, tvm.target.Target({"kind": "llvm"}))
    (vm,) = check_fit(report, {"vm": 1}).budgets
    advised = [c for c in vm.contributors if "FuseTransposeMatmul" in c.could]
    others = [c for c in vm.contributors if "FuseTransposeMatmul" not in c.could]
    assert [c.bytes for c in advised] == [512 * 512 * 4]
    assert "permute_dims" in advised[0].origin
    assert others and all("permute_dims" not in c.origin for c in others)
