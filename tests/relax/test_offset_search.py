"""The exact offset search behind the greedy orders (src_cpp/relax/offset_search.h): checked
against brute force on small random instances (every placement enumerated), every placement
checked for overlaps independently, its labels, its budget, and the packer on its own
(tvm_memplan.analysis.pack_offsets)."""

from __future__ import annotations

import inspect
import random

import pytest
import tvm

from tvm_memplan import testing as testing_api
from tvm_memplan.analysis import DoesNotFitError, optimality_codes, pack_offsets
from tvm_memplan.analysis import _ffi_api as analysis_api
from zoo.packings import perfect_packing


def _pack(items, alignment, search_ms=10_000, capacity=-1):
    """The packer through its FFI entry: items (bytes, first, last[, group, delta]), inclusive
    lifetimes, groups allowed."""
    return analysis_api.pack_offsets(items, alignment, capacity, search_ms, None)


def _overlaps(items, offsets, alignment):
    """An independent check: the pairs of items that share a byte while live at one point (items
    of one group excepted, which must sit at their deltas), and misaligned offsets."""
    problems = []
    for i in range(len(items)):
        if offsets[i] % alignment:
            problems.append(f"item {i} at {offsets[i]} is not aligned to {alignment}")
    for i, a in enumerate(items):
        for j in range(i):
            b = items[j]
            ga = a[3] if len(a) > 3 else -1
            gb = b[3] if len(b) > 3 else -1
            if ga >= 0 and ga == gb:
                if offsets[i] - offsets[j] != a[4] - b[4]:
                    problems.append(f"items {j} and {i} of group {ga} off their deltas")
                continue
            live_together = a[0] and b[0] and a[1] <= b[2] and b[1] <= a[2]
            shared = offsets[i] < offsets[j] + b[0] and offsets[j] < offsets[i] + a[0]
            if live_together and shared:
                problems.append(f"items {j} and {i} overlap")
    return problems


def _units(items):
    """Blocks to place for brute force: a plain item, or a group's items at their deltas."""
    blocks = {}
    for index, item in enumerate(items):
        group = item[3] if len(item) > 3 else -1
        key = ("group", group) if group >= 0 else ("item", index)
        blocks.setdefault(key, []).append(index)
    return list(blocks.values())


def _brute_force_minimum(items, alignment):
    """The least size over every placement: each block at every aligned offset up to the sum of
    the sizes (rounded up to the alignment), depth first, pruned only by overlaps and by the
    best size so far."""
    blocks = _units(items)
    deltas = [item[4] if len(item) > 3 else 0 for item in items]
    limit = sum(-(-item[0] // alignment) * alignment + deltas[i] for i, item in enumerate(items))
    offsets = [None] * len(items)
    best = [limit + max(item[0] for item in items)]

    def clash(index):
        a = items[index]
        for j, off in enumerate(offsets):
            if off is None or j == index:
                continue
            b = items[j]
            if len(a) > 3 and a[3] >= 0 and len(b) > 3 and a[3] == b[3]:
                continue
            live_together = a[0] and b[0] and a[1] <= b[2] and b[1] <= a[2]
            if live_together and offsets[index] < off + b[0] and off < offsets[index] + a[0]:
                return True
        return False

    def place(k, height):
        if height >= best[0]:
            return
        if k == len(blocks):
            best[0] = height
            return
        for base in range(0, limit + 1, alignment):
            members = blocks[k]
            for m in members:
                offsets[m] = base + deltas[m]
            top = max(height, *(offsets[m] + items[m][0] for m in members))
            if not any(clash(m) for m in members):
                place(k + 1, top)
            for m in members:
                offsets[m] = None

    place(0, 0)
    return best[0]


def _random_items(rng, count, alignment, groups):
    items = []
    for _ in range(count):
        first = rng.randrange(0, 6)
        items.append(
            (
                rng.choice([1, 2, 3]) * alignment - rng.choice([0, 0, alignment // 2]),
                first,
                first + rng.randrange(0, 4),
            )
        )
    if groups and count >= 3:
        # Two items at fixed deltas: an output and an input inside it, live before it.
        size = rng.choice([2, 3]) * alignment
        at = rng.randrange(2, 7)
        items[-2] = (size, at, at + rng.randrange(0, 3), 0, 0)
        items[-1] = (alignment, rng.randrange(0, at + 1), at, 0, rng.choice([0, alignment]))
        items = [item if len(item) == 5 else (*item, -1, 0) for item in items]
        if rng.random() < 0.5:
            # An empty input of the group, which must sit at its delta all the same.
            items[0] = (0, rng.randrange(0, at + 1), at, 0, rng.choice([0, alignment]))
    return items


CASES = [
    (seed, count, alignment, groups)
    for seed in range(12)
    for count, alignment, groups in ((5, 1, False), (6, 64, False), (7, 2, False), (6, 4, True))
]


@pytest.mark.parametrize(("seed", "count", "alignment", "groups"), CASES)
def test_the_search_finds_the_least_size_that_brute_force_finds(seed, count, alignment, groups):
    """Against every placement enumerated: the size is the least one wherever the result claims
    at_bound or proven_minimum, never below it, and without groups (where the search is
    exhaustive) always claimed. The placement has no overlap."""
    rng = random.Random(1000 * seed + count)
    items = _random_items(rng, count, alignment, groups)
    result = _pack(items, alignment)
    offsets = [int(o) for o in result["offsets"]]
    assert _overlaps(items, offsets, alignment) == []
    size = int(result["bytes"])
    assert size == max(o + item[0] for o, item in zip(offsets, items, strict=True))
    least = _brute_force_minimum(items, alignment)
    assert size >= least >= int(result["bound"])
    if result["optimality"] in ("at_bound", "proven_minimum"):
        assert size == least
    if not groups:
        assert result["optimality"] in ("at_bound", "proven_minimum")


@pytest.mark.parametrize("seed", range(6))
def test_perfect_packings_of_40_reach_their_optimum(seed):
    """The optimum of a perfect packing is its bound: the search reaches it."""
    items = perfect_packing(40, seed)
    packing = pack_offsets(items, alignment=64, exact_search_ms=10_000)
    assert packing.optimality == "at_bound" and packing.size == 64 * 64 == packing.bound
    plain = [(size, lower, upper - 1) for _, lower, upper, size in items]
    assert _overlaps(plain, [packing.offsets[i[0]] for i in items], 64) == []


def test_a_tiny_budget_returns_the_best_found_and_says_so():
    """With a budget far too small for a hard instance, the packer still returns a valid
    placement, labelled best_found with its gap (timing itself is bench/plan.py's)."""
    items = perfect_packing(400, 0)
    packing = pack_offsets(items, alignment=64, exact_search_ms=20)
    assert packing.optimality == "best_found"
    assert packing.gap_bytes == packing.size - packing.bound > 0
    plain = [(size, lower, upper - 1) for _, lower, upper, size in items]
    assert _overlaps(plain, [packing.offsets[i[0]] for i in items], 64) == []


def test_results_do_not_depend_on_the_run():
    """The search stops after a number of steps, not at a time: the same input gives the same
    placement every time."""
    items = perfect_packing(400, 0)
    first = pack_offsets(items, alignment=64, exact_search_ms=50)
    second = pack_offsets(items, alignment=64, exact_search_ms=50)
    assert not first.timed_out
    assert first.offsets == second.offsets and first.search_steps == second.search_steps


def _renamed(items, rng):
    """`items` (id, lower, upper, size) with every time point renamed by a random map that keeps
    their order: gaps between consecutive points from 1 to 1000, the first shifted too."""
    points = sorted({p for _, lower, upper, _ in items for p in (lower, upper)})
    renamed, at = {}, rng.randrange(0, 10**6)
    for point in points:
        renamed[point] = at
        at += rng.randrange(1, 1001)
    return [(ident, renamed[lower], renamed[upper], size) for ident, lower, upper, size in items]


def _placed(items, capacity):
    """The packing of `items` (within `capacity`, when given, or the best found if none fits)."""
    try:
        return pack_offsets(items, capacity=capacity, alignment=64, exact_search_ms=200)
    except DoesNotFitError as err:
        return err.packing


def _outcome(packing):
    return (
        packing.offsets,
        packing.size,
        packing.algorithm,
        packing.optimality,
        packing.greedy_orders,
        packing.greedy_steps,
        packing.search_steps,
    )


RENAMED_CASES = [("perfect", seed) for seed in range(6)] + [("random", seed) for seed in range(10)]


@pytest.mark.parametrize(("kind", "seed"), RENAMED_CASES)
def test_a_renaming_of_time_that_keeps_its_order_gives_the_same_placement(kind, seed):
    """Two instances that differ only by a monotone renaming of their time points are one
    problem: the packer places them alike, bit for bit (the offsets, what placed them and the
    steps each phase took), minimizing and within a capacity. Perfect packings of 120 need the
    exact search, random lifetimes the greedy orders."""
    rng = random.Random(seed)
    if kind == "perfect":
        items = perfect_packing(120, seed)
    else:
        items = []
        for i in range(rng.randrange(20, 80)):
            lower = rng.randrange(0, 40)
            items.append((f"t{i}", lower, lower + rng.randrange(1, 12), 64 * rng.randrange(1, 9)))
    renamed = _renamed(items, rng)
    assert renamed != items
    for capacity in (None, 64 * 64 if kind == "perfect" else None):
        given, other = (_placed(problem, capacity) for problem in (items, renamed))
        assert _outcome(given) == _outcome(other)
        assert given.search_steps > 0 or kind == "random"


def test_progress_reports_each_greedy_order_then_each_search_try():
    """progress(phase, best, bound) comes after every greedy order, then after every try of the
    exact search; the best size never grows and ends at the packing's size."""
    items = perfect_packing(400, 0)
    calls = []
    packing = pack_offsets(
        items, alignment=64, exact_search_ms=50, progress=lambda *call: calls.append(call)
    )
    phases = [phase for phase, _, _ in calls]
    assert phases == ["greedy orders"] * packing.greedy_orders + ["exact search"] * (
        len(calls) - packing.greedy_orders
    )
    assert "exact search" in phases
    bests = [best for _, best, _ in calls]
    assert bests == sorted(bests, reverse=True) and bests[-1] == packing.size
    assert {bound for _, _, bound in calls} == {packing.bound}


def test_the_budget_bounds_the_greedy_orders_too():
    """Each greedy order is charged to the budget and one after the first runs only while it
    lasts: on 2,000 buffers a budget of 1 ms runs one order where none (0) runs all of them,
    and the work charged does not vary between runs."""
    items = perfect_packing(2000, 0)
    unbounded = pack_offsets(items, alignment=64, exact_search_ms=0)
    tiny = pack_offsets(items, alignment=64, exact_search_ms=1)
    again = pack_offsets(items, alignment=64, exact_search_ms=1)
    assert tiny.greedy_orders == 1 < unbounded.greedy_orders
    assert tiny.greedy_steps < unbounded.greedy_steps
    assert (tiny.greedy_steps, tiny.offsets) == (again.greedy_steps, again.offsets)
    assert unbounded.size <= tiny.size and tiny.optimality == "best_found"


def _plain(items):
    """perfect_packing's rows as the packer's items (bytes, first, last)."""
    return [(size, lower, upper - 1) for _, lower, upper, size in items]


def test_storages_on_one_budget_are_searched_largest_gap_first_each_on_its_share():
    """Several storages on one budget (one function's): after the greedy orders, the search
    goes first where a placement lies the most bytes above its bound, on a share of the budget
    in proportion to its gap. The larger gap here is one no budget of 50 ms closes; the smaller
    one needs a few thousand steps, which its share still holds, so it reaches its bound.
    Searched on the whole budget first, the larger gap would have left it greedy."""
    small = _plain(perfect_packing(40, 0))  # greedy: 448 bytes over its bound
    large = _plain(perfect_packing(400, 0, unit=64 * 16))  # greedy: 17,408 bytes over
    greedy = [_pack(items, 64, search_ms=0) for items in (small, large)]
    assert 0 < greedy[0]["bytes"] - greedy[0]["bound"] < greedy[1]["bytes"] - greedy[1]["bound"]
    small_first, large_first = (
        [dict(r) for r in testing_api.pack_all(problems, 64, 50)]
        for problems in ([small, large], [large, small])
    )
    assert _same_but_time(small_first, large_first[::-1])
    small_record, large_record = small_first
    assert small_record["optimality"] == "at_bound"
    assert large_record["search_steps"] > 100 * small_record["search_steps"] > 0
    assert large_record["bytes"] <= greedy[1]["bytes"]
    for items, record in zip((small, large), small_first, strict=True):
        assert _overlaps(items, list(record["offsets"]), 64) == []


def _same_but_time(a, b):
    """Records equal but for the seconds they measured."""
    drop = ("greedy_seconds", "search_seconds")
    return [{k: v for k, v in r.items() if k not in drop} for r in a] == [
        {k: v for k, v in r.items() if k not in drop} for r in b
    ]


def test_a_storage_at_its_bound_or_empty_takes_no_search():
    """A storage the greedy orders place at its bound, or one with no tensors, is not
    searched: the budget goes to the others."""
    at_bound = [(64, 0, 1), (64, 2, 3)]
    records = testing_api.pack_all([[], at_bound, _plain(perfect_packing(40, 0))], 64, 50)
    assert [r["optimality"] for r in records] == ["at_bound"] * 3
    assert [r["search_steps"] for r in records][:2] == [0, 0]
    assert records[0]["bytes"] == 0 and records[1]["bytes"] == 64


def test_alignment_need_not_be_a_power_of_two():
    """Offsets are multiples of any positive alignment, such as 192."""
    items = [(f"b{i}", i % 3, i % 3 + 2, 64 * (1 + i % 4)) for i in range(12)]
    packing = pack_offsets(items, alignment=192)
    assert all(offset % 192 == 0 for offset in packing.offsets.values())
    plain = [(size, lower, upper - 1) for _, lower, upper, size in items]
    assert _overlaps(plain, [packing.offsets[i[0]] for i in items], 192) == []


def test_a_capacity_under_the_bound_does_not_fit_and_says_why():
    """The bound is the reason given when it exceeds the capacity."""
    items = [("a", 0, 2, 100), ("b", 1, 3, 100)]
    with pytest.raises(DoesNotFitError, match="peak-live bound, 200 bytes") as err:
        pack_offsets(items, capacity=150)
    assert err.value.packing.size == 200


def test_a_capacity_the_search_proves_too_small_does_not_fit():
    """Two 1-byte items live together at 2-byte alignment: the bound (2) fits a capacity of 2,
    but no placement does, and the search proves it."""
    items = [("a", 0, 2, 1), ("b", 1, 3, 1)]
    with pytest.raises(DoesNotFitError, match="proved"):
        pack_offsets(items, capacity=2, alignment=2)
    assert pack_offsets(items, alignment=2).optimality == "proven_minimum"


def test_bad_items_are_value_errors_naming_the_item():
    with pytest.raises(ValueError, match="item 'x'.*lifetime"):
        pack_offsets([("x", 3, 3, 8)])
    with pytest.raises(ValueError, match="item 'y': size"):
        pack_offsets([("y", 0, 1, -1)])
    with pytest.raises(ValueError, match="alignment"):
        pack_offsets([("z", 0, 1, 8)], alignment=0)


def test_optimality_codes_are_one_table():
    """The codes come from the C++ table, each with a sentence, in order of strength."""
    codes = optimality_codes()
    assert list(codes) == ["at_bound", "proven_minimum", "best_found"]
    assert all(sentence.endswith(".") for sentence in codes.values())


def test_the_budget_has_one_home():
    """One unit, two defaults (relax/search_budget.h): the planner's option defaults to the
    planner's, pack_offsets to the packer's, and the PassContext option is registered."""
    from tvm_memplan.analysis import search_defaults
    from tvm_memplan.transform import StaticPlanBlockMemory

    defaults = search_defaults()
    assert (defaults.planner_ms, defaults.pack_ms) == (1000, 10_000)
    assert defaults.pass_config == "tvm_memplan.exact_search_ms"
    assert inspect.signature(StaticPlanBlockMemory).parameters["exact_search_ms"].default == 1000
    assert "tvm_memplan.exact_search_ms" in tvm.transform.PassContext.list_configs()


@pytest.mark.parametrize("value", [-1, True, "10"])
def test_a_bad_pass_context_budget_is_a_value_error_naming_it(value):
    with pytest.raises(ValueError, match="tvm_memplan.exact_search_ms must be an integer >= 0"):
        tvm.transform.PassContext(config={"tvm_memplan.exact_search_ms": value})
