"""The access proof of DataflowUseInplaceCalls on PrimFuncs it did not legalize itself: fused
kernels (FuseTIR), kernels scheduled for GPUs (dlight), hand-written PrimFuncs; and the rewrite
of their `R.call_tir` into `R.call_tir_inplace` (src_cpp/relax/inplace_prim_func.h states the
rule: no element of the input is read after the output element at its position was written,
in any order the PrimFunc allows; unordered loops allow only same-position access)."""

import textwrap

import pytest
import tvm
from tvm.script import ir as I
from tvm.script import relax as R
from tvm.script import tirx as T

from tvm_memplan.analysis import inplace_candidates, prim_func_inplace_refusal
from tvm_memplan.testing import assert_same_relax_results
from tvm_memplan.transform import DataflowUseInplaceCalls, use_inplace_calls

F32 = "float32"


def _parse(source: str, **extra):
    return tvm.script.from_source(textwrap.dedent(source), extra_vars={"T": T, "R": R, **extra})


# ---- the proof, rule by rule ------------------------------------------------------------------

# A kernel as FuseTIR makes it: conv2d, bias add, residual add, relu, one block each. The
# residual `r` is read in its own loop nest before the output's nest starts: it may hold the
# output. `x` is read by the padding nest, also before: it may too (its shape is the output's).
FUSED_TAIL = """
@T.prim_func(private=True, s_tir=True)
def fused_conv2d_add_add_relu(
    x: T.Buffer((1, 2, 4, 4), "float32"),
    w: T.Buffer((2, 2, 3, 3), "float32"),
    bias: T.Buffer((1, 2, 1, 1), "float32"),
    r: T.Buffer((1, 2, 4, 4), "float32"),
    {params}
):
    T.func_attr({{"tirx.noalias": True}})
    pad = T.sblock_alloc_buffer((1, 2, 6, 6))
    conv = T.sblock_alloc_buffer((1, 2, 4, 4))
    biased = T.sblock_alloc_buffer((1, 2, 4, 4))
    summed = T.sblock_alloc_buffer((1, 2, 4, 4))
    for i0, i1, i2, i3 in T.grid(1, 2, 6, 6):
        with T.sblock("pad"):
            v0, v1, v2, v3 = T.axis.remap("SSSS", [i0, i1, i2, i3])
            T.reads(x[v0, v1, v2 - 1, v3 - 1])
            T.writes(pad[v0, v1, v2, v3])
            pad[v0, v1, v2, v3] = T.if_then_else(
                1 <= v2 and v2 < 5 and 1 <= v3 and v3 < 5, x[v0, v1, v2 - 1, v3 - 1], T.float32(0)
            )
    for n, f, y, z, rc, ry, rx in T.grid(1, 2, 4, 4, 2, 3, 3):
        with T.sblock("conv"):
            vn, vf, vy, vz, vc, vry, vrx = T.axis.remap("SSSSRRR", [n, f, y, z, rc, ry, rx])
            T.reads(pad[vn, vc, vy + vry, vz + vrx], w[vf, vc, vry, vrx])
            T.writes(conv[vn, vf, vy, vz])
            with T.init():
                conv[vn, vf, vy, vz] = T.float32(0)
            conv[vn, vf, vy, vz] = conv[vn, vf, vy, vz] + pad[vn, vc, vy + vry, vz + vrx] * w[
                vf, vc, vry, vrx
            ]
    for i0, i1, i2, i3 in T.grid(1, 2, 4, 4):
        with T.sblock("bias"):
            v0, v1, v2, v3 = T.axis.remap("SSSS", [i0, i1, i2, i3])
            T.reads(conv[v0, v1, v2, v3], bias[v0, v1, 0, 0])
            T.writes(biased[v0, v1, v2, v3])
            biased[v0, v1, v2, v3] = conv[v0, v1, v2, v3] + bias[v0, v1, 0, 0]
    for i0, i1, i2, i3 in T.grid(1, 2, 4, 4):
        with T.sblock("residual"):
            v0, v1, v2, v3 = T.axis.remap("SSSS", [i0, i1, i2, i3])
            T.reads(biased[v0, v1, v2, v3], r[v0, v1, v2, v3])
            T.writes(summed[v0, v1, v2, v3])
            summed[v0, v1, v2, v3] = biased[v0, v1, v2, v3] + r[v0, v1, v2, v3]
    for i0, i1, i2, i3 in T.grid(1, 2, 4, 4):
        with T.sblock("relu"):
            v0, v1, v2, v3 = T.axis.remap("SSSS", [i0, i1, i2, i3])
            T.reads(summed[v0, v1, v2, v3])
            T.writes({out}[v0, v1, v2, v3])
            {out}[v0, v1, v2, v3] = T.max(summed[v0, v1, v2, v3], T.float32(0))
"""


def fused_tail(inplace: bool = False):
    """The fused kernel; with `inplace`, its in-place form on `r` (the output removed)."""
    params = "" if inplace else 'out: T.Buffer((1, 2, 4, 4), "float32"),'
    return _parse(FUSED_TAIL.format(params=params, out="r" if inplace else "out"))


@T.prim_func(private=True, s_tir=True)
def dlight_elementwise(
    x: T.Buffer((T.int64(64), T.int64(64)), F32),
    y: T.Buffer((T.int64(64), T.int64(64)), F32),
    out: T.Buffer((T.int64(64), T.int64(64)), F32),
):
    """dlight's Fallback schedule of a fused elementwise chain: the loops fused, split over
    blocks and threads (and padded: 4 x 1100 threads for 4096 elements)."""
    T.func_attr({"tirx.is_scheduled": True, "tirx.noalias": True})
    for bx in T.thread_binding(T.int64(4), thread="blockIdx.x"):
        for tx in T.thread_binding(T.int64(1100), thread="threadIdx.x"):
            with T.sblock("compute"):
                v0 = T.axis.spatial(T.int64(64), (bx * T.int64(1100) + tx) // T.int64(64))
                v1 = T.axis.spatial(T.int64(64), (bx * T.int64(1100) + tx) % T.int64(64))
                T.where(bx * T.int64(1100) + tx < T.int64(4096))
                T.reads(x[v0, v1], y[v0, v1])
                T.writes(out[v0, v1])
                out[v0, v1] = T.max((T.exp(x[v0, v1]) + y[v0, v1]) * y[v0, v1], T.float32(0))


@T.prim_func(private=True, s_tir=True)
def dlight_layer_norm(
    x: T.Buffer((T.int64(8), T.int64(64)), F32),
    out: T.Buffer((T.int64(8), T.int64(64)), F32),
):
    """dlight's GeneralReduction schedule: one block per row; the reduction and the output
    blocks are siblings under the row's loop, each with its own threadIdx.x loop. A thread
    reads only the elements of its row that it writes itself."""
    T.func_attr({"tirx.is_scheduled": True, "tirx.noalias": True})
    total = T.sblock_alloc_buffer((T.int64(8),), scope="shared")
    for row in T.thread_binding(T.int64(8), thread="blockIdx.x"):
        for tx in T.thread_binding(T.int64(64), thread="threadIdx.x"):
            with T.sblock("sum"):
                v0 = T.axis.spatial(T.int64(8), row)
                v1 = T.axis.reduce(T.int64(64), tx)
                T.reads(x[v0, v1])
                T.writes(total[v0])
                with T.init():
                    total[v0] = T.float32(0)
                total[v0] = total[v0] + x[v0, v1]
        for tx in T.thread_binding(T.int64(64), thread="threadIdx.x"):
            with T.sblock("norm"):
                v0 = T.axis.spatial(T.int64(8), row)
                v1 = T.axis.spatial(T.int64(64), tx)
                T.reads(x[v0, v1], total[v0])
                T.writes(out[v0, v1])
                out[v0, v1] = x[v0, v1] - total[v0] / T.float32(64)


@T.prim_func(private=True)
def lowered_parallel(a: T.Buffer((16, 32), F32), out: T.Buffer((16, 32), F32)):
    """Hand-written lowered TIR (no blocks): a parallel loop over rows, a vectorized inner
    loop, reading each element where it writes it."""
    for i in T.parallel(16):
        for j in T.vectorized(32):
            out[i, j] = a[i, j] * T.float32(2) + T.float32(1)


ACCEPTED = {
    "fused elementwise tail (residual)": (fused_tail(), [3]),
    "fused elementwise tail (conv input, read before)": (fused_tail(), [0]),
    "dlight thread-bound elementwise": (dlight_elementwise, [0]),
    "dlight reduction and output blocks": (dlight_layer_norm, [0]),
    "hand-written parallel + vectorized": (lowered_parallel, [0]),
}


@pytest.mark.parametrize("case", list(ACCEPTED))
def test_proof_accepts(case):
    """Each element of the input is read only before the output element at its position is
    written, whatever the order of unordered loops."""
    func, inputs = ACCEPTED[case]
    assert prim_func_inplace_refusal(func, inputs) is None


@T.prim_func(private=True)
def stencil(a: T.Buffer((16,), F32), out: T.Buffer((16,), F32)):
    for i in range(1, 15):
        out[i] = a[i - 1] + a[i] + a[i + 1]


@T.prim_func(private=True, s_tir=True)
def transpose(a: T.Buffer((8, 8), F32), out: T.Buffer((8, 8), F32)):
    for i, j in T.grid(8, 8):
        with T.sblock("t"):
            vi, vj = T.axis.remap("SS", [i, j])
            out[vi, vj] = a[vj, vi]


@T.prim_func(private=True, s_tir=True)
def row_sum_broadcast(a: T.Buffer((8, 8), F32), out: T.Buffer((8, 8), F32)):
    """A reduction into the output: each output element accumulates a whole row."""
    for i, j, k in T.grid(8, 8, 8):
        with T.sblock("sum"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                out[vi, vj] = T.float32(0)
            out[vi, vj] = out[vi, vj] + a[vi, vk]


@T.prim_func(private=True, s_tir=True)
def sibling_reads_the_next_row(
    x: T.Buffer((T.int64(8), T.int64(64)), F32),
    out: T.Buffer((T.int64(8), T.int64(64)), F32),
):
    """As dlight_layer_norm, but the sibling block reads the next row, which another block of
    threads (blockIdx.x) may already have written."""
    total = T.sblock_alloc_buffer((T.int64(8),), scope="shared")
    for row in T.thread_binding(T.int64(8), thread="blockIdx.x"):
        for tx in T.thread_binding(T.int64(64), thread="threadIdx.x"):
            with T.sblock("sum"):
                v0 = T.axis.spatial(T.int64(8), row)
                v1 = T.axis.reduce(T.int64(64), tx)
                T.reads(x[(v0 + T.int64(1)) % T.int64(8), v1])
                T.writes(total[v0])
                with T.init():
                    total[v0] = T.float32(0)
                total[v0] = total[v0] + x[(v0 + T.int64(1)) % T.int64(8), v1]
        for tx in T.thread_binding(T.int64(64), thread="threadIdx.x"):
            with T.sblock("norm"):
                v0 = T.axis.spatial(T.int64(8), row)
                v1 = T.axis.spatial(T.int64(64), tx)
                T.reads(x[v0, v1], total[v0])
                T.writes(out[v0, v1])
                out[v0, v1] = x[v0, v1] - total[v0]


@T.prim_func(private=True, s_tir=True)
def sibling_reads_another_thread(
    x: T.Buffer((T.int64(8), T.int64(64)), F32),
    out: T.Buffer((T.int64(8), T.int64(64)), F32),
):
    """The sibling reads, in thread tx, the element thread tx + 1 writes: threads of a block
    run in no order without a barrier."""
    tmp = T.sblock_alloc_buffer((T.int64(8), T.int64(64)), scope="shared")
    for row in T.thread_binding(T.int64(8), thread="blockIdx.x"):
        for tx in T.thread_binding(T.int64(64), thread="threadIdx.x"):
            with T.sblock("copy"):
                v0, v1 = T.axis.remap("SS", [row, tx])
                tmp[v0, v1] = x[v0, (v1 + T.int64(1)) % T.int64(64)]
        for tx in T.thread_binding(T.int64(64), thread="threadIdx.x"):
            with T.sblock("write"):
                v0, v1 = T.axis.remap("SS", [row, tx])
                out[v0, v1] = tmp[v0, v1] * T.float32(2)


@T.prim_func(private=True)
def read_after_write(a: T.Buffer((16,), F32), out: T.Buffer((16,), F32)):
    """The input is read again in a loop after the output's loop."""
    tmp = T.alloc_buffer((16,), F32)
    for i in range(16):
        out[i] = a[i] + T.float32(1)
    for i in range(16):
        tmp[i] = a[i]


@T.prim_func(private=True)
def every_thread_writes(a: T.Buffer((16,), F32), out: T.Buffer((16,), F32)):
    """The store runs in each of the 32 threads of the kernel (no loop binds it to one):
    a thread may read an element another has already overwritten."""
    for bx in T.thread_binding(1, thread="blockIdx.x"):  # noqa: B007
        for tx in T.thread_binding(32, thread="threadIdx.x"):  # noqa: B007
            for i in range(16):
                out[i] = a[i] * T.float32(2)


@T.prim_func(private=True)
def shifted_parallel(a: T.Buffer((16,), F32), out: T.Buffer((16,), F32)):
    for i in T.parallel(15):
        out[i] = a[i + 1]


@T.prim_func(private=True)
def while_loop(a: T.Buffer((16,), F32), out: T.Buffer((16,), F32)):
    """The body of a `while` may run any number of times: the second time, it would read what
    the first wrote."""
    k = T.alloc_buffer((1,), "int32", scope="local")
    k[0] = 0
    while k[0] < 2:
        for i in range(16):
            out[i] = a[i] + T.float32(1)
        k[0] = k[0] + 1


@T.prim_func(private=True)
def passed_to_extern(a: T.Buffer((16,), F32), out: T.Buffer((16,), F32)):
    """A buffer passed whole to an extern function is read and written where nothing shows."""
    for i in range(16):
        out[i] = a[i]
    T.evaluate(T.call_extern("int32", "touch", a))


REFUSED = {
    "stencil": (stencil, "at another element than it writes"),
    "transpose": (transpose, "at another element than it writes"),
    "reduction into the output": (row_sum_broadcast, "written by a reduction"),
    "sibling block, next row": (sibling_reads_the_next_row, "shares loops or threads"),
    "sibling block, other thread": (sibling_reads_another_thread, "shares loops or threads"),
    "read after the write": (read_after_write, "read after the output is written"),
    "store run by every thread": (every_thread_writes, "not written once per element"),
    "parallel shifted read": (shifted_parallel, "at another element than it writes"),
    "while loop": (while_loop, "`while` loop"),
    "buffer passed to a call": (passed_to_extern, "passes `a` to a call"),
}


@pytest.mark.parametrize("case", list(REFUSED))
def test_proof_refuses(case):
    """An element of the input may be read after the output element at its position was
    written: the call stays out of place, and the reason says why."""
    func, reason = REFUSED[case]
    refusal = prim_func_inplace_refusal(func, [0])
    assert refusal is not None and reason in refusal, refusal


def test_fused_tail_refuses_the_bias():
    """`bias` has another shape than the output."""
    assert "differ in shape" in prim_func_inplace_refusal(fused_tail(), [2])


def test_bad_arguments_are_type_errors():
    with pytest.raises(TypeError, match="expects a tvm.tirx.PrimFunc"):
        prim_func_inplace_refusal("stencil", [0])
    with pytest.raises(TypeError, match="inputs must be"):
        prim_func_inplace_refusal(stencil, "0")
    assert "not the expected buffers" in prim_func_inplace_refusal(stencil, [1])


# ---- the rewrite of call_tir ---------------------------------------------------------------


MAIN = """
@R.function
def main(
    x: R.Tensor((1, 2, 4, 4), "float32"),
    w: R.Tensor((2, 2, 3, 3), "float32"),
    bias: R.Tensor((1, 2, 1, 1), "float32"),
):
    cls = Module
    with R.dataflow():
        r = R.exp(x)
        y = {call}
        R.output(y)
    return y
"""


def fused_module(inplace: bool = False) -> tvm.IRModule:
    """`main` computes the residual `r` (so it owns it), then calls the fused kernel; with
    `inplace`, the module the rewrite should make of it."""
    out_ty = 'out_ty=R.Tensor((1, 2, 4, 4), "float32")'
    if inplace:
        call = (
            "R.call_tir_inplace(cls.fused_conv2d_add_add_relu_inplace, (x, w, bias, r), "
            f"{out_ty}, inplace_indices=[3])"
        )
        kernel = FUSED_TAIL.format(params="", out="r").replace(
            "def fused_conv2d_add_add_relu(", "def fused_conv2d_add_add_relu_inplace("
        )
    else:
        call = f"R.call_tir(cls.fused_conv2d_add_add_relu, (x, w, bias, r), {out_ty})"
        kernel = FUSED_TAIL.format(params='out: T.Buffer((1, 2, 4, 4), "float32"),', out="out")
    body = textwrap.indent(kernel + MAIN.format(call=call), "    ")
    return _parse(f"@I.ir_module\nclass Module:\n{body}", I=I)


def test_fused_kernel_call_becomes_in_place():
    """The fused kernel's call reuses `r`: its in-place form replaces it (the output parameter
    removed, its stores redirected to `r`); the out-of-place kernel, no longer called, is gone."""
    before = fused_module()
    after, stats = use_inplace_calls(before)
    tvm.ir.assert_structural_equal(after, fused_module(inplace=True))
    assert (stats.rewritten, stats.prim_funcs_added, stats.prim_funcs_removed) == (1, 1, 1)
    assert_same_relax_results(before, after)


@I.ir_module
class HandWritten:
    @T.prim_func(private=True, s_tir=True)
    def scale_rows(a: T.Buffer((8, 16), F32), s: T.Buffer((8,), F32), out: T.Buffer((8, 16), F32)):
        for i in T.parallel(8):
            for j in T.vectorized(16):
                with T.sblock("scale"):
                    vi, vj = T.axis.remap("SS", [i, j])
                    out[vi, vj] = a[vi, vj] * s[vi]

    @R.function
    def main(x: R.Tensor((8, 16), F32), s: R.Tensor((8,), F32)):
        cls = HandWritten
        with R.dataflow():
            a = R.exp(x)
            b = R.call_tir(cls.scale_rows, (a, s), out_ty=R.Tensor((8, 16), F32))
            R.output(b)
        return b


@I.ir_module
class HandWrittenInPlace:
    @T.prim_func(private=True, s_tir=True)
    def scale_rows_inplace(a: T.Buffer((8, 16), F32), s: T.Buffer((8,), F32)):
        for i in T.parallel(8):
            for j in T.vectorized(16):
                with T.sblock("scale"):
                    vi, vj = T.axis.remap("SS", [i, j])
                    T.reads(a[vi, vj], s[vi])
                    T.writes(a[vi, vj])
                    a[vi, vj] = a[vi, vj] * s[vi]

    @R.function
    def main(x: R.Tensor((8, 16), F32), s: R.Tensor((8,), F32)):
        cls = HandWrittenInPlace
        with R.dataflow():
            a = R.exp(x)
            b = R.call_tir_inplace(
                cls.scale_rows_inplace, (a, s), out_ty=R.Tensor((8, 16), F32), inplace_indices=[0]
            )
            R.output(b)
        return b


def test_hand_written_kernel_call_becomes_in_place():
    """A hand-written kernel with parallel and vectorized loops: each iteration reads `a` where
    it writes, so the call reuses `a`."""
    after = DataflowUseInplaceCalls()(HandWritten)
    tvm.ir.assert_structural_equal(after, HandWrittenInPlace)
    assert_same_relax_results(HandWritten, after)


def test_the_reason_names_the_prim_func():
    before = fused_module()
    decisions = {c.binding: c for c in inplace_candidates(before["main"], before)}
    assert decisions["y"].inplace and decisions["y"].arg == "r" and decisions["y"].arg_index == 3
    assert "`fused_conv2d_add_add_relu`" in decisions["y"].reason


def test_a_kernel_still_called_out_of_place_is_kept():
    """One call runs in place, the other cannot (its input is read afterwards): both kernels
    stay in the module."""

    @I.ir_module
    class before:
        @T.prim_func(private=True, s_tir=True)
        def double(a: T.Buffer((16,), F32), out: T.Buffer((16,), F32)):
            for i in range(16):
                with T.sblock("double"):
                    vi = T.axis.remap("S", [i])
                    out[vi] = a[vi] * T.float32(2)

        @R.function
        def main(x: R.Tensor((16,), F32)):
            cls = before
            with R.dataflow():
                a = R.exp(x)
                b = R.call_tir(cls.double, (a,), out_ty=R.Tensor((16,), F32))
                c = R.call_tir(cls.double, (b,), out_ty=R.Tensor((16,), F32))
                d = R.add(b, c)
                R.output(d)
            return d

    after, stats = use_inplace_calls(before)
    names = sorted(gv.name_hint for gv in after.functions)
    assert names == ["add_inplace", "double", "double_inplace", "main"]
    assert (stats.prim_funcs_added, stats.prim_funcs_removed) == (2, 0)  # add_inplace too
    assert_same_relax_results(before, after)


def _with_prim_func(mod: tvm.IRModule, name: str, func) -> tvm.IRModule:
    """`mod` with `func` added as `name` (a GlobalVar of no struct info, as `IRModule({...})`
    makes it)."""
    functions = dict(mod.functions.items())
    functions[tvm.ir.GlobalVar(name)] = func
    return tvm.IRModule(functions)


def test_an_equal_prim_func_of_the_module_is_shared():
    """The module already holds a PrimFunc equal to the in-place copy the call needs: the call
    uses it, and no kernel is added."""
    builder = tvm.relax.BlockBuilder(HandWritten)  # adds it as the parser does, typed
    builder.add_func(HandWrittenInPlace["scale_rows_inplace"], "scale_rows_inplace")
    after, stats = use_inplace_calls(builder.get())
    tvm.ir.assert_structural_equal(after, HandWrittenInPlace)
    assert (stats.rewritten, stats.prim_funcs_added, stats.prim_funcs_removed) == (1, 0, 1)
    assert_same_relax_results(HandWritten, after)


def test_an_equal_prim_func_under_an_untyped_global_var_is_not_shared():
    """The equal PrimFunc was added under a GlobalVar of no function type (as `IRModule({gv:
    f})` makes it), which call_tir_inplace cannot call: the call gets a copy of its own, named
    apart, instead of an internal error."""
    before = _with_prim_func(
        HandWritten, "scale_rows_inplace", HandWrittenInPlace["scale_rows_inplace"]
    )
    after, stats = use_inplace_calls(before)
    assert (stats.rewritten, stats.prim_funcs_added) == (1, 1)
    tvm.ir.assert_structural_equal(
        after["scale_rows_inplace1"], HandWrittenInPlace["scale_rows_inplace"]
    )
    assert_same_relax_results(HandWritten, after)


def test_a_taken_name_gets_the_first_free_number():
    """`scale_rows_inplace` and `scale_rows_inplace1` name other PrimFuncs of the module: the
    copy is `scale_rows_inplace2`, and the PrimFuncs holding the names are left as they were."""
    other = HandWrittenInPlace["scale_rows_inplace"].with_attr("note", "not the copy")
    before = _with_prim_func(HandWritten, "scale_rows_inplace", other)
    before = _with_prim_func(before, "scale_rows_inplace1", other.with_attr("note", "another"))
    after, stats = use_inplace_calls(before)
    names = sorted(gv.name_hint for gv in after.functions)
    assert names == ["main", "scale_rows_inplace", "scale_rows_inplace1", "scale_rows_inplace2"]
    assert stats.prim_funcs_added == 1
    for name in ("scale_rows_inplace", "scale_rows_inplace1"):
        tvm.ir.assert_structural_equal(after[name], before[name])
    tvm.ir.assert_structural_equal(
        after["scale_rows_inplace2"], HandWrittenInPlace["scale_rows_inplace"]
    )
    assert_same_relax_results(HandWritten, after)


def test_an_exported_prim_func_is_copied_without_its_symbol():
    """A PrimFunc with a global symbol stays (it may be called from outside); its in-place
    copy must not export the same symbol."""

    @I.ir_module
    class before:
        @T.prim_func(s_tir=True)
        def double(a: T.Buffer((16,), F32), out: T.Buffer((16,), F32)):
            for i in range(16):
                with T.sblock("double"):
                    vi = T.axis.remap("S", [i])
                    out[vi] = a[vi] * T.float32(2)

        @R.function
        def main(x: R.Tensor((16,), F32)):
            cls = before
            with R.dataflow():
                a = R.exp(x)
                b = R.call_tir(cls.double, (a,), out_ty=R.Tensor((16,), F32))
                R.output(b)
            return b

    after, stats = use_inplace_calls(before)
    assert stats.rewritten == 1 and stats.prim_funcs_removed == 0
    assert "global_symbol" not in (after["double_inplace"].attrs or {})
    assert after["double"].attrs["global_symbol"] == "double"
    assert_same_relax_results(before, after)


def test_a_call_of_a_refused_kernel_stays():
    @I.ir_module
    class before:
        @T.prim_func(private=True, s_tir=True)
        def stencil(a: T.Buffer((16,), F32), out: T.Buffer((16,), F32)):
            for i in range(1, 15):
                with T.sblock("stencil"):
                    vi = T.axis.remap("S", [i])
                    out[vi] = a[vi - 1] + a[vi] + a[vi + 1]

        @R.function
        def main(x: R.Tensor((16,), F32)):
            cls = before
            with R.dataflow():
                a = R.exp(x)
                b = R.call_tir(cls.stencil, (a,), out_ty=R.Tensor((16,), F32))
                R.output(b)
            return b

    decisions = {c.binding: c for c in inplace_candidates(before["main"], before)}
    assert not decisions["b"].inplace
    assert "at another element than it writes" in decisions["b"].reason
    tvm.ir.assert_structural_equal(DataflowUseInplaceCalls()(before), before)


# ---- GPU: operator calls stay, scheduled kernels go in place ------------------------------------


@I.ir_module
class ScheduledModule:
    @T.prim_func(private=True, s_tir=True)
    def kernel(
        x: T.Buffer((T.int64(64), T.int64(64)), F32),
        y: T.Buffer((T.int64(64), T.int64(64)), F32),
        out: T.Buffer((T.int64(64), T.int64(64)), F32),
    ):
        T.func_attr({"tirx.is_scheduled": True, "tirx.noalias": True})
        for bx in T.thread_binding(T.int64(4), thread="blockIdx.x"):
            for tx in T.thread_binding(T.int64(1024), thread="threadIdx.x"):
                with T.sblock("compute"):
                    v0 = T.axis.spatial(T.int64(64), (bx * T.int64(1024) + tx) // T.int64(64))
                    v1 = T.axis.spatial(T.int64(64), (bx * T.int64(1024) + tx) % T.int64(64))
                    T.reads(x[v0, v1], y[v0, v1])
                    T.writes(out[v0, v1])
                    out[v0, v1] = x[v0, v1] * y[v0, v1]

    @T.prim_func(private=True, s_tir=True)
    def unscheduled(
        x: T.Buffer((T.int64(64), T.int64(64)), F32),
        out: T.Buffer((T.int64(64), T.int64(64)), F32),
    ):
        for i, j in T.grid(T.int64(64), T.int64(64)):
            with T.sblock("compute"):
                vi, vj = T.axis.remap("SS", [i, j])
                out[vi, vj] = x[vi, vj] + T.float32(1)

    @R.function
    def main(x: R.Tensor((64, 64), F32), y: R.Tensor((64, 64), F32)):
        cls = ScheduledModule
        with R.dataflow():
            a = R.exp(x)
            b = R.call_tir(cls.kernel, (a, y), out_ty=R.Tensor((64, 64), F32))
            c = R.call_tir(cls.unscheduled, (b,), out_ty=R.Tensor((64, 64), F32))
            d = R.add(c, y)
            R.output(d)
        return d


def test_on_a_gpu_only_scheduled_kernels_run_in_place():
    """For a GPU the pipeline still has to schedule operators and unscheduled PrimFuncs (dlight
    cannot schedule an in-place PrimFunc): those stay; the kernel bound to threads goes in
    place. The records say why."""
    decisions = {
        c.binding: c for c in inplace_candidates(ScheduledModule["main"], ScheduledModule, gpu=True)
    }
    assert decisions["b"].inplace and decisions["b"].arg == "a"
    assert not decisions["c"].inplace and "not scheduled yet" in decisions["c"].reason
    assert not decisions["d"].inplace and "the target is a GPU" in decisions["d"].reason
    # On a CPU both kernels and the operator may run in place.
    cpu = {
        c.binding
        for c in inplace_candidates(ScheduledModule["main"], ScheduledModule, gpu=False)
        if c.inplace
    }
    assert cpu == {"b", "c", "d"}


@I.ir_module
class ScheduledModuleInPlace:
    @T.prim_func(private=True, s_tir=True)
    def kernel_inplace(
        x: T.Buffer((T.int64(64), T.int64(64)), F32),
        y: T.Buffer((T.int64(64), T.int64(64)), F32),
    ):
        T.func_attr({"tirx.is_scheduled": True, "tirx.noalias": True})
        for bx in T.thread_binding(T.int64(4), thread="blockIdx.x"):
            for tx in T.thread_binding(T.int64(1024), thread="threadIdx.x"):
                with T.sblock("compute"):
                    v0 = T.axis.spatial(T.int64(64), (bx * T.int64(1024) + tx) // T.int64(64))
                    v1 = T.axis.spatial(T.int64(64), (bx * T.int64(1024) + tx) % T.int64(64))
                    T.reads(x[v0, v1], y[v0, v1])
                    T.writes(x[v0, v1])
                    x[v0, v1] = x[v0, v1] * y[v0, v1]

    @T.prim_func(private=True, s_tir=True)
    def unscheduled(
        x: T.Buffer((T.int64(64), T.int64(64)), F32),
        out: T.Buffer((T.int64(64), T.int64(64)), F32),
    ):
        for i, j in T.grid(T.int64(64), T.int64(64)):
            with T.sblock("compute"):
                vi, vj = T.axis.remap("SS", [i, j])
                out[vi, vj] = x[vi, vj] + T.float32(1)

    @R.function
    def main(x: R.Tensor((64, 64), F32), y: R.Tensor((64, 64), F32)):
        cls = ScheduledModuleInPlace
        with R.dataflow():
            a = R.exp(x)
            b = R.call_tir_inplace(
                cls.kernel_inplace, (a, y), out_ty=R.Tensor((64, 64), F32), inplace_indices=[0]
            )
            c = R.call_tir(cls.unscheduled, (b,), out_ty=R.Tensor((64, 64), F32))
            d = R.add(c, y)
            R.output(d)
        return d


def test_scheduled_kernel_call_becomes_in_place_on_a_gpu():
    """The thread-bound kernel (blocks and threads over the fused loop) reads `x` only where
    the same thread writes: its in-place form replaces it; the rest stays for the GPU."""
    after = DataflowUseInplaceCalls(gpu=True)(ScheduledModule)
    tvm.ir.assert_structural_equal(after, ScheduledModuleInPlace)


def test_gpu_is_read_from_the_current_target():
    with tvm.target.Target("cuda"):
        gpu = {
            c.binding
            for c in inplace_candidates(ScheduledModule["main"], ScheduledModule)
            if c.inplace
        }
    with tvm.target.Target("llvm"):
        cpu = {
            c.binding
            for c in inplace_candidates(ScheduledModule["main"], ScheduledModule)
            if c.inplace
        }
    assert (gpu, cpu) == ({"b"}, {"b", "c", "d"})


def test_scheduled_in_place_kernel_builds_for_cuda():
    """The in-place kernel goes through the TIR pipeline of a GPU target (no GPU needed)."""
    after = DataflowUseInplaceCalls(gpu=True)(ScheduledModule)
    assert "kernel_inplace" in [gv.name_hint for gv in after.functions]
    kernels = tvm.IRModule(
        {"kernel_inplace": after["kernel_inplace"].with_attr("global_symbol", "k")}
    )
    tvm.compile(kernels, target="cuda")


# ---- random fused programs ------------------------------------------------------------------


def random_fused_source(seed: int) -> str:
    """A random network: matmuls (fusion anchors) whose epilogues are random elementwise chains
    that also read earlier results (residuals, as fused kernels' extra inputs), softmax and
    sums between some of them."""
    import random

    rng = random.Random(seed)
    lines = []
    live = ["x"]
    for k in range(rng.randint(3, 6)):
        source = rng.choice(live[-3:])
        lines.append(f"m{k} = R.matmul({source}, w{k % 2})")
        value = f"m{k}"
        for step in range(rng.randint(1, 3)):
            kind = rng.choice(["unary", "binary", "binary"])
            name = f"e{k}_{step}"
            if kind == "unary":
                op = rng.choice(["R.nn.relu", "R.tanh", "R.sigmoid", "R.exp", "R.negative"])
                lines.append(f"{name} = {op}({value})")
            else:
                op = rng.choice(["R.add", "R.multiply", "R.subtract", "R.maximum"])
                other = rng.choice(live)
                args = (value, other) if rng.random() < 0.5 else (other, value)
                lines.append(f"{name} = {op}({args[0]}, {args[1]})")
            value = name
        if rng.random() < 0.3:
            lines.append(f"s{k} = R.nn.softmax({value}, axis=-1)")
            value = f"s{k}"
        live.append(value)
    body = "\n".join(f"        {line}" for line in lines)
    return (
        "@R.function\n"
        'def main(x: R.Tensor((8, 16), "float32"), w0: R.Tensor((16, 16), "float32"), '
        'w1: R.Tensor((16, 16), "float32")):\n'
        "    with R.dataflow():\n"
        f"{body}\n"
        f"        R.output({live[-1]})\n"
        f"    return {live[-1]}\n"
    )


def random_fused_module(seed: int) -> tvm.IRModule:
    """The random network after the "zero" pipeline (LegalizeOps, FuseOps, FuseTIR)."""
    mod = tvm.IRModule({"main": _parse(random_fused_source(seed))})
    return tvm.relax.get_pipeline("zero")(mod)


FUSED_SEEDS = range(8)


@pytest.mark.parametrize("seed", FUSED_SEEDS)
def test_random_fused_programs_keep_their_results(seed):
    """Made in place on their call_tir, the fused programs compute what they computed, twice
    in a row (an input or a value read later overwritten would show)."""
    fused = random_fused_module(seed)
    after, _ = use_inplace_calls(fused)
    assert_same_relax_results(fused, after, seed=seed)


def test_random_fused_programs_are_rewritten():
    """The property above is not vacuous: most programs get in-place kernels."""
    rewritten = [use_inplace_calls(random_fused_module(seed))[1].rewritten for seed in FUSED_SEEDS]
    assert sum(r > 0 for r in rewritten) >= len(FUSED_SEEDS) // 2, rewritten
