"""CPU and GPU schedules around compacted intermediates: the corpus that checks compaction under
the loop kinds users schedule (issue 35), shared by tests/tir and bench/compact.py.

- ``random_schedule(seed)``: a seeded TE chain (elementwise producers, halo reads, a reduction)
  scheduled as users and tools schedule it: splits with and without tails, ``compute_at`` and
  ``reverse_compute_at`` at every loop, ``cache_read``/``cache_write`` into them, and vectorized,
  parallel, unrolled or serial loops (or, with ``gpu``, thread bindings with vectorized inner
  loops).
- ``TOOL_SCHEDULES``: the forms MetaSchedule's CPU rules produce, written by hand
  (``meta_schedule.TuneContext`` segfaults in the 0.27.0.post1 wheel, in ``ToJSONGraph``):
  multi-level tiling with ``cache_write`` and ``reverse_compute_at``, a parallel outer loop,
  the innermost loop vectorized, and unrolling, on a matmul and a conv2d.

Each builder returns the module as a user hands it to ``tvm.compile``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import tvm
from tvm import s_tir, te, topi

__all__ = ["ScheduleCase", "TOOL_SCHEDULES", "dlight_cpu", "random_schedule"]


@dataclass(frozen=True)
class ScheduleCase:
    name: str
    #: What was done, step by step, so that a failure can be rebuilt by hand.
    steps: tuple[str, ...]
    mod: tvm.IRModule
    #: Binds GPU threads: compiles for a GPU target only.
    gpu: bool = False


# ---- random chains --------------------------------------------------------------------------


def _halo(p):
    return lambda i, j: p[i, j] + p[i + 1, j] * 0.5


def _row_sum(p, k):
    return lambda i, j: te.sum(p[i, k], axis=k)


def _scaled(p, scale):
    return lambda i, j: p[i, j] * scale + 1.0


def _chain(rng: np.random.Generator):
    """A (n, m) input through one to three stages; the last stage is the output. Stages read
    their producer at the same point, with a halo (`B[i + 1]`), or reduce over its rows."""
    n = int(rng.choice([8, 12, 16, 30, 32]))
    m = int(rng.choice([1, 4, 8]))
    a = te.placeholder((n, m), name="A")
    stages, steps = [a], []
    for s in range(int(rng.integers(1, 4))):
        prev = stages[-1]
        rows, width = int(prev.shape[0]), int(prev.shape[1])
        kind = str(rng.choice(["map", "map", "halo", "reduce"] if s else ["map", "halo"]))
        name = "BCDE"[s]
        if kind == "halo" and rows > 2:
            t = te.compute((rows - 1, width), _halo(prev), name=name)
        elif kind == "reduce" and width > 1:
            k = te.reduce_axis((0, width), name="k")
            t = te.compute((rows, 1), _row_sum(prev, k), name=name)
        else:
            kind = "map"
            t = te.compute((rows, width), _scaled(prev, s + 2.0), name=name)
        stages.append(t)
        steps.append(f"{name} = {kind}({prev.name})")
    return stages, steps


def _split_outermost(sch, block, rng, steps):
    """Split the outermost loop of `block` by 2, 4 or 8 (a tail when it does not divide)."""
    factor = int(rng.choice([2, 4, 8]))
    outer, inner = sch.split(sch.get_loops(block)[0], [None, factor])
    steps.append(f"split {sch.get(block).name_hint} loop 0 by {factor}")
    return outer, inner


def _cpu_kinds(sch, rng, steps, loops):
    """Loop kinds on the loops of the output's nest: the innermost vectorized or unrolled, an
    outer one parallel; vectorize and parallel only where TVM's schedule allows them."""
    inner = loops[-1]
    kind = str(rng.choice(["vectorize", "vectorize", "vectorize", "unroll", "serial"]))
    if kind == "vectorize":
        sch.vectorize(inner)
    elif kind == "unroll":
        sch.unroll(inner)
    steps.append(f"{kind} innermost loop")
    if len(loops) > 1 and rng.random() < 0.4:
        sch.parallel(loops[0])
        steps.append("parallel outermost loop")


def _gpu_kinds(sch, steps, outer, inner):
    """The output's split loop bound to threads, its inner part vectorized."""
    bx, tx = sch.split(outer, [None, 2])
    sch.bind(bx, "blockIdx.x")
    sch.bind(tx, "threadIdx.x")
    sch.vectorize(inner)
    steps.append("bind blockIdx.x, threadIdx.x; vectorize inner")


def random_schedule(seed: int, gpu: bool = False) -> ScheduleCase:
    """The seeded case; a schedule primitive that refuses a step skips that step (the case then
    says which steps ran)."""
    rng = np.random.default_rng(seed)
    stages, steps = _chain(rng)
    func = te.create_prim_func([stages[0], stages[-1]])
    sch = s_tir.Schedule(tvm.IRModule({"main": func}))
    out = sch.get_sblock(stages[-1].name)
    if rng.random() < 0.3:
        # The output block now writes a cache, and the returned block copies it out.
        scopes = ["local"] if gpu else ["global", "local"]
        write_back = sch.cache_write(out, 0, str(rng.choice(scopes)))
        steps.append(f"cache_write {stages[-1].name}")
        out, producer_of_out = write_back, out
    else:
        producer_of_out = None
    outer, inner = _split_outermost(sch, out, rng, steps)
    loops = sch.get_loops(out)
    # Producers go into the output's loops, innermost first: each at a random one of them.
    producers = [sch.get_sblock(t.name) for t in stages[1:-1]][::-1]
    if producer_of_out is not None:
        producers.insert(0, producer_of_out)
    for block in producers:
        where = int(rng.integers(0, len(loops)))
        name = sch.get(block).name_hint
        try:
            sch.compute_at(block, loops[where], preserve_unit_loops=bool(rng.random() < 0.5))
            steps.append(f"compute_at {name} loop {where}")
        except s_tir.ScheduleError:
            steps.append(f"compute_at {name} loop {where} refused")
            if gpu:
                # A GPU kernel cannot allocate global memory: every intermediate goes inside
                # the threads, at the outermost loop when a deeper one is refused.
                sch.compute_at(block, loops[0])
                steps.append(f"compute_at {name} loop 0")
        if gpu:
            sch.set_scope(block, 0, "local")
            steps.append(f"set_scope {name} local")
    if len(stages) > 2 and rng.random() < 0.3:
        # A cache of the input read inside the output's innermost loop.
        first = sch.get_sblock(stages[1].name)
        try:
            scopes = ["local"] if gpu else ["global", "local"]
            cache = sch.cache_read(first, 0, str(rng.choice(scopes)))
            sch.compute_at(cache, sch.get_loops(first)[-1])
            steps.append("cache_read A at its consumer's innermost loop")
        except s_tir.ScheduleError:
            steps.append("cache_read A refused")
    try:
        if gpu:
            _gpu_kinds(sch, steps, outer, inner)
        else:
            _cpu_kinds(sch, rng, steps, sch.get_loops(out))
    except s_tir.ScheduleError:
        steps.append("loop kinds refused")
    kind = "gpu" if gpu else "cpu"
    return ScheduleCase(f"{kind} seed {seed}", tuple(steps), sch.mod, gpu)


# ---- MetaSchedule's CPU forms, by hand -----------------------------------------------------------


def _tiled_matmul(n: int = 64, tiles=(2, 4, 8), vector: int = 8) -> ScheduleCase:
    """MetaSchedule's multi-level tiling (SSRSRS) for llvm: `cache_write` of the accumulator,
    `reverse_compute_at` of the write-back into the outer tile, the outer loops fused and
    parallel, the innermost vectorized, the reduction's inner loop unrolled."""
    a = te.placeholder((n, n), name="A")
    b = te.placeholder((n, n), name="B")
    k = te.reduce_axis((0, n), name="k")
    c = te.compute((n, n), lambda i, j: te.sum(a[i, k] * b[k, j], axis=k), name="C")
    sch = s_tir.Schedule(tvm.IRModule({"main": te.create_prim_func([a, b, c])}))
    block = sch.get_sblock("C")
    write = sch.cache_write(block, 0, "global")
    i, j, kk = sch.get_loops(block)
    i0, i1, i2 = sch.split(i, [None, tiles[0], tiles[1]])
    j0, j1, j2 = sch.split(j, [None, tiles[2], vector])
    k0, k1 = sch.split(kk, [None, 4])
    sch.reorder(i0, j0, i1, j1, k0, i2, k1, j2)
    sch.reverse_compute_at(write, j0)
    fused = sch.fuse(i0, j0)
    sch.parallel(fused)
    sch.vectorize(j2)
    sch.unroll(k1)
    sch.decompose_reduction(block, k0)
    wi, wj = sch.get_loops(write)[-2:]
    _, wj1 = sch.split(wj, [None, vector])
    sch.vectorize(wj1)
    steps = ("multi-level tiling", "cache_write C", "reverse_compute_at", "parallel", "vectorize")
    return ScheduleCase("metaschedule-style matmul", steps, sch.mod)


def _tiled_conv2d(vector: int = 8) -> ScheduleCase:
    """The same forms on an NCHW conv2d with its padding stage computed at the output's tile:
    the padded input tile lives inside the parallel loop, the accumulator's write-back inside
    the tile, the output channels' innermost loop vectorized."""
    data = te.placeholder((1, 8, 16, 16), name="data")
    weight = te.placeholder((16, 8, 3, 3), name="weight")
    conv = topi.nn.conv2d_nchw(data, weight, 1, 1, 1)
    sch = s_tir.Schedule(tvm.IRModule({"main": te.create_prim_func([data, weight, conv])}))
    block = sch.get_sblock(conv.op.name)
    pad = sch.get_sblock("pad_temp")
    write = sch.cache_write(block, 0, "global")
    n, f, y, x, rc, ry, rx = sch.get_loops(block)
    f0, f1 = sch.split(f, [None, 8])
    y0, y1 = sch.split(y, [None, 4])
    x0, x1 = sch.split(x, [None, vector])
    sch.reorder(n, f0, y0, x0, rc, ry, y1, rx, f1, x1)
    sch.reverse_compute_at(write, x0)
    sch.compute_at(pad, x0)
    fused = sch.fuse(n, f0, y0)
    sch.parallel(fused)
    sch.vectorize(x1)
    sch.unroll(rx)
    wl = sch.get_loops(write)[-1]
    sch.vectorize(wl)
    steps = ("pad computed at the tile", "cache_write", "reverse_compute_at", "parallel")
    return ScheduleCase("metaschedule-style conv2d", steps + ("vectorize",), sch.mod)


def _vectorized_producer(n: int = 64, vector: int = 4) -> ScheduleCase:
    """MetaSchedule's inline-or-compute-at rule on an elementwise producer: computed at the
    consumer's vectorized loop (issue 35's reproducer at a realistic size)."""
    a = te.placeholder((n, n), name="A")
    b = te.compute((n, n), lambda i, j: te.exp(a[i, j]), name="B")
    c = te.compute((n, n), lambda i, j: b[i, j] * 2.0 + a[i, j], name="C")
    sch = s_tir.Schedule(tvm.IRModule({"main": te.create_prim_func([a, c])}))
    i, j = sch.get_loops(sch.get_sblock("C"))
    j0, j1 = sch.split(j, [None, vector])
    sch.compute_at(sch.get_sblock("B"), j1)
    sch.parallel(i)
    sch.vectorize(j1)
    steps = ("split", "compute_at the vectorized loop", "parallel", "vectorize")
    return ScheduleCase("producer at the vectorized loop", steps, sch.mod)


TOOL_SCHEDULES: dict[str, Callable[[], ScheduleCase]] = {
    "metaschedule-style matmul": _tiled_matmul,
    "metaschedule-style conv2d": _tiled_conv2d,
    "producer at the vectorized loop": _vectorized_producer,
}


# ---- dlight's CPU rules --------------------------------------------------------------------------


def dlight_cpu(mod: tvm.IRModule, target: tvm.target.Target) -> tvm.IRModule:
    """A Relax model as a CPU user schedules it with dlight: the ``zero`` pipeline (LegalizeOps,
    FuseOps, FuseTIR), then dlight's CPU rules (GEMV, Reduction), which vectorize."""
    from tvm import relax
    from tvm.s_tir import dlight

    with target:
        mod = relax.get_pipeline("zero")(mod)
        return dlight.ApplyDefaultSchedule(dlight.cpu.GEMV(), dlight.cpu.Reduction())(mod)
