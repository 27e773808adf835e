"""VectorizeInplaceLoops: the innermost loop of an in-place elementwise kernel for LLVM on a CPU
becomes a vectorized loop; every other loop stays as it is."""

import numpy as np
import pytest
import tvm
from tvm.script import tirx as T

import tvm_memplan
from tvm_memplan import pass_names
from tvm_memplan.instrument import trace
from tvm_memplan.testing import assert_ir_equal

NOALIAS_LLVM = {"target": T.target("llvm"), "tirx.noalias": True}


def vectorize(func):
    return tvm_memplan.transform.VectorizeInplaceLoops()(tvm.IRModule({"main": func}))["main"]


def assert_unchanged(func):
    assert_ir_equal(vectorize(func), func)


@T.prim_func
def divide_in_place(a: T.Buffer((2048,), "float32"), b: T.Buffer((32,), "float32")):
    T.func_attr(NOALIAS_LLVM)
    for c, h, w in T.grid(32, 8, 8):
        a[c * 64 + h * 8 + w] = a[c * 64 + h * 8 + w] / b[c]


@T.prim_func
def divide_in_place_vectorized(a: T.Buffer((2048,), "float32"), b: T.Buffer((32,), "float32")):
    T.func_attr(NOALIAS_LLVM)
    for c, h in T.grid(32, 8):
        for w in T.vectorized(8):
            a[c * 64 + h * 8 + w] = a[c * 64 + h * 8 + w] / b[c]


def test_an_in_place_elementwise_loop_is_vectorized():
    """Each iteration reads and writes its own element of `a`: the innermost loop is
    vectorized, the outer ones stay serial."""
    assert_ir_equal(vectorize(divide_in_place), divide_in_place_vectorized)


def test_a_view_of_the_written_buffer_is_the_same_memory():
    """Reads and writes through one flattened view (what FlattenBuffer leaves) are in place."""

    @T.prim_func
    def before(a: T.Buffer((4, 16), "float32")):
        T.func_attr(NOALIAS_LLVM)
        a_1 = T.decl_buffer((64,), data=a.data)
        for i, j in T.grid(4, 16):
            a_1[i * 16 + j] = T.max(a_1[i * 16 + j], T.float32(0))

    @T.prim_func
    def expected(a: T.Buffer((4, 16), "float32")):
        T.func_attr(NOALIAS_LLVM)
        a_1 = T.decl_buffer((64,), data=a.data)
        for i in range(4):
            for j in T.vectorized(16):
                a_1[i * 16 + j] = T.max(a_1[i * 16 + j], T.float32(0))

    assert_ir_equal(vectorize(before), expected)


def test_an_out_of_place_loop_stays_serial():
    """A loop that does not read what it writes is left as stock compiles it."""

    @T.prim_func
    def before(a: T.Buffer((64,), "float32"), out: T.Buffer((64,), "float32")):
        T.func_attr(NOALIAS_LLVM)
        for i in range(64):
            out[i] = a[i] * T.float32(2)

    assert_unchanged(before)


def test_a_read_of_another_element_of_the_written_buffer_stays_serial():
    """Iteration i reads a[15 - i], which another iteration writes: as lanes the loop would read
    values it reads after their write in order."""

    @T.prim_func
    def before(a: T.Buffer((16,), "float32")):
        T.func_attr(NOALIAS_LLVM)
        for i in range(16):
            a[i] = a[i] + a[15 - i]

    assert_unchanged(before)


def test_a_read_through_another_view_of_the_written_buffer_stays_serial():
    """A second view of `a` names the same memory: only the written view, at the written
    element, may be read."""

    @T.prim_func
    def before(a: T.Buffer((16,), "float32")):
        T.func_attr(NOALIAS_LLVM)
        v = T.decl_buffer((16,), data=a.data)
        for i in range(16):
            a[i] = a[i] + v[i]

    assert_unchanged(before)


def test_every_iteration_writing_one_element_stays_serial():
    """An accumulation (`a[0]` in every iteration) is not elementwise."""

    @T.prim_func
    def before(a: T.Buffer((16,), "float32"), b: T.Buffer((16,), "float32")):
        T.func_attr(NOALIAS_LLVM)
        for i in range(16):
            a[0] = a[0] + b[i]

    assert_unchanged(before)


def test_an_index_that_does_not_move_by_a_constant_stays_serial():
    """`a[i // 2]` is written by two iterations."""

    @T.prim_func
    def before(a: T.Buffer((16,), "float32")):
        T.func_attr(NOALIAS_LLVM)
        for i in range(16):
            a[i // 2] = a[i // 2] * T.float32(2)

    assert_unchanged(before)


def test_a_loop_of_more_than_64_iterations_stays_serial():
    @T.prim_func
    def before(a: T.Buffer((128,), "float32")):
        T.func_attr(NOALIAS_LLVM)
        for i in range(128):
            a[i] = a[i] * T.float32(2)

    assert_unchanged(before)


def test_an_impure_call_keeps_the_loop_serial():
    """An extern call may have effects that lanes would reorder."""

    @T.prim_func
    def before(a: T.Buffer((16,), "float32")):
        T.func_attr(NOALIAS_LLVM)
        for i in range(16):
            a[i] = T.call_extern("float32", "next_value", a[i])

    assert_unchanged(before)


def test_a_loop_inside_a_vectorized_loop_stays_serial():
    """VectorizeLoop leaves a vector loop inside another as it is, which LLVM's code generation
    rejects."""

    @T.prim_func
    def before(a: T.Buffer((32,), "float32")):
        T.func_attr(NOALIAS_LLVM)
        for i in T.vectorized(4):
            for j in range(8):
                a[i * 8 + j] = a[i * 8 + j] * T.float32(2)

    assert_unchanged(before)


def test_a_value_with_a_vector_typed_part_stays_serial():
    """A scalar value built from a vector (here a lane of a broadcast) is left to stock."""

    @T.prim_func
    def before(a: T.Buffer((16,), "float32")):
        T.func_attr(NOALIAS_LLVM)
        for i in range(16):
            a[i] = a[i] + T.Shuffle([T.Broadcast(T.float32(1), 4)], [0])

    assert_unchanged(before)


def test_the_address_of_a_buffer_keeps_the_loop_serial():
    """A pure call handed a buffer's address may read any element of it."""

    @T.prim_func
    def before(a: T.Buffer((16,), "float32")):
        T.func_attr(NOALIAS_LLVM)
        for i in range(16):
            a[i] = a[i] + T.reinterpret("float32", T.Cast("int32", T.isnullptr(a.data)))

    assert_unchanged(before)


@pytest.mark.parametrize(
    "attrs",
    [
        {"target": T.target("llvm")},
        {"target": T.target("c"), "tirx.noalias": True},
        {"tirx.noalias": True},
        {"target": T.target({"kind": "llvm", "fast-math": True}), "tirx.noalias": True},
    ],
    ids=["without-noalias", "c-target", "no-target", "fast-math"],
)
def test_only_llvm_cpu_functions_with_noalias_parameters_are_touched(attrs):
    """Without `tirx.noalias` two parameters may share memory; TVM's C backend prints no
    vector types; a function without a target is not known to run on a CPU; with fast-math
    LLVM may compute vector code other than scalar code would."""
    assert_unchanged(_with_attrs(attrs))


def _with_attrs(attrs):
    func = divide_in_place.without_attr("target").without_attr("tirx.noalias")
    for key, value in attrs.items():
        func = func.with_attr(key, value)
    return func


def test_is_idempotent():
    once = vectorize(divide_in_place)
    assert_ir_equal(vectorize(once), once)


# ---- built and run: the memplan TIR pipeline against TVM's -----------------------------------

OPS = {
    "add": lambda x, y: x + y,
    "subtract": lambda x, y: x - y,
    "multiply": lambda x, y: x * y,
    "divide": lambda x, y: x / y,
    "maximum": lambda x, y: T.max(x, y),
}


def in_place_kernel(op, channels, height, width, dtype):
    """`a[0, c, h, w] = op(a[0, c, h, w], b[0, c, 0, 0])` as LegalizeOps writes an operator with
    a broadcast operand, in place (what DataflowUseInplaceCalls makes of it)."""
    f = OPS[op]

    @T.prim_func(s_tir=True)
    def kernel(
        a: T.Buffer((1, channels, height, width), dtype),
        b: T.Buffer((1, channels, 1, 1), dtype),
    ):
        T.func_attr({"tirx.noalias": True})
        for i, j, k in T.grid(channels, height, width):
            with T.sblock("compute"):
                vi, vj, vk = T.axis.remap("SSS", [i, j, k])
                a[0, vi, vj, vk] = f(a[0, vi, vj, vk], b[0, vi, 0, 0])

    return kernel


def run_in_place(executable, a, b):
    dev = tvm.cpu()
    ta, tb = tvm.runtime.tensor(a, dev), tvm.runtime.tensor(b, dev)
    executable(ta, tb)
    return ta.numpy()


CASES = [
    ("divide", 256, 8, 8, "float32"),
    ("divide", 3, 5, 7, "float32"),
    ("add", 16, 4, 64, "float64"),
    ("multiply", 8, 2, 2, "float32"),
    ("maximum", 4, 3, 33, "float16"),
    ("subtract", 5, 6, 65, "int32"),
]


@pytest.mark.parametrize("case", CASES, ids=["-".join(map(str, c)) for c in CASES])
def test_the_memplan_pipeline_computes_what_tvms_does(case):
    """Built through tir_pipeline="memplan" (which vectorizes the kernel where the rule admits
    it) and through TVM's "s_tir": the same bits, on three fresh inputs each."""
    op, channels, height, width, dtype = case
    kernel = in_place_kernel(op, channels, height, width, dtype)
    traced = trace(
        lambda: tvm.compile(kernel, target="llvm", tir_pipeline="memplan"), [pass_names.VECTORIZE]
    )
    ours = traced.result
    stock = tvm.compile(kernel, target="llvm", tir_pipeline="s_tir")
    vectorized = "T.vectorized" in traced.after[pass_names.VECTORIZE].script()
    assert vectorized == (2 <= width <= 64)
    rng = np.random.default_rng(channels * 1000 + width)
    for _ in range(3):
        a = _random(rng, (1, channels, height, width), dtype)
        b = _random(rng, (1, channels, 1, 1), dtype)
        np.testing.assert_array_equal(run_in_place(ours, a, b), run_in_place(stock, a, b))


def _random(rng, shape, dtype):
    if dtype.startswith("int"):
        # Divisors away from 0, so that integer division has a defined result.
        return rng.integers(1, 50, size=shape).astype(dtype)
    return (rng.standard_normal(shape) + 3).astype(dtype)


def test_random_in_place_kernels_compute_what_tvms_do():
    """Random operators, shapes and dtypes, each built both ways and run on fresh inputs."""
    rng = np.random.default_rng(37)
    for _ in range(12):
        dtype = str(rng.choice(["float32", "float64", "int32"]))
        # Integer `/` is ambiguous in TIR (floordiv or truncdiv): floats only.
        op = str(rng.choice([op for op in sorted(OPS) if op != "divide" or dtype != "int32"]))
        shape = [int(x) for x in rng.integers(1, 40, size=3)]
        kernel = in_place_kernel(op, *shape, dtype)
        ours = tvm.compile(kernel, target="llvm", tir_pipeline="memplan")
        stock = tvm.compile(kernel, target="llvm", tir_pipeline="s_tir")
        for _ in range(3):
            a = _random(rng, (1, *shape), dtype)
            b = _random(rng, (1, shape[0], 1, 1), dtype)
            np.testing.assert_array_equal(run_in_place(ours, a, b), run_in_place(stock, a, b))


def test_with_vectorize_loop_disabled_by_name_the_pipeline_does_not_run_it():
    """Nothing would lower a vector loop with VectorizeLoop disabled: the build stays stock's."""
    kernel = in_place_kernel("divide", 4, 4, 8, "float32")
    with tvm.transform.PassContext(disabled_pass=["tirx.VectorizeLoop"]):
        traced = trace(
            lambda: tvm.compile(kernel, target="llvm", tir_pipeline="memplan"), inherit=True
        )
    assert traced.result is not None
    assert pass_names.VECTORIZE not in traced.names


def test_with_vectorization_disabled_the_pipeline_does_not_run_it():
    """`tirx.disable_vectorize` makes VectorizeLoop scalarize every vector loop: the pipeline
    then builds VectorizeLoop alone."""
    kernel = in_place_kernel("divide", 4, 4, 8, "float32")
    traced = trace(
        lambda: tvm.compile(kernel, target="llvm", tir_pipeline="memplan"),
        config={"tirx.disable_vectorize": True},
    )
    assert "tirx.VectorizeLoop" in traced.names
    assert pass_names.VECTORIZE not in traced.names
