"""LegalizeOpsAfterInplaceCalls: DataflowUseInplaceCalls then TVM's LegalizeOps in one pass that
legalizes each operator call signature once. Every case compares its module with the two passes
run in a row (structurally equal), on hand-written functions, the zoo and random programs."""

import contextlib
import sys
from collections import Counter
from pathlib import Path

import pytest
import tvm
from tvm import relax, te, topi
from tvm.script import ir as I
from tvm.script import relax as R

import tvm_memplan
from tvm_memplan.instrument import trace
from tvm_memplan.testing import assert_same_relax_results
from tvm_memplan.transform import DataflowUseInplaceCalls, LegalizeOpsAfterInplaceCalls
from zoo.models import ZOO

sys.path.insert(0, str(Path(__file__).parent))
from random_relax import random_module  # noqa: E402


def in_a_row(mod, planner="stock", **legalize_args):
    passes = [DataflowUseInplaceCalls(planner=planner, gpu=False)]
    return tvm.transform.Sequential(passes + [relax.transform.LegalizeOps(**legalize_args)])(mod)


def combined(mod, planner="stock", **legalize_args):
    return LegalizeOpsAfterInplaceCalls(**legalize_args, planner=planner, gpu=False)(mod)


@I.ir_module
class Repeated:
    """Five calls of two signatures (and one of a third)."""

    @R.function
    def main(x: R.Tensor((4, 8), "float32"), y: R.Tensor((4, 8), "float32")):
        with R.dataflow():
            a = R.exp(x)
            b = R.exp(y)
            c = R.add(a, b)
            d = R.exp(c)
            e = R.add(d, x)
            f = R.sum(e, axis=1)
            R.output(f)
        return f


@contextlib.contextmanager
def counting_legalizations(op_names):
    """Count the calls of each operator's FLegalize while the block runs."""
    counts = Counter()
    originals = {}
    try:
        for name in op_names:
            op = tvm.ir.Op.get(name)
            original = originals[name] = op.get_attr("FLegalize")

            def counted(bb, call, name=name, original=original):
                counts[name] += 1
                return original(bb, call)

            op.set_attr("FLegalize", counted, 20)
        yield counts
    finally:
        for name, original in originals.items():
            op = tvm.ir.Op.get(name)
            op.reset_attr("FLegalize")
            op.set_attr("FLegalize", original)


def test_each_signature_is_legalized_once():
    """`exp` over (4, 8) three times, `add` twice, `sum` once: three FLegalize calls, where the
    passes in a row make them again for every call LegalizeOps meets."""
    ops = ("relax.exp", "relax.add", "relax.sum")
    with counting_legalizations(ops) as counts:
        ours = combined(Repeated)
    assert counts == Counter({"relax.exp": 1, "relax.add": 1, "relax.sum": 1})
    with counting_legalizations(ops) as counts:
        reference = in_a_row(Repeated)
    assert sum(counts.values()) > 3
    tvm.ir.assert_structural_equal(ours, reference)


def test_the_result_runs_as_the_stock_build():
    """The legalized module, built by the rest of TVM's pipeline, computes what the input does
    under tvm.compile."""
    assert_same_relax_results(Repeated, combined(Repeated))


def _custom_exp(bb: relax.BlockBuilder, call: relax.Call) -> relax.Expr:
    def exp_plus_one(x: te.Tensor) -> te.Tensor:
        return te.compute(x.shape, lambda *i: topi.exp(x)(*i) + 1.0, name="exp_plus_one")

    return bb.call_te(exp_plus_one, call.args[0], primfunc_name_hint="exp_plus_one")


def test_a_custom_legalization_wins():
    """Operators of customize_legalize_map are legalized by it, as LegalizeOps does."""
    cmap = {"relax.exp": _custom_exp}
    ours = combined(Repeated, customize_legalize_map=cmap)
    tvm.ir.assert_structural_equal(ours, in_a_row(Repeated, customize_legalize_map=cmap))
    assert "exp_plus_one" in [gv.name_hint for gv in ours.functions]


def test_skipped_operators_stay():
    ours = combined(Repeated, skip_ops=["relax.sum"])
    tvm.ir.assert_structural_equal(ours, in_a_row(Repeated, skip_ops=["relax.sum"]))
    ops = []
    relax.analysis.post_order_visit(
        ours["main"], lambda n: ops.append(n.op.name) if isinstance(n, relax.Call) else None
    )
    assert "relax.sum" in ops


@pytest.mark.parametrize("planner", ["stock", "memplan"])
@pytest.mark.parametrize("name", sorted(ZOO))
def test_zoo_module_equals_the_passes_in_a_row(name, planner):
    mod, _ = ZOO[name]()
    tvm.ir.assert_structural_equal(combined(mod, planner), in_a_row(mod, planner))


@pytest.mark.parametrize("seed", range(24))
def test_random_module_equals_the_passes_in_a_row(seed):
    """Tuples, views, constants (copies of constant expressions too), branches."""
    mod = random_module(seed, constant_copies=seed % 2 == 0)
    tvm.ir.assert_structural_equal(combined(mod, "memplan"), in_a_row(mod, "memplan"))


def test_the_memplan_pipeline_legalizes_with_it():
    """On CPUs the "memplan" Relax pipeline runs it in place of LegalizeOps: the in-place pass,
    then LegalizeOps, inside tvm_memplan.LegalizeOps."""
    ran = trace(lambda: tvm_memplan.compile(Repeated, "llvm")).names
    start = ran.index("tvm_memplan.LegalizeOps")
    assert ran[start + 1] == "tvm_memplan.DataflowUseInplaceCalls"
    assert "LegalizeOps" in ran[start + 2 :]
