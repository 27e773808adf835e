"""Scope-aware LowerTVMBuiltin (src_cpp/tir/place_allocations.h)."""

from __future__ import annotations

import tvm

from . import _ffi_api


def LowerTVMBuiltin() -> tvm.transform.Pass:
    """Drop-in for ``tvm.tirx.transform.LowerTVMBuiltin`` that decides stack vs workspace per
    allocation from its scope, its size and the target's stack limits.

    On host CPU code: ``"global"`` and ``"local"`` allocations of constant size up to
    ``max_stack_alloca`` bytes stay on the stack, larger or dynamic ones use
    ``TVMBackendAllocWorkspace``; ``"global.stack"`` is always on the stack (an error when it
    cannot be), ``"global.workspace"`` always in the workspace; ``disable_lower_builtin`` is
    honoured; ``max_stack_bytes`` caps a function's total. Everything else is TVM's own lowering.
    The limits come from the PassContext, the target, the target kind, then the defaults: see
    ``tvm_memplan.target`` and ``docs/passes/lower_tvm_builtin.md``.
    """
    return _ffi_api.LowerTVMBuiltin()
