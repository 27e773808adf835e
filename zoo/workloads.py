"""Scheduled TIR workloads: the corpus that the compaction benchmark measures and that the
end-to-end tests compile with the stock and the "memplan" pipelines.

Each builder returns the module as a user hands it to ``tvm.compile``: block TIR straight
from a schedule, or lowered TIR written by hand. GPU workloads bind threads and only compile
for a GPU target; the rest run on the CPU.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import tvm
from tvm import s_tir, te, topi
from tvm.script import tirx as T

__all__ = ["WORKLOADS", "Workload", "before_compaction"]


@dataclass(frozen=True)
class Workload:
    name: str
    build: Callable[[], tvm.IRModule]
    #: Binds GPU threads: compiles for a GPU target only.
    gpu: bool = False


# The passes TVM's s_tir pipeline runs before CompactBufferAllocation (tests check that this
# gives the module the pipeline itself hands to compaction).
_BEFORE_COMPACTION = (
    s_tir.transform.CanonicalizeLoop,
    s_tir.transform.LowerCrossThreadReduction,
    s_tir.transform.LowerInitBlock,
    s_tir.transform.PlanAndUpdateBufferAllocationLocation,
    s_tir.transform.ConvertBlocksToOpaque,
    s_tir.transform.LiftThreadBinding,
    s_tir.transform.ManifestSharedMemoryLocalStage,
)


def before_compaction(mod: tvm.IRModule) -> tvm.IRModule:
    """``mod`` as the s_tir pipeline hands it to CompactBufferAllocation (block TIR is prepared
    by the passes before it; lowered TIR is left as written)."""
    if not any(
        isinstance(f, tvm.tirx.PrimFunc) and isinstance(f.body, s_tir.SBlockRealize)
        for f in mod.functions.values()
    ):
        return mod
    return tvm.transform.Sequential([make() for make in _BEFORE_COMPACTION])(mod)


def _module(func: tvm.tirx.PrimFunc) -> tvm.IRModule:
    return tvm.IRModule({"main": func.with_attr("global_symbol", "main")})


def _schedule(*tensors) -> s_tir.Schedule:
    return s_tir.Schedule(_module(te.create_prim_func(list(tensors))))


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
    return sch.mod


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
    return sch.mod


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
    return sch.mod


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
    return sch.mod


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
    return sch.mod


def maxpool_padding() -> tvm.IRModule:
    """3x3/2 max pooling with padding; the padded input computed per output row."""
    data = te.placeholder((1, 16, 64, 64), name="data")
    out = topi.nn.pool2d(data, (3, 3), (2, 2), (1, 1), (1, 1, 1, 1), "max")
    sch = _schedule(data, out)
    pool = sch.get_sblock(out.op.name)
    n, c, y, x, ry, rx = sch.get_loops(pool)
    sch.compute_at(sch.get_producers(pool)[0], y)
    return sch.mod


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
    return sch.mod


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
    return sch.mod


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
    return sch.mod


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


WORKLOADS: dict[str, Workload] = {
    w.name: w
    for w in (
        Workload("matmul cpu cache_read/write", matmul_cpu_cache),
        Workload("matmul gpu shared+local", matmul_gpu_shared_local, gpu=True),
        Workload(
            "matmul gpu storage_align",
            lambda: matmul_gpu_shared_local(storage_align=True),
            gpu=True,
        ),
        Workload("conv2d cpu row tiles", conv2d_cpu_row_tiles),
        Workload("conv2d gpu shared+local", conv2d_gpu_shared, gpu=True),
        Workload("depthwise row tiles", depthwise_row_tiles),
        Workload("maxpool with padding", maxpool_padding),
        Workload("transpose shared aligned", transpose_shared_aligned, gpu=True),
        Workload("elementwise tail tiles", elementwise_tail_tiles),
        Workload("row softmax local", row_softmax_local),
        Workload("partitioned tail loops", partitioned_tail_loops),
        Workload("staging views", staging_views),
        Workload("clamped halo (min/max)", clamped_halo),
        Workload("min-extent tail tiles", min_extent_tails),
    )
}
