"""The benchmark scripts' timing of variants side by side: interleaved rounds, best kept."""

from __future__ import annotations

import time
from collections.abc import Callable


def best_of(variants: dict[str, Callable[[], object]], rounds: int) -> dict[str, float]:
    """The fastest of `rounds` calls of each variant, rounds interleaved (order flipped every
    round), so that load changes and the process's own drift hit every variant alike."""
    best = dict.fromkeys(variants, float("inf"))
    keys = list(variants)
    for round_ in range(rounds):
        for key in keys if round_ % 2 == 0 else reversed(keys):
            start = time.perf_counter()
            variants[key]()
            best[key] = min(best[key], time.perf_counter() - start)
    return best
