"""The planner's in-place guard (src_cpp/relax/inplace_guard.h): an in-place write into a
constant, or into a value read afterwards, gets a copy of its argument to write, whichever pass
made it; every other write is left as it is.

Cases state Relax after CallTIRRewrite (what the planner receives), where `b =
R.call_tir_inplace(f, (a,), ...)` has become `f(a)` followed by `b = a`. Where they run, the
guarded module gives, call after call, the results of the same program written out of place.
"""
# ruff: noqa: F841  (TVMScript bindings that nothing reads are part of the cases)

import numpy as np
import tvm
from tvm import relax
from tvm.script import ir as I
from tvm.script import relax as R
from tvm.script import tirx as T

from tvm_memplan.analysis import unsafe_inplace_writes
from tvm_memplan.instrument import capture
from tvm_memplan.testing import (
    assert_same_relax_results,
    compile_with_planner,
    relax_inputs,
    relax_vm,
    run_relax,
)
from tvm_memplan.testing.compare import CompareBeforeAfter, relax_module
from tvm_memplan.transform import GuardInplaceWrites


@I.ir_module
class Kernels:
    @T.prim_func(private=True)
    def sin_inplace(A: T.Buffer((16,), "float32")):
        for i in range(16):
            A[i] = T.sin(A[i])

    @T.prim_func(private=True)
    def sin(A: T.Buffer((16,), "float32"), B: T.Buffer((16,), "float32")):
        for i in range(16):
            B[i] = T.sin(A[i])

    @T.prim_func(private=True)
    def exp(A: T.Buffer((16,), "float32"), B: T.Buffer((16,), "float32")):
        for i in range(16):
            B[i] = T.exp(A[i])

    @T.prim_func(private=True)
    def add(
        A: T.Buffer((16,), "float32"), B: T.Buffer((16,), "float32"), C: T.Buffer((16,), "float32")
    ):
        for i in range(16):
            C[i] = A[i] + B[i]


SIN_INPLACE, SIN, EXP, ADD = (
    Kernels.get_global_var(n) for n in ("sin_inplace", "sin", "exp", "add")
)
K = np.linspace(0.0, 1.5, 16, dtype="float32")
COPY = "runtime.TVMTensorCopyFromTo"


class GuardCase(CompareBeforeAfter):
    """`before` -> `expected` under the guard."""

    def transform(self, before):
        after = GuardInplaceWrites()(before)
        relax.analysis.well_formed(after)
        return after


class GuardRunCase(GuardCase):
    """And the guarded module gives the results of `reference` (the program out of place, or
    `before` itself where it is right) on three calls, its inputs untouched."""

    @property
    def reference(self):
        return self.before

    def test_results(self):
        after = self.transform(self.before)
        vms = (relax_vm(self.reference, planner="none"), relax_vm(after, planner="none"))
        assert_same_relax_results(self.reference, after, runs=3, vms=vms)


class TestConstantGetsACopy(GuardRunCase):
    """`k` is a constant (FoldConstant folded the in-place argument): `sin_inplace` writes a
    copy, and `b` is the copy; the constant is never written."""

    @R.function
    def _before(x: R.Tensor((16,), "float32")) -> R.Tensor((16,), "float32"):
        R.func_attr({"relax.force_pure": True})
        k = R.const(K)
        SIN_INPLACE(k)
        b = k
        c = R.builtin.alloc_tensor(R.shape([16]), R.dtype("float32"), 0, R.str("global"))
        ADD(b, x, c)
        return c

    @R.function
    def _expected(x: R.Tensor((16,), "float32")) -> R.Tensor((16,), "float32"):
        R.func_attr({"relax.force_pure": True})
        k = R.const(K)
        k_copy = R.builtin.alloc_tensor(R.shape([16]), R.dtype("float32"), 0, R.str("global"))
        _ = R.call_packed(COPY, k, k_copy, ty_args=(R.Tuple,))
        SIN_INPLACE(k_copy)
        b = k_copy
        c = R.builtin.alloc_tensor(R.shape([16]), R.dtype("float32"), 0, R.str("global"))
        ADD(b, x, c)
        return c

    @R.function
    def _reference(x: R.Tensor((16,), "float32")) -> R.Tensor((16,), "float32"):
        R.func_attr({"relax.force_pure": True})
        k = R.const(K)
        b = R.builtin.alloc_tensor(R.shape([16]), R.dtype("float32"), 0, R.str("global"))
        SIN(k, b)
        c = R.builtin.alloc_tensor(R.shape([16]), R.dtype("float32"), 0, R.str("global"))
        ADD(b, x, c)
        return c

    before = relax_module(Kernels, main=_before)
    expected = relax_module(Kernels, main=_expected)
    reference = relax_module(Kernels, main=_reference)


class TestValueReadAfterGetsACopy(GuardRunCase):
    """`a` is read after `sin_inplace` wrote it (as after common-subexpression elimination
    merged two computations of it): the write goes to a copy, and `a` keeps its value."""

    @R.function
    def _before(x: R.Tensor((16,), "float32")) -> R.Tensor((16,), "float32"):
        R.func_attr({"relax.force_pure": True})
        a = R.builtin.alloc_tensor(R.shape([16]), R.dtype("float32"), 0, R.str("global"))
        EXP(x, a)
        SIN_INPLACE(a)
        b = a
        c = R.builtin.alloc_tensor(R.shape([16]), R.dtype("float32"), 0, R.str("global"))
        ADD(a, b, c)
        return c

    @R.function
    def _expected(x: R.Tensor((16,), "float32")) -> R.Tensor((16,), "float32"):
        R.func_attr({"relax.force_pure": True})
        a = R.builtin.alloc_tensor(R.shape([16]), R.dtype("float32"), 0, R.str("global"))
        EXP(x, a)
        a_copy = R.builtin.alloc_tensor(R.shape([16]), R.dtype("float32"), 0, R.str("global"))
        _ = R.call_packed(COPY, a, a_copy, ty_args=(R.Tuple,))
        SIN_INPLACE(a_copy)
        b = a_copy
        c = R.builtin.alloc_tensor(R.shape([16]), R.dtype("float32"), 0, R.str("global"))
        ADD(a, b, c)
        return c

    @R.function
    def _reference(x: R.Tensor((16,), "float32")) -> R.Tensor((16,), "float32"):
        R.func_attr({"relax.force_pure": True})
        a = R.builtin.alloc_tensor(R.shape([16]), R.dtype("float32"), 0, R.str("global"))
        EXP(x, a)
        b = R.builtin.alloc_tensor(R.shape([16]), R.dtype("float32"), 0, R.str("global"))
        SIN(a, b)
        c = R.builtin.alloc_tensor(R.shape([16]), R.dtype("float32"), 0, R.str("global"))
        ADD(a, b, c)
        return c

    before = relax_module(Kernels, main=_before)
    expected = relax_module(Kernels, main=_expected)
    reference = relax_module(Kernels, main=_reference)


class TestParameterThroughAViewGetsACopy(GuardRunCase):
    """`v` is a view of the parameter `x` (a copy RewriteDataflowReshape made a view): writing
    it would write the caller's tensor, which the function never writes as itself."""

    @R.function
    def _before(x: R.Tensor((4, 4), "float32")) -> R.Tensor((16,), "float32"):
        R.func_attr({"relax.force_pure": True})
        v = R.reshape(x, R.shape([16]))
        SIN_INPLACE(v)
        b = v
        return b

    @R.function
    def _expected(x: R.Tensor((4, 4), "float32")) -> R.Tensor((16,), "float32"):
        R.func_attr({"relax.force_pure": True})
        v = R.reshape(x, R.shape([16]))
        v_copy = R.builtin.alloc_tensor(R.shape([16]), R.dtype("float32"), 0, R.str("global"))
        _ = R.call_packed(COPY, v, v_copy, ty_args=(R.Tuple,))
        SIN_INPLACE(v_copy)
        b = v_copy
        return b

    @R.function
    def _reference(x: R.Tensor((4, 4), "float32")) -> R.Tensor((16,), "float32"):
        R.func_attr({"relax.force_pure": True})
        v = R.reshape(x, R.shape([16]))
        b = R.builtin.alloc_tensor(R.shape([16]), R.dtype("float32"), 0, R.str("global"))
        SIN(v, b)
        return b

    before = relax_module(Kernels, main=_before)
    expected = relax_module(Kernels, main=_expected)
    reference = relax_module(Kernels, main=_reference)


class TestKeepsAValueNotReadAfter(GuardRunCase):
    """The in-place write every in-place pass means: `a` is read only through `b` afterwards."""

    @R.function
    def _before(x: R.Tensor((16,), "float32")) -> R.Tensor((16,), "float32"):
        R.func_attr({"relax.force_pure": True})
        a = R.builtin.alloc_tensor(R.shape([16]), R.dtype("float32"), 0, R.str("global"))
        EXP(x, a)
        SIN_INPLACE(a)
        b = a
        c = R.builtin.alloc_tensor(R.shape([16]), R.dtype("float32"), 0, R.str("global"))
        ADD(b, x, c)
        return c

    before = relax_module(Kernels, main=_before)


class TestKeepsCallsIntoFreshTensors(GuardRunCase):
    """Every call writes only a tensor allocated for it and written once (what CallTIRRewrite
    emits without an in-place pass, as in the out-of-place program the read-after case is
    compared with): nothing to guard, decided without following storage."""

    before = relax_module(Kernels, main=TestValueReadAfterGetsACopy._reference)

    def test_no_write_is_unsafe(self):
        assert unsafe_inplace_writes(self.before) == {}


class TestKeepsParameters(GuardCase):
    """A parameter written in place is the caller's tensor, written as the program says
    (MLC-LLM's sampling functions do it on purpose)."""

    @R.function
    def _before(x: R.Tensor((16,), "float32")) -> R.Tensor((16,), "float32"):
        R.func_attr({"relax.force_pure": True})
        SIN_INPLACE(x)
        b = x
        return b

    before = relax_module(Kernels, main=_before)


class TestKeepsAReadOnTheOtherBranch(GuardRunCase):
    """`a` is read in the else branch only: that read never follows the then branch's write."""

    @R.function
    def _before(x: R.Tensor((16,), "float32"), c: R.Tensor((), "bool")) -> R.Tensor(
        (16,), "float32"
    ):
        R.func_attr({"relax.force_pure": True})
        a = R.builtin.alloc_tensor(R.shape([16]), R.dtype("float32"), 0, R.str("global"))
        EXP(x, a)
        if c:
            SIN_INPLACE(a)
            b = a
            r = b
        else:
            d = R.builtin.alloc_tensor(R.shape([16]), R.dtype("float32"), 0, R.str("global"))
            ADD(a, x, d)
            r = d
        return r

    before = relax_module(Kernels, main=_before)


def test_records_say_what_was_reverted_and_why():
    """The analysis names the callee, the argument, the result and the reason."""
    records = unsafe_inplace_writes(TestConstantGetsACopy.before)
    (record,) = records["main"]
    assert (record.callee, record.argument, record.result, record.code) == (
        "sin_inplace",
        "k",
        "b",
        "constant",
    )
    assert "constant" in record.reason
    (record,) = unsafe_inplace_writes(TestValueReadAfterGetsACopy.before)["main"]
    assert record.code == "read_after" and "`a`" in record.reason
    assert unsafe_inplace_writes(TestKeepsAValueNotReadAfter.before) == {}


# ---- whichever pass made the call, whatever ran after it -----------------------------------


@I.ir_module
class FoldedAfterTVMsInplacePass:
    """`a` is computed from constants only; TVM's DataflowUseInplaceCalls makes `b` write into
    it, and FoldConstant (in the `zero` pipeline) then turns `a` into a constant."""

    @R.function
    def main(x: R.Tensor((16,), "float32")) -> R.Tensor((16,), "float32"):
        with R.dataflow():
            a = R.add(R.const(K), R.const(K))
            b = R.multiply(a, x)
            c = R.add(b, x)
            R.output(c)
        return c


def _folded_after_stock_inplace() -> tvm.IRModule:
    inplace = relax.transform.DataflowUseInplaceCalls()(FoldedAfterTVMsInplacePass)
    return relax.get_pipeline("zero")(inplace)


def test_stock_bug_folded_inplace_argument_drifts_with_the_stock_planner():
    """STOCK BUG: with TVM's planner, each call writes the folded constant, so the second call
    differs from the first. If this starts to fail, TVM no longer writes into it."""
    mod = _folded_after_stock_inplace()
    vm = relax.VirtualMachine(compile_with_planner(mod, planner="stock"), tvm.cpu())
    inputs = relax_inputs(mod["main"])
    first, second = (run_relax(vm, "main", inputs)[0][0] for _ in range(2))
    assert not np.array_equal(first, second)


def test_our_planner_guards_what_tvms_inplace_pass_left_after_folding():
    """The same module with our planner: the constant gets a copy, every call gives the
    results of the program without in-place calls, and the plan records why."""
    mod = _folded_after_stock_inplace()
    ours = relax.VirtualMachine(compile_with_planner(mod, planner="memplan"), tvm.cpu())
    reference = relax_vm(FoldedAfterTVMsInplacePass)
    assert_same_relax_results(mod, mod, runs=3, vms=(reference, ours))
    run = lambda: compile_with_planner(mod, planner="memplan")  # noqa: E731
    planned = capture(run, ["tvm_memplan.StaticPlanBlockMemory"])
    (record,) = unsafe_inplace_writes(planned["tvm_memplan.StaticPlanBlockMemory"])["main"]
    assert record.code == "constant"


@I.ir_module
class CopyThatBecomesAView:
    """`a` is a copy of `x` that RewriteDataflowReshape turns into a view of it: TVM's pass
    makes `b` write into `a`, that is into the caller's `x`."""

    @R.function
    def main(x: R.Tensor((2, 4), "float32"), y: R.Tensor((2, 4), "float32")):
        with R.dataflow():
            a = R.astype(x, "float32")
            b = R.add(a, y)
            R.output(b)
        return b


def test_our_planner_guards_the_callers_tensor_from_tvms_inplace_pass():
    """With TVM's in-place pass and TVM's planner the caller's `x` changes (see
    test_stock_bug_copies_that_become_views_overwrite_the_caller_input); with our planner
    the write goes to a copy: inputs untouched, three calls alike."""
    mod = relax.transform.DataflowUseInplaceCalls()(CopyThatBecomesAView)
    ours = relax.VirtualMachine(compile_with_planner(mod, planner="memplan"), tvm.cpu())
    assert_same_relax_results(mod, mod, vms=(relax_vm(CopyThatBecomesAView), ours))
