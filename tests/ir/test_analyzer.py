"""The analyzer facade and the expression helpers."""

import tvm
from tvm import tirx

from tvm_memplan import testing as hooks

i, j, n = (tirx.Var(name, "int32") for name in ("i", "j", "n"))
c = lambda v: tirx.IntImm("int32", v)  # noqa: E731


def test_simplify_uses_bound_ranges():
    tvm.ir.assert_structural_equal(hooks.simplify(tirx.floordiv(i, 16), {i: c(16)}), c(0))


def test_can_prove_uses_bound_ranges():
    assert hooks.can_prove(i < 16, {i: c(16)})
    assert not hooks.can_prove(i < 15, {i: c(16)})


def test_constraint_scope_adds_an_assumption():
    assert hooks.can_prove_under(i < 8, i < 4, {i: c(16)})
    assert not hooks.can_prove(i < 8, {i: c(16)})


def test_const_bound():
    assert list(hooks.const_bound(i * 4 + j, {i: c(8), j: c(4)})) == [0, 31]


def test_relax_keeps_unrelaxed_vars_symbolic():
    lo, hi = hooks.relax_bounds(i * 4 + j, {i: c(8), j: c(4)}, [j])
    tvm.ir.assert_structural_equal(lo, i * 4)
    tvm.ir.assert_structural_equal(hi, i * 4 + 3)


def test_relax_over_all_vars():
    lo, hi = hooks.relax_bounds(i * 4 + j, {i: c(8), j: c(4)}, [i, j])
    assert (int(lo), int(hi)) == (0, 31)


def test_detect_iter_map_accepts_affine_indices():
    sums = hooks.detect_iter_map([i * 4 + j], {i: c(8), j: c(4)})
    assert sums is not None and len(sums) == 1


def test_detect_iter_map_rejects_non_affine_indices():
    assert hooks.detect_iter_map([i * i], {i: c(8)}) is None


def test_operator_helpers_fold_constants():
    tvm.ir.assert_structural_equal(hooks.fold("add", i, c(0)), i)
    assert int(hooks.fold("mul", c(3), c(4))) == 12
    assert int(hooks.fold("min", c(3), c(4))) == 3
    assert int(hooks.fold("not", tirx.IntImm("bool", 1), tirx.IntImm("bool", 1))) == 0


def test_non_bool_condition_becomes_not_equal_zero():
    tvm.ir.assert_structural_equal(hooks.fold("cond", n, n), n != 0)
    cond = n < 4
    assert hooks.fold("cond", cond, cond).same_as(cond)


def _range(lo, extent):
    return tvm.ir.Range.from_min_extent(lo, extent)


def test_estimate_region_relaxes_the_given_vars_only():
    (interval,) = hooks.estimate_region(
        [_range(i * 4 + j, 1)], {j: c(4)}, tvm.tirx.const(True), False
    )
    tvm.ir.assert_structural_equal(interval[0], i * 4)
    tvm.ir.assert_structural_equal(tvm.sym.Analyzer().simplify(interval[1]), i * 4 + 3)


def test_estimate_region_uses_the_predicate_on_a_fused_index():
    (interval,) = hooks.estimate_region(
        [_range(i * 4 + j, 1)], {i: c(4), j: c(4)}, i * 4 + j < 10, False
    )
    assert [int(tvm.sym.Analyzer().simplify(e)) for e in interval] == [0, 9]


def test_strict_estimate_fails_where_the_upper_one_falls_back_to_intervals():
    region = [_range(tvm.tirx.max(i, 2), 1)]
    assert hooks.estimate_region(region, {i: c(4)}, tvm.tirx.const(True), True) is None
    (interval,) = hooks.estimate_region(region, {i: c(4)}, tvm.tirx.const(True), False)
    assert [int(e) for e in interval] == [2, 3]


def test_unbounded_estimate_has_no_ends():
    (interval,) = hooks.estimate_region([_range(i * i, 1)], {i: c(4)}, tvm.tirx.const(True), False)
    assert list(interval) == [None, None]
