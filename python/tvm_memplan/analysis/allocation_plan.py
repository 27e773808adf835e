"""Stack or workspace: the placement decision for each allocation of host code."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import tvm

from . import _ffi_api
from ._records import check_tir, shape_of

__all__ = ["AllocationDecision", "allocation_plan", "placement_counts"]


@dataclass(frozen=True)
class AllocationDecision:
    """Where one allocation lives once lowered, and why.

    ``placement`` is ``"stack"`` (a plain allocation codegen puts on the stack),
    ``"workspace"`` (``TVMBackendAllocWorkspace``/``TVMBackendFreeWorkspace``), ``"unlowered"``
    (``disable_lower_builtin``: left as written) or ``"stock"`` (not host CPU memory: lowered by
    TVM's own rule). ``reason`` names the rule and the limit that decided it. ``nbytes`` is None
    when the size is not a compile-time constant. ``stock_placement`` is where TVM's own
    LowerTVMBuiltin would put the allocation as written (only constant "global" CPU buffers
    under 1024 bytes go on its stack), for comparison.
    """

    function: str | None
    name: str
    kind: str
    scope: str
    dtype: str
    shape: tuple
    nbytes: int | None
    placement: str
    reason: str
    stock_placement: str


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
    return [
        AllocationDecision(
            function=str(r["function"]) or None,
            name=str(r["name"]),
            kind=str(r["kind"]),
            scope=str(r["scope"]),
            dtype=str(r["dtype"]),
            shape=shape_of(r["shape"]),
            nbytes=None if r["bytes"] is None else int(r["bytes"]),
            placement=str(r["placement"]),
            reason=str(r["reason"]),
            stock_placement=str(r["stock_placement"]),
        )
        for r in _ffi_api.allocation_plan(mod_or_func, target)
    ]


def placement_counts(plan: list[AllocationDecision]) -> dict[str, int]:
    """How many allocations each placement got, e.g. ``{"stack": 3, "workspace": 1}``."""
    return dict(Counter(d.placement for d in plan))
