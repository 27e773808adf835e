"""tvm_memplan.transform.LowerTVMBuiltin: placement rules on host functions, and TVM's own
lowering for everything else.

Each case states the rule in its docstring, the IR before and the IR expected (or the error);
where the function can run, it is also compiled through the "memplan" pipeline under the same
options and must compute what the stock pipeline computes.
"""

import numpy as np
import pytest
import tvm
from tvm.script import ir as I
from tvm.script import tirx as T

import tvm_memplan
from tvm_memplan.testing import (
    assert_ir_equal,
    capture_ir,
    compile_and_run,
    random_args,
    random_kernel,
    throw_last_error,
)
from tvm_memplan.testing import workspace_allocation as workspace
from tvm_memplan.testing.compare import CompareBeforeAfter


def ctx(config):
    return tvm.transform.PassContext(config=config)


def lower(func_or_mod, config=None):
    mod = (
        func_or_mod
        if isinstance(func_or_mod, tvm.IRModule)
        else tvm.IRModule({"main": func_or_mod})
    )
    with ctx(config or {}):
        return tvm_memplan.transform.LowerTVMBuiltin()(mod)


def stock_lower(func_or_mod):
    mod = (
        func_or_mod
        if isinstance(func_or_mod, tvm.IRModule)
        else tvm.IRModule({"main": func_or_mod})
    )
    return tvm.tirx.transform.LowerTVMBuiltin()(mod)


def with_device_id(func):
    """`func` inside `device_id = 0`, which TVM's pass needs for workspace allocations (and
    drops)."""
    attr = tvm.tirx.AttrStmt(tvm.ir.StringImm("default"), "device_id", T.int32(0), func.body)
    return func.with_body(attr)


class BuiltinCase(CompareBeforeAfter):
    """`before` (a host function: target llvm) through the pass under `config`; `expected` may
    also be "stock": TVM's pass gives the same IR."""

    config: dict = {}

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if isinstance(cls.__dict__.get("expected"), str):
            cls.expected = stock_lower(with_device_id(cls.before))["main"]

    def transform(self, before):
        return lower(before, self.config)["main"]

    def compare(self, actual, expected):
        assert_ir_equal(actual, expected)


class CompareAndRun(BuiltinCase):
    """... and `before`, compiled with the "memplan" pipeline under `config`, computes what the
    stock pipeline computes."""

    def test_same_results_as_stock(self):
        args = random_args(self.before, seed=1)
        want, _ = compile_and_run(self.before, args, tir_pipeline="s_tir")
        got, _ = compile_and_run(self.before, args, tir_pipeline="memplan", config=self.config)
        for w, g in zip(want, got, strict=True):
            np.testing.assert_array_equal(g, w)


# ---- "local" and "global": the size rule --------------------------------------------------------


class TestLocalTileStaysOnTheStack(CompareAndRun):
    """A small "local" tile stays on the stack (stock TVM sends it to the workspace), in scope
    "global", the only one the C backend allocates."""

    @T.prim_func
    def before(A: T.Buffer((16,), "float32")):
        T.func_attr({"target": T.target("llvm")})
        L = T.alloc_buffer((16,), "float32", scope="local")
        for i in range(16):
            L[i] = A[i] * T.float32(2)
        for i in range(16):
            A[i] = L[15 - i]

    @T.prim_func
    def expected(A: T.Buffer((16,), "float32")):
        T.func_attr({"target": T.target("llvm")})
        L = T.alloc_buffer((16,), "float32")
        for i in range(16):
            L[i] = A[i] * T.float32(2)
        for i in range(16):
            A[i] = L[15 - i]


class TestGlobalAtTheLimitStaysOnTheStack(CompareAndRun):
    """1024 bytes at max_stack_alloca 1024: on the stack (the limit is inclusive)."""

    @T.prim_func
    def before(A: T.Buffer((256,), "float32")):
        T.func_attr({"target": T.target("llvm")})
        G = T.alloc_buffer((256,), "float32")
        for i in range(256):
            G[i] = A[i] + T.float32(1)
        for i in range(256):
            A[i] = G[255 - i]

    expected = before


class TestGlobalOverTheLimitUsesTheWorkspace(CompareAndRun):
    """1028 bytes at max_stack_alloca 1024: TVMBackendAllocWorkspace, freed at the end of the
    scope, exactly as TVM lowers it."""

    @T.prim_func
    def before(A: T.Buffer((257,), "float32")):
        T.func_attr({"target": T.target("llvm")})
        G = T.alloc_buffer((257,), "float32")
        for i in range(257):
            G[i] = A[i] + T.float32(1)
        for i in range(257):
            A[i] = G[256 - i]

    @T.prim_func
    def expected(A: T.Buffer((257,), "float32")):
        T.func_attr({"target": T.target("llvm")})
        G = T.decl_buffer((257,), "float32", data=workspace("float32", 1028))
        if T.isnullptr(G.data):
            T.evaluate(throw_last_error())
        for i in range(257):
            G[i] = A[i] + T.float32(1)
        for i in range(257):
            A[i] = G[256 - i]
        if T.TVMBackendFreeWorkspace(1, 0, G.data) != 0:
            T.evaluate(throw_last_error())


class TestZeroLimitMovesSmallGlobalToTheWorkspace(CompareAndRun):
    """max_stack_alloca 0: even 16 bytes go to the workspace (stock keeps them on the stack)."""

    config = {"tvm_memplan.max_stack_alloca": 0}

    @T.prim_func
    def before(A: T.Buffer((4,), "float32")):
        T.func_attr({"target": T.target("llvm")})
        G = T.alloc_buffer((4,), "float32")
        for i in range(4):
            G[i] = A[i]
        for i in range(4):
            A[i] = G[3 - i]

    @T.prim_func
    def expected(A: T.Buffer((4,), "float32")):
        T.func_attr({"target": T.target("llvm")})
        G = T.decl_buffer((4,), "float32", data=workspace("float32", 16))
        if T.isnullptr(G.data):
            T.evaluate(throw_last_error())
        for i in range(4):
            G[i] = A[i]
        for i in range(4):
            A[i] = G[3 - i]
        if T.TVMBackendFreeWorkspace(1, 0, G.data) != 0:
            T.evaluate(throw_last_error())


class TestTargetAttributeSetsTheLimit(TestZeroLimitMovesSmallGlobalToTheWorkspace):
    """The same through the target attribute feature.max_stack_alloca."""

    config = {}

    @T.prim_func
    def before(A: T.Buffer((4,), "float32")):
        T.func_attr({"target": T.target({"kind": "llvm", "feature.max_stack_alloca": 0})})
        G = T.alloc_buffer((4,), "float32")
        for i in range(4):
            G[i] = A[i]
        for i in range(4):
            A[i] = G[3 - i]

    @T.prim_func
    def expected(A: T.Buffer((4,), "float32")):
        T.func_attr({"target": T.target({"kind": "llvm", "feature.max_stack_alloca": 0})})
        G = T.decl_buffer((4,), "float32", data=workspace("float32", 16))
        if T.isnullptr(G.data):
            T.evaluate(throw_last_error())
        for i in range(4):
            G[i] = A[i]
        for i in range(4):
            A[i] = G[3 - i]
        if T.TVMBackendFreeWorkspace(1, 0, G.data) != 0:
            T.evaluate(throw_last_error())


class TestLargeLimitKeepsBigBuffersOnTheStack(CompareAndRun):
    """max_stack_alloca 65536: a 16 KB buffer stays on the stack."""

    config = {"tvm_memplan.max_stack_alloca": 65536}

    @T.prim_func
    def before(A: T.Buffer((4096,), "float32")):
        T.func_attr({"target": T.target("llvm")})
        G = T.alloc_buffer((4096,), "float32")
        for i in range(4096):
            G[i] = A[i] * T.float32(3)
        for i in range(4096):
            A[i] = G[4095 - i]

    expected = before


class TestDynamicSizeUsesTheWorkspace(BuiltinCase):
    """A size known only at run time always goes to the workspace."""

    config = {"tvm_memplan.max_stack_alloca": 65536}

    @T.prim_func
    def before(A: T.Buffer((64,), "float32"), n: T.int32):
        T.func_attr({"target": T.target("llvm")})
        D = T.alloc_buffer((n,), "float32")
        for i in range(n):
            D[i] = A[i]

    expected = "stock"


# ---- "global.stack", "global.workspace" ---------------------------------------------------------


class TestGlobalStackIsOnTheStackWhateverItsSize(CompareAndRun):
    """ "global.stack": on the stack even over max_stack_alloca, in scope "global"."""

    config = {"tvm_memplan.max_stack_alloca": 16}

    @T.prim_func
    def before(A: T.Buffer((2048,), "float32")):
        T.func_attr({"target": T.target("llvm")})
        S = T.alloc_buffer((2048,), "float32", scope="global.stack")
        for i in range(2048):
            S[i] = A[i]
        for i in range(2048):
            A[i] = S[2047 - i]

    @T.prim_func
    def expected(A: T.Buffer((2048,), "float32")):
        T.func_attr({"target": T.target("llvm")})
        S = T.alloc_buffer((2048,), "float32")
        for i in range(2048):
            S[i] = A[i]
        for i in range(2048):
            A[i] = S[2047 - i]


class TestGlobalStackWithDynamicSizeIsAnError(BuiltinCase):
    @T.prim_func
    def before(A: T.Buffer((64,), "float32"), n: T.int32):
        T.func_attr({"target": T.target("llvm")})
        S = T.alloc_buffer((n,), "float32", scope="global.stack")
        S[0] = A[0]

    expected = ValueError


class TestGlobalStackWhenTheStackIsForbiddenIsAnError(BuiltinCase):
    config = {"tvm_memplan.max_stack_alloca": 0}

    @T.prim_func
    def before(A: T.Buffer((4,), "float32")):
        T.func_attr({"target": T.target("llvm")})
        S = T.alloc_buffer((4,), "float32", scope="global.stack")
        S[0] = A[0]
        A[1] = S[0]

    expected = ValueError


class TestGlobalWorkspaceUsesTheWorkspaceWhateverItsSize(CompareAndRun):
    """ "global.workspace": TVMBackendAllocWorkspace even for 16 bytes under a 64 KB limit (TVM's
    pass lowers it the same way)."""

    config = {"tvm_memplan.max_stack_alloca": 65536}

    @T.prim_func
    def before(A: T.Buffer((4,), "float32")):
        T.func_attr({"target": T.target("llvm")})
        W = T.alloc_buffer((4,), "float32", scope="global.workspace")
        for i in range(4):
            W[i] = A[i]
        for i in range(4):
            A[i] = W[3 - i]

    expected = "stock"


class TestLocalOverTheLimitIsLoweredAsStock(CompareAndRun):
    """A "local" buffer over the limit goes to the workspace, as TVM's pass puts it."""

    @T.prim_func
    def before(A: T.Buffer((512,), "float32")):
        T.func_attr({"target": T.target("llvm")})
        L = T.alloc_buffer((512,), "float32", scope="local")
        for i in range(512):
            L[i] = A[i]
        for i in range(512):
            A[i] = L[511 - i]

    expected = "stock"


# ---- annotations, views, budget, devices --------------------------------------------------------


class TestDisableLowerBuiltinIsHonoured(CompareAndRun):
    """disable_lower_builtin: left as written, whatever the limit."""

    config = {"tvm_memplan.max_stack_alloca": 0}

    @T.prim_func
    def before(A: T.Buffer((4,), "float32")):
        T.func_attr({"target": T.target("llvm")})
        K = T.alloc_buffer((4,), "float32", annotations={"disable_lower_builtin": 1})
        for i in range(4):
            K[i] = A[i]
        for i in range(4):
            A[i] = K[3 - i]

    expected = before


class TestDisableLowerBuiltinKeepsTheBuffersScope(BuiltinCase):
    """An annotated buffer in any scope is left exactly as written, as TVM's pass leaves it:
    where the placements agree, the output is TVM's."""

    @T.prim_func
    def before(A: T.Buffer((64,), "float32")):
        T.func_attr({"target": T.target("llvm")})
        K = T.alloc_buffer(
            (64,), "float32", scope="global.workspace", annotations={"disable_lower_builtin": 1}
        )
        for i in range(64):
            K[i] = A[i]
        for i in range(64):
            A[i] = K[63 - i]

    expected = "stock"


class TestDisableLowerBuiltinForTheCBackendIsInGlobal(BuiltinCase):
    """The C backend compiles an allocation left to it only in scope "global" (TVM's output
    would fail there): for a "c" target the annotated buffer moves to "global"."""

    @T.prim_func
    def before(A: T.Buffer((64,), "float32")):
        T.func_attr({"target": T.target("c")})
        K = T.alloc_buffer(
            (64,), "float32", scope="global.workspace", annotations={"disable_lower_builtin": 1}
        )
        for i in range(64):
            K[i] = A[i]
        for i in range(64):
            A[i] = K[63 - i]

    @T.prim_func
    def expected(A: T.Buffer((64,), "float32")):
        T.func_attr({"target": T.target("c")})
        K = T.alloc_buffer((64,), "float32", annotations={"disable_lower_builtin": 1})
        for i in range(64):
            K[i] = A[i]
        for i in range(64):
            A[i] = K[63 - i]


@T.prim_func
def annotated_beside_unannotated(A: T.Buffer((1024,), "float32"), n: T.int32):
    # As LowerTVMBuiltin receives it in the pipeline: three allocations annotated
    # disable_lower_builtin (1024 floats, n floats, a "global.workspace" tile) beside an
    # unannotated one over the limit.
    T.func_attr({"target": T.target("llvm")})
    G = T.alloc_buffer((1024,), "float32", annotations={"disable_lower_builtin": 1})
    N = T.alloc_buffer((n,), "float32", annotations={"disable_lower_builtin": 1})
    W = T.alloc_buffer(
        (4,), "float32", scope="global.workspace", annotations={"disable_lower_builtin": 1}
    )
    U = T.alloc_buffer((1024,), "float32")
    for i in range(1024):
        G[i] = A[i]
        U[i] = G[i]
    for i in range(n):
        N[i] = A[i]
    for i in range(4):
        W[i] = N[i]
    for i in range(1024):
        A[i] = U[i] + W[i % 4]


class TestAnnotatedAllocationsAreStocksWherePlacementAgrees(BuiltinCase):
    """Every annotated allocation left as written, in its own scope, and the unannotated one in
    the workspace: TVM's output, to the structure."""

    before = annotated_beside_unannotated
    expected = "stock"


def test_stocks_unlowered_workspace_tile_does_not_compile_for_the_c_backend():
    """Why, for a "c" target, our pass moves an annotated buffer to "global" (the case above):
    TVM's output, reached with StorageRewrite off so that the annotation survives, fails in the
    C code generator; ours builds and computes. Should TVM's generator accept it, this test
    fails and the pass can give TVM's output there too."""

    @T.prim_func
    def tile(A: T.Buffer((64,), "float32")):
        T.func_attr({"target": T.target("c")})
        W = T.alloc_buffer(
            (4,), "float32", scope="global.workspace", annotations={"disable_lower_builtin": 1}
        )
        for i in range(4):
            W[i] = A[i]
        for i in range(64):
            A[i] = A[i] + W[i % 4]

    config = {"tirx.disable_storage_rewrite": True}
    with pytest.raises(Exception, match='scope == "global"'):
        compile_and_run(tile, random_args(tile), "c", "default", config)
    args = random_args(tile, seed=2)
    (got,), _ = compile_and_run(tile, args, "c", "memplan", config)
    np.testing.assert_array_equal(got, args[0] + np.tile(args[0][:4], 16))


class TestCarriedDisableLowerBuiltinComesBackAsTheAnnotation(BuiltinCase):
    """The scope TagAllocationPlacement uses to carry disable_lower_builtin through
    StorageRewrite becomes the annotation again, in scope "global"."""

    @T.prim_func
    def before(A: T.Buffer((4,), "float32")):
        T.func_attr({"target": T.target("llvm")})
        K = T.alloc_buffer((4,), "float32", scope="global.memplan_unlowered")
        K[0] = A[0]
        A[1] = K[0]

    @T.prim_func
    def expected(A: T.Buffer((4,), "float32")):
        T.func_attr({"target": T.target("llvm")})
        K = T.alloc_buffer((4,), "float32", annotations={"disable_lower_builtin": 1})
        K[0] = A[0]
        A[1] = K[0]


class TestViewsMoveWithTheirBuffer(CompareAndRun):
    """A view declared over a stack buffer in its scope moves to "global" with it."""

    @T.prim_func
    def before(A: T.Buffer((16,), "float32")):
        T.func_attr({"target": T.target("llvm")})
        L = T.alloc_buffer((16,), "float32", scope="local")
        V = T.decl_buffer((4, 4), "float32", data=L.data, scope="local")
        for i in range(16):
            L[i] = A[i]
        for i in range(16):
            A[i] = V[i % 4, i // 4]

    @T.prim_func
    def expected(A: T.Buffer((16,), "float32")):
        T.func_attr({"target": T.target("llvm")})
        L = T.alloc_buffer((16,), "float32")
        V = T.decl_buffer((4, 4), "float32", data=L.data)
        for i in range(16):
            L[i] = A[i]
        for i in range(16):
            A[i] = V[i % 4, i // 4]


class TestBudgetMovesTheLargestToTheWorkspace(CompareAndRun):
    """max_stack_bytes 1000: of 600 + 600 bytes the later one moves to the workspace."""

    config = {"tvm_memplan.max_stack_bytes": 1000}

    @T.prim_func
    def before(A: T.Buffer((150,), "float32")):
        T.func_attr({"target": T.target("llvm")})
        X = T.alloc_buffer((150,), "float32")
        Y = T.alloc_buffer((150,), "float32")
        for i in range(150):
            X[i] = A[i]
            Y[i] = X[i] * T.float32(2)
        for i in range(150):
            A[i] = X[i] + Y[149 - i]

    @T.prim_func
    def expected(A: T.Buffer((150,), "float32")):
        T.func_attr({"target": T.target("llvm")})
        X = T.alloc_buffer((150,), "float32")
        Y = T.decl_buffer((150,), "float32", data=workspace("float32", 600))
        if T.isnullptr(Y.data):
            T.evaluate(throw_last_error())
        for i in range(150):
            X[i] = A[i]
            Y[i] = X[i] * T.float32(2)
        for i in range(150):
            A[i] = X[i] + Y[149 - i]
        if T.TVMBackendFreeWorkspace(1, 0, Y.data) != 0:
            T.evaluate(throw_last_error())


class TestNonCPUDeviceIsLoweredAsStock(BuiltinCase):
    """Under a device_type that is not the CPU, TVM's rule applies unchanged."""

    config = {"tvm_memplan.max_stack_alloca": 65536}

    @T.prim_func
    def before(A: T.Buffer((4,), "float32")):
        T.func_attr({"target": T.target("llvm")})
        with T.attr("default", "device_id", 0), T.attr("default", "device_type", 2):
            G = T.alloc_buffer((4,), "float32")
            G[0] = A[0]
            A[1] = G[0]

    expected = "stock"


class TestKeepsFunctionsThatAreNotHostCode(BuiltinCase):
    """A function without a CPU target is not host code: left alone, as TVM's pass does."""

    @T.prim_func
    def before(A: T.Buffer((4,), "float32")):
        L = T.alloc_buffer((4,), "float32", scope="local")
        L[0] = A[0]
        A[1] = L[0]

    expected = before


# ---- private helpers ----------------------------------------------------------------------------


@I.ir_module
class WithHelper:
    @T.prim_func(private=True)
    def helper(a: T.handle("float32")):
        T.func_attr({"target": T.target("llvm")})
        A = T.decl_buffer((512,), "float32", data=a)
        W = T.alloc_buffer((512,), "float32")
        for i in range(512):
            W[i] = A[i] * T.float32(2)
        for i in range(512):
            A[i] = W[511 - i]

    @T.prim_func
    def main(A: T.Buffer((512,), "float32")):
        T.func_attr({"target": T.target("llvm")})
        WithHelper.helper(A.data)


@I.ir_module
class WithHelperExpected:
    @T.prim_func(private=True)
    def helper(a: T.handle("float32")) -> T.int32:
        T.func_attr({"target": T.target("llvm")})
        A = T.decl_buffer((512,), "float32", data=a)
        W = T.decl_buffer((512,), "float32", data=workspace("float32", 2048))
        if T.isnullptr(W.data):
            T.evaluate(throw_last_error())
        for i in range(512):
            W[i] = A[i] * T.float32(2)
        for i in range(512):
            A[i] = W[511 - i]
        if T.TVMBackendFreeWorkspace(1, 0, W.data) != 0:
            T.evaluate(throw_last_error())
        return 0

    @T.prim_func
    def main(A: T.Buffer((512,), "float32")):
        T.func_attr({"target": T.target("llvm")})
        if WithHelperExpected.helper(A.data) != 0:
            T.evaluate(throw_last_error())


def test_private_helper_gets_a_device_id_and_reports_allocation_failures():
    """A private helper has no device_id attribute (TVM's pass stops with "Unknown device id"):
    the CPU workspace ignores it, so 0 is used; the helper returns an error code its callers
    check, since `tvm_throw_last_error` is `return -1`."""
    with pytest.raises(tvm.error.InternalError, match="Unknown device id"):
        stock_lower(WithHelper)
    tvm.ir.assert_structural_equal(lower(WithHelper), WithHelperExpected)


def test_helper_with_its_buffers_on_the_stack_keeps_returning_nothing():
    after = lower(WithHelper, {"tvm_memplan.max_stack_alloca": 1 << 20})
    tvm.ir.assert_structural_equal(after["helper"], WithHelper["helper"])


@pytest.mark.parametrize("target", ["llvm", "c"])
def test_private_helper_with_workspace_runs(target):
    # Without the llvm target attributes, so that the module compiles for `target`.
    mod = tvm.IRModule({gv: f.without_attr("target") for gv, f in WithHelper.functions.items()})
    args = [np.arange(512, dtype="float32")]
    config = {"tvm_memplan.max_stack_alloca": 0}
    (got,), _ = compile_and_run(mod, args, target, tir_pipeline="memplan", config=config)
    np.testing.assert_array_equal(got, args[0][::-1] * 2)


# ---- properties on real host functions -------------------------------------------------------


def host_module(func):
    """`func` as the stock pipeline hands it to LowerTVMBuiltin: packed API, device attributes."""
    return capture_ir(func, "tirx.LowerTVMBuiltin", tir_pipeline="s_tir")


@pytest.mark.parametrize("seed", range(8))
def test_drop_in_where_placements_agree(seed):
    """Where TVM's rule and ours place every buffer alike ("global" and "global.workspace"
    buffers, and max_stack_alloca 1023, TVM's "below 1024"), the pass gives exactly TVM's output
    on a packed host function."""
    func, _ = random_kernel(seed, scopes=("global", "global.workspace"))
    host = host_module(func)
    after = lower(host, {"tvm_memplan.max_stack_alloca": 1023})
    tvm.ir.assert_structural_equal(after, stock_lower(host))


@pytest.mark.parametrize("seed", range(4))
def test_running_twice_changes_nothing_more(seed):
    """Idempotent, except for "global.stack" (not generated here): once on the stack in scope
    "global", a second run applies the size rule to it."""
    func, _ = random_kernel(seed, scopes=("global", "local", "global.workspace"))
    host = host_module(func)
    once = lower(host, {"tvm_memplan.max_stack_alloca": 512})
    tvm.ir.assert_structural_equal(lower(once, {"tvm_memplan.max_stack_alloca": 512}), once)
