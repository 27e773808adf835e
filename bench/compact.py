"""CompactBufferAllocation: tvm_memplan's pass against the stock TVM pass, in one process.

(a) Allocated bytes after each pass on a corpus of scheduled workloads, prepared by the
    passes the s_tir pipeline runs before compaction (or, for the lowered-TIR workloads, by
    LowerOpaqueBlock and LoopPartition).
(b) Pass time on generated functions of 500 and 5000 blocks (median of several runs).

    python bench/compact.py [--quick]

Both passes run on the same input in the same process; only ratios are meaningful.
"""

from __future__ import annotations

import argparse
import statistics
import time

import tvm
from tvm import s_tir, te, tirx, topi
from tvm.script import tirx as T

import tvm_memplan
from tvm_memplan import testing
from tvm_memplan.transform import CompactBufferAllocation

# The passes the s_tir pipeline runs before CompactBufferAllocation.
_BEFORE_COMPACTION = tvm.transform.Sequential(
    [
        s_tir.transform.CanonicalizeLoop(),
        s_tir.transform.LowerCrossThreadReduction(),
        s_tir.transform.LowerInitBlock(),
        s_tir.transform.PlanAndUpdateBufferAllocationLocation(),
        s_tir.transform.ConvertBlocksToOpaque(),
        s_tir.transform.LiftThreadBinding(),
        s_tir.transform.ManifestSharedMemoryLocalStage(),
    ]
)


def _module(func: tvm.tirx.PrimFunc) -> tvm.IRModule:
    return tvm.IRModule({"main": func.with_attr("global_symbol", "main")})


def _prepared(sch: s_tir.Schedule) -> tvm.IRModule:
    return _BEFORE_COMPACTION(sch.mod)


def _schedule(*tensors) -> s_tir.Schedule:
    return s_tir.Schedule(_module(te.create_prim_func(list(tensors))))


# ---- workloads --------------------------------------------------------------------------------


def _matmul(n=128):
    a = te.placeholder((n, n), name="A")
    b = te.placeholder((n, n), name="B")
    k = te.reduce_axis((0, n), name="k")
    c = te.compute((n, n), lambda i, j: te.sum(a[i, k] * b[k, j], axis=k), name="C")
    return a, b, c


def matmul_cpu_cache() -> tvm.IRModule:
    """Tiled matmul, A/B tiles cached per k-step, C accumulated per tile (global scope)."""
    sch = _schedule(*_matmul())
    blk = sch.get_sblock("C")
    i, j, k = sch.get_loops(blk)
    io, ii = sch.split(i, [None, 32])
    jo, ji = sch.split(j, [None, 32])
    ko, ki = sch.split(k, [None, 16])
    sch.reorder(io, jo, ko, ii, ji, ki)
    for index in (0, 1):
        sch.compute_at(sch.cache_read(blk, index, "global"), ko)
    sch.reverse_compute_at(sch.cache_write(blk, 0, "global"), jo)
    return _prepared(sch)


def matmul_gpu_shared_local(storage_align=False) -> tvm.IRModule:
    """GPU matmul: shared tiles of A/B per k-step, a local accumulator per thread."""
    sch = _schedule(*_matmul())
    blk = sch.get_sblock("C")
    i, j, k = sch.get_loops(blk)
    bi, vi, ti, ii = sch.split(i, [None, 2, 8, 2])
    bj, vj, tj, ji = sch.split(j, [None, 2, 8, 2])
    ko, ki = sch.split(k, [None, 8])
    sch.reorder(bi, bj, vi, vj, ti, tj, ko, ki, ii, ji)
    sch.bind(bi, "blockIdx.y")
    sch.bind(bj, "blockIdx.x")
    sch.bind(vi, "vthread.y")
    sch.bind(vj, "vthread.x")
    sch.bind(ti, "threadIdx.y")
    sch.bind(tj, "threadIdx.x")
    for index in (0, 1):
        shared = sch.cache_read(blk, index, "shared")
        sch.compute_at(shared, ko)
        if storage_align:
            sch.storage_align(shared, 0, axis=0, factor=32, offset=1)
    sch.reverse_compute_at(sch.cache_write(blk, 0, "local"), tj)
    return _prepared(sch)


def _conv(c_in=16, c_out=32, size=32):
    data = te.placeholder((1, c_in, size, size), name="data")
    kernel = te.placeholder((c_out, c_in, 3, 3), name="kernel")
    return data, kernel, topi.nn.conv2d_nchw(data, kernel, 1, 1, 1)


def conv2d_cpu_row_tiles() -> tvm.IRModule:
    """conv2d 3x3 pad 1: the padded input computed per output row tile (a halo of 2 rows)."""
    data, kernel, out = _conv()
    sch = _schedule(data, kernel, out)
    conv = sch.get_sblock(out.op.name)
    n, f, y, x, rc, ry, rx = sch.get_loops(conv)
    yo, yi = sch.split(y, [None, 4])
    sch.reorder(n, yo, f, yi, x, rc, ry, rx)
    sch.compute_at(sch.get_sblock("pad_temp"), yo)
    return _prepared(sch)


def conv2d_gpu_shared() -> tvm.IRModule:
    """conv2d on GPU: padded input and weights staged in shared memory per block."""
    data, kernel, out = _conv()
    sch = _schedule(data, kernel, out)
    conv = sch.get_sblock(out.op.name)
    sch.compute_inline(sch.get_sblock("pad_temp"))
    n, f, y, x, rc, ry, rx = sch.get_loops(conv)
    fo, fi = sch.split(f, [None, 8])
    yo, yi = sch.split(y, [None, 8])
    xo, xi = sch.split(x, [None, 8])
    rco, rci = sch.split(rc, [None, 4])
    sch.reorder(n, fo, yo, xo, fi, yi, xi, rco, rci, ry, rx)
    sch.bind(sch.fuse(n, fo, yo, xo), "blockIdx.x")
    sch.bind(sch.fuse(yi, xi), "threadIdx.x")
    for index in (0, 1):
        sch.compute_at(sch.cache_read(conv, index, "shared"), rco)
    sch.reverse_compute_at(sch.cache_write(conv, 0, "local"), sch.get_loops(conv)[2])
    return _prepared(sch)


def depthwise_row_tiles() -> tvm.IRModule:
    """Depthwise 3x3 conv: padding computed per tile of 8 output rows."""
    data = te.placeholder((1, 32, 56, 56), name="data")
    kernel = te.placeholder((32, 1, 3, 3), name="kernel")
    out = topi.nn.depthwise_conv2d_nchw(data, kernel, 1, 1, 1)
    sch = _schedule(data, kernel, out)
    conv = sch.get_sblock(out.op.name)
    n, c, y, x, ry, rx = sch.get_loops(conv)
    yo, yi = sch.split(y, [None, 8])
    sch.reorder(n, c, yo, yi, x, ry, rx)
    sch.compute_at(sch.get_producers(conv)[0], yo)
    return _prepared(sch)


def maxpool_padding() -> tvm.IRModule:
    """3x3/2 max pooling with padding; the padded input computed per output row."""
    data = te.placeholder((1, 16, 64, 64), name="data")
    out = topi.nn.pool2d(data, (3, 3), (2, 2), (1, 1), (1, 1, 1, 1), "max")
    sch = _schedule(data, out)
    pool = sch.get_sblock(out.op.name)
    n, c, y, x, ry, rx = sch.get_loops(pool)
    sch.compute_at(sch.get_producers(pool)[0], y)
    return _prepared(sch)


def transpose_shared_aligned() -> tvm.IRModule:
    """Transpose through a 32x32 shared tile padded by storage_align (bank conflicts)."""
    a = te.placeholder((256, 256), name="A")
    b = te.compute((256, 256), lambda i, j: a[j, i], name="B")
    sch = _schedule(a, b)
    blk = sch.get_sblock("B")
    i, j = sch.get_loops(blk)
    io, ii = sch.split(i, [None, 32])
    jo, ji = sch.split(j, [None, 32])
    sch.reorder(io, jo, ii, ji)
    sch.bind(sch.fuse(io, jo), "blockIdx.x")
    sch.bind(ii, "threadIdx.y")
    shared = sch.cache_read(blk, 0, "shared")
    sch.compute_at(shared, sch.get_loops(blk)[0])
    sch.storage_align(shared, 0, axis=0, factor=32, offset=1)
    return _prepared(sch)


def elementwise_tail_tiles() -> tvm.IRModule:
    """Three elementwise stages fused per tile of 16 over 1000 elements: T.where tails."""
    a = te.placeholder((1000,), name="A")
    b = te.compute((1000,), lambda i: a[i] * 2.0, name="B")
    c = te.compute((1000,), lambda i: b[i] + 1.0, name="C")
    d = te.compute((1000,), lambda i: c[i] * c[i], name="D")
    sch = _schedule(a, d)
    (i,) = sch.get_loops(sch.get_sblock("D"))
    io, _ = sch.split(i, [None, 16])
    sch.compute_at(sch.get_sblock("C"), io)
    sch.compute_at(sch.get_sblock("B"), io)
    return _prepared(sch)


def row_softmax_local() -> tvm.IRModule:
    """Row softmax: the row max and sum computed per row into local buffers."""
    x = te.placeholder((64, 128), name="X")
    out = topi.nn.softmax(x, axis=1)
    sch = _schedule(x, out)
    row = sch.get_loops(sch.get_sblock("T_softmax_norm"))[0]
    for name in ("T_softmax_expsum", "T_softmax_exp", "T_softmax_maxelem"):
        block = sch.get_sblock(name)
        sch.compute_at(block, row)
        sch.set_scope(block, 0, "local")
    return _prepared(sch)


@T.prim_func
def _tail_tiles(A: T.Buffer((1000,), "float32"), C: T.Buffer((1000,), "float32")):
    for io in range(63):
        B = T.alloc_buffer((1024,), "float32")
        for ii in range(16):
            if T.likely(io * 16 + ii < 1000):
                B[io * 16 + ii] = A[io * 16 + ii] * T.float32(2)
        for ii in range(16):
            if T.likely(io * 16 + ii < 1000):
                C[io * 16 + ii] = B[io * 16 + ii] + T.float32(1)


def partitioned_tail_loops() -> tvm.IRModule:
    """The raw output of LoopPartition on tail tiles: the tail copy has `if False` accesses."""
    with tvm.transform.PassContext(config={"s_tir.LoopPartition": {"partition_const_loop": True}}):
        return s_tir.transform.LoopPartition()(_module(_tail_tiles))


@T.prim_func
def _staging_views(A: T.Buffer((64, 64), "float32"), C: T.Buffer((64, 64), "float32")):
    for io in range(16):
        S = T.alloc_buffer((64, 64), "float32")
        V = T.decl_buffer((64, 64), "float32", data=S.data)
        for ii, j in T.grid(4, 64):
            V[io * 4 + ii, j] = A[io * 4 + ii, j]
        for ii, j in T.grid(4, 64):
            C[io * 4 + ii, j] = S[io * 4 + ii, j] * T.float32(3)


def staging_views() -> tvm.IRModule:
    """A staging buffer written through a `decl_buffer` view (lowered TIR)."""
    return _module(_staging_views)


@T.prim_func
def _clamped_halo(A: T.Buffer((256,), "float32"), C: T.Buffer((256,), "float32")):
    for io in range(16):
        B = T.alloc_buffer((256,), "float32")
        for ii in range(18):
            B[T.max(T.min(io * 16 + ii - 1, 255), 0)] = A[T.max(T.min(io * 16 + ii - 1, 255), 0)]
        for ii in range(16):
            C[io * 16 + ii] = (
                B[T.max(io * 16 + ii - 1, 0)] + B[io * 16 + ii] + B[T.min(io * 16 + ii + 1, 255)]
            )


def clamped_halo() -> tvm.IRModule:
    """A 1-D stencil reading its halo through min/max clamps (lowered TIR)."""
    return _module(_clamped_halo)


@T.prim_func
def _tail_extents(A: T.Buffer((1000, 8), "float32"), C: T.Buffer((1000, 8), "float32")):
    for io in range(63):
        B = T.alloc_buffer((1000, 8), "float32")
        for ii, j in T.grid(T.min(16, 1000 - io * 16), 8):
            B[io * 16 + ii, j] = A[io * 16 + ii, j] * T.float32(2)
        for ii, j in T.grid(T.min(16, 1000 - io * 16), 8):
            C[io * 16 + ii, j] = B[io * 16 + ii, j]


def min_extent_tails() -> tvm.IRModule:
    """Tail tiles written as `range(min(16, 1000 - io * 16))`: a loop-dependent extent."""
    return _module(_tail_extents)


WORKLOADS = {
    "matmul cpu cache_read/write": matmul_cpu_cache,
    "matmul gpu shared+local": matmul_gpu_shared_local,
    "matmul gpu storage_align": lambda: matmul_gpu_shared_local(storage_align=True),
    "conv2d cpu row tiles": conv2d_cpu_row_tiles,
    "conv2d gpu shared+local": conv2d_gpu_shared,
    "depthwise row tiles": depthwise_row_tiles,
    "maxpool with padding": maxpool_padding,
    "transpose shared aligned": transpose_shared_aligned,
    "elementwise tail tiles": elementwise_tail_tiles,
    "row softmax local": row_softmax_local,
    "partitioned tail loops": partitioned_tail_loops,
    "staging views": staging_views,
    "clamped halo (min/max)": clamped_halo,
    "min-extent tail tiles": min_extent_tails,
}


def _bytes(mod: tvm.IRModule) -> int:
    return sum(testing.allocated_bytes(f) or 0 for f in mod.functions.values())


def bytes_table() -> list[tuple[str, int, int, int]]:
    ours, stock = CompactBufferAllocation(), s_tir.transform.CompactBufferAllocation()
    rows = []
    for name, build in WORKLOADS.items():
        mod = build()
        rows.append((name, _bytes(mod), _bytes(stock(mod)), _bytes(ours(mod))))
    return rows


# ---- generated functions for pass time ----------------------------------------------------------


def generated(n_blocks: int) -> tvm.IRModule:
    """Stages of three blocks: tiles with tail predicates, 2-D tiles, halo reads."""
    lines = [
        "@T.prim_func(s_tir=True)",
        "def main(A: T.Buffer((62, 32), 'float32'), C: T.Buffer((62, 32), 'float32')):",
    ]
    for s in range(max(1, n_blocks // 3)):
        b = f"B{s}"
        if s % 3 == 0:
            x = "io * 4 + ii"
            body = [
                "    for io in range(16):",
                "        with T.sblock():",
                f"            {b} = T.sblock_alloc_buffer((64, 32), 'float32')",
                "            for ii, j in T.grid(4, 32):",
                "                with T.sblock():",
                f"                    T.where({x} < 62)",
                f"                    {b}[{x}, j] = A[{x}, j] * T.float32({s})",
                "            for ii, j in T.grid(4, 32):",
                "                with T.sblock():",
                f"                    T.where({x} < 62)",
                f"                    C[{x}, j] = {b}[{x}, j] + T.float32(1)",
            ]
        elif s % 3 == 1:
            x, y = "io * 31 + ii", "jo * 8 + ji"
            body = [
                "    for io, jo in T.grid(2, 4):",
                "        with T.sblock():",
                f"            {b} = T.sblock_alloc_buffer((62, 32), 'float32')",
                "            for ii, ji in T.grid(31, 8):",
                "                with T.sblock():",
                f"                    {b}[{x}, {y}] = A[{x}, {y}] * T.float32({s})",
                "            for ii, ji in T.grid(31, 8):",
                "                with T.sblock():",
                f"                    C[{x}, {y}] = {b}[{x}, {y}] + T.float32(1)",
            ]
        else:
            x = "io * 31 + ii"
            halo = f"T.if_then_else({x} + 1 < 62, {b}[{x} + 1, j], T.float32(0))"
            body = [
                "    for io in range(2):",
                "        with T.sblock():",
                f"            {b} = T.sblock_alloc_buffer((62, 32), 'float32')",
                "            for ii, j in T.grid(32, 32):",
                "                with T.sblock():",
                f"                    T.where({x} < 62)",
                f"                    {b}[{x}, j] = A[{x}, j]",
                "            for ii, j in T.grid(31, 32):",
                "                with T.sblock():",
                f"                    C[{x}, j] = {b}[{x}, j] + {halo}",
            ]
        lines += body
    return _module(tvm.script.from_source("\n".join(lines)))


def _median_ms(pass_, mod, repeat) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        pass_(mod)
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


def time_table(sizes, repeat) -> list[tuple[int, float, float]]:
    ours, stock = CompactBufferAllocation(), s_tir.transform.CompactBufferAllocation()
    rows = []
    for n in sizes:
        mod = generated(n)
        simplify = tvm.transform.Sequential([tirx.transform.StmtSimplify()])
        tvm.ir.assert_structural_equal(simplify(ours(mod)), simplify(stock(mod)))
        stock_ms, ours_ms = _median_ms(stock, mod, repeat), _median_ms(ours, mod, repeat)
        rows.append((n, stock_ms, ours_ms))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller functions, fewer runs")
    args = parser.parse_args()
    print(f"tvm {tvm.__version__}, tvm_memplan {tvm_memplan.__version__}\n")

    rows = bytes_table()
    width = max(len(r[0]) for r in rows)
    print(f"{'workload':<{width}}  {'original B':>10}  {'stock B':>9}  {'ours B':>9}  ours/stock")
    for name, original, stock, ours in rows:
        print(f"{name:<{width}}  {original:>10}  {stock:>9}  {ours:>9}  {ours / stock:>10.3f}")
    fewer = sum(ours < stock for _, _, stock, ours in rows)
    larger = sum(ours > stock for _, _, stock, ours in rows)
    total_stock, total_ours = sum(r[2] for r in rows), sum(r[3] for r in rows)
    print(
        f"\nbytes: ours <= stock on {len(rows) - larger}/{len(rows)} workloads, strictly less on "
        f"{fewer}; total ours/stock = {total_ours / total_stock:.3f}\n"
    )

    sizes, repeat = ((150, 500), 3) if args.quick else ((500, 5000), 7)
    print(f"{'blocks':>6}  {'stock ms':>9}  {'ours ms':>9}  ours/stock")
    for n, stock_ms, ours_ms in time_table(sizes, repeat):
        print(f"{n:>6}  {stock_ms:>9.1f}  {ours_ms:>9.1f}  {ours_ms / stock_ms:>10.2f}")


if __name__ == "__main__":
    main()
