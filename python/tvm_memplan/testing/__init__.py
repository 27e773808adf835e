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


def allocated_bytes(func: tvm.tirx.PrimFunc) -> int | None:
    """Bytes of every buffer `func` allocates, strides included; None if any is symbolic."""
    from ..analysis import compacted_regions

    sizes = [r.original_bytes for r in compacted_regions(func)]
    return None if any(s is None for s in sizes) else sum(sizes)
