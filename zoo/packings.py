"""Offset-packing instances whose optimum is known: the tests check the exact search against
them and bench/plan.py's section (f) times it (and MiniMalloc) on them."""

from __future__ import annotations

import random

__all__ = ["HEIGHT", "UNIT", "perfect_packing"]

UNIT = 64  # bytes
HEIGHT = 64  # units: an optimum of 4096 bytes


def perfect_packing(
    count: int, seed: int, unit: int = UNIT, height: int = HEIGHT
) -> list[tuple[str, int, int, int]]:
    """A rectangle of ``2 * count`` program points by ``height`` units of ``unit`` bytes, cut
    into ``count`` tiles by guillotine cuts, each tile a buffer ``(id, lower, upper, size)``
    live over ``[lower, upper)``: every point is full, so the optimum is the peak-live bound,
    ``height * unit`` bytes."""
    rng = random.Random(seed)
    tiles = [(0, 2 * count, 0, height)]
    while len(tiles) < count:
        tiles.sort(key=lambda t: (t[1] - t[0]) * (t[3] - t[2]))
        t0, t1, b0, b1 = tiles.pop()
        if t1 - t0 > 1 and (b1 - b0 <= 1 or rng.random() < 0.5):
            cut = rng.randint(t0 + 1, t1 - 1)
            tiles += [(t0, cut, b0, b1), (cut, t1, b0, b1)]
        else:
            cut = rng.randint(b0 + 1, b1 - 1)
            tiles += [(t0, t1, b0, cut), (t0, t1, cut, b1)]
    return [(str(i), t0, t1, (b1 - b0) * unit) for i, (t0, t1, b0, b1) in enumerate(tiles)]
