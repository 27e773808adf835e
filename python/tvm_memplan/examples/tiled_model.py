"""The bundled example of ``tvm-memplan report``: a small Relax model whose heavy parts are
scheduled TIR.

``main`` multiplies by a weight with a tiled matmul (a local accumulator and a staged copy of
A, both left at full size by the schedule), adds a bias, applies a sigmoid, smooths each row
with a 3-tap stencil (a staged tile with a clamped halo), then a softmax and a gating product.
Each memory pass has something to do: compaction shrinks the staged buffers, placement keeps
the small local accumulator on the stack, and the elementwise calls can run in place.
"""

import tvm
from tvm import s_tir
from tvm.script import ir as I
from tvm.script import relax as R
from tvm.script import tirx as T


@I.ir_module
class Module:
    @T.prim_func(private=True, s_tir=True)
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

    @T.prim_func(private=True, s_tir=True)
    def smooth_rows(X: T.Buffer((128, 128), "float32"), Y: T.Buffer((128, 128), "float32")):
        for i, jo in T.grid(128, 8):
            with T.sblock("tile"):
                vi, vjo = T.axis.remap("SS", [i, jo])
                T.reads(X[vi, 0:128])
                T.writes(Y[vi, vjo * 16 : vjo * 16 + 16])
                H = T.sblock_alloc_buffer((128, 128), "float32")
                for jj in range(18):
                    with T.sblock("stage"):
                        c = T.axis.spatial(128, T.max(T.min(vjo * 16 + jj - 1, 127), 0))
                        H[vi, c] = X[vi, c]
                for jj in range(16):
                    with T.sblock("smooth"):
                        j = T.axis.spatial(128, vjo * 16 + jj)
                        Y[vi, j] = (
                            H[vi, T.max(j - 1, 0)] + H[vi, j] + H[vi, T.min(j + 1, 127)]
                        ) * T.float32(0.25)

    @R.function
    def main(
        x: R.Tensor((128, 128), "float32"),
        w: R.Tensor((128, 128), "float32"),
        b: R.Tensor((128,), "float32"),
    ):
        cls = Module
        with R.dataflow():
            y = R.call_tir(cls.matmul, (x, w), out_ty=R.Tensor((128, 128), "float32"))
            z = R.add(y, b)
            a = R.sigmoid(z)
            s = R.call_tir(cls.smooth_rows, (a,), out_ty=R.Tensor((128, 128), "float32"))
            o = R.nn.softmax(s, axis=-1)
            p = R.multiply(o, x)
            R.output(p)
        return p


def build() -> tvm.IRModule:
    """The module with ``matmul`` tiled 16x16: C accumulated per tile in a "local" cache,
    A staged per k-step in a "global" cache."""
    sch = s_tir.Schedule(Module)
    sch.work_on("matmul")
    block = sch.get_sblock("C")
    i, j, k = sch.get_loops(block)
    i_outer, i_inner = sch.split(i, [None, 16])
    j_outer, j_inner = sch.split(j, [None, 16])
    sch.reorder(i_outer, j_outer, k, i_inner, j_inner)
    sch.reverse_compute_at(sch.cache_write(block, 0, "local"), j_outer)
    sch.compute_at(sch.cache_read(block, 0, "global"), k)
    return sch.mod
