"""Test support: hooks into the C++ IR access layer (src_cpp/ir/testing.cc) and helpers to
compare IR and compiled results. Not a stable API."""

from __future__ import annotations

import re
import tempfile
from pathlib import Path

import numpy as np
import tvm
import tvm_ffi

from .. import (
    _lib,  # noqa: F401  (the library must be loaded before its functions are bound)
    pass_names,
    pipeline,
)
from ..instrument import capture

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


# The reference build compacts nothing: the stock CompactBufferAllocation in tvm.compile's
# pipeline would otherwise rewrite both sides of a comparison, and it miscompiles some programs
# (tests/tir/test_compact_buffer_allocation.py, TestIndexThatReadsDataWrittenInScope...).
_NO_COMPACTION = (
    pipeline.Substitution(
        tvm.s_tir.transform,
        "CompactBufferAllocation",
        lambda stock, is_strict=True: tvm.transform.Sequential([], name="NoCompaction"),
    ),
)

#: The TIR builds `build_prim_module` makes: TVM's "s_tir" pipeline without compaction (the
#: reference), as it is, with our compaction swapped in (and nothing else), and "memplan".
COMPACTIONS = {
    "none": (_NO_COMPACTION, pipeline.STOCK_PIPELINE),
    "stock": ((), pipeline.STOCK_PIPELINE),
    "ours": (pipeline.MAIN_SUBSTITUTIONS[:1], pipeline.STOCK_PIPELINE),
    "memplan": ((), pipeline.PIPELINE_NAME),
}


def build_prim_module(mod: tvm.IRModule, target="llvm", compaction: str = "none"):
    """`mod` compiled by one of the COMPACTIONS builds."""
    substitutions, tir_pipeline = COMPACTIONS[compaction]
    with pipeline.substituted(substitutions, f"{compaction} TIR pipeline"):
        return tvm.compile(mod, target=target, tir_pipeline=tir_pipeline)


def run_prim_func(
    func: tvm.tirx.PrimFunc, args: list[np.ndarray], target: str = "llvm", compaction="none"
):
    """Compile `func` alone (by default by TVM's pipeline without its buffer compaction, so the
    result is that of `func` as given) and run it on copies of `args`; returns the arrays after
    the call."""
    lib = build_prim_module(tvm.IRModule({"main": _named(func)}), target, compaction)
    tensors = [tvm.runtime.tensor(a.copy()) for a in args]
    lib["main"](*tensors)
    return [t.numpy() for t in tensors]


def lanes_in_one_address(mod: tvm.IRModule) -> list[str]:
    """The stores of `mod`'s PrimFuncs that write distinct vector lanes to one address (a
    broadcast index, a value that is not one): what VectorizeLoop makes of a buffer whose lanes
    were given one element. Each as `function: buffer[indices]`."""
    return [
        f"{gv.name_hint}: {store.buffer.name}{list(store.indices)}"
        for gv, func in mod.functions.items()
        if isinstance(func, tvm.tirx.PrimFunc)
        for store in lanes_stored_to_one_address(func)  # noqa: F821  (bound from C++)
    ]


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


#: How many times every end-to-end check calls a build, with fresh copies of its inputs: a
#: constant or an input written in place shows only from the second call on, and a value
#: that depends on how often it was written from the third.
RUNS = 3


def _assert_same_runs(named_vms, func_name: str, inputs: list, runs: int) -> list[np.ndarray]:
    """Every ``(name, vm)``, run ``runs`` times on fresh copies of ``inputs``, leaves them
    unchanged and gives the outputs of the first run of the first one; returns those."""
    originals = _to_numpy(tuple(inputs))
    expected = None
    for name, vm in named_vms:
        for run in range(runs):
            outputs, inputs_after = run_relax(vm, func_name, inputs)
            _assert_all_equal(inputs_after, originals, f"{name}, run {run}: inputs changed")
            if expected is None:
                expected = outputs
            _assert_all_equal(outputs, expected, f"{name}, run {run}: outputs")
    return expected


def assert_identical_relax_results(
    named_vms: dict, func_name: str, inputs: list, runs: int = RUNS
) -> list[np.ndarray]:
    """Every VM of ``{name: vm}``, run ``runs`` times on fresh copies of ``inputs``, leaves them
    unchanged and gives the outputs of the first run of the first (an assertion naming the VM
    and run that differ); returns those outputs."""
    return _assert_same_runs(named_vms.items(), func_name, inputs, runs)


def repeated_relax_results(vm, func_name: str, inputs: list, runs: int = RUNS) -> list:
    """``vm[func_name]`` called ``runs`` times on fresh copies of ``inputs``: every call leaves
    them unchanged and gives the outputs of the first, which it returns (flattened)."""
    return _assert_same_runs([("the build", vm)], func_name, inputs, runs)


def identical_relax_results(vms, func_name: str, inputs: list, runs: int = RUNS) -> bool:
    """Whether every VM, run ``runs`` times on fresh copies of ``inputs``, gives the outputs of
    the first run of the first one (NaNs equal) and leaves the inputs unchanged (the
    benchmarks' check; tests use assert_same_relax_results, which says what differs)."""
    try:
        _assert_same_runs([(str(i), vm) for i, vm in enumerate(vms)], func_name, inputs, runs)
    except AssertionError:
        return False
    return True


def relax_vm(mod: tvm.IRModule, target: str = "llvm", planner: str = "stock"):
    """Compile a Relax module with ``tvm.compile`` and load it on a Relax VM on the CPU; see
    ``compile_with_planner`` for ``planner``."""
    return tvm.relax.VirtualMachine(compile_with_planner(mod, target, planner), tvm.cpu())


PLANNERS = ("stock", "memplan", "none")


def compile_with_planner(mod: tvm.IRModule, target="llvm", planner: str = "stock"):
    """``tvm.compile`` with TVM's own pipelines and one memory planner: ``"stock"`` (TVM's
    StaticPlanBlockMemory), ``"memplan"`` (ours in its place, nothing else changed) or
    ``"none"`` (no planner: every tensor gets storage of its own, the reference for planners)."""
    if planner == "stock":
        return tvm.compile(mod, target=target)
    if planner == "none":
        with tvm.transform.PassContext(disabled_pass=[pass_names.STOCK_PLANNER]):
            return tvm.compile(mod, target=target)
    if planner == "memplan":
        with pipeline.substituted(pipeline.PLANNER_SUBSTITUTIONS, "Relax pipeline"):
            executable = tvm.compile(mod, target=target)
        return executable
    raise ValueError(f"planner must be one of {PLANNERS}, got {planner!r}")


def assert_same_relax_results(
    before: tvm.IRModule,
    after: tvm.IRModule,
    func_name: str = "main",
    *,
    seed: int = 0,
    runs: int = RUNS,
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
    if vms is None:
        vms = (relax_vm(before), relax_vm(after))
    return _assert_same_runs(zip(("before", "after"), vms, strict=True), func_name, inputs, runs)


# ---- allocation placement -----------------------------------------------------------------


def workspace_allocation(dtype: str, nbytes: int, scope: str = "global", device_id=0):
    """``T.TVMBackendAllocWorkspace(...)`` as LowerTVMBuiltin emits it on the CPU, typed as a
    pointer to `dtype` in `scope` (the TVMScript shorthand loses that type). For expected IR:
    ``G = T.decl_buffer((4,), "float32", data=workspace_allocation("float32", 16))``."""
    from tvm.script import tirx as T

    code, bits = tvm_ffi.dtype(dtype).type_code, tvm_ffi.dtype(dtype).bits
    return T.call_intrin(
        T.handle(dtype, scope).ty,
        "tirx.TVMBackendAllocWorkspace",
        1,
        device_id,
        T.uint64(nbytes),
        code,
        bits,
    )


def throw_last_error():
    """``T.tvm_throw_last_error()`` typed int32 as LowerTVMBuiltin emits it (the TVMScript
    shorthand types it void). For expected IR: ``T.evaluate(throw_last_error())``."""
    from tvm.script import tirx as T

    return T.call_intrin("int32", "tirx.tvm_throw_last_error")


def compile_and_run(
    func_or_mod,
    args: list[np.ndarray],
    target="llvm",
    tir_pipeline: str = "default",
    config: dict | None = None,
):
    """Compile a PrimFunc (or a module's "main") with `tir_pipeline` under PassContext `config`
    and run it on copies of `args`.

    Code for a target without a JIT (``"c"``) is built with ``export_library`` and loaded back.
    Returns the arrays after the call and the ``tvm.runtime.Executable``.
    """
    mod = func_or_mod
    if isinstance(mod, tvm.tirx.PrimFunc):
        mod = tvm.IRModule({"main": _named(mod)})
    with tvm.transform.PassContext(config=config or {}):
        lib = tvm.compile(mod, target=target, tir_pipeline=tir_pipeline)
    tensors = [tvm.runtime.tensor(a.copy()) for a in args]
    if tvm.target.Target(target).kind.name == "c":
        with tempfile.TemporaryDirectory() as tmp:
            path = str(Path(tmp) / "lib.so")
            lib.export_library(path)
            tvm.runtime.load_module(path)["main"](*tensors)
    else:
        lib["main"](*tensors)
    return [t.numpy() for t in tensors], lib


def capture_ir(
    func_or_mod,
    pass_name: str,
    target="llvm",
    tir_pipeline: str = "default",
    config: dict | None = None,
    after: bool = False,
) -> tvm.IRModule:
    """The module `tvm.compile` hands to the pass named `pass_name` (or, with `after`, the one
    the pass returns), e.g. ``capture_ir(func, "tirx.LowerTVMBuiltin")``: the packed host
    functions as TVM's LowerTVMBuiltin sees them."""
    mod = func_or_mod
    if isinstance(mod, tvm.tirx.PrimFunc):
        mod = tvm.IRModule({"main": _named(mod)})
    run = lambda: tvm.compile(mod, target=target, tir_pipeline=tir_pipeline)  # noqa: E731
    return capture(run, [pass_name], after=after, config=config)[pass_name]


_C_ARRAY = re.compile(r"^\s*[A-Za-z_][\w ]*?\b(\w+)\[(\d+)\];\s*$", re.MULTILINE)
_C_WORKSPACE = re.compile(r"\bTVMBackendAllocWorkspace\(")


def c_stack_arrays(source: str) -> list[tuple[str, int]]:
    """The arrays a C source declares without an initializer (``float t_ptr[16];``): the
    buffers on the stack. TVM's own initialized arrays (assert messages) do not match."""
    return [(name, int(size)) for name, size in _C_ARRAY.findall(source)]


def c_workspace_allocations(source: str) -> int:
    """How many ``TVMBackendAllocWorkspace`` calls a C source makes."""
    return len(_C_WORKSPACE.findall(source))


_RANDOM_KERNEL_DTYPES = {"float32": 4, "int32": 4, "uint8": 1}
_RANDOM_KERNEL_ELEMENTS = [1, 3, 16, 64, 255, 256, 257, 300, 1024, 1025]


def random_kernel(seed: int, scopes=("global", "local", "global.workspace", "global.stack")):
    """A seeded random `main(A: float32[64])` that fills 1-6 temporaries (random scope from
    `scopes`, dtype, size) from A and adds them all back into A, so that every temporary is live
    to the end. Returns the PrimFunc and each temporary's (scope, bytes)."""
    rng = np.random.default_rng(seed)
    buffers = []
    lines = ["@T.prim_func", 'def main(A: T.Buffer((64,), "float32")):']
    for k in range(int(rng.integers(1, 7))):
        dtype = str(rng.choice(list(_RANDOM_KERNEL_DTYPES)))
        n = int(rng.choice(_RANDOM_KERNEL_ELEMENTS))
        scope = str(rng.choice(list(scopes)))
        buffers.append((f"X{k}", dtype, n, scope))
        lines.append(f'    X{k} = T.alloc_buffer(({n},), "{dtype}", scope="{scope}")')
    for name, dtype, n, _ in buffers:
        lines.append(f"    for i in range({n}):")
        # Through int32: float -> uint8 of a negative value is undefined behaviour in C and LLVM.
        scaled = f'T.Cast("int32", A[i % 64] * T.float32({n % 7 + 1}))'
        lines.append(f'        {name}[i] = T.Cast("{dtype}", {scaled})')
    terms = " + ".join(f'T.Cast("float32", {name}[(i * 7) % {n}])' for name, _, n, _ in buffers)
    lines.append("    for i in range(64):")
    lines.append(f"        A[i] = A[i] + {terms}")
    func = tvm.script.from_source("\n".join(lines))
    return func, [(scope, n * _RANDOM_KERNEL_DTYPES[dtype]) for _, dtype, n, scope in buffers]


# ---- compaction ---------------------------------------------------------------------------


def allocated_bytes(func: tvm.tirx.PrimFunc) -> int | None:
    """Bytes of every buffer `func` allocates, strides included; None if any is symbolic."""
    from ..analysis import compacted_regions

    sizes = [r.original_bytes for r in compacted_regions(func)]
    return None if any(s is None for s in sizes) else sum(sizes)


_KERNEL = re.compile(r"__global__\s+void\s+(?:__launch_bounds__\(\d+\)\s+)?(\w+)\s*\(")


def device_kernel_names(executable) -> list[str]:
    """The GPU kernels an executable built for a CUDA target carries, sorted (each kernel is
    declared and then defined in the generated source: counted once)."""
    names: set[str] = set()

    def walk(module):
        if module.kind == "cuda":
            names.update(_KERNEL.findall(module.inspect_source()))
        for imported in module.imports:
            walk(imported)

    walk(executable.mod if hasattr(executable, "mod") else executable)
    return sorted(names)


def past_bound_error(function: str, variable: str, value: int, upper: int) -> str:
    """A regex for the error of a call past an upper bound the planner sized tensors at: the
    VM's shape match reports the value and the bound, then the planner's message names the
    function and the variable (src_cpp/relax/static_plan_memory.cc, BoundCheckBindings)."""
    return (
        rf"\({value} vs\. {upper}\) : {re.escape(function)}: shape variable "
        rf"{re.escape(variable)} exceeds its tir_var_upper_bound {upper} "
    )
