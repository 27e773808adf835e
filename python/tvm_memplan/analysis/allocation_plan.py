"""Stack or workspace: the placement decision for each allocation of host code."""

from __future__ import annotations

from collections import Counter

import tvm
import tvm_ffi

from .. import _lib  # noqa: F401  (registers the record types before they are bound below)
from . import _ffi_api
from ._helpers import check_tir

__all__ = ["AllocationDecision", "allocation_plan", "placement_counts"]


@tvm_ffi.register_object("tvm_memplan.tir.AllocationDecision")
class AllocationDecision(tvm_ffi.Object):
    """Where one allocation lives once lowered, and why (fields and docs from
    ``src_cpp/tir/place_allocations_records.h``): ``placement`` is ``"stack"``,
    ``"workspace"``, ``"unlowered"`` or ``"stock"``; ``reason`` names the rule and the limit
    that decided it; ``stock_placement`` is where TVM's own LowerTVMBuiltin would put it."""


def allocation_plan(mod_or_func, target=None) -> list[AllocationDecision]:
    """The placement of every allocation of a PrimFunc, or of each PrimFunc of a module.

    The decisions are those ``tvm_memplan.transform.LowerTVMBuiltin`` makes (see
    ``docs/passes/lower_tvm_builtin.md``), under the current PassContext, for ``target`` (a
    ``tvm.target.Target``, or anything it accepts) or, when ``target`` is None, each function's
    own ``target`` attribute. Raises ValueError where the pass would (a ``"global.stack"``
    allocation that cannot live on the stack).
    """
    check_tir(mod_or_func, "allocation_plan")
    if target is not None and not isinstance(target, tvm.target.Target):
        target = tvm.target.Target(target)
    return list(_ffi_api.allocation_plan(mod_or_func, target))


def placement_counts(plan: list[AllocationDecision]) -> dict[str, int]:
    """How many allocations each placement got, e.g. ``{"stack": 3, "workspace": 1}``."""
    return dict(Counter(d.placement for d in plan))
