"""tvm-memplan's StaticPlanBlockMemory: packing at offsets, lifetimes over the whole function,
what stays unplanned, symbolic sizes, devices, the fallback to the stock planner, bad input,
and the records the planner keeps. One rule per case, stated in its docstring.

A PlanCase states the IR the planner receives (Relax after CallTIRRewrite) and the IR it must
produce (`expected = STOCK`: exactly what TVM's planner makes of it), checks TVM's well-formed
check on it, and, where it can run, compiles both (without a planner for the input: every
tensor its own storage) and runs every Relax function on the Relax VM repeatedly with the same
inputs: outputs identical, inputs untouched. A PlanPass checks the IR only: where it is TVM's
planner's, nothing is planned, or another case runs the same IR. Input the pass rejects is a
PlanPass whose `expected` is the exception and whose `match` is its message. A RecordCase
checks one rule of the records (FunctionMemoryPlan), a PlanAtCase one of the records evaluated
at shape values.
"""
# ruff: noqa: F841  (TVMScript bindings that nothing reads are part of the cases)

import contextlib
import functools
import threading

import numpy as np
import pytest
import tvm
from tvm import relax
from tvm.script import ir as I
from tvm.script import relax as R
from tvm.script import tirx as T

from tvm_memplan.analysis import held_by_plan, memory_plan, memory_plan_at, recorded_pool
from tvm_memplan.testing import (
    assert_same_relax_results,
    compile_with_planner,
    past_bound_error,
    peak_live_bytes,
    relax_inputs,
    relax_vm,
    run_relax,
)
from tvm_memplan.testing.compare import CompareBeforeAfter, relax_module, skipped
from tvm_memplan.transform import StaticPlanBlockMemory


@I.ir_module
class Kernels:
    """The kernels the cases call, written once (`before` and `expected` share them)."""

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

    @T.prim_func(private=True)
    def add2(
        A: T.Buffer((4, 4), "float32"),
        B: T.Buffer((16,), "float32"),
        C: T.Buffer((4, 4), "float32"),
    ):
        for i, j in T.grid(4, 4):
            C[i, j] = A[i, j] + B[i * 4 + j]

    @T.prim_func(private=True)
    def exp_n(a: T.handle, b: T.handle):
        n = T.int64()
        A = T.match_buffer(a, (n,), "float32")
        B = T.match_buffer(b, (n,), "float32")
        for i in range(n):
            B[i] = T.exp(A[i])

    @T.prim_func(private=True)
    def fill(a: T.handle, b: T.handle):
        n = T.int64()
        A = T.match_buffer(a, (16,), "float32")
        B = T.match_buffer(b, (n,), "float32")
        for i in range(n):
            B[i] = A[i % 16]

    @T.prim_func(private=True)
    def exp_nm(a: T.handle, b: T.handle):
        n, m = T.int64(), T.int64()
        A = T.match_buffer(a, (n, m), "float32")
        B = T.match_buffer(b, (n, m), "float32")
        for i, j in T.grid(n, m):
            B[i, j] = T.exp(A[i, j])


EXP, ADD, ADD2, EXP_N, FILL, EXP_NM = (
    Kernels.get_global_var(n) for n in ("exp", "add", "add2", "exp_n", "fill", "exp_nm")
)


ALLOC_STORAGE = "relax.memory.alloc_storage"

#: `expected = STOCK`: the pass must give exactly what TVM's planner makes of `before`.
STOCK = "stock"


class PlanPass(CompareBeforeAfter):
    """`before` -> `expected` under the pass with `options` (under `target`, where one is set).
    `expected` may also be STOCK, an exception class (with `match`), or None (unchanged)."""

    options: dict = {}
    #: The target the pass runs under (None: no current target).
    target: str | None = None

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if isinstance(cls.__dict__.get("expected"), str):  # STOCK, made without a target
            cls.expected = relax.transform.StaticPlanBlockMemory()(cls.before)

    def transform(self, before):
        with tvm.target.Target(self.target) if self.target else contextlib.nullcontext():
            after = StaticPlanBlockMemory(**self.options)(before)
        relax.analysis.well_formed(after)
        return after

    def plans(self) -> list:
        """The records of `before`'s Relax functions under `options`, in name order
        (memory_plan runs under Target("llvm"))."""
        return memory_plan(self.before, pipeline=None, **self.options)


class PlanCase(PlanPass):
    """... and identical results of every Relax function, and a second run changes nothing."""

    #: Input seeds to run (a boolean parameter takes both values over a few seeds).
    seeds: tuple = (0,)
    #: Values of the symbolic shape variables to run with, one dict per run.
    shape_vars: tuple = ({},)
    #: Why the case cannot run on this machine's CPU (its IR is checked, not its results); the
    #: results check then shows as skipped with it.
    not_run: str | None = None

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if cls.__dict__.get("not_run"):
            cls.test_results = skipped(PlanCase.test_results, cls.not_run)

    def test_results(self):
        after = self.transform(self.before)
        vms = (relax_vm(self.before, planner="none"), relax_vm(after, planner="none"))
        functions = self.before.functions.items()
        names = sorted(gv.name_hint for gv, f in functions if isinstance(f, relax.Function))
        for name in names:
            for seed in self.seeds:
                for shape_vars in self.shape_vars:
                    assert_same_relax_results(
                        self.before, after, name, seed=seed, shape_vars=shape_vars, vms=vms
                    )

    def test_idempotent(self):
        """Planned tensors are views of storages: a second run has nothing left to plan."""
        once = self.transform(self.before)
        tvm.ir.assert_structural_equal(self.transform(once), once)


class RecordCase:
    """A rule of the record (FunctionMemoryPlan) of `before`'s one Relax function, under
    `options`: `test_record` checks it, the class docstring states it."""

    before: tvm.IRModule
    options: dict = {}

    def plan(self):
        (plan,) = memory_plan(self.before, pipeline=None, **self.options)
        return plan


# ---- packing --------------------------------------------------------------------------------


class TestLiveTensorsShareOneStorageAtOffsets(PlanCase):
    """`a` and `b` are live together: one storage holds both, `b` at the next 64-byte offset,
    reached through ensure_zero_offset under its own variable. The returned `c` is not
    planned (the caller owns it)."""

    @R.function
    def _before(x: R.Tensor((16,), "float32")) -> R.Tensor((16,), "float32"):
        R.func_attr({"relax.force_pure": True})
        a = R.builtin.alloc_tensor(R.shape([16]), R.dtype("float32"), 0, R.str("global"))
        EXP(x, a)
        b = R.builtin.alloc_tensor(R.shape([16]), R.dtype("float32"), 0, R.str("global"))
        EXP(a, b)
        c = R.builtin.alloc_tensor(R.shape([16]), R.dtype("float32"), 0, R.str("global"))
        ADD(a, b, c)
        return c

    @R.function
    def _expected(x: R.Tensor((16,), "float32")) -> R.Tensor((16,), "float32"):
        R.func_attr({"relax.force_pure": True})
        storage = R.memory.alloc_storage(R.shape([128]), 0, R.str("global"), R.dtype("uint8"))
        a = R.memory.alloc_tensor(storage, 0, R.shape([16]), R.dtype("float32"), 0)
        EXP(x, a)
        b_at = R.memory.alloc_tensor(storage, 64, R.shape([16]), R.dtype("float32"), 0)
        b = R.memory.ensure_zero_offset(b_at)
        EXP(a, b)
        c = R.builtin.alloc_tensor(R.shape([16]), R.dtype("float32"), 0, R.str("global"))
        ADD(a, b, c)
        return c

    before = relax_module(Kernels, main=_before)
    expected = relax_module(Kernels, main=_expected)


class TestTensorMadeInABranchIsReadAfterIt(PlanCase):
    """apache/tvm#20191, minimized: `a` lives and dies inside the then branch, `b` is made there
    and read after the `if`. The storage is allocated before the `if`, so `d` may reuse the
    bytes of `a` after it (TVM's planner allocates the storage inside the branch and uses it
    after the `if`: see test_the_stock_plan_is_not_well_formed)."""

    @R.function
    def _before(x: R.Tensor((16,), "float32"), c: R.Tensor((), "bool")) -> R.Tensor(
        (16,), "float32"
    ):
        R.func_attr({"relax.force_pure": True})
        if c:
            a = R.builtin.alloc_tensor(R.shape([16]), R.dtype("float32"), 0, R.str("global"))
            EXP(x, a)
            b = R.builtin.alloc_tensor(R.shape([16]), R.dtype("float32"), 0, R.str("global"))
            EXP(a, b)
            r = b
        else:
            r = x
        d = R.builtin.alloc_tensor(R.shape([16]), R.dtype("float32"), 0, R.str("global"))
        EXP(r, d)
        e = R.builtin.alloc_tensor(R.shape([16]), R.dtype("float32"), 0, R.str("global"))
        EXP(d, e)
        return e

    @R.function
    def _expected(x: R.Tensor((16,), "float32"), c: R.Tensor((), "bool")) -> R.Tensor(
        (16,), "float32"
    ):
        R.func_attr({"relax.force_pure": True})
        storage = R.memory.alloc_storage(R.shape([128]), 0, R.str("global"), R.dtype("uint8"))
        if c:
            a = R.memory.alloc_tensor(storage, 0, R.shape([16]), R.dtype("float32"), 0)
            EXP(x, a)
            b_at = R.memory.alloc_tensor(storage, 64, R.shape([16]), R.dtype("float32"), 0)
            b = R.memory.ensure_zero_offset(b_at)
            EXP(a, b)
            r = b
        else:
            r = x
        d = R.memory.alloc_tensor(storage, 0, R.shape([16]), R.dtype("float32"), 0)
        EXP(r, d)
        e = R.builtin.alloc_tensor(R.shape([16]), R.dtype("float32"), 0, R.str("global"))
        EXP(d, e)
        return e

    before = relax_module(Kernels, main=_before)
    expected = relax_module(Kernels, main=_expected)
    seeds = (0, 1, 2, 3)  # both values of `c`

    def test_the_stock_plan_is_not_well_formed(self):
        """This is the shape of apache/tvm#20191: TVM's planner uses, after the `if`, a storage
        variable bound inside the then branch (the VM then reads a register that was never
        written). If this starts to pass, TVM has fixed the bug."""
        stock = relax.transform.StaticPlanBlockMemory()(self.before)
        assert not relax.analysis.check_well_formed(stock)


class TestViewKeepsItsSourceLive(PlanCase):
    """`v` is a view of `a` (R.reshape after LegalizeOps): `a` lives until `v`'s last read, so `b`
    may not take its bytes."""

    @R.function
    def _before(x: R.Tensor((16,), "float32")) -> R.Tensor((4, 4), "float32"):
        R.func_attr({"relax.force_pure": True})
        a = R.builtin.alloc_tensor(R.shape([16]), R.dtype("float32"), 0, R.str("global"))
        EXP(x, a)
        v = R.reshape(a, R.shape([4, 4]))
        b = R.builtin.alloc_tensor(R.shape([16]), R.dtype("float32"), 0, R.str("global"))
        EXP(x, b)
        c = R.builtin.alloc_tensor(R.shape([4, 4]), R.dtype("float32"), 0, R.str("global"))
        ADD2(v, b, c)
        return c

    @R.function
    def _expected(x: R.Tensor((16,), "float32")) -> R.Tensor((4, 4), "float32"):
        R.func_attr({"relax.force_pure": True})
        storage = R.memory.alloc_storage(R.shape([128]), 0, R.str("global"), R.dtype("uint8"))
        a = R.memory.alloc_tensor(storage, 0, R.shape([16]), R.dtype("float32"), 0)
        EXP(x, a)
        v = R.reshape(a, R.shape([4, 4]))
        b_at = R.memory.alloc_tensor(storage, 64, R.shape([16]), R.dtype("float32"), 0)
        b = R.memory.ensure_zero_offset(b_at)
        EXP(x, b)
        c = R.builtin.alloc_tensor(R.shape([4, 4]), R.dtype("float32"), 0, R.str("global"))
        ADD2(v, b, c)
        return c

    before = relax_module(Kernels, main=_before)
    expected = relax_module(Kernels, main=_expected)


class TestTupleAndMatchCastKeepTheirFieldsLive(PlanCase):
    """`a` is read later through a tuple item and a match_cast: `b` and `c`, made in between,
    take other bytes."""

    @R.function
    def _before(x: R.Tensor((16,), "float32")) -> R.Tensor((16,), "float32"):
        R.func_attr({"relax.force_pure": True})
        a = R.builtin.alloc_tensor(R.shape([16]), R.dtype("float32"), 0, R.str("global"))
        EXP(x, a)
        t = (a, x)
        b = R.builtin.alloc_tensor(R.shape([16]), R.dtype("float32"), 0, R.str("global"))
        EXP(x, b)
        c = R.builtin.alloc_tensor(R.shape([16]), R.dtype("float32"), 0, R.str("global"))
        EXP(b, c)
        m = R.match_cast(t[0], R.Tensor((16,), "float32"))
        d = R.builtin.alloc_tensor(R.shape([16]), R.dtype("float32"), 0, R.str("global"))
        EXP(m, d)
        return d

    @R.function
    def _expected(x: R.Tensor((16,), "float32")) -> R.Tensor((16,), "float32"):
        R.func_attr({"relax.force_pure": True})
        storage = R.memory.alloc_storage(R.shape([192]), 0, R.str("global"), R.dtype("uint8"))
        a = R.memory.alloc_tensor(storage, 0, R.shape([16]), R.dtype("float32"), 0)
        EXP(x, a)
        t = (a, x)
        b_at = R.memory.alloc_tensor(storage, 64, R.shape([16]), R.dtype("float32"), 0)
        b = R.memory.ensure_zero_offset(b_at)
        EXP(x, b)
        c_at = R.memory.alloc_tensor(storage, 128, R.shape([16]), R.dtype("float32"), 0)
        c = R.memory.ensure_zero_offset(c_at)
        EXP(b, c)
        m = R.match_cast(t[0], R.Tensor((16,), "float32"))
        d = R.builtin.alloc_tensor(R.shape([16]), R.dtype("float32"), 0, R.str("global"))
        EXP(m, d)
        return d

    before = relax_module(Kernels, main=_before)
    expected = relax_module(Kernels, main=_expected)


class TestEscapingTensorIsNotPlanned(PlanCase):
    """An impure call may keep `a`: it gets storage of its own (stays R.builtin.alloc_tensor);
    the pass leaves the function as it is."""

    @R.function(pure=False)
    def _before(x: R.Tensor((16,), "float32")) -> R.Tensor((16,), "float32"):
        a = R.builtin.alloc_tensor(R.shape([16]), R.dtype("float32"), 0, R.str("global"))
        EXP(x, a)
        R.print(a, format="")
        b = R.builtin.alloc_tensor(R.shape([16]), R.dtype("float32"), 0, R.str("global"))
        EXP(a, b)
        return b

    before = relax_module(Kernels, main=_before)

    def test_reason(self):
        (plan,) = memory_plan(self.before, pipeline=None)
        unplanned = {t.binding: t.unplanned for t in plan.tensors}
        assert unplanned == {"a": "escapes", "b": "returned"}
        reasons = {t.binding: t.reason for t in plan.tensors}
        assert "`relax.print`" in reasons["a"]


# ---- symbolic sizes -------------------------------------------------------------------------


#: The message of the entry check of `n` against its bound 32 in `main`.
N_PAST_32 = (
    "main: shape variable n exceeds its tir_var_upper_bound 32 (its value, then the bound, in "
    "parentheses above): the function's memory is planned for sizes within the bounds;"
)


class TestBoundedSymbolicSizesTakeTheirUpperBound(PlanCase):
    """`tir_var_upper_bound` bounds `n` by 32: the tensors are packed at 128 bytes each, and the
    function checks `n` against its bound on entry, before anything is allocated."""

    @R.function
    def _before(x: R.Tensor(("n",), "float32")) -> R.Tensor(("n",), "float32"):
        n = T.int64()
        R.func_attr({"relax.force_pure": True, "tir_var_upper_bound": {"n": 32}})
        a = R.builtin.alloc_tensor(R.shape([n]), R.dtype("float32"), 0, R.str("global"))
        EXP_N(x, a)
        b = R.builtin.alloc_tensor(R.shape([n]), R.dtype("float32"), 0, R.str("global"))
        EXP_N(a, b)
        c = R.builtin.alloc_tensor(R.shape([n]), R.dtype("float32"), 0, R.str("global"))
        EXP_N(b, c)
        return c

    @R.function
    def _expected(x: R.Tensor(("n",), "float32")) -> R.Tensor(("n",), "float32"):
        n = T.int64()
        R.func_attr({"relax.force_pure": True, "tir_var_upper_bound": {"n": 32}})
        none = R.null_value()
        n_in_bound = R.call_packed(
            "vm.builtin.match_shape",
            R.shape([T.max(n, 32)]),
            none,
            1,
            0,  # the VM's kAssertEqualToImm: the value must equal the bound
            32,
            R.str(N_PAST_32),
            ty_args=(R.Tuple,),
        )
        storage = R.memory.alloc_storage(R.shape([256]), 0, R.str("global"), R.dtype("uint8"))
        a = R.memory.alloc_tensor(storage, 0, R.shape([n]), R.dtype("float32"), 0)
        EXP_N(x, a)
        b_at = R.memory.alloc_tensor(storage, 128, R.shape([n]), R.dtype("float32"), 0)
        b = R.memory.ensure_zero_offset(b_at)
        EXP_N(a, b)
        c = R.builtin.alloc_tensor(R.shape([n]), R.dtype("float32"), 0, R.str("global"))
        EXP_N(b, c)
        return c

    before = relax_module(Kernels, main=_before)
    expected = relax_module(Kernels, main=_expected)
    shape_vars = ({"n": 1}, {"n": 17}, {"n": 32})


def _with_attrs(mod: tvm.IRModule, **attrs) -> tvm.IRModule:
    """`mod` with attributes added to `main` (the other functions and their GlobalVars kept)."""
    main = mod["main"]
    for key, value in attrs.items():
        main = main.with_attr(key.replace("__", "."), value)
    return tvm.IRModule(
        {gv: main if gv.name_hint == "main" else f for gv, f in mod.functions.items()}
    )


class TestLowerAndUpperBoundsAreCheckedTogether(PlanCase):
    """With a `tir_var_lower_bound` too, the entry check tests both ends of the range the sizes
    were derived from."""

    before = _with_attrs(
        TestBoundedSymbolicSizesTakeTheirUpperBound.before, tir_var_lower_bound={"n": 4}
    )

    @R.function
    def _expected(x: R.Tensor(("n",), "float32")) -> R.Tensor(("n",), "float32"):
        n = T.int64()
        R.func_attr(
            {
                "relax.force_pure": True,
                "tir_var_lower_bound": {"n": 4},
                "tir_var_upper_bound": {"n": 32},
            }
        )
        none = R.null_value()
        n_in_bound = R.call_packed(
            "vm.builtin.match_shape",
            R.shape([T.max(n, 32), T.min(n, 4)]),
            none,
            2,
            0,
            32,
            0,
            4,
            R.str(
                "main: shape variable n is outside [4, 32], its tir_var_lower_bound and "
                "tir_var_upper_bound (its value, then the bound, in parentheses above): the "
                "function's memory is planned for sizes within the bounds;"
            ),
            ty_args=(R.Tuple,),
        )
        storage = R.memory.alloc_storage(R.shape([256]), 0, R.str("global"), R.dtype("uint8"))
        a = R.memory.alloc_tensor(storage, 0, R.shape([n]), R.dtype("float32"), 0)
        EXP_N(x, a)
        b_at = R.memory.alloc_tensor(storage, 128, R.shape([n]), R.dtype("float32"), 0)
        b = R.memory.ensure_zero_offset(b_at)
        EXP_N(a, b)
        c = R.builtin.alloc_tensor(R.shape([n]), R.dtype("float32"), 0, R.str("global"))
        EXP_N(b, c)
        return c

    expected = relax_module(Kernels, main=_expected)
    shape_vars = ({"n": 4}, {"n": 32})

    def _call_raises(self, n: int, bound: int):
        after = self.transform(self.before)
        vms = (relax_vm(after, planner="none"),) * 2
        error = rf"\({n} vs\. {bound}\) : main: shape variable n is outside \[4, 32\]"
        with pytest.raises(Exception, match=error):
            assert_same_relax_results(after, after, shape_vars={"n": n}, vms=vms)

    def test_a_call_below_the_lower_bound_raises(self):
        """n = 3 stops at the entry check, which names the range."""
        self._call_raises(3, 4)

    def test_a_call_above_the_upper_bound_raises(self):
        """n = 33 stops at the entry check, which names the range."""
        self._call_raises(33, 32)


@R.function
def _bound_on_the_result_only(
    x: R.Tensor((16,), "float32"), y: R.Tensor(("n",), "float32")
) -> R.Tensor(("n",), "float32"):
    n = T.int64()
    R.func_attr({"relax.force_pure": True, "tir_var_upper_bound": {"n": 32}})
    a = R.builtin.alloc_tensor(R.shape([16]), R.dtype("float32"), 0, R.str("global"))
    EXP(x, a)
    b = R.builtin.alloc_tensor(R.shape([16]), R.dtype("float32"), 0, R.str("global"))
    EXP(a, b)
    c = R.builtin.alloc_tensor(R.shape([n]), R.dtype("float32"), 0, R.str("global"))
    FILL(b, c)
    return c


#: `n` sizes only the returned `c`, which no planner shares; `a` and `b` are static.
BoundOnTheResultOnly = relax_module(Kernels, main=_bound_on_the_result_only)


class TestABoundNoPlannedTensorTakesIsNotChecked(PlanCase):
    """Only bounds that size planned tensors are checked: past them nothing would overlap, so
    the function runs past its bound (n = 40)."""

    before = BoundOnTheResultOnly

    @R.function
    def _expected(x: R.Tensor((16,), "float32"), y: R.Tensor(("n",), "float32")) -> R.Tensor(
        ("n",), "float32"
    ):
        n = T.int64()
        R.func_attr({"relax.force_pure": True, "tir_var_upper_bound": {"n": 32}})
        storage = R.memory.alloc_storage(R.shape([128]), 0, R.str("global"), R.dtype("uint8"))
        a = R.memory.alloc_tensor(storage, 0, R.shape([16]), R.dtype("float32"), 0)
        EXP(x, a)
        b_at = R.memory.alloc_tensor(storage, 64, R.shape([16]), R.dtype("float32"), 0)
        b = R.memory.ensure_zero_offset(b_at)
        EXP(a, b)
        c = R.builtin.alloc_tensor(R.shape([n]), R.dtype("float32"), 0, R.str("global"))
        FILL(b, c)
        return c

    expected = relax_module(Kernels, main=_expected)
    shape_vars = ({"n": 1}, {"n": 40})

    def test_record(self):
        """The record keeps the bound and checks none."""
        (plan,) = self.plans()
        assert list(plan.checked_bounds) == [] and dict(plan.upper_bounds) == {"n": 32}


class TestAnOutputPlannedAtTheBoundIsChecked(PlanCase):
    """`relax.memory_plan_dynamic_func_output` sizes the returned `c` at the bound as well, in a
    storage of its own: its bound is checked on entry, and within it the results hold. The
    attribute is consumed (TVM's planner drops it too)."""

    before = _with_attrs(BoundOnTheResultOnly, relax__memory_plan_dynamic_func_output=True)

    @R.function
    def _expected(x: R.Tensor((16,), "float32"), y: R.Tensor(("n",), "float32")) -> R.Tensor(
        ("n",), "float32"
    ):
        n = T.int64()
        R.func_attr({"relax.force_pure": True, "tir_var_upper_bound": {"n": 32}})
        none = R.null_value()
        n_in_bound = R.call_packed(
            "vm.builtin.match_shape",
            R.shape([T.max(n, 32)]),
            none,
            1,
            0,
            32,
            R.str(N_PAST_32),
            ty_args=(R.Tuple,),
        )
        storage = R.memory.alloc_storage(R.shape([128]), 0, R.str("global"), R.dtype("uint8"))
        storage_c = R.memory.alloc_storage(R.shape([128]), 0, R.str("global"), R.dtype("uint8"))
        a = R.memory.alloc_tensor(storage, 0, R.shape([16]), R.dtype("float32"), 0)
        EXP(x, a)
        b_at = R.memory.alloc_tensor(storage, 64, R.shape([16]), R.dtype("float32"), 0)
        b = R.memory.ensure_zero_offset(b_at)
        EXP(a, b)
        c = R.memory.alloc_tensor(storage_c, 0, R.shape([n]), R.dtype("float32"), 0)
        FILL(b, c)
        return c

    expected = relax_module(Kernels, main=_expected)
    shape_vars = ({"n": 1}, {"n": 32})

    def test_record(self):
        """The record says the same: `n` checked, the returned `c` planned in a storage sized
        at the bound."""
        (plan,) = self.plans()
        assert list(plan.checked_bounds) == ["n"]
        returned = next(t for t in plan.tensors if t.binding == "c")
        assert returned.planned and plan.storages[returned.storage].bounded

    def test_a_call_past_the_bound_raises(self):
        """n = 33 stops at the entry check, with the planner's message."""
        after = self.transform(self.before)
        vms = (relax_vm(after, planner="none"),) * 2
        with pytest.raises(Exception, match=past_bound_error("main", "n", 33, 32)):
            assert_same_relax_results(after, after, shape_vars={"n": 33}, vms=vms)


class TestABoundGivenTheParametersSizesAStorage(PlanCase):
    """A size bounded given the parameters, `n * m * 4` with `n <= 8` and `m` from `x`'s shape
    (MLC-LLM's logits: `seq_len * vocab_size`), is planned at its bound, `m * 32` bytes, as TVM's
    planner plans it: the temporary `a` in a storage of that size, and under
    `relax.memory_plan_dynamic_func_output` the returned `c` in one of its own. One block size
    whatever `n` a call has, so a pooled allocator reuses it; `n` is checked on entry."""

    @R.function
    def _before(x: R.Tensor(("n", "m"), "float32")) -> R.Tensor(("n", "m"), "float32"):
        n, m = T.int64(), T.int64()
        R.func_attr(
            {
                "relax.force_pure": True,
                "tir_var_upper_bound": {"n": 8},
                "relax.memory_plan_dynamic_func_output": True,
            }
        )
        a = R.builtin.alloc_tensor(R.shape([n, m]), R.dtype("float32"), 0, R.str("global"))
        EXP_NM(x, a)
        c = R.builtin.alloc_tensor(R.shape([n, m]), R.dtype("float32"), 0, R.str("global"))
        EXP_NM(a, c)
        return c

    @R.function
    def _expected(x: R.Tensor(("n", "m"), "float32")) -> R.Tensor(("n", "m"), "float32"):
        n, m = T.int64(), T.int64()
        R.func_attr({"relax.force_pure": True, "tir_var_upper_bound": {"n": 8}})
        none = R.null_value()
        n_in_bound = R.call_packed(
            "vm.builtin.match_shape",
            R.shape([T.max(n, 8)]),
            none,
            1,
            0,
            8,
            R.str(
                "main: shape variable n exceeds its tir_var_upper_bound 8 (its value, then the "
                "bound, in parentheses above): the function's memory is planned for sizes within "
                "the bounds;"
            ),
            ty_args=(R.Tuple,),
        )
        storage = R.memory.alloc_storage(R.shape([m * 32]), 0, R.str("global"), R.dtype("uint8"))
        storage_c = R.memory.alloc_storage(R.shape([m * 32]), 0, R.str("global"), R.dtype("uint8"))
        a = R.memory.alloc_tensor(storage, 0, R.shape([n, m]), R.dtype("float32"), 0)
        EXP_NM(x, a)
        c = R.memory.alloc_tensor(storage_c, 0, R.shape([n, m]), R.dtype("float32"), 0)
        EXP_NM(a, c)
        return c

    before = relax_module(Kernels, main=_before)
    expected = relax_module(Kernels, main=_expected)
    shape_vars = ({"n": 1, "m": 3}, {"n": 8, "m": 5})

    def test_stock_plans_the_same_sizes(self):
        """TVM's planner gives both tensors storages of the same symbolic size."""
        stock = relax.transform.StaticPlanBlockMemory()(self.before)
        sizes = []

        def visit(node):
            if isinstance(node, relax.Call) and getattr(node.op, "name", None) == ALLOC_STORAGE:
                sizes.append(node.args[0].values[0])

        relax.analysis.post_order_visit(stock["main"], visit)
        analyzer = tvm.sym.Analyzer()
        m = self.before["main"].params[0].ty.shape[1]
        assert [int(analyzer.simplify(size // m)) for size in sizes] == [32, 32]


class TestSymbolicTensorSizesAreExpressions(RecordCase):
    """A tensor's size is an expression of the shape variables: `n * 4` bytes for `n`
    floats."""

    before = TestBoundedSymbolicSizesTakeTheirUpperBound.before

    def test_record(self):
        plan = self.plan()
        n = plan.tensors[0].shape[0]
        sizes = {t.binding: t.size for t in plan.tensors}
        assert len(sizes) == 3
        for size in sizes.values():
            tvm.ir.assert_structural_equal(size, n * 4)


class TestAStorageSizedAtTheBoundIsMarkedBounded(RecordCase):
    """The one storage, sized at `n`'s bound (two tensors of 32 floats), is 256 bytes, as a
    constant size too, and marked `bounded`."""

    before = TestBoundedSymbolicSizesTakeTheirUpperBound.before

    def test_record(self):
        (storage,) = self.plan().storages
        assert storage.bytes == 256 and int(storage.size) == 256 and storage.bounded


class TestThePlannedTotalKeepsUnplannedSizesSymbolic(RecordCase):
    """The plan's total adds the unplanned `c` at its symbolic size (`n * 4` + the storage's
    256); its bytes count only what is constant, and the symbolic allocation is counted."""

    before = TestBoundedSymbolicSizesTakeTheirUpperBound.before

    def test_record(self):
        plan = self.plan()
        n = plan.tensors[0].shape[0]
        tvm.ir.assert_structural_equal(plan.planned_size, n * 4 + 256)
        assert plan.planned_bytes == 256 and plan.symbolic_allocations == 1


class TestTheRecordCarriesTheBounds(RecordCase):
    """The function's `tir_var_upper_bound` and (absent) `tir_var_lower_bound` are in the
    record."""

    before = TestBoundedSymbolicSizesTakeTheirUpperBound.before

    def test_record(self):
        plan = self.plan()
        assert dict(plan.upper_bounds) == {"n": 32} and dict(plan.lower_bounds) == {}


class NotAnIntegerBound(PlanPass):
    """... is a TypeError naming the function and the variable, as TVM's planner raises (a
    drop-in must not ignore it), with the fall-back to stock on or off."""

    expected = TypeError
    match = 'function `main`: tir_var_upper_bound\\["n"\\] must '


class TestAStringBoundIsATypeError(NotAnIntegerBound):
    """A bound given as a string ..."""

    before = _with_attrs(
        TestBoundedSymbolicSizesTakeTheirUpperBound.before, tir_var_upper_bound={"n": "32"}
    )


class TestAStringBoundWithoutFallBackIsATypeError(TestAStringBoundIsATypeError):
    """... also with the fall-back to stock off."""

    options = {"fall_back_to_stock": False}


class TestAFloatBoundIsATypeError(NotAnIntegerBound):
    """A bound given as a float ..."""

    before = _with_attrs(
        TestBoundedSymbolicSizesTakeTheirUpperBound.before, tir_var_upper_bound={"n": 2.5}
    )


class TestAFloatBoundWithoutFallBackIsATypeError(TestAFloatBoundIsATypeError):
    """... also with the fall-back to stock off."""

    options = {"fall_back_to_stock": False}


class TestAListBoundIsATypeError(NotAnIntegerBound):
    """A bound given as a list ..."""

    before = _with_attrs(
        TestBoundedSymbolicSizesTakeTheirUpperBound.before, tir_var_upper_bound={"n": [32]}
    )


class TestAListBoundWithoutFallBackIsATypeError(TestAListBoundIsATypeError):
    """... also with the fall-back to stock off."""

    options = {"fall_back_to_stock": False}


class TestAnUpperBoundBelowTheLowerBoundIsAValueError(PlanPass):
    """Bounds that leave no value are a ValueError naming the variable and both bounds."""

    before = _with_attrs(
        TestBoundedSymbolicSizesTakeTheirUpperBound.before, tir_var_lower_bound={"n": 40}
    )
    expected = ValueError
    match = "`n` has tir_var_upper_bound 32, below its lower bound 40"


class TestUnboundedSymbolicSizesShareStoragesOfTheirSize(PlanCase):
    """Without an upper bound, tensors of provably equal size whose lifetimes do not overlap
    share storages of that size: `c` takes `a`'s (as TVM's planner does, within a block)."""

    @R.function
    def _before(x: R.Tensor(("n",), "float32")) -> R.Tensor(("n",), "float32"):
        n = T.int64()
        R.func_attr({"relax.force_pure": True})
        a = R.builtin.alloc_tensor(R.shape([n]), R.dtype("float32"), 0, R.str("global"))
        EXP_N(x, a)
        b = R.builtin.alloc_tensor(R.shape([n]), R.dtype("float32"), 0, R.str("global"))
        EXP_N(a, b)
        c = R.builtin.alloc_tensor(R.shape([n]), R.dtype("float32"), 0, R.str("global"))
        EXP_N(b, c)
        d = R.builtin.alloc_tensor(R.shape([n]), R.dtype("float32"), 0, R.str("global"))
        EXP_N(c, d)
        return d

    @R.function
    def _expected(x: R.Tensor(("n",), "float32")) -> R.Tensor(("n",), "float32"):
        n = T.int64()
        R.func_attr({"relax.force_pure": True})
        storage = R.memory.alloc_storage(R.shape([n * 4]), 0, R.str("global"), R.dtype("uint8"))
        storage1 = R.memory.alloc_storage(R.shape([n * 4]), 0, R.str("global"), R.dtype("uint8"))
        a = R.memory.alloc_tensor(storage, 0, R.shape([n]), R.dtype("float32"), 0)
        EXP_N(x, a)
        b = R.memory.alloc_tensor(storage1, 0, R.shape([n]), R.dtype("float32"), 0)
        EXP_N(a, b)
        c = R.memory.alloc_tensor(storage, 0, R.shape([n]), R.dtype("float32"), 0)
        EXP_N(b, c)
        d = R.builtin.alloc_tensor(R.shape([n]), R.dtype("float32"), 0, R.str("global"))
        EXP_N(c, d)
        return d

    before = relax_module(Kernels, main=_before)
    expected = relax_module(Kernels, main=_expected)
    shape_vars = ({"n": 1}, {"n": 100})


# ---- devices and scopes -----------------------------------------------------------------------

#: The virtual devices of the modules below: device 0 llvm, 1 opencl, 2 cuda.
_VDEVICES = {"vdevice": [I.vdevice("llvm"), I.vdevice("opencl"), I.vdevice("cuda")]}


def _two_tensors_on(device_index: int, scope: str = "global") -> tvm.IRModule:
    """`a` and `b` live together on virtual device `device_index` (vdevices: llvm, opencl,
    cuda), in `scope`."""

    @I.ir_module
    class Module:
        I.module_global_infos(_VDEVICES)

        @T.prim_func(private=True)
        def exp(A: T.Buffer((16,), "float32"), B: T.Buffer((16,), "float32")):
            for i in range(16):
                B[i] = T.exp(A[i])

        @R.function
        def main(x: R.Tensor((16,), "float32")) -> R.Tensor((16,), "float32"):
            R.func_attr({"relax.force_pure": True})
            cls = Module
            a = R.builtin.alloc_tensor(
                R.shape([16]), R.dtype("float32"), device_index, R.str(scope)
            )
            cls.exp(x, a)
            b = R.builtin.alloc_tensor(
                R.shape([16]), R.dtype("float32"), device_index, R.str(scope)
            )
            cls.exp(a, b)
            c = R.builtin.alloc_tensor(R.shape([16]), R.dtype("float32"), 0, R.str("global"))
            cls.exp(b, c)
            return c

    return Module


class StockPlannedForWantOfOffsets(PlanCase):
    """... the function comes out exactly as TVM's planner makes it, and its record says so:
    the stock planner (`no_offsets`), for the reason `why`."""

    why = ""

    def test_record(self):
        (plan,) = self.plans()
        assert (plan.planner, plan.decision) == ("stock", "no_offsets")
        assert plan.reason.startswith(self.why)


class TestAnOpenCLDeviceIsPlannedByTheStockPlanner(StockPlannedForWantOfOffsets):
    """OpenCL would copy a tensor at an offset in ensure_zero_offset: tensors on an OpenCL
    vdevice are planned by the stock planner."""

    before = _two_tensors_on(1)
    expected = STOCK
    why = "device 1 (opencl, from the module's vdevices)"
    not_run = "an OpenCL vdevice: the cases run on the CPU"


class TestATextureScopeIsPlannedByTheStockPlanner(StockPlannedForWantOfOffsets):
    """A texture scope has no byte offsets: tensors in "global.texture" are planned by the stock
    planner."""

    before = _two_tensors_on(0, "global.texture")
    expected = STOCK
    why = 'storage scope "global.texture"'
    not_run = 'the CPU runtime allocates no "global.texture" storage'


class TestCudaTakesTensorsAtOffsets(PlanCase):
    """CUDA moves the pointer in ensure_zero_offset: tensors on a CUDA vdevice are packed into
    one storage on that device."""

    before = _two_tensors_on(2)

    @I.ir_module
    class expected:
        I.module_global_infos(_VDEVICES)

        @T.prim_func(private=True)
        def exp(A: T.Buffer((16,), "float32"), B: T.Buffer((16,), "float32")):
            for i in range(16):
                B[i] = T.exp(A[i])

        @R.function
        def main(x: R.Tensor((16,), "float32")) -> R.Tensor((16,), "float32"):
            R.func_attr({"relax.force_pure": True})
            cls = expected
            storage = R.memory.alloc_storage(R.shape([128]), 2, R.str("global"), R.dtype("uint8"))
            a = R.memory.alloc_tensor(storage, 0, R.shape([16]), R.dtype("float32"), 2)
            cls.exp(x, a)
            b_at = R.memory.alloc_tensor(storage, 64, R.shape([16]), R.dtype("float32"), 2)
            b = R.memory.ensure_zero_offset(b_at)
            cls.exp(a, b)
            c = R.builtin.alloc_tensor(R.shape([16]), R.dtype("float32"), 0, R.str("global"))
            cls.exp(b, c)
            return c

    not_run = "a CUDA vdevice: the cases run on the CPU"

    def test_record(self):
        """The record says the same: our planner, one 128-byte storage on device 2, `a` at 0
        and `b` at 64."""
        (plan,) = self.plans()
        assert plan.planner == "memplan"
        assert [(s.device, s.bytes) for s in plan.storages] == [(2, 128)]
        offsets = {t.binding: t.offset for t in plan.tensors if t.planned}
        assert offsets == {"a": 0, "b": 64}


class TestWithoutATargetDeviceZeroIsTheCpu(PlanPass):
    """No vdevices and no current target: device 0 is the VM's default, the CPU, which takes
    tensors at offsets (the IR of TestLiveTensorsShareOneStorageAtOffsets; its results are
    checked there)."""

    before = TestLiveTensorsShareOneStorageAtOffsets.before
    expected = TestLiveTensorsShareOneStorageAtOffsets.expected


class TestAnLlvmTargetIsPlannedAtOffsets(PlanPass):
    """Without vdevices, device 0 is the target's device: the CPU of an llvm target takes
    tensors at offsets."""

    target = "llvm"
    before = TestLiveTensorsShareOneStorageAtOffsets.before
    expected = TestLiveTensorsShareOneStorageAtOffsets.expected

    def test_record(self):
        """The record names our planner."""
        (plan,) = self.plans()
        assert plan.planner == "memplan"


class TestAnOpenCLTargetIsPlannedByTheStockPlanner(PlanPass):
    """Without vdevices, device 0 is the target's device: under an OpenCL target the function
    comes out exactly as TVM's planner makes it."""

    target = "opencl"
    before = TestLiveTensorsShareOneStorageAtOffsets.before
    expected = STOCK


# ---- the stock planner when it is better; options ---------------------------------------------


class TestFallsBackToTheStockPlanWhenItIsSmaller(PlanPass):
    """With 4096-byte alignment the second tensor would start at 4096: the stock planner's two
    64-byte storages are smaller, so the function comes out exactly as TVM's planner makes it."""

    options = {"alignment": 4096}
    before = TestLiveTensorsShareOneStorageAtOffsets.before
    expected = STOCK

    def test_record(self):
        """The record says why: the stock plan (192 bytes with the returned `c`) against ours
        (4160 + 64)."""
        (plan,) = self.plans()
        assert (plan.planner, plan.planned_bytes, plan.stock_bytes) == ("stock", 4160 + 64, 192)
        assert plan.decision == "stock_smaller"

    def test_figures_of_each_build(self):
        """A build's figure is the plan it runs: the pass applies the stock plan here, so the
        memplan build's bytes are the stock planner's, not ours."""
        (plan,) = self.plans()
        figures = {build: plan.bytes_of(build) for build in ("stock", "memplan", "planned")}
        assert figures == {"stock": 192, "memplan": 192, "planned": 4160 + 64}
        assert int(plan.size_of("memplan")) == 192


class TestFallsBackToTheStockPlanAtBoundedSizes(PlanCase):
    """The same at sizes `tir_var_upper_bound` bounds: the stock planner's two storages at the
    bound (2 x 128 bytes) are smaller than ours (4096 + 128). The model of TVM's planner sizes
    symbolic tensors as TVM does and predicts it, so the pass runs TVM's planner and applies its
    plan, behind the bound check that comes first whichever planner plans."""

    options = {"alignment": 4096}
    before = TestBoundedSymbolicSizesTakeTheirUpperBound.before
    shape_vars = ({"n": 1}, {"n": 32})

    @R.function
    def _expected(x: R.Tensor(("n",), "float32")) -> R.Tensor(("n",), "float32"):
        n = T.int64()
        R.func_attr({"relax.force_pure": True, "tir_var_upper_bound": {"n": 32}})
        none = R.null_value()
        n_in_bound = R.call_packed(
            "vm.builtin.match_shape",
            R.shape([T.max(n, 32)]),
            none,
            1,
            0,
            32,
            R.str(N_PAST_32),
            ty_args=(R.Tuple,),
        )
        storage = R.memory.alloc_storage(R.shape([128]), 0, R.str("global"), R.dtype("float32"))
        a = R.memory.alloc_tensor(storage, 0, R.shape([n]), R.dtype("float32"), 0)
        EXP_N(x, a)
        storage1 = R.memory.alloc_storage(R.shape([128]), 0, R.str("global"), R.dtype("float32"))
        b = R.memory.alloc_tensor(storage1, 0, R.shape([n]), R.dtype("float32"), 0)
        EXP_N(a, b)
        c = R.builtin.alloc_tensor(R.shape([n]), R.dtype("float32"), 0, R.str("global"))
        EXP_N(b, c)
        return c

    expected = relax_module(Kernels, main=_expected)

    def test_record(self):
        """The model's figures are those of TVM's plan: 256 bytes and the returned `c`, of
        symbolic size."""
        (plan,) = self.plans()
        assert (plan.planner, plan.decision) == ("stock", "stock_smaller")
        assert (plan.stock_bytes, plan.stock_symbolic_allocations) == (256, 1)
        assert (plan.stock_model_bytes, plan.stock_model_symbolic_allocations) == (256, 1)


class TestFallBackToStockCanBeTurnedOff(PlanCase):
    """`fall_back_to_stock=False` keeps our plan, although the stock one is smaller: `b` at
    4096."""

    options = {"alignment": 4096, "fall_back_to_stock": False}

    @R.function
    def _expected(x: R.Tensor((16,), "float32")) -> R.Tensor((16,), "float32"):
        R.func_attr({"relax.force_pure": True})
        storage = R.memory.alloc_storage(R.shape([4160]), 0, R.str("global"), R.dtype("uint8"))
        a = R.memory.alloc_tensor(storage, 0, R.shape([16]), R.dtype("float32"), 0)
        EXP(x, a)
        b_at = R.memory.alloc_tensor(storage, 4096, R.shape([16]), R.dtype("float32"), 0)
        b = R.memory.ensure_zero_offset(b_at)
        EXP(a, b)
        c = R.builtin.alloc_tensor(R.shape([16]), R.dtype("float32"), 0, R.str("global"))
        ADD(a, b, c)
        return c

    before = TestLiveTensorsShareOneStorageAtOffsets.before
    expected = relax_module(Kernels, main=_expected)

    def test_record(self):
        """The record names our planner and the option that kept it."""
        (plan,) = self.plans()
        assert (plan.planner, plan.decision) == ("memplan", "fall_back_off")


class TestKeepsAModuleWithNothingToPlan(PlanPass):
    """A function that allocates nothing: the module comes back as it is."""

    @I.ir_module
    class before:
        @R.function
        def main(x: R.Tensor((16,), "float32")) -> R.Tensor((16,), "float32"):
            return x

    def test_the_module_itself_comes_back(self):
        """Not a copy: the very object (nothing was rebuilt)."""
        assert self.transform(self.before).same_as(self.before)

    def test_record(self):
        """The record is empty: no tensor, no bytes planned, no peak."""
        (plan,) = self.plans()
        assert (len(plan.tensors), plan.planned_bytes, plan.peak_live_bytes) == (0, 0, 0)


class TestTheStoragesOpenABlockBeforeADataflowBlock(PlanCase):
    """Outside the pipeline the first block may be a dataflow block, which only takes pure,
    local bindings: the storages get a block of their own before it."""

    @R.function
    def _before(x: R.Tensor((16,), "float32")) -> R.Tensor((16,), "float32"):
        R.func_attr({"relax.force_pure": True})
        with R.dataflow():
            y = R.reshape(x, R.shape([16]))
            R.output(y)
        a = R.builtin.alloc_tensor(R.shape([16]), R.dtype("float32"), 0, R.str("global"))
        EXP(y, a)
        b = R.builtin.alloc_tensor(R.shape([16]), R.dtype("float32"), 0, R.str("global"))
        EXP(a, b)
        c = R.builtin.alloc_tensor(R.shape([16]), R.dtype("float32"), 0, R.str("global"))
        EXP(b, c)
        return c

    @R.function
    def _expected(x: R.Tensor((16,), "float32")) -> R.Tensor((16,), "float32"):
        R.func_attr({"relax.force_pure": True})
        storage = R.memory.alloc_storage(R.shape([128]), 0, R.str("global"), R.dtype("uint8"))
        with R.dataflow():
            y = R.reshape(x, R.shape([16]))
            R.output(y)
        a = R.memory.alloc_tensor(storage, 0, R.shape([16]), R.dtype("float32"), 0)
        EXP(y, a)
        b_at = R.memory.alloc_tensor(storage, 64, R.shape([16]), R.dtype("float32"), 0)
        b = R.memory.ensure_zero_offset(b_at)
        EXP(a, b)
        c = R.builtin.alloc_tensor(R.shape([16]), R.dtype("float32"), 0, R.str("global"))
        EXP(b, c)
        return c

    before = relax_module(Kernels, main=_before)
    expected = relax_module(Kernels, main=_expected)


class TestEveryRelaxFunctionOfAModuleIsPlanned(PlanCase):
    """Each Relax function of a module is planned, each on its own (pool sizing off: the
    storages keep the sizes their plans give them)."""

    options = {"pool_sizes": False}

    @R.function
    def _second(x: R.Tensor((16,), "float32")) -> R.Tensor((16,), "float32"):
        R.func_attr({"relax.force_pure": True})
        a = R.builtin.alloc_tensor(R.shape([16]), R.dtype("float32"), 0, R.str("global"))
        EXP(x, a)
        b = R.builtin.alloc_tensor(R.shape([16]), R.dtype("float32"), 0, R.str("global"))
        EXP(a, b)
        return b

    @R.function
    def _second_planned(x: R.Tensor((16,), "float32")) -> R.Tensor((16,), "float32"):
        R.func_attr({"relax.force_pure": True})
        storage = R.memory.alloc_storage(R.shape([64]), 0, R.str("global"), R.dtype("uint8"))
        a = R.memory.alloc_tensor(storage, 0, R.shape([16]), R.dtype("float32"), 0)
        EXP(x, a)
        b = R.builtin.alloc_tensor(R.shape([16]), R.dtype("float32"), 0, R.str("global"))
        EXP(a, b)
        return b

    before = relax_module(
        Kernels, second=_second, first=TestLiveTensorsShareOneStorageAtOffsets._before
    )
    expected = relax_module(
        Kernels, second=_second_planned, first=TestLiveTensorsShareOneStorageAtOffsets._expected
    )

    def test_record(self):
        """One plan per function, in name order, each with its one storage."""
        plans = self.plans()
        assert [(p.function, len(p.storages)) for p in plans] == [("first", 1), ("second", 1)]


# ---- pool sizing ------------------------------------------------------------------------------


@R.function
def _second_pooled(x: R.Tensor((16,), "float32")) -> R.Tensor((16,), "float32"):
    R.func_attr({"relax.force_pure": True})
    storage = R.memory.alloc_storage(R.shape([128]), 0, R.str("global"), R.dtype("uint8"))
    a = R.memory.alloc_tensor(storage, 0, R.shape([16]), R.dtype("float32"), 0)
    EXP(x, a)
    b = R.builtin.alloc_tensor(R.shape([16]), R.dtype("float32"), 0, R.str("global"))
    EXP(a, b)
    return b


class TestPoolSizingGivesEveryFunctionTheModulesSize(PlanCase):
    """TVM's pooled allocator reuses a block only for a request of the same size: `second`'s
    64-byte storage is allocated at `first`'s 128 bytes, so the two functions share one block;
    the record keeps the planned 64 bytes and says who set the size."""

    before = TestEveryRelaxFunctionOfAModuleIsPlanned.before
    expected = relax_module(
        Kernels, second=_second_pooled, first=TestLiveTensorsShareOneStorageAtOffsets._expected
    )

    def test_record(self):
        first, second = self.plans()
        (storage,) = second.storages
        assert (storage.bytes, storage.pooled_bytes, storage.pooled_with) == (64, 128, "first")
        (storage,) = first.storages
        assert (storage.bytes, storage.pooled_bytes, storage.pooled_with) == (128, 128, "")


@I.ir_module
class Calling:
    """`main` calls the Relax function `helper` between its own temporaries (three of them
    live at once: 192 bytes; `helper` plans 64)."""

    @T.prim_func(private=True)
    def exp(A: T.Buffer((16,), "float32"), B: T.Buffer((16,), "float32")):
        for i in range(16):
            B[i] = T.exp(A[i])

    @R.function
    def helper(x: R.Tensor((16,), "float32")) -> R.Tensor((16,), "float32"):
        R.func_attr({"relax.force_pure": True})
        cls = Calling
        a = R.builtin.alloc_tensor(R.shape([16]), R.dtype("float32"), 0, R.str("global"))
        cls.exp(x, a)
        b = R.builtin.alloc_tensor(R.shape([16]), R.dtype("float32"), 0, R.str("global"))
        cls.exp(a, b)
        return b

    @R.function
    def main(x: R.Tensor((16,), "float32")) -> R.Tensor((16,), "float32"):
        R.func_attr({"relax.force_pure": True})
        cls = Calling
        a = R.builtin.alloc_tensor(R.shape([16]), R.dtype("float32"), 0, R.str("global"))
        cls.exp(x, a)
        b = R.builtin.alloc_tensor(R.shape([16]), R.dtype("float32"), 0, R.str("global"))
        cls.exp(a, b)
        c = cls.helper(b)
        d = R.builtin.alloc_tensor(R.shape([16]), R.dtype("float32"), 0, R.str("global"))
        cls.exp(c, d)
        e = R.builtin.alloc_tensor(R.shape([16]), R.dtype("float32"), 0, R.str("global"))
        cls.exp(a, e)
        return e


class TestKeepsSizesOfFunctionsThatCallEachOther(PlanCase):
    """A function calling another holds its storages while the callee runs: at one size, both
    would hold the largest block at once. Functions in a call keep their planned sizes."""

    before = Calling
    expected = StaticPlanBlockMemory(pool_sizes=False)(Calling)

    def test_the_sizes_differ(self):
        """Without the rule, `helper` would take `main`'s size."""
        sizes = {p.function: [s.pooled_bytes for s in p.storages] for p in self.plans()}
        assert sizes == {"helper": [64], "main": [192]}


@I.ir_module
class _Kernels4K:
    """Kernels on 16 KiB tensors: sizes the pooled allocator's 4 KiB rounding keeps apart."""

    @T.prim_func(private=True)
    def add_head(
        A: T.Buffer((4096,), "float32"),
        B: T.Buffer((4096,), "float32"),
        C: T.Buffer((1024,), "float32"),
    ):
        for i in range(1024):
            C[i] = A[i] + B[i]

    @T.prim_func(private=True)
    def widen(a: T.handle, b: T.handle):
        n = T.int64()
        A = T.match_buffer(a, (4096,), "float32")
        B = T.match_buffer(b, (n,), "float32")
        for i in range(n):
            B[i] = A[i % 4096]


ADD_HEAD, WIDEN = (_Kernels4K.get_global_var(n) for n in ("add_head", "widen"))
#: Those beside Kernels' (the cases call its exp_n on 4096 floats).
Kernels4K = tvm.IRModule({**dict(Kernels.functions.items()), **dict(_Kernels4K.functions.items())})


@R.function
def _prefill(x: R.Tensor((4096,), "float32")) -> R.Tensor((1024,), "float32"):
    R.func_attr({"relax.force_pure": True, "relax.memory_plan_dynamic_func_output": True})
    a = R.builtin.alloc_tensor(R.shape([4096]), R.dtype("float32"), 0, R.str("global"))
    EXP_N(x, a)
    b = R.builtin.alloc_tensor(R.shape([4096]), R.dtype("float32"), 0, R.str("global"))
    EXP_N(a, b)
    c = R.builtin.alloc_tensor(R.shape([1024]), R.dtype("float32"), 0, R.str("global"))
    ADD_HEAD(a, b, c)
    return c


def _to_last(floats: int, planned: bool = False) -> relax.Function:
    """A function that plans 16 KiB of temporaries and returns `floats` floats (`planned`: as
    our planner plans it)."""

    @R.function
    def to_last(x: R.Tensor((4096,), "float32")) -> R.Tensor((floats,), "float32"):
        R.func_attr({"relax.force_pure": True, "relax.memory_plan_dynamic_func_output": True})
        a = R.builtin.alloc_tensor(R.shape([4096]), R.dtype("float32"), 0, R.str("global"))
        EXP_N(x, a)
        b = R.builtin.alloc_tensor(R.shape([floats]), R.dtype("float32"), 0, R.str("global"))
        WIDEN(a, b)
        return b

    @R.function
    def to_last_planned(x: R.Tensor((4096,), "float32")) -> R.Tensor((floats,), "float32"):
        R.func_attr({"relax.force_pure": True})
        storage = R.memory.alloc_storage(R.shape([16384]), 0, R.str("global"), R.dtype("uint8"))
        a = R.memory.alloc_tensor(storage, 0, R.shape([4096]), R.dtype("float32"), 0)
        EXP_N(x, a)
        b = R.builtin.alloc_tensor(R.shape([floats]), R.dtype("float32"), 0, R.str("global"))
        WIDEN(a, b)
        return b

    return to_last_planned if planned else to_last


class TestTheLargestStorageSplitsWhereAResultKeepsAFunctionFromItsSize(PlanCase):
    """Under relax.memory_plan_dynamic_func_output, as MLC-LLM's prefill and
    prefill_to_last_hidden_states are: `prefill` plans 32 KiB (`a` and `b`, live together) and
    returns 4 KiB, the module's largest (36 KiB: the estimate MLC-LLM's engine reserves twice);
    `to_last` plans 16 KiB and returns 20 KiB, so its storage cannot take `prefill`'s size (52
    KiB). The pooled allocator reuses a block only for the same size, so both would be held:
    `prefill`'s storage is split in two of 16 KiB (`a` moves to the second), and every function
    plans the bytes it planned before."""

    before = relax_module(Kernels4K, prefill=_prefill, to_last=_to_last(5120))
    FUNCTIONS = ("prefill", "to_last")

    @R.function
    def _prefill_split(x: R.Tensor((4096,), "float32")) -> R.Tensor((1024,), "float32"):
        R.func_attr({"relax.force_pure": True})
        storage = R.memory.alloc_storage(R.shape([16384]), 0, R.str("global"), R.dtype("uint8"))
        moved = R.memory.alloc_storage(R.shape([16384]), 0, R.str("global"), R.dtype("uint8"))
        a = R.memory.alloc_tensor(moved, 0, R.shape([4096]), R.dtype("float32"), 0)
        EXP_N(x, a)
        b = R.memory.alloc_tensor(storage, 0, R.shape([4096]), R.dtype("float32"), 0)
        EXP_N(a, b)
        c = R.builtin.alloc_tensor(R.shape([1024]), R.dtype("float32"), 0, R.str("global"))
        ADD_HEAD(a, b, c)
        return c

    expected = relax_module(Kernels4K, prefill=_prefill_split, to_last=_to_last(5120, planned=True))

    def test_record(self):
        """Both halves name the function they were split for; no function's bytes change."""
        plans = {p.function: p for p in self.plans()}
        unsplit = memory_plan(self.before, pipeline=None, pool_sizes=False)
        assert [(s.bytes, s.split_for) for s in plans["prefill"].storages] == [
            (16384, "to_last"),
            (16384, "to_last"),
        ]
        assert [(s.bytes, s.split_for) for s in plans["to_last"].storages] == [(16384, "")]
        assert {f: p.planned_bytes for f, p in plans.items()} == {
            p.function: p.planned_bytes for p in unsplit
        }

    def test_held(self):
        """By the pool's rule: 56 KiB held, where whole storages hold 72 KiB."""
        held = held_by_plan(self.transform(self.before)).held_bytes
        whole = held_by_plan(StaticPlanBlockMemory(pool_sizes=False)(self.before)).held_bytes
        assert (held, whole) == (57344, 73728)

    def test_held_at_run_time(self):
        """The real pooled allocator, the functions called in turn five times with fresh
        inputs: 56 KiB of blocks against 72 KiB with whole storages, the results as before."""
        reference = relax_vm(self.before, planner="none")
        calls = [
            (f, relax_inputs(self.before[f], seed=s)) for s in range(5) for f in self.FUNCTIONS
        ]
        expected = [run_relax(reference, f, inputs)[0] for f, inputs in calls]
        held = {}
        for name, planned in (
            ("split", self.transform(self.before)),
            ("whole", StaticPlanBlockMemory(pool_sizes=False)(self.before)),
        ):
            built = compile_with_planner(planned, planner="none")
            with recorded_pool() as pool:
                vm = relax.VirtualMachine(built, tvm.cpu())
                results = [run_relax(vm, f, inputs)[0] for f, inputs in calls]
            held[name] = pool.held_bytes
            for got, want in zip(results, expected, strict=True):
                np.testing.assert_array_equal(got[0], want[0])
        assert held == {"split": 57344, "whole": 73728}


class TestNoStorageSplitsWhereTheHalvesCannotHoldItsTensors(PlanCase):
    """As above, but `to_last` returns 12 KiB: it could take 24 KiB of temporaries at most, so
    `prefill`'s storage would split into 24 and 8 KiB, and neither of its tensors (16 KiB each)
    fits 8 KiB. Nothing splits, and neither function takes the other's size."""

    before = relax_module(Kernels4K, prefill=_prefill, to_last=_to_last(3072))
    expected = StaticPlanBlockMemory(pool_sizes=False)(before)

    def test_record(self):
        assert [s.split_for for p in self.plans() for s in p.storages] == ["", ""]


def _pooled_vms(memory_cfg=None, count=1):
    """VMs of the pool-sized build of TestPoolSizingGivesEveryFunctionTheModulesSize."""
    after = StaticPlanBlockMemory()(TestPoolSizingGivesEveryFunctionTheModulesSize.before)
    built = compile_with_planner(after, planner="none")
    return [relax.VirtualMachine(built, tvm.cpu(), memory_cfg=memory_cfg) for _ in range(count)]


def test_pool_sized_functions_run_at_the_same_time_in_threads():
    """Calls running at the same time each get blocks of their own: two threads, each with a
    VM of the build, call both functions over and over and always get the reference results."""
    before = TestPoolSizingGivesEveryFunctionTheModulesSize.before
    reference = relax_vm(before, planner="none")
    inputs = {name: relax_inputs(before[name], seed=3) for name in ("first", "second")}
    expected = {name: run_relax(reference, name, inputs[name])[0] for name in inputs}
    failures = []

    def work(vm):
        for _ in range(50):
            for name in ("first", "second"):
                got = run_relax(vm, name, inputs[name])[0]
                if any((g != w).any() for g, w in zip(got, expected[name], strict=True)):
                    failures.append(name)

    threads = [threading.Thread(target=work, args=(vm,)) for vm in _pooled_vms(count=2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []


def test_pool_sized_functions_run_with_the_naive_allocator():
    """The naive allocator allocates what each call asks (`second` then allocates 128 bytes):
    the results are the same."""
    before = TestPoolSizingGivesEveryFunctionTheModulesSize.before
    (vm,) = _pooled_vms(memory_cfg="naive")
    for name in ("first", "second"):
        inputs = relax_inputs(before[name], seed=4)
        assert_same_relax_results(
            before, before, name, inputs=inputs, vms=(relax_vm(before, planner="none"), vm)
        )


class TestModuleAttributesAreKept(PlanPass):
    """The planned module keeps the attributes of the module it was given (its IR is that of
    TestLiveTensorsShareOneStorageAtOffsets, whose results are checked there)."""

    before = TestLiveTensorsShareOneStorageAtOffsets.before.with_attr("note", "kept")
    expected = TestLiveTensorsShareOneStorageAtOffsets.expected.with_attr("note", "kept")


# ---- bad input ------------------------------------------------------------------------------


class TestAFunctionIsATypeError(PlanPass):
    """The pass takes a module: a Relax function is a TypeError."""

    before = TestLiveTensorsShareOneStorageAtOffsets.before["main"]
    expected = TypeError


class TestMemoryPlanOfAFunctionIsATypeError(CompareBeforeAfter):
    """memory_plan takes a module: a Relax function is a TypeError saying what it got."""

    before = TestLiveTensorsShareOneStorageAtOffsets.before["main"]
    expected = TypeError
    match = "memory_plan expects a tvm.IRModule, got Function"

    def transform(self, before):
        return memory_plan(before)


class BadAlignment(PlanPass):
    """... is a ValueError: the alignment must be a positive multiple of 64."""

    before = TestLiveTensorsShareOneStorageAtOffsets.before
    expected = ValueError
    match = "alignment must be a positive multiple of 64"


class TestAZeroAlignmentIsAValueError(BadAlignment):
    """0, a multiple of 64 but not positive, ..."""

    options = {"alignment": 0}


class TestAnAlignmentBelow64IsAValueError(BadAlignment):
    """32, a power of two below 64, ..."""

    options = {"alignment": 32}


class TestAnAlignmentThatIsNoMultipleOf64IsAValueError(BadAlignment):
    """100 ..."""

    options = {"alignment": 100}


class TestANegativeAlignmentIsAValueError(BadAlignment):
    """-64, a multiple of 64 but negative, ..."""

    options = {"alignment": -64}


class TestAFloatAlignmentIsATypeError(PlanPass):
    """Options are typed: a float alignment is a TypeError naming the field."""

    before = TestLiveTensorsShareOneStorageAtOffsets.before
    options = {"alignment": 64.0}
    expected = TypeError
    match = "field 'alignment'"


class TestAnUnknownOptionIsATypeErrorNamingThePass(PlanPass):
    """A misspelt option is a TypeError naming the pass and the option."""

    before = TestLiveTensorsShareOneStorageAtOffsets.before
    options = {"alignmnet": 128}
    expected = TypeError
    match = "StaticPlanBlockMemory\\(\\): .*'alignmnet'"


# ---- plans evaluated at shape variable values ------------------------------------------------


class PlanAtCase(RecordCase):
    """... of the record evaluated at `values` (memory_plan_at; None: every variable at its
    bound)."""

    values: dict | None = None

    def at(self):
        return memory_plan_at(self.plan(), self.values)


class PlanAtError(CompareBeforeAfter):
    """The record of `before`'s one Relax function, evaluated at `values`."""

    values: dict | None = None

    def transform(self, before):
        (plan,) = memory_plan(before, pipeline=None)
        return memory_plan_at(plan, self.values)


class TestAtValuesEverySizeIsANumber(PlanAtCase):
    """At n = 10 each tensor takes its size, 40 bytes, the peak is theirs (3 x 40), and no
    allocation is left symbolic."""

    before = TestBoundedSymbolicSizesTakeTheirUpperBound.before
    values = {"n": 10}

    def test_record(self):
        at = self.at()
        assert [t.bytes for t in at.tensors] == [40, 40, 40]
        assert at.peak_live_bytes == 40 + 40 + 40 and at.symbolic_allocations == 0


class TestAtValuesStoragesKeepTheSizeTheyAreAllocatedWith(PlanAtCase):
    """At n = 10 the storage sized at the bound stays 256 bytes; the plan's total adds the
    returned `c` at its size (40 bytes)."""

    before = TestBoundedSymbolicSizesTakeTheirUpperBound.before
    values = {"n": 10}

    def test_record(self):
        at = self.at()
        assert [s.bytes for s in at.storages] == [256]
        assert at.planned_bytes == 256 + 40


class TestAtValuesTheStockTotalAddsTheUnplannedTensorsAtTheirSize(PlanAtCase):
    """At n = 10 the stock plan's total is its constant bytes plus the returned `c` at its size
    (40 bytes)."""

    before = TestBoundedSymbolicSizesTakeTheirUpperBound.before
    values = {"n": 10}

    def test_record(self):
        assert self.at().stock_bytes == self.plan().stock_bytes + 40


class TestAPlanAtValuesRecordsThem(PlanAtCase):
    """The values a plan was evaluated at are in its record."""

    before = TestBoundedSymbolicSizesTakeTheirUpperBound.before
    values = {"n": 10}

    def test_record(self):
        assert dict(self.at().shape_values) == {"n": 10}


class TestVariablesNotGivenTakeTheirBound(PlanAtCase):
    """Without values, `n` takes its bound, 32: the storage's 256 bytes plus `c` at 128."""

    before = TestBoundedSymbolicSizesTakeTheirUpperBound.before

    def test_record(self):
        at = self.at()
        assert dict(at.shape_values) == {"n": 32} and at.planned_bytes == 256 + 128


class TestAnUnboundedVariableWithoutAValueIsAValueError(PlanAtError):
    """A variable with neither a value nor a bound cannot be evaluated: a ValueError naming
    it."""

    before = TestUnboundedSymbolicSizesShareStoragesOfTheirSize.before
    expected = ValueError
    match = "no value and no tir_var_upper_bound for shape variable `n`"


class TestUnboundedSizesAtAValue(PlanAtCase):
    """At n = 5 the storages sized by `n` take that size, 20 bytes each; the total adds the
    returned `d` (20 bytes)."""

    before = TestUnboundedSymbolicSizesShareStoragesOfTheirSize.before
    values = {"n": 5}

    def test_record(self):
        at = self.at()
        assert [s.bytes for s in at.storages] == [20, 20]
        assert at.planned_bytes == 20 + 20 + 20


class TestANegativeValueIsAValueError(PlanAtError):
    """A negative `n` is outside its bounds: a ValueError naming the variable and the value."""

    before = TestBoundedSymbolicSizesTakeTheirUpperBound.before
    values = {"n": -1}
    expected = ValueError
    match = "shape variable `n` = -1 is outside its bounds"


class TestAValuePastTheUpperBoundIsAValueError(PlanAtError):
    """`n` = 33 is past its `tir_var_upper_bound` 32: a ValueError naming the variable and the
    value."""

    before = TestBoundedSymbolicSizesTakeTheirUpperBound.before
    values = {"n": 33}
    expected = ValueError
    match = "shape variable `n` = 33 is outside its bounds"


@functools.cache
def _decoder_plan():
    from models.decoder import decoder_module

    (plan,) = memory_plan(decoder_module(upper_bound=32))
    return plan


class DecoderCase(PlanAtCase):
    """The MLC-style decoder (models/decoder.py, `seq_len` bounded by 32), through the default
    pipeline: ..."""

    def plan(self):
        return _decoder_plan()


class TestTheDecodersSequenceLengthIsChecked(DecoderCase):
    """... its planned tensors are sized at the bound of `seq_len`, which is checked."""

    def test_record(self):
        assert list(self.plan().checked_bounds) == ["seq_len"]


class TestTheDecoderAtItsBoundTakesNoLessThanItsPeak(DecoderCase):
    """... at the bound, its plan takes the bytes its storages are allocated with, no less than
    the peak of live bytes, which is not zero."""

    def test_record(self):
        at_bound = self.at()
        assert at_bound.planned_bytes >= at_bound.peak_live_bytes > 0


class TestTheDecoderAtAShorterSequenceKeepsItsBoundedStorages(DecoderCase):
    """... at a shorter sequence (4), the storages sized at the bound keep their bytes."""

    values = {"seq_len": 4}

    def test_record(self):
        short, at_bound = self.at(), memory_plan_at(self.plan())
        assert sum(s.bytes for s in short.storages if s.bounded) == sum(
            s.bytes for s in at_bound.storages if s.bounded
        )


class TestTheDecoderAtAShorterSequenceTakesNoMore(DecoderCase):
    """... at a shorter sequence (4), the plan takes no more bytes than at the bound."""

    values = {"seq_len": 4}

    def test_record(self):
        assert self.at().planned_bytes <= memory_plan_at(self.plan()).planned_bytes


# ---- the bound on a plan ----------------------------------------------------------------------


class TestAResultInAStorageOfItsOwnCountsWholeInTheBound(RecordCase):
    """Under `relax.memory_plan_dynamic_func_output` the result `c` gets a storage of its own,
    which can share no byte with `a` and `b`. Counted as if it could (the merged peak, what the
    record said before), the bound would be 192 B, below any plan; counted per storage it is
    256 B."""

    before = TestAnOutputPlannedAtTheBoundIsChecked.before

    def test_record(self):
        plan = self.plan()
        merged = peak_live_bytes([(t.bytes, t.first, t.last) for t in plan.tensors if t.planned])
        assert merged == 192
        assert plan.peak_live_bytes == 256


class TestAResultInAStorageOfItsOwnIsPlannedAtTheBound(RecordCase):
    """The plan of that function reaches the per-storage bound: 256 B, `at_bound`, no gap."""

    before = TestAnOutputPlannedAtTheBoundIsChecked.before

    def test_record(self):
        plan = self.plan()
        assert plan.planned_bytes == plan.peak_live_bytes == 256
        assert plan.optimality == "at_bound" and plan.optimality_gap_bytes == 0


class TestAResultsOwnStorageSaysSo(RecordCase):
    """The result's storage names what placed it ("own storage"), and its bound is its 128
    bytes."""

    before = TestAnOutputPlannedAtTheBoundIsChecked.before

    def test_record(self):
        plan = self.plan()
        own = plan.storages[next(t for t in plan.tensors if t.binding == "c").storage]
        assert own.algorithm == "own storage" and own.bound_bytes == own.bytes == 128


class TestEveryStorageSaysHowCloseToItsBoundItIs(RecordCase):
    """Each storage carries its bound, its optimality code, its gap and what placed it."""

    before = BoundOnTheResultOnly

    def test_record(self):
        storages = self.plan().storages
        assert len(storages) == 1
        for storage in storages:
            assert storage.optimality == "at_bound"
            assert storage.optimality_gap_bytes == storage.bytes - storage.bound_bytes == 0
            assert storage.algorithm


class TestAFunctionWhoseStoragesAreAtTheirBoundIsAtItsBound(RecordCase):
    """A function's optimality code is the weakest of its storages': all `at_bound`, so is
    the function."""

    before = BoundOnTheResultOnly

    def test_record(self):
        assert self.plan().optimality == "at_bound"
