"""Test support: hooks into the C++ IR access layer (src_cpp/ir/testing.cc) and helpers to
compare IR and compiled results. Not a stable API."""

from __future__ import annotations

import numpy as np
import tvm
import tvm_ffi

from .. import _lib  # noqa: F401  (the library must be loaded before its functions are bound)

tvm_ffi.init_ffi_api("tvm_memplan.testing", __name__)


def _named(func: tvm.tirx.PrimFunc, name: str = "main") -> tvm.tirx.PrimFunc:
    return func.with_attr("global_symbol", name)


def assert_ir_equal(actual, expected) -> None:
    """Structural equality of two PrimFuncs or modules, ignoring PrimFunc global symbols."""
    if isinstance(actual, tvm.tirx.PrimFunc):
        actual, expected = _named(actual), _named(expected)
    tvm.ir.assert_structural_equal(actual, expected)


def random_args(func: tvm.tirx.PrimFunc, seed: int = 0) -> list[np.ndarray]:
    """Random numpy arrays for every buffer parameter of `func` (static shapes only)."""
    rng = np.random.default_rng(seed)
    args = []
    for param in func.params:
        ty = param.ty
        if not isinstance(ty, tvm.tirx.BufferType):
            raise TypeError(f"parameter {param.name} is not a buffer")
        shape = [int(s) for s in ty.shape]
        dtype = str(ty.dtype.dtype)
        if dtype.startswith("float"):
            args.append(rng.standard_normal(shape).astype(dtype))
        else:
            args.append(rng.integers(-8, 8, size=shape).astype(dtype))
    return args


def run_prim_func(func: tvm.tirx.PrimFunc, args: list[np.ndarray], target: str = "llvm"):
    """Compile `func` alone and run it on copies of `args`; returns the arrays after the call."""
    lib = tvm.compile(tvm.IRModule({"main": _named(func)}), target=target)
    tensors = [tvm.runtime.tensor(a.copy()) for a in args]
    lib["main"](*tensors)
    return [t.numpy() for t in tensors]


def assert_same_results(before: tvm.tirx.PrimFunc, after: tvm.tirx.PrimFunc, seed: int = 0):
    """Run both functions on the same random inputs; every buffer must end up identical."""
    args = random_args(before, seed)
    expected, actual = run_prim_func(before, args), run_prim_func(after, args)
    for want, got in zip(expected, actual, strict=True):
        np.testing.assert_array_equal(got, want)


# ---- Relax ---------------------------------------------------------------------------------


def _static_shape(ty, shape_vars: dict[str, int]) -> list[int]:
    dims = []
    for extent in ty.shape.values:
        if isinstance(extent, tvm.tirx.IntImm):
            dims.append(int(extent))
        elif str(extent) in shape_vars:
            dims.append(shape_vars[str(extent)])
        else:
            raise ValueError(f"give a value for the symbolic extent `{extent}` in shape_vars")
    return dims


def _random_value(ty, rng, shape_vars, low, high):
    if isinstance(ty, tvm.ir.TupleType):
        return tuple(_random_value(f, rng, shape_vars, low, high) for f in ty.fields)
    if not isinstance(ty, tvm.relax.TensorType):
        raise TypeError(f"cannot make a random input of type {ty}")
    shape = _static_shape(ty, shape_vars)
    dtype = str(ty.dtype)
    if dtype == "bool":
        return rng.integers(0, 2, size=shape).astype(bool)
    if dtype.startswith("float"):
        return rng.uniform(low, high, size=shape).astype(dtype)
    return rng.integers(int(low) - 1, int(high) + 2, size=shape).astype(dtype)


def relax_inputs(
    func, seed: int = 0, *, shape_vars: dict[str, int] | None = None, low=-2.0, high=2.0
) -> list:
    """Random numpy inputs for the parameters of a Relax function (tuples for tuple params)."""
    rng = np.random.default_rng(seed)
    return [_random_value(p.ty, rng, shape_vars or {}, low, high) for p in func.params]


def _to_device(value):
    if isinstance(value, tuple):
        return tuple(_to_device(v) for v in value)
    return tvm.runtime.tensor(value.copy())


def _to_numpy(value) -> list[np.ndarray]:
    """Every tensor of a VM result, flattened depth-first."""
    if isinstance(value, tvm.runtime.Tensor):
        return [value.numpy()]
    if isinstance(value, np.ndarray):
        return [value.copy()]
    if isinstance(value, tuple | list) or hasattr(value, "__len__"):
        return [array for item in value for array in _to_numpy(item)]
    return [np.asarray(value)]


def _assert_all_equal(actual, expected, what: str) -> None:
    assert len(actual) == len(expected), f"{what}: {len(actual)} tensors, expected {len(expected)}"
    for i, (got, want) in enumerate(zip(actual, expected, strict=True)):
        np.testing.assert_array_equal(got, want, err_msg=f"{what}: tensor {i} differs")


def run_relax(vm, func_name: str, inputs: list) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Call ``vm[func_name]`` on fresh device copies of ``inputs``; returns the outputs and
    the inputs as they are after the call (flattened)."""
    args = [_to_device(value) for value in inputs]
    outputs = _to_numpy(vm[func_name](*args))
    return outputs, _to_numpy(tuple(args))


def relax_vm(mod: tvm.IRModule, target: str = "llvm"):
    """Compile a Relax module with ``tvm.compile`` and load it on a Relax VM on the CPU."""
    return tvm.relax.VirtualMachine(tvm.compile(mod, target=target), tvm.cpu())


def assert_same_relax_results(
    before: tvm.IRModule,
    after: tvm.IRModule,
    func_name: str = "main",
    *,
    seed: int = 0,
    runs: int = 2,
    shape_vars: dict[str, int] | None = None,
    low=-2.0,
    high=2.0,
    inputs: list | None = None,
    vms: tuple | None = None,
) -> list[np.ndarray]:
    """Check a Relax rewrite end to end: ``after`` is well-formed, and both modules, compiled
    for ``llvm`` and run ``runs`` times on fresh copies of the same inputs (``inputs``, or
    random ones from ``seed``), leave the inputs unchanged and give bit-identical outputs every
    time (a constant or an input overwritten in place would change a later run). ``vms``
    reuses already compiled ``(before, after)`` VMs (see ``relax_vm``). Returns the outputs."""
    tvm.relax.analysis.well_formed(after)
    if inputs is None:
        inputs = relax_inputs(before[func_name], seed, shape_vars=shape_vars, low=low, high=high)
    originals = _to_numpy(tuple(inputs))
    expected = None
    for index, (name, mod) in enumerate((("before", before), ("after", after))):
        vm = vms[index] if vms else relax_vm(mod)
        for run in range(runs):
            outputs, inputs_after = run_relax(vm, func_name, inputs)
            _assert_all_equal(inputs_after, originals, f"{name}, run {run}: inputs changed")
            if expected is None:
                expected = outputs
            _assert_all_equal(outputs, expected, f"{name}, run {run}: outputs")
    return expected


# ---- memory planning -------------------------------------------------------------------------

_PLANNER = "StaticPlanBlockMemory"


def default_build_until_planning() -> list[tvm.transform.Pass]:
    """TVM's default Relax build sequence, read from the installed wheel's
    ``tvm.relax.pipeline.default_build_pipeline``, up to and including StaticPlanBlockMemory."""
    import inspect  # noqa: PLC0415
    import re  # noqa: PLC0415

    source = inspect.getsource(tvm.relax.pipeline.default_build_pipeline)
    passes = []
    for namespace, name in re.findall(r"\b(backend|transform)\.(\w+)\(\)", source):
        owner = tvm.relax.backend if namespace == "backend" else tvm.relax.transform
        passes.append(getattr(owner, name)())
        if name == _PLANNER:
            return passes
    raise RuntimeError(f"{_PLANNER} is not in tvm.relax.pipeline.default_build_pipeline")


def planned_bytes(mod: tvm.IRModule, target: str = "llvm") -> tuple[int, int]:
    """``(storage, outputs)`` bytes a module allocates after TVM's default build up to memory
    planning: ``R.memory.alloc_storage`` (planned storage) and ``R.builtin.alloc_tensor``
    (tensors the planner leaves alone, such as the function's outputs)."""
    with tvm.target.Target(target):
        planned = tvm.transform.Sequential(default_build_until_planning())(mod)
    storage = outputs = 0

    def visit(node):
        nonlocal storage, outputs
        if not (isinstance(node, tvm.relax.Call) and isinstance(node.op, tvm.ir.Op)):
            return
        if node.op.name == "relax.memory.alloc_storage":
            storage += int(node.args[0].values[0])
        elif node.op.name == "relax.builtin.alloc_tensor":
            elements = int(np.prod([int(v) for v in node.args[0].values]))
            outputs += elements * tvm.runtime.DataType(node.args[1].value).bits // 8

    for func in planned.functions.values():
        if isinstance(func, tvm.relax.Function):
            tvm.relax.analysis.post_order_visit(func, visit)
    return storage, outputs
