"""allocation_plan: the stack/workspace decision of every allocation, rule by rule."""

import pytest
import tvm
from tvm.script import ir as I
from tvm.script import tirx as T

from tvm_memplan.analysis import AllocationDecision, allocation_plan, placement_counts


def ctx(**config):
    return tvm.transform.PassContext(config={f"tvm_memplan.{k}": v for k, v in config.items()})


def one_buffer(nbytes, scope="global", annotations=None):
    """A function allocating one uint8 buffer of `nbytes` bytes."""

    @T.prim_func
    def func(A: T.Buffer((1,), "uint8")):
        X = T.alloc_buffer((nbytes,), "uint8", scope=scope, annotations=annotations)
        X[0] = A[0]
        A[0] = X[nbytes - 1]

    return func


def placement(func, target="llvm", **config):
    with ctx(**config):
        (decision,) = allocation_plan(func, target)
    return decision.placement


# ---- the size rule and its boundary -------------------------------------------------------------


@pytest.mark.parametrize("scope", ["global", "local"])
@pytest.mark.parametrize(
    "nbytes, limit, expected",
    [
        (1023, 1024, "stack"),
        (1024, 1024, "stack"),  # the limit itself is allowed (stock TVM: strictly below 1024)
        (1025, 1024, "workspace"),
        (99, 100, "stack"),
        (100, 100, "stack"),
        (101, 100, "workspace"),
        (1, 0, "workspace"),  # 0 forbids the stack
    ],
)
def test_size_rule_boundary(scope, nbytes, limit, expected):
    """ "global" and "local": stack when 0 < size <= max_stack_alloca, else workspace."""
    assert placement(one_buffer(nbytes, scope), max_stack_alloca=limit) == expected


def test_size_counts_bytes_per_element_times_elements():
    @T.prim_func
    def func(A: T.Buffer((1,), "float32")):
        X = T.alloc_buffer((16, 16), "float32")  # 1024 bytes
        Y = T.alloc_buffer((257,), "float32")  # 1028 bytes
        X[0, 0] = A[0]
        Y[0] = A[0]

    plan = allocation_plan(func, "llvm")
    assert [(d.name, d.nbytes, d.placement) for d in plan] == [
        ("X", 1024, "stack"),
        ("Y", 1028, "workspace"),
    ]


# ---- scopes x limits ----------------------------------------------------------------------------

SCOPE_TABLE = {
    # scope: {limit: placement for 16 B, 1024 B, 4096 B}
    "global": {0: "www", 1024: "ssw", 65536: "sss"},
    "local": {0: "www", 1024: "ssw", 65536: "sss"},
    "global.stack": {1024: "sss", 65536: "sss"},  # 0: an error, tested below
    "global.workspace": {0: "www", 1024: "www", 65536: "www"},
    "shared": {0: "www", 1024: "www", 65536: "www"},  # no stack rule: workspace, as stock
}


@pytest.mark.parametrize(
    "scope, limit, expected",
    [(s, limit, e) for s, row in SCOPE_TABLE.items() for limit, e in row.items()],
)
def test_scopes_by_limits(scope, limit, expected):
    got = "".join(
        placement(one_buffer(n, scope), max_stack_alloca=limit)[0] for n in (16, 1024, 4096)
    )
    assert got == expected


def test_dynamic_size_uses_the_workspace_even_when_the_limit_is_large():
    @T.prim_func
    def func(A: T.Buffer((1,), "float32"), n: T.int32):
        X = T.alloc_buffer((n,), "float32", scope="local")
        X[0] = A[0]

    with ctx(max_stack_alloca=1 << 30):
        (d,) = allocation_plan(func, "llvm")
    assert (d.nbytes, d.placement, d.reason) == (
        None,
        "workspace",
        "size is not a compile-time constant",
    )


# ---- "global.stack" -----------------------------------------------------------------------------


def test_global_stack_is_on_the_stack_whatever_its_size():
    assert placement(one_buffer(1 << 20, "global.stack"), max_stack_alloca=16) == "stack"


def test_global_stack_with_a_dynamic_size_is_an_error_naming_the_buffer():
    @T.prim_func
    def func(A: T.Buffer((1,), "float32"), n: T.int32):
        Scratch = T.alloc_buffer((n,), "float32", scope="global.stack")
        Scratch[0] = A[0]

    with pytest.raises(ValueError, match='buffer `Scratch` has scope "global.stack".*not a comp'):
        allocation_plan(func, "llvm")


def test_global_stack_when_the_target_forbids_the_stack_is_an_error_naming_the_buffer():
    target = {"kind": "c", "feature.max_stack_alloca": 0}
    with pytest.raises(ValueError, match=r"buffer `X`.*\(16 bytes\).*forbids.*feature\.max_stack"):
        allocation_plan(one_buffer(16, "global.stack"), target)


# ---- annotations, devices -----------------------------------------------------------------------


def test_disable_lower_builtin_is_honoured():
    func = one_buffer(1 << 16, annotations={"disable_lower_builtin": 1})
    assert placement(func, max_stack_alloca=0) == "unlowered"


def test_disable_lower_builtin_zero_is_no_request():
    func = one_buffer(16, annotations={"disable_lower_builtin": 0})
    assert placement(func) == "stack"


def test_non_cpu_target_is_left_to_the_stock_rule():
    assert placement(one_buffer(16), target="cuda") == "stock"


def test_device_type_attribute_overrides_the_target():
    @T.prim_func
    def func(A: T.Buffer((1,), "float32")):
        with T.attr("default", "device_type", 2):
            G = T.alloc_buffer((4,), "float32")
            G[0] = A[0]
        with T.attr("default", "device_type", 1):
            C = T.alloc_buffer((4,), "float32")
            C[0] = A[0]

    plan = allocation_plan(func, "llvm")
    assert [(d.name, d.placement, d.reason) for d in plan] == [
        ("G", "stock", "device type 2 is not the CPU"),
        (
            "C",
            "stack",
            "16 bytes <= max_stack_alloca 1024 (target-kind attribute max_stack_alloca)",
        ),
    ]


# ---- the budget ---------------------------------------------------------------------------------


@T.prim_func
def four_buffers(A: T.Buffer((1,), "uint8")):
    a = T.alloc_buffer((100,), "uint8")
    b = T.alloc_buffer((300,), "uint8")
    c = T.alloc_buffer((300,), "uint8", scope="local")
    d = T.alloc_buffer((200,), "uint8")
    a[0] = A[0]
    b[0] = a[0]
    c[0] = b[0]
    d[0] = c[0]
    A[0] = d[0]


def test_budget_moves_the_largest_later_first_until_the_rest_fit():
    with ctx(max_stack_bytes=500):
        plan = allocation_plan(four_buffers, "llvm")
    assert [(d.name, d.placement) for d in plan] == [
        ("a", "stack"),
        ("b", "workspace"),  # 300, moved second
        ("c", "workspace"),  # 300 and later: moved first
        ("d", "stack"),
    ]
    assert "max_stack_bytes 500 (PassContext option tvm_memplan.max_stack_bytes)" in plan[2].reason
    assert sum(d.nbytes for d in plan if d.placement == "stack") <= 500


@pytest.mark.parametrize("budget, stacked", [(600, "abd"), (700, "abd"), (900, "abcd"), (0, "")])
def test_budget_levels(budget, stacked):
    with ctx(max_stack_bytes=budget):
        plan = allocation_plan(four_buffers, "llvm")
    assert "".join(d.name for d in plan if d.placement == "stack") == stacked


def test_budget_never_moves_global_stack():
    @T.prim_func
    def func(A: T.Buffer((1,), "uint8")):
        S = T.alloc_buffer((400,), "uint8", scope="global.stack")
        G = T.alloc_buffer((200,), "uint8")
        S[0] = A[0]
        G[0] = S[0]
        A[0] = G[0]

    target = {"kind": "llvm", "feature.max_stack_bytes": 500}
    assert [(d.name, d.placement) for d in allocation_plan(func, target)] == [
        ("S", "stack"),
        ("G", "workspace"),
    ]


def test_global_stack_alone_over_the_budget_is_an_error_naming_the_buffers():
    with (
        ctx(max_stack_bytes=100),
        pytest.raises(ValueError, match=r"take 4096 bytes of stack \(`X` 4096\), more than"),
    ):
        allocation_plan(one_buffer(4096, "global.stack"), "llvm")


# ---- modules, records ---------------------------------------------------------------------------


@I.ir_module
class TwoTargets:
    @T.prim_func
    def on_c(A: T.Buffer((1,), "float32")):
        T.func_attr({"target": T.target({"kind": "c", "feature.max_stack_alloca": 0})})
        X = T.alloc_buffer((4,), "float32")
        X[0] = A[0]

    @T.prim_func
    def on_llvm(A: T.Buffer((1,), "float32")):
        T.func_attr({"target": T.target("llvm")})
        X = T.alloc_buffer((4,), "float32")
        X[0] = A[0]


def test_module_uses_each_functions_own_target():
    plan = allocation_plan(TwoTargets)
    assert [(d.function, d.placement) for d in plan] == [
        ("on_c", "workspace"),
        ("on_llvm", "stack"),
    ]
    assert placement_counts(plan) == {"workspace": 1, "stack": 1}


def test_explicit_target_wins_over_the_functions_own():
    assert placement_counts(allocation_plan(TwoTargets, "llvm")) == {"stack": 2}


def test_function_without_target_needs_one():
    with pytest.raises(ValueError, match="function `func` has no target attribute"):
        allocation_plan(one_buffer(4))


def test_records_carry_shape_dtype_and_reason():
    (d,) = allocation_plan(one_buffer(8, "local"), "llvm")
    assert isinstance(d, AllocationDecision)
    names = [f.name for f in type(d).__tvm_ffi_type_info__.fields]
    assert {name: getattr(d, name) for name in names} == {
        "function": "func",
        "name": "X",
        "kind": "alloc_buffer",
        "scope": "local",
        "dtype": "uint8",
        "shape": [8],
        "nbytes": 8,
        "size": d.size,
        "placement": "stack",
        "reason": "8 bytes <= max_stack_alloca 1024 (target-kind attribute max_stack_alloca)",
        "stock_placement": "workspace",
    }
    assert int(d.size.value) == 8  # the same bytes, as an expression


@pytest.mark.parametrize(
    "nbytes, scope, annotations, expected",
    [
        (1023, "global", None, "stack"),
        (1024, "global", None, "workspace"),  # stock keeps only sizes strictly below 1024
        (8, "local", None, "workspace"),  # stock stacks scope "global" only
        (8, "global.stack", None, "workspace"),
        (8, "global", {"disable_lower_builtin": 1}, "unlowered"),
    ],
)
def test_stock_placement_is_tvms_own_rule(nbytes, scope, annotations, expected):
    """Each record also says where TVM's own LowerTVMBuiltin would put the buffer."""
    (d,) = allocation_plan(one_buffer(nbytes, scope, annotations), "llvm")
    assert d.stock_placement == expected


def test_stock_placement_off_the_cpu_is_stock():
    (d,) = allocation_plan(one_buffer(8), {"kind": "cuda"})
    assert (d.placement, d.stock_placement) == ("stock", "stock")


def test_block_allocations_are_planned_as_written():
    @T.prim_func(s_tir=True)
    def func(A: T.Buffer((16,), "float32")):
        with T.sblock("root"):
            B = T.sblock_alloc_buffer((512,), "float32", scope="local")
            B[0] = A[0]
            A[0] = B[0]

    (d,) = allocation_plan(func, "llvm")
    assert (d.kind, d.nbytes, d.placement) == ("block_alloc_buffer", 2048, "workspace")


def test_rejects_what_is_not_tir():
    with pytest.raises(TypeError, match="expects a tvm.tirx.PrimFunc or a tvm.IRModule"):
        allocation_plan("main", "llvm")
