"""Transposed weights in fused CPU builds, in one process: TVM's FuseTransposeMatmul before the
fused recipe, with TVM's pipeline and with tvm_memplan.compile, for every model of the zoo: the
VM bytes after planning, identical results, and the run time.

A ``Linear`` layer imports as ``matmul(x, permute_dims(w))``: the transposed weight is a tensor
of its own, as large as the weight, and on the MLP, the transformer block and the LSTM cell it
is the peak that no planner may lower (bench/plan.py (d)). TVM's ``FuseTransposeMatmul`` (not
in TVM's default pipelines) computes the matmul from ``w`` as it is. It is TVM's pass, not
ours: the table shows what it gives each build, so that its share and the planner's stay apart.
The recipe is ``tvm_memplan.compile(mod, relax_pipeline=[relax.transform.FuseTransposeMatmul(),
"zero", "default"])`` (docs/pipelines.md).

Run time: the memplan build with the pass over the one without, interleaved rounds on the Relax
VM (median of per-round means, as bench/runtime.py). With ``--torchvision``, a 4-layer
``torch.nn.TransformerEncoder`` (d_model 256, sequence 32) joins, imported through
``torch.export`` with its weights as parameters (``keep_params_as_input=True``, as MLC-LLM
keeps them; bound as constants, FoldConstant transposes them at compile time).

    python bench/transpose.py [--rounds 11] [--calls 10] [--quick] [--torchvision]
"""

from __future__ import annotations

import argparse
import sys

import _torchvision as torchvision  # bench/_torchvision.py (the script's directory)
import tvm
from _table import print_header  # bench/_table.py
from _zoo import models  # zoo/ (bench/_zoo.py)
from plan import compile_capturing, identical, planner_of
from runtime import parse_timing_args, timed_rounds, vm_call
from tvm import relax

from tvm_memplan.analysis import storage_after_planning
from tvm_memplan.testing import relax_inputs

TARGET = "llvm"


def fused(mod: tvm.IRModule, fuse_transposes: bool) -> tvm.IRModule:
    """The fused CPU recipe's first half, with FuseTransposeMatmul before it or not."""
    if fuse_transposes:
        mod = relax.transform.FuseTransposeMatmul()(mod)
    with tvm.target.Target(TARGET):
        return relax.get_pipeline("zero")(mod)


def planned(mod: tvm.IRModule, memplan: bool):
    """The executable and its VM bytes after planning."""
    executable, captured = compile_capturing(mod, memplan, TARGET, [planner_of(memplan)])
    return executable, storage_after_planning(captured[planner_of(memplan)]).total_bytes


def transposes(mod: tvm.IRModule) -> int:
    """permute_dims calls in the module's Relax functions."""
    count = 0

    def visit(expr):
        nonlocal count
        if isinstance(expr, relax.Call) and getattr(expr.op, "name", "") == "relax.permute_dims":
            count += 1

    for func in mod.functions.values():
        # Fused (composite) functions left behind by FuseOpsByPattern are not called.
        if isinstance(func, relax.Function) and not (func.attrs and "Composite" in func.attrs):
            relax.analysis.post_order_visit(func, visit)
    return count


def torch_encoder() -> tuple[tvm.IRModule, str]:
    """A 4-layer torch TransformerEncoder, weights as parameters after the input."""
    import torch
    from tvm.relax.frontend.torch import from_exported_program

    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(256, 4, 1024, batch_first=True, dropout=0.0)
    model = torch.nn.TransformerEncoder(layer, 4).eval()
    exported = torch.export.export(model, (torch.randn(1, 32, 256),))
    mod = from_exported_program(exported, keep_params_as_input=True)
    mod, _ = relax.frontend.detach_params(mod)
    return relax.transform.DecomposeOpsForInference()(mod), "main"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="3 rounds of 3 calls if unset")
    torchvision.add_option(parser)
    args = parse_timing_args(parser, rounds=11, calls=10, quick=3)
    zoo = torchvision.zoo(args, models.ZOO, {})  # no torchvision network; torch checked
    if zoo is None:
        return 2
    if args.torchvision:
        zoo["torch_encoder"] = torch_encoder

    print(
        'Fused CPU builds (llvm, relax.get_pipeline("zero") first), VM bytes after planning, '
        "without and with FuseTransposeMatmul (+FTM)"
    )
    rule = print_header(
        f"{'model':<19} {'transposes':>10} {'stock':>9} {'stock+FTM':>9} {'memplan':>9} "
        f"{'memplan+FTM':>11} {'+FTM/memplan':>12} {'vs stock':>8} {'time +FTM/memplan':>17}"
        "  identical"
    )
    totals = {"stock": 0, "stock_ftm": 0, "memplan": 0, "memplan_ftm": 0}
    all_identical = True
    slowest = 0.0
    for name, builder in zoo.items():
        mod, func_name = builder()
        plain, ftm = fused(mod, False), fused(mod, True)
        stock_exe, stock = planned(plain, memplan=False)
        stock_ftm_exe, stock_ftm = planned(ftm, memplan=False)
        memplan_exe, memplan = planned(plain, memplan=True)
        memplan_ftm_exe, memplan_ftm = planned(ftm, memplan=True)
        executables = [stock_exe, stock_ftm_exe, memplan_exe, memplan_ftm_exe]
        same = identical(executables, func_name, mod)
        inputs = relax_inputs(mod[func_name], seed=0, low=-1.0, high=1.0)
        calls = {
            "memplan": vm_call(memplan_exe, func_name, inputs),
            "memplan_ftm": vm_call(memplan_ftm_exe, func_name, inputs),
        }
        times = timed_rounds(calls, args.rounds, args.calls)
        ratio = times["memplan_ftm"] / times["memplan"]
        slowest = max(slowest, ratio)
        for key, value in (
            ("stock", stock),
            ("stock_ftm", stock_ftm),
            ("memplan", memplan),
            ("memplan_ftm", memplan_ftm),
        ):
            totals[key] += value
        all_identical = all_identical and same
        removed = transposes(mod) - transposes(relax.transform.FuseTransposeMatmul()(mod))
        print(
            f"{name:<19} {removed:>10} {stock:>9} {stock_ftm:>9} {memplan:>9} {memplan_ftm:>11} "
            f"{memplan_ftm / memplan:>12.3f} {memplan_ftm / stock:>8.3f} {ratio:>17.3f}"
            f"  {'yes' if same else 'NO'}"
        )
    print(rule)
    print(
        f"{'total':<19} {'':>10} {totals['stock']:>9} {totals['stock_ftm']:>9} "
        f"{totals['memplan']:>9} {totals['memplan_ftm']:>11} "
        f"{totals['memplan_ftm'] / totals['memplan']:>12.3f} "
        f"{totals['memplan_ftm'] / totals['stock']:>8.3f}"
    )
    print(
        "  transposes: the permute_dims FuseTransposeMatmul folds into a matmul; vs stock: "
        "memplan+FTM over stock; time: the memplan build with the pass over without"
    )
    print(
        f"results identical across the four builds: {'met' if all_identical else 'NOT met'}; "
        f"slowest run-time ratio +FTM/memplan: {slowest:.3f}"
    )
    return 0 if all_identical else 1


if __name__ == "__main__":
    sys.exit(main())
