"""The in-place guard of tvm-memplan's planner, as a pass of its own
(``src_cpp/relax/inplace_guard.h``)."""

from __future__ import annotations

import tvm

from . import _ffi_api


def GuardInplaceWrites() -> tvm.transform.Pass:
    """Give every in-place write into a constant, or into a value read afterwards, a copy of its
    argument to write instead, whichever pass made the in-place call.

    Runs on Relax after ``CallTIRRewrite``. tvm-memplan's ``StaticPlanBlockMemory`` runs it
    first; put it before TVM's ``StaticPlanBlockMemory`` to get the same guarantee with the
    stock planner (for example after TVM's own ``DataflowUseInplaceCalls``, which can write
    into views of constants). ``tvm_memplan.analysis.unsafe_inplace_writes`` lists what it
    would revert, and why.
    """
    return _ffi_api.GuardInplaceWrites()
