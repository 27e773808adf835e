"""The storage flow's root sets (src_cpp/relax/storage_flow.h): sorted sets of storage roots that
hold their first two roots in place and move to the heap beyond. Checked against Python's sets on
random pairs, across that boundary, through the moves and copies the flow makes."""

from __future__ import annotations

import random

import pytest

from tvm_memplan import testing as testing_api


def _sorted_ids(rng: random.Random, count: int) -> list[int]:
    return sorted(rng.sample(range(12), count))


@pytest.mark.parametrize("seed", range(40))
def test_a_union_moved_and_copied_is_the_union_of_the_sets(seed):
    """The union of two root sets, of 0 to 6 roots each (in place up to two, on the heap above),
    read back after a move into a new set, a move over a set on the heap and a copy, is the
    union of the two as Python's sets say; the moves leave empty sets; and the two intersect
    exactly when Python's sets do."""
    rng = random.Random(seed)
    a = _sorted_ids(rng, rng.randint(0, 6))
    b = _sorted_ids(rng, rng.randint(0, 6))
    union, left, intersects = testing_api.root_set_union(a, b)
    assert list(union) == sorted(set(a) | set(b))
    assert list(left) == [0, 0]
    assert bool(intersects) == bool(set(a) & set(b))


def test_sets_on_either_side_of_the_boundary():
    """Two roots stay in place, a third moves the set to the heap: each case of the union keeps
    every root once, in order."""
    cases = [([], []), ([1], []), ([], [2, 3]), ([1, 2], [2, 3]), ([0, 5, 9], [1]), ([4], [4])]
    for a, b in cases:
        union, _, _ = testing_api.root_set_union(a, b)
        assert list(union) == sorted(set(a) | set(b)), (a, b)
