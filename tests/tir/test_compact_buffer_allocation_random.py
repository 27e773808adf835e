"""Randomized (seeded) property tests of CompactBufferAllocation v2.

Each seed generates a tiled loop nest with an intermediate buffer: random sizes, tile sizes,
index offsets, padding, tail guards (`if`, `T.where` or a `min` loop extent), an optional
halo read under `T.if_then_else`, block or lowered TIR, the buffer allocated per tile or once.
Properties: the compacted function computes the same results as the original, compaction
is idempotent, and it never allocates more than the stock pass.
"""

import math

import numpy as np
import pytest
import tvm

from tvm_memplan import testing
from tvm_memplan.transform import CompactBufferAllocation

SEEDS = range(24)


def _nest(rng: np.random.Generator) -> str:
    n, m, t = int(rng.integers(6, 30)), int(rng.integers(1, 5)), int(rng.integers(2, 9))
    tiles, off = math.ceil(n / t), int(rng.integers(0, 4))
    pad = off + int(rng.integers(0, 3))
    halo = int(rng.random() < 0.5)
    blocks = bool(rng.random() < 0.5)
    guard = str(rng.choice(["if", "where", "min_extent"] if blocks else ["if", "min_extent"]))
    per_tile = bool(rng.random() < 0.7)
    scale = int(rng.integers(2, 5))

    x = f"io * {t} + ii"
    lines = [
        "@T.prim_func(s_tir=True)" if blocks else "@T.prim_func",
        f"def main(A: T.Buffer(({n}, {m}), 'float32'), C: T.Buffer(({n}, {m}), 'float32')):",
    ]
    alloc = "T.sblock_alloc_buffer" if blocks else "T.alloc_buffer"
    indent = "    "
    if not per_tile:
        if blocks:
            lines.append(f"{indent}with T.sblock():")
            indent += "    "
        lines.append(f"{indent}B = {alloc}(({n + pad}, {m}), 'float32')")
    lines.append(f"{indent}for io in range({tiles}):")
    indent += "    "
    if per_tile:
        if blocks:
            lines.append(f"{indent}with T.sblock():")
            indent += "    "
        lines.append(f"{indent}B = {alloc}(({n + pad}, {m}), 'float32')")

    def loop(extent: int, body: list[str]) -> None:
        if guard == "min_extent":
            lines.append(f"{indent}for ii in range(T.min({extent}, {n} - io * {t})):")
        else:
            lines.append(f"{indent}for ii in range({extent}):")
        inner = indent + "    "
        lines.append(f"{inner}for j in range({m}):")
        inner += "    "
        if blocks:
            lines.append(f"{inner}with T.sblock():")
            inner += "    "
        if guard == "where":
            lines.append(f"{inner}T.where({x} < {n})")
        elif guard == "if":
            lines.append(f"{inner}if {x} < {n}:")
            inner += "    "
        lines.extend(inner + stmt for stmt in body)

    loop(t + halo, [f"B[{x} + {off}, j] = A[{x}, j] * T.float32({scale})"])
    read = f"B[{x} + {off}, j]"
    if halo:
        read += f" + T.if_then_else({x} + 1 < {n}, B[{x} + {off + 1}, j], T.float32(0))"
    loop(t, [f"C[{x}, j] = {read}"])
    return "\n".join(lines)


def _func(seed: int) -> tvm.tirx.PrimFunc:
    return tvm.script.from_source(_nest(np.random.default_rng(seed)))


def _apply(pass_, func):
    mod = tvm.IRModule({"main": func.with_attr("global_symbol", "main")})
    return pass_(mod)["main"]


@pytest.mark.parametrize("seed", SEEDS)
def test_random_nest_keeps_results(seed):
    before = _func(seed)
    after = _apply(CompactBufferAllocation(), before)
    testing.assert_same_results(before, after, seed=seed)
    assert testing.allocated_bytes(after) <= testing.allocated_bytes(before)


@pytest.mark.parametrize("seed", SEEDS)
def test_random_nest_is_never_larger_than_stock(seed):
    before = _func(seed)
    ours = testing.allocated_bytes(_apply(CompactBufferAllocation(), before))
    theirs = testing.allocated_bytes(_apply(tvm.s_tir.transform.CompactBufferAllocation(), before))
    assert ours <= theirs


@pytest.mark.parametrize("seed", SEEDS[:8])
def test_random_nest_compaction_is_idempotent(seed):
    once = _apply(CompactBufferAllocation(), _func(seed))
    tvm.ir.assert_structural_equal(_apply(CompactBufferAllocation(), once), once)
