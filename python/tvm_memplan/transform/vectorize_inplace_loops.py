"""In-place elementwise loops handed to LLVM as vector loops
(src_cpp/tir/vectorize_inplace_loops.h)."""

from __future__ import annotations

import tvm

from . import _ffi_api


def VectorizeInplaceLoops() -> tvm.transform.Pass:
    """Vectorize the innermost loop of in-place elementwise kernels compiled for LLVM on a CPU.

    An in-place kernel (one that reads and writes the same buffer, as DataflowUseInplaceCalls
    makes them) compiles far more slowly at LLVM's -O3 than the out-of-place kernel it replaces.
    A loop is vectorized only when each iteration reads and writes its own elements, so the
    results are the same bit for bit; every other loop, and every function not compiled for an
    LLVM CPU target, is left as it is. Run right before ``tirx.transform.VectorizeLoop`` (the
    ``"memplan"`` TIR pipeline does), on flattened TIR.
    """
    return _ffi_api.VectorizeInplaceLoops()
