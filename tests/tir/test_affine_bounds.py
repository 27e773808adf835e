"""Affine forms and bound terms behind the compaction analysis (src_cpp/tir/affine_bounds.h)."""

from tvm import tirx

from tvm_memplan import testing as hooks

io, ii, j, bx = (tirx.Var(name, "int32") for name in ("io", "ii", "j", "bx"))


def test_min_upper_bound_against_an_affine_lower_bound():
    assert hooks.const_difference_bound(tirx.min(io * 4 + 3, 13), io * 4) == 3


def test_max_lower_bound_and_min_upper_bound():
    hi = tirx.min(io * 16 + 17, 255)
    lo = tirx.max(io * 16 - 1, 0)
    assert hooks.const_difference_bound(hi, lo) == 18


def test_opaque_terms_cancel():
    x = tirx.floordiv(tirx.floormod(bx, 16), 4)
    assert hooks.const_difference_bound(x * 8 + 8, x * 8 - 1) == 9


def test_no_constant_difference_means_no_bound():
    assert hooks.const_difference_bound(io * 4, ii) is None
    # max(a, b) is not below either of its terms: it gives no upper term.
    assert hooks.const_difference_bound(tirx.max(io * 4 + 3, 13), io * 4) is None


def test_condition_atoms_are_affine_relations():
    cond = tirx.all(io * 4 + ii < 62, tirx.likely(j != 0))
    assert list(hooks.condition_atoms(cond)) == ["4*io + 1*ii + -61 <= 0", "1*j + 0 != 0"]


def test_negated_condition_flips_the_comparison():
    assert list(hooks.condition_atoms(tirx.Not(io < 3))) == ["1*io + -3 >= 0"]
    assert list(hooks.condition_atoms(tirx.Not(tirx.Or(io < 3, j >= 2)))) == [
        "1*io + -3 >= 0",
        "1*j + -1 <= 0",
    ]


def test_non_affine_condition_is_opaque():
    (atom,) = hooks.condition_atoms(tirx.floormod(io, 2) == 0)
    assert atom.startswith("opaque")
