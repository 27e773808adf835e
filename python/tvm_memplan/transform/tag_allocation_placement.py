"""Placement decisions carried through StorageRewrite (src_cpp/tir/tag_allocation_placement.h)."""

from __future__ import annotations

import tvm

from . import _ffi_api


def TagAllocationPlacement() -> tvm.transform.Pass:
    """Record each host allocation's stack/workspace decision in its storage scope.

    StorageRewrite merges, hoists and renames allocations and drops their annotations, but keeps
    scopes apart. Run right before it (the ``"memplan"`` TIR pipeline does), this pass moves
    allocations decided for the workspace to ``"global.workspace"`` and ``disable_lower_builtin``
    ones to ``"global.memplan_unlowered"``, so that ``LowerTVMBuiltin`` finds the decisions after
    it. Placement errors are raised here, naming the buffers as written.
    """
    return _ffi_api.TagAllocationPlacement()
