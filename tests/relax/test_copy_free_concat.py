"""Copy-free concatenation in tvm-memplan's planner: the inputs sit at their slices of the
output, their producers write there, and the concatenation is dropped; every condition under
which a concatenation keeps its copy (src_cpp/relax/concat_placement.h), and the proof that a
PrimFunc is a concatenation (src_cpp/relax/concat_prim_func.h).

IR cases state what the planner receives (Relax after CallTIRRewrite) and what it must make of
it, and run both on the Relax VM; the others build operator-level Relax through the pipeline and
check the decisions the plan records, and the results against a build without a planner.
"""
# ruff: noqa: F841  (TVMScript bindings that nothing reads are part of the cases)

import pytest
import tvm
from tvm import relax
from tvm.script import ir as I
from tvm.script import relax as R
from tvm.script import tirx as T

import tvm_memplan
from tvm_memplan.analysis import memory_plan, planner_input
from tvm_memplan.testing import assert_same_relax_results, relax_vm
from tvm_memplan.testing.compare import CompareBeforeAfter, relax_module
from tvm_memplan.transform import StaticPlanBlockMemory
from zoo.models import ZOO

analyze_concatenation = tvm_memplan.testing.analyze_concatenation


@I.ir_module
class Kernels:
    @T.prim_func(private=True, s_tir=True)
    def exp(A: T.Buffer((1, 16, 4), "float32"), B: T.Buffer((1, 16, 4), "float32")):
        for i, j, k in T.grid(1, 16, 4):
            with T.sblock("B"):
                vi, vj, vk = T.axis.remap("SSS", [i, j, k])
                B[vi, vj, vk] = T.exp(A[vi, vj, vk])

    @T.prim_func(private=True, s_tir=True)
    def concat(
        A: T.Buffer((1, 16, 4), "float32"),
        B: T.Buffer((1, 16, 4), "float32"),
        C: T.Buffer((1, 32, 4), "float32"),
    ):
        for i, j, k in T.grid(1, 32, 4):
            with T.sblock("C"):
                vi, vj, vk = T.axis.remap("SSS", [i, j, k])
                C[vi, vj, vk] = T.if_then_else(vj >= 16, B[vi, vj - 16, vk], A[vi, vj, vk])

    @T.prim_func(private=True, s_tir=True)
    def double(C: T.Buffer((1, 32, 4), "float32"), D: T.Buffer((1, 32, 4), "float32")):
        for i, j, k in T.grid(1, 32, 4):
            with T.sblock("D"):
                vi, vj, vk = T.axis.remap("SSS", [i, j, k])
                D[vi, vj, vk] = C[vi, vj, vk] * T.float32(2)


EXP, CONCAT, DOUBLE = (Kernels.get_global_var(n) for n in ("exp", "concat", "double"))


@R.function
def _two_branches(x: R.Tensor((1, 16, 4), "float32"), y: R.Tensor((1, 16, 4), "float32")):
    R.func_attr({"relax.force_pure": True})
    a = R.builtin.alloc_tensor(R.shape([1, 16, 4]), R.dtype("float32"), 0, R.str("global"))
    EXP(x, a)
    b = R.builtin.alloc_tensor(R.shape([1, 16, 4]), R.dtype("float32"), 0, R.str("global"))
    EXP(y, b)
    c = R.builtin.alloc_tensor(R.shape([1, 32, 4]), R.dtype("float32"), 0, R.str("global"))
    CONCAT(a, b, c)
    d = R.builtin.alloc_tensor(R.shape([1, 32, 4]), R.dtype("float32"), 0, R.str("global"))
    DOUBLE(c, d)
    return d


#: `a` and `b` are made apart and concatenated along axis 1 into `c`, which `d` reads.
TwoBranches = relax_module(Kernels, main=_two_branches)


class TestInputsAreWrittenAtTheirSlicesAndTheConcatenationIsDropped(CompareBeforeAfter):
    """`a` at the start of `c`, `b` 256 bytes in: the storage holds `c` alone (512 bytes) and
    the copy is gone."""

    before = TwoBranches

    @R.function
    def _expected(x: R.Tensor((1, 16, 4), "float32"), y: R.Tensor((1, 16, 4), "float32")):
        R.func_attr({"relax.force_pure": True})
        storage = R.memory.alloc_storage(R.shape([512]), 0, R.str("global"), R.dtype("uint8"))
        a = R.memory.alloc_tensor(storage, 0, R.shape([1, 16, 4]), R.dtype("float32"), 0)
        EXP(x, a)
        b_at = R.memory.alloc_tensor(storage, 256, R.shape([1, 16, 4]), R.dtype("float32"), 0)
        b = R.memory.ensure_zero_offset(b_at)
        EXP(y, b)
        c = R.memory.alloc_tensor(storage, 0, R.shape([1, 32, 4]), R.dtype("float32"), 0)
        d = R.builtin.alloc_tensor(R.shape([1, 32, 4]), R.dtype("float32"), 0, R.str("global"))
        DOUBLE(c, d)
        return d

    expected = relax_module(Kernels, main=_expected)

    def transform(self, before):
        after = StaticPlanBlockMemory()(before)
        relax.analysis.well_formed(after)
        return after

    def test_results(self):
        after = self.transform(self.before)
        vms = (relax_vm(self.before, planner="none"), relax_vm(after, planner="none"))
        assert_same_relax_results(self.before, after, vms=vms)


def test_the_records_say_where_each_tensor_sits():
    (plan,) = memory_plan(TwoBranches, pipeline=None)
    (concat,) = plan.concats
    assert (concat.output, list(concat.inputs), concat.axis) == ("c", ["a", "b"], 1)
    assert (concat.copy_free, concat.decision, concat.reason) == (True, "copy_free", "")
    placed = {t.binding: (t.group, t.group_offset) for t in plan.tensors if t.group >= 0}
    assert placed == {"a": (0, 0), "b": (0, 256), "c": (0, 0)}
    # The bound counts the group's bytes once: at the concatenation only `c`'s 512 are live.
    assert plan.peak_live_bytes == plan.planned_bytes == 512 + 512


def test_copy_free_concat_can_be_turned_off():
    after = StaticPlanBlockMemory(copy_free_concat=False)(TwoBranches)
    assert "cls.concat(a, b, c)" in after.script()  # the call kept
    (plan,) = memory_plan(TwoBranches, pipeline=None, copy_free_concat=False)
    assert [c.decision for c in plan.concats] == ["disabled"]
    assert all(t.group == -1 for t in plan.tensors)


# ---- decisions on operator-level Relax ---------------------------------------------------------


def _decisions(mod) -> list[tuple[bool, str]]:
    (plan,) = memory_plan(mod)
    return [(c.copy_free, c.decision) for c in plan.concats]


def _same_results(mod):
    """Through tvm_memplan.compile and a build without a planner: identical outputs."""
    assert_same_relax_results(
        mod, mod, vms=(relax_vm(mod, planner="none"), relax_vm(mod, planner="memplan"))
    )


@I.ir_module
class UNetSkip:
    """A skip connection: `s` is made early, `u` late, both concatenated at the end."""

    @R.function
    def main(x: R.Tensor((1, 8, 8, 8), "float32")):
        with R.dataflow():
            s = R.exp(x)
            p = R.nn.max_pool2d(s, pool_size=(2, 2), strides=(2, 2))
            q = R.nn.relu(p)
            u = R.image.resize2d(q, size=(8, 8), method="nearest_neighbor")
            c = R.concat((s, u), axis=1)
            d = R.sigmoid(c)
            R.output(d)
        return d


def test_a_skip_connection_is_copy_free_and_runs():
    assert _decisions(UNetSkip) == [(True, "copy_free")]
    (plan,) = memory_plan(UNetSkip)
    (without,) = memory_plan(UNetSkip, copy_free_concat=False)
    assert plan.planned_bytes < without.peak_live_bytes  # below the bound with copies
    _same_results(UNetSkip)


@I.ir_module
class Batched:
    @R.function
    def main(x: R.Tensor((2, 16, 4), "float32")):
        with R.dataflow():
            a = R.exp(x)
            b = R.sigmoid(x)
            c = R.concat((a, b), axis=1)
            d = R.exp(c)
            R.output(d)
        return d


def test_slices_that_are_not_contiguous_keep_the_copy():
    """Batch 2: each input is two ranges of the output's bytes."""
    assert _decisions(Batched) == [(False, "not_contiguous")]
    _same_results(Batched)


@I.ir_module
class ParameterInput:
    @R.function
    def main(x: R.Tensor((1, 16, 4), "float32")):
        with R.dataflow():
            a = R.exp(x)
            c = R.concat((a, x), axis=1)
            d = R.exp(c)
            R.output(d)
        return d


def test_a_parameter_input_keeps_the_copy():
    """The caller owns `x`: its bytes cannot move into the output."""
    assert _decisions(ParameterInput) == [(False, "not_placed")]
    _same_results(ParameterInput)


@I.ir_module
class ReturnedOutput:
    @R.function
    def main(x: R.Tensor((1, 16, 4), "float32")):
        with R.dataflow():
            a = R.exp(x)
            b = R.sigmoid(x)
            c = R.concat((a, b), axis=1)
            R.output(c)
        return c


def test_a_returned_output_keeps_the_copy():
    """The caller owns the result: it is not in the planner's storage."""
    assert _decisions(ReturnedOutput) == [(False, "not_placed")]
    _same_results(ReturnedOutput)


@I.ir_module
class SameTwice:
    @R.function
    def main(x: R.Tensor((1, 16, 4), "float32")):
        with R.dataflow():
            a = R.exp(x)
            c = R.concat((a, a), axis=1)
            d = R.exp(c)
            R.output(d)
        return d


def test_the_same_tensor_twice_keeps_the_copy():
    assert _decisions(SameTwice) == [(False, "same_tensor")]
    _same_results(SameTwice)


@I.ir_module
class Unaligned:
    @R.function
    def main(x: R.Tensor((1, 3), "float32")):
        with R.dataflow():
            a = R.exp(x)
            b = R.sigmoid(x)
            c = R.concat((a, b), axis=1)
            d = R.exp(c)
            R.output(d)
        return d


def test_a_slice_off_the_alignment_keeps_the_copy():
    """`b` would start 12 bytes in, where ensure_zero_offset copies instead of viewing."""
    assert _decisions(Unaligned) == [(False, "unaligned")]
    _same_results(Unaligned)


@I.ir_module
class OutputOverwrittenWhileInputRead:
    """`c` is written in place by `d` (relu in place) while `a` is still read afterwards."""

    @T.prim_func(private=True, s_tir=True)
    def relu_inplace(C: T.Buffer((1, 32, 4), "float32")):
        for i, j, k in T.grid(1, 32, 4):
            with T.sblock("C"):
                vi, vj, vk = T.axis.remap("SSS", [i, j, k])
                C[vi, vj, vk] = T.max(C[vi, vj, vk], T.float32(0))

    @R.function
    def main(x: R.Tensor((1, 16, 4), "float32"), y: R.Tensor((1, 16, 4), "float32")):
        cls = OutputOverwrittenWhileInputRead
        with R.dataflow():
            a = R.exp(x)
            b = R.exp(y)
            c = R.concat((a, b), axis=1)
            d = R.call_tir_inplace(
                cls.relu_inplace, (c,), inplace_indices=[0], out_ty=R.Tensor((1, 32, 4), "float32")
            )
            e = R.exp(a)
            f = R.exp(d)
            R.output(f, e)
        return (f, e)


def test_writing_the_output_while_an_input_is_read_keeps_the_copy():
    assert _decisions(OutputOverwrittenWhileInputRead) == [(False, "overwritten_while_read")]
    _same_results(OutputOverwrittenWhileInputRead)


@I.ir_module
class InputWrittenAfter:
    """`a` is written in place after the concatenation, and `c` read after that."""

    @T.prim_func(private=True, s_tir=True)
    def negate_inplace(A: T.Buffer((1, 16, 4), "float32")):
        for i, j, k in T.grid(1, 16, 4):
            with T.sblock("A"):
                vi, vj, vk = T.axis.remap("SSS", [i, j, k])
                A[vi, vj, vk] = T.float32(0) - A[vi, vj, vk]

    @R.function
    def main(x: R.Tensor((1, 16, 4), "float32"), y: R.Tensor((1, 16, 4), "float32")):
        cls = InputWrittenAfter
        with R.dataflow():
            a = R.exp(x)
            b = R.exp(y)
            c = R.concat((a, b), axis=1)
            n = R.call_tir_inplace(
                cls.negate_inplace,
                (a,),
                inplace_indices=[0],
                out_ty=R.Tensor((1, 16, 4), "float32"),
            )
            d = R.exp(c)
            e = R.exp(n)
            R.output(d, e)
        return (d, e)


def test_an_input_written_after_the_concatenation_keeps_the_copy():
    assert _decisions(InputWrittenAfter) == [(False, "input_written_after")]
    _same_results(InputWrittenAfter)


@I.ir_module
class Swapped:
    """`(a, b)` and `(b, a)`: `a` cannot be at the start of both outputs' memory and `b` too."""

    @R.function
    def main(x: R.Tensor((1, 16, 4), "float32"), y: R.Tensor((1, 16, 4), "float32")):
        with R.dataflow():
            a = R.exp(x)
            b = R.exp(y)
            c = R.concat((a, b), axis=1)
            d = R.concat((b, a), axis=1)
            e = R.add(c, d)
            R.output(e)
        return e


def test_contradicting_placements_keep_one_copy():
    assert _decisions(Swapped) == [(True, "copy_free"), (False, "placement_conflict")]
    _same_results(Swapped)


@I.ir_module
class DenseBlock:
    """DenseNet's pattern: every layer concatenates all the features so far."""

    @R.function
    def main(x: R.Tensor((1, 16, 4), "float32")):
        with R.dataflow():
            x1 = R.exp(x)
            c1 = R.concat((x, x1), axis=1)
            x2 = R.sigmoid(R.sum(c1, axis=1, keepdims=True) + x1)
            c2 = R.concat((x1, x2), axis=1)
            x3 = R.tanh(R.sum(c2, axis=1, keepdims=True) + x2)
            c3 = R.concat((x1, x2, x3), axis=1)
            d = R.exp(c3)
            R.output(d)
        return d


def test_prefix_concatenations_share_one_buffer():
    """`c2` and `c3` start with `x1, x2`: both sit at the start of one buffer, and each new
    feature is written once at its place (`c1` concatenates the parameter `x`: a copy)."""
    assert _decisions(DenseBlock) == [
        (False, "not_placed"),
        (True, "copy_free"),
        (True, "copy_free"),
    ]
    (plan,) = memory_plan(DenseBlock)
    tensors = {t.binding: t for t in plan.tensors}
    _, c2, c3 = plan.concats
    x1, x2, _ = c3.inputs
    assert list(c2.inputs) == [x1, x2]
    offset = {name: tensors[name].offset for name in (c2.output, c3.output, x1, x2)}
    assert offset[c2.output] == offset[c3.output] == offset[x1]
    assert offset[x2] == offset[x1] + tensors[x1].bytes
    _same_results(DenseBlock)


def test_live_bytes_count_shared_bytes_once():
    """FunctionMemoryPlan.live_bytes(): tensors of one group count the bytes they cover
    together once, as the bound does; with copies, every tensor counts on its own."""
    (plan,) = memory_plan(DenseBlock)
    (copies,) = memory_plan(DenseBlock, copy_free_concat=False)
    live, separate = list(plan.live_bytes()), list(copies.live_bytes())
    assert max(live) <= plan.peak_live_bytes
    assert max(separate) <= copies.peak_live_bytes
    grouped = [t for t in plan.tensors if t.group >= 0]
    assert grouped
    # Where a concatenation's output and its inputs are live together, they share bytes.
    assert all(a <= b for a, b in zip(live, separate, strict=True))
    assert any(a < b for a, b in zip(live, separate, strict=True))


# ---- the proof on PrimFuncs --------------------------------------------------------------------


def _prim_funcs(mod):
    return {gv.name_hint: f for gv, f in mod.functions.items() if isinstance(f, tvm.tirx.PrimFunc)}


def test_the_legalized_concatenation_is_proven():
    (func,) = [f for name, f in _prim_funcs(planner_input(DenseBlock)).items() if "concat" in name][
        :1
    ]
    axis, offsets, computes = analyze_concatenation(func)
    assert axis == 1 and offsets[0] == 0 and not computes


@T.prim_func(private=True, s_tir=True)
def stencil(
    A: T.Buffer((1, 16), "float32"),
    B: T.Buffer((1, 16), "float32"),
    C: T.Buffer((1, 32), "float32"),
):
    for i, j in T.grid(1, 32):
        with T.sblock("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = T.if_then_else(vj >= 16, B[vi, vj - 16], A[vi, T.min(vj + 1, 15)])


@T.prim_func(private=True, s_tir=True)
def transposed(
    A: T.Buffer((4, 4), "float32"), B: T.Buffer((4, 4), "float32"), C: T.Buffer((8, 4), "float32")
):
    for i, j in T.grid(8, 4):
        with T.sblock("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = T.if_then_else(vi >= 4, B[vi - 4, vj], A[vj, vi])


@T.prim_func(private=True, s_tir=True)
def computed(
    A: T.Buffer((1, 16), "float32"),
    B: T.Buffer((1, 16), "float32"),
    C: T.Buffer((1, 32), "float32"),
):
    for i, j in T.grid(1, 32):
        with T.sblock("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = T.if_then_else(vj >= 16, B[vi, vj - 16], A[vi, vj] + T.float32(1))


@T.prim_func(private=True, s_tir=True)
def overlapping(
    A: T.Buffer((1, 16), "float32"),
    B: T.Buffer((1, 16), "float32"),
    C: T.Buffer((1, 32), "float32"),
):
    for i, j in T.grid(1, 32):
        with T.sblock("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = T.if_then_else(vj >= 8, B[vi, vj - 8], A[vi, vj])


@T.prim_func(private=True, s_tir=True)
def partial(
    A: T.Buffer((1, 16), "float32"),
    B: T.Buffer((1, 16), "float32"),
    C: T.Buffer((1, 32), "float32"),
):
    for i, j in T.grid(1, 16):
        with T.sblock("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = A[vi, vj]
    for i, j in T.grid(1, 16):
        with T.sblock("C2"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj + 16] = B[vi, vj]


@T.prim_func(private=True, s_tir=True)
def fused_relu_sum(A: T.Buffer((1, 8, 4), "float32"), B: T.Buffer((1, 8), "float32")):
    R_ = T.sblock_alloc_buffer((1, 8, 4), "float32")
    for i, j, k in T.grid(1, 8, 4):
        with T.sblock("relu"):
            vi, vj, vk = T.axis.remap("SSS", [i, j, k])
            R_[vi, vj, vk] = T.max(A[vi, vj, vk], T.float32(0))
    for i, j, k in T.grid(1, 8, 4):
        with T.sblock("sum"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                B[vi, vj] = T.float32(0)
            B[vi, vj] = B[vi, vj] + R_[vi, vj, vk]


@T.prim_func(private=True, s_tir=True)
def add_bias_inplace(
    Y: T.Buffer((T.int64(128), T.int64(128)), "float32"), B: T.Buffer((T.int64(128),), "float32")
):
    # As LegalizeOps makes an in-place add: the last parameter is read, not written, and has
    # another rank than the buffer written.
    T.func_attr({"tirx.noalias": True})
    for i, j in T.grid(T.int64(128), T.int64(128)):
        with T.sblock("T_add"):
            vi, vj = T.axis.remap("SS", [i, j])
            T.reads(Y[vi, vj], B[vj])
            T.writes(Y[vi, vj])
            Y[vi, vj] = Y[vi, vj] + B[vj]


@pytest.mark.parametrize(
    "func, why",
    [
        (add_bias_inplace, "the PrimFunc writes a buffer of its own"),
        (overlapping, "is read at another element"),
        (partial, "does not visit each output element once"),
        (fused_relu_sum, "allocates or declares"),
    ],
)
def test_what_is_not_a_concatenation(func, why):
    assert why in analyze_concatenation(func)


@pytest.mark.parametrize(
    "func, axis",
    [(stencil, 1), (transposed, 0), (computed, 1)],
    ids=lambda v: getattr(v, "__name__", v),
)
def test_an_input_copied_beside_a_computed_part_is_sliced(func, axis):
    """`B` is written unchanged into the second half; `A` is computed from (a stencil, a
    transpose, an addition): the kernel must run, and `B` can sit at its slice."""
    assert analyze_concatenation(func) == (axis, (None, 64), True)


def test_the_walk_before_the_proofs_keeps_every_concatenation():
    """The planner asks the proofs only of kernels that store into their output once a value
    selected by `if_then_else`: every kernel proven a concatenation passes that walk (the zoo's
    DenseNet, U-Net and GhostNet kernels among them), and a reduction (whose init is a second
    store), a kernel writing another buffer or one storing a computed value does not reach the
    proofs."""
    may_be = tvm_memplan.testing.may_be_concatenation
    kernels = [
        stencil,
        transposed,
        computed,
        overlapping,
        partial,
        fused_relu_sum,
        one_channel_last,
    ]
    kernels += list(_prim_funcs(planner_input(DenseBlock)).values())
    kernels += list(_prim_funcs(planner_input(NormalizedConcat)).values())
    for name in ("densenet", "unet", "ghostnet"):
        mod, _ = ZOO[name]()
        kernels += list(_prim_funcs(planner_input(mod)).values())
    for func in kernels:
        if not isinstance(analyze_concatenation(func), str):
            assert may_be(func)
    assert not may_be(add_bias_inplace)
    assert not may_be(Kernels["exp"])  # its one store computes exp(A[...]): no selection
    reductions = [f for n, f in _prim_funcs(planner_input(NormalizedConcat)).items() if "sum" in n]
    assert reductions and not any(may_be(f) for f in reductions)
    assert any(may_be(f) for f in kernels) and any(
        not isinstance(analyze_concatenation(f), str) for f in kernels
    )


# ---- the in-place pass, when our planner will run -------------------------------------------


@I.ir_module
class NormalizedConcat:
    """DenseNet's layer: a normalization of the concatenation while its inputs live on."""

    @R.function
    def main(x: R.Tensor((1, 16, 4), "float32"), y: R.Tensor((1, 16, 4), "float32")):
        with R.dataflow():
            a = R.exp(x)
            b = R.exp(y)
            c = R.concat((a, b), axis=1)
            n = R.subtract(c, R.const(1.0, "float32"))
            d = R.concat((a, b, R.sum(n, axis=1, keepdims=True)), axis=1)
            e = R.exp(d)
            R.output(e)
        return e


def test_with_our_planner_the_in_place_pass_leaves_a_concatenation_to_it():
    """`c` may become a view of `a` and `b` (copy-free): writing `n` into it would change `a`
    and `b`, which `d` reads later. With TVM's planner, `c` is a copy and may be overwritten."""
    from tvm_memplan.analysis import inplace_candidates

    def decision(planner):
        (n,) = [
            d
            for d in inplace_candidates(NormalizedConcat["main"], NormalizedConcat, planner=planner)
            if d.binding == "n"
        ]
        return n.inplace

    assert decision("stock") is True
    assert decision("memplan") is False
    (plan,) = memory_plan(NormalizedConcat)
    assert [c.copy_free for c in plan.concats] == [True, True]
    _same_results(NormalizedConcat)


@T.prim_func(private=True, s_tir=True)
def one_channel_last(
    A: T.Buffer((1, 16, 4), "float32"),
    B: T.Buffer((1, 1, 4), "float32"),
    C: T.Buffer((1, 17, 4), "float32"),
):
    for i, j, k in T.grid(1, 17, 4):
        with T.sblock("C"):
            vi, vj, vk = T.axis.remap("SSS", [i, j, k])
            C[vi, vj, vk] = T.if_then_else(16 <= vj, B[vi, vj - 16, vk], A[vi, vj, vk])  # noqa: SIM300


def test_a_last_slice_of_one_is_proven():
    """With the last slice one wide, TVM's analyzer turns `!(16 <= vj)` into `vj != 16`, which
    it cannot bound; the proof narrows the index itself."""
    assert analyze_concatenation(one_channel_last) == (1, (0, 256), False)
