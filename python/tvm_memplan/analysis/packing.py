"""The offset packer on its own (``src_cpp/relax/offset_packing.h``): place buffers with fixed
lifetimes at offsets of one arena, as the Relax planner places tensors in a storage.

Example::

    from tvm_memplan.analysis import pack_offsets

    packing = pack_offsets([("a", 0, 3, 256), ("b", 1, 4, 128), ("c", 3, 5, 256)])
    packing.offsets      # {"a": 0, "b": 256, "c": 0}: c reuses a's bytes
    packing.size         # 384, the peak-live bound
    packing.optimality   # "at_bound"

Each item is ``(id, lower, upper, size)`` with the buffer live over ``[lower, upper)`` (the
convention of MiniMalloc's CSV files; the C++ packer takes inclusive ``[first, last]``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from dataclasses import dataclass, fields

import tvm_ffi

from . import _ffi_api
from .codes import codes

__all__ = [
    "DoesNotFitError",
    "Packing",
    "SearchDefaults",
    "optimality_codes",
    "pack_offsets",
    "search_config",
    "search_defaults",
]


@dataclass(frozen=True)
class SearchDefaults:
    """The exact search's budget as the C++ core declares it (``relax/search_budget.h``): one
    unit, milliseconds, and two defaults, each with its reason written there."""

    #: Per function of a build, the planner's option ``exact_search_ms`` when none is given.
    planner_ms: int
    #: For one packing problem on its own (``pack_offsets``, ``tvm-memplan pack``).
    pack_ms: int
    #: The PassContext option that sets the planner's budget for a whole build.
    pass_config: str
    #: Search steps per millisecond: the steps, not the clock, end a search.
    steps_per_ms: int
    #: Entries of the offset index that the greedy orders examine per step charged.
    index_entries_per_step: int


@functools.cache
def search_defaults() -> SearchDefaults:
    """The exact search's defaults, read from the C++ core."""
    values = tvm_ffi.get_global_func("tvm_memplan.relax.ExactSearchDefaults")()
    return SearchDefaults(
        planner_ms=int(values["planner_ms"]),
        pack_ms=int(values["pack_ms"]),
        pass_config=str(values["pass_config"]),
        steps_per_ms=int(values["steps_per_ms"]),
        index_entries_per_step=int(values["index_entries_per_step"]),
    )


def search_config(exact_search_ms: int | None) -> dict[str, int]:
    """The PassContext config that gives the planner of every build under it this budget per
    function (empty for None: the planner's default)."""
    if exact_search_ms is None:
        return {}
    return {search_defaults().pass_config: exact_search_ms}


def optimality_codes() -> dict[str, str]:
    """Code -> sentence, for ``Packing.optimality`` and the planner's records: the family
    "optimality" of ``codes``."""
    return {value: code.sentence for value, code in codes("optimality").items()}


@dataclass(frozen=True)
class Packing:
    """A placement: each item's offset, the arena size, and how that size compares with the
    least possible."""

    offsets: dict[object, int]
    size: int
    #: The peak-live bound: the most bytes live at one point. No placement is smaller.
    bound: int
    #: A code of ``optimality_codes()``: at_bound, proven_minimum or best_found.
    optimality: str
    #: The greedy order or "exact search" that found the placement.
    algorithm: str
    #: With a capacity: whether the placement fits, and if not, why ("" when it fits).
    fits: bool
    why_not: str
    #: Steps the exact search took (0 when the greedy orders sufficed), and whether its deadline
    #: rather than its step limit stopped it (the result may then vary from run to run).
    search_steps: int
    timed_out: bool
    #: The greedy orders' work in index entries examined (charged to the same budget at
    #: ``SearchDefaults.index_entries_per_step`` a step), and how many orders ran (one after the
    #: first only while the budget lasts).
    greedy_steps: int
    greedy_orders: int
    #: Seconds in the greedy orders and in the exact search (these vary from run to run; the
    #: steps do not).
    greedy_seconds: float
    search_seconds: float

    @property
    def gap_bytes(self) -> int:
        """Bytes above the peak-live bound (0 at the bound; above it even when proven minimal)."""
        return self.size - self.bound


#: The Python type of each field of Packing, by its annotation (read as text, as annotations are
#: under ``from __future__ import annotations``).
_CONVERT = {"int": int, "str": str, "bool": bool, "float": float}


class DoesNotFitError(ValueError):
    """The items do not fit the capacity: ``packing`` is the best placement found, and the
    message says why (the bound, the search's proof, or its budget)."""

    def __init__(self, message: str, packing: Packing):
        super().__init__(message)
        self.packing = packing


def _checked(items: Iterable) -> list[tuple[object, int, int, int]]:
    checked = []
    seen = set()
    for index, item in enumerate(items):
        try:
            ident, lower, upper, size = item
        except (TypeError, ValueError):
            raise ValueError(
                f"item {index}: expected (id, lower, upper, size), got {item!r}"
            ) from None
        for name, value in (("lower", lower), ("upper", upper), ("size", size)):
            if not isinstance(value, int) or isinstance(value, bool):
                raise ValueError(f"item {ident!r}: {name} must be an integer, got {value!r}")
        if lower < 0 or upper <= lower:
            raise ValueError(
                f"item {ident!r}: the lifetime [lower, upper) = [{lower}, {upper}) must be "
                "non-empty and start at 0 or later"
            )
        if size < 0:
            raise ValueError(f"item {ident!r}: size must be >= 0, got {size}")
        if ident in seen:
            raise ValueError(f"item {ident!r} is given twice")
        seen.add(ident)
        checked.append((ident, lower, upper, size))
    return checked


def pack_offsets(
    items: Iterable,
    *,
    capacity: int | None = None,
    alignment: int = 1,
    exact_search_ms: int | None = None,
    progress: Callable[[str, int, int], None] | None = None,
) -> Packing:
    """Offsets for ``items``, each ``(id, lower, upper, size)`` live over ``[lower, upper)``, so
    that no two items live at the same point share a byte; every offset a multiple of
    ``alignment``.

    Without ``capacity``, the smallest arena found: the greedy orders first, then, if they stay
    above the peak-live bound, an exact search for up to ``exact_search_ms`` milliseconds
    (None: ``search_defaults().pack_ms``; 0: none). That budget bounds the whole packing: the
    greedy orders are charged to it, and those after the first run only while it lasts.
    ``progress(phase, best_size, bound)``, when given, is called after each greedy order (phase
    ``"greedy orders"``) and each try of the exact search (``"exact search"``).
    ``optimality`` says whether the size is at the bound, proven minimal, or the best found.
    With ``capacity``, any placement within it; raises DoesNotFitError, with the best placement
    found and why, when there is none (the bound exceeds it, the search proved it, or the budget ran
    out). ValueError for malformed items or arguments.
    """
    checked = _checked(items)
    if not isinstance(alignment, int) or alignment <= 0:
        raise ValueError(f"alignment must be a positive integer, got {alignment!r}")
    if capacity is not None and (not isinstance(capacity, int) or capacity < 0):
        raise ValueError(f"capacity must be a non-negative integer, got {capacity!r}")
    if exact_search_ms is None:
        exact_search_ms = search_defaults().pack_ms
    if (
        isinstance(exact_search_ms, bool)
        or not isinstance(exact_search_ms, int)
        or exact_search_ms < 0
    ):
        raise ValueError(
            f"exact_search_ms must be a whole number of milliseconds >= 0, got {exact_search_ms!r}"
        )
    tuples = [(size, lower, upper - 1) for _, lower, upper, size in checked]
    result = _ffi_api.pack_offsets(
        tuples, alignment, -1 if capacity is None else capacity, exact_search_ms, progress
    )
    # Every field but the offsets and the size is the C++ result's entry of the same name.
    figures = {
        f.name: _CONVERT[f.type](result[f.name])
        for f in fields(Packing)
        if f.name not in ("offsets", "size")
    }
    packing = Packing(
        offsets={item[0]: int(o) for item, o in zip(checked, result["offsets"], strict=True)},
        size=int(result["bytes"]),
        **figures,
    )
    if not packing.fits:
        raise DoesNotFitError(
            f"the {len(checked)} items do not fit {capacity} bytes: {packing.why_not} "
            f"(peak-live bound {packing.bound} bytes, best placement found {packing.size} bytes)",
            packing,
        )
    return packing
