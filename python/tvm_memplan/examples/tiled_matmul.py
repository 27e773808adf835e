"""A scheduled TIR workload: a 128x128 matmul tiled 16x16, with a local accumulator
(cache_write) and a staged copy of A (cache_read).

The schedule leaves both caches allocated at full size in the root block; compaction
shrinks them to the tile the loops actually touch.
"""

import tvm
from tvm import s_tir
from tvm.script import tirx as T


@T.prim_func(s_tir=True)
def matmul(
    A: T.Buffer((128, 128), "float32"),
    B: T.Buffer((128, 128), "float32"),
    C: T.Buffer((128, 128), "float32"),
):
    for i, j, k in T.grid(128, 128, 128):
        with T.sblock("C"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                C[vi, vj] = T.float32(0)
            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]


def build() -> tvm.IRModule:
    sch = s_tir.Schedule(tvm.IRModule({"main": matmul}))
    block = sch.get_sblock("C")
    i, j, k = sch.get_loops(block)
    i_outer, i_inner = sch.split(i, [None, 16])
    j_outer, j_inner = sch.split(j, [None, 16])
    sch.reorder(i_outer, j_outer, k, i_inner, j_inner)
    accumulator = sch.cache_write(block, 0, "local")
    sch.reverse_compute_at(accumulator, j_outer)
    staged_a = sch.cache_read(block, 0, "global")
    sch.compute_at(staged_a, k)
    return sch.mod
