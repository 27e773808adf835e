"""Where every tensor of a Relax function lives once planned, by tvm-memplan's planner and by
TVM's: records of the C++ analysis (``src_cpp/relax/memory_plan_records.h``), whose fields,
docs and types come from C++."""

from __future__ import annotations

import tvm
import tvm_ffi

from .. import (
    _lib,  # noqa: F401  (registers the record types before they are bound below)
    pass_names,
)
from .._options import takes_options
from ..instrument import capture
from ..transform.static_plan_block_memory import MemoryPlanOptions
from . import _ffi_api

__all__ = [
    "Concatenation",
    "FunctionMemoryPlan",
    "PlannedTensor",
    "RevertedInplaceWrite",
    "StorageAllocation",
    "memory_plan",
    "memory_plan_at",
    "unsafe_inplace_writes",
]


@tvm_ffi.register_object("tvm_memplan.relax.PlannedTensor")
class PlannedTensor(tvm_ffi.Object):
    """One ``R.builtin.alloc_tensor`` and where each planner puts it."""

    @property
    def planned(self) -> bool:
        """Whether tvm-memplan's planner gives it a place in one of its storages."""
        return self.storage >= 0


@tvm_ffi.register_object("tvm_memplan.relax.Concatenation")
class Concatenation(tvm_ffi.Object):
    """One concatenation and whether the planner makes it copy-free."""


@tvm_ffi.register_object("tvm_memplan.relax.RevertedInplaceWrite")
class RevertedInplaceWrite(tvm_ffi.Object):
    """An in-place write the planner gave a copy of its argument to write instead."""


@tvm_ffi.register_object("tvm_memplan.relax.StorageAllocation")
class StorageAllocation(tvm_ffi.Object):
    """One ``R.memory.alloc_storage`` of a plan."""


#: Per build, the fields of a FunctionMemoryPlan that give its bytes and its size: "stock" (TVM's
#: planner on the same IR), "memplan" (what StaticPlanBlockMemory applies: ``applied_*``),
#: "planned" (tvm-memplan's planner).
_BUILD_FIELDS = {
    "stock": ("stock_bytes", "stock_size"),
    "memplan": ("applied_bytes", "applied_size"),
    "planned": ("planned_bytes", "planned_size"),
}


@tvm_ffi.register_object("tvm_memplan.relax.FunctionMemoryPlan")
class FunctionMemoryPlan(tvm_ffi.Object):
    """The memory plan of one Relax function: tensors, storages, the peak-live bound and the
    stock planner's plan of the same IR."""

    @property
    def applies_stock(self) -> bool:
        """Whether StaticPlanBlockMemory applies the stock planner's plan to the function
        (``planner == "stock"``) rather than ours. The one place the rule is written: the
        ``applied_*`` figures, the report and the benchmarks read it."""
        return str(self.planner) == "stock"

    @property
    def applied_bytes(self) -> int:
        """Bytes of the plan StaticPlanBlockMemory applies: ours, or the stock planner's where
        it plans the function (``applies_stock``)."""
        return self.stock_bytes if self.applies_stock else self.planned_bytes

    @property
    def applied_size(self):
        """The same as an expression of the shape variables."""
        return self.stock_size if self.applies_stock else self.planned_size

    def bytes_of(self, build: str) -> int:
        """The function's bytes in ``build``: "stock" (TVM's planner), "memplan" (what the pass
        applies) or "planned" (tvm-memplan's planner); -1 where it has no such figure."""
        return int(getattr(self, _BUILD_FIELDS[build][0]))

    def size_of(self, build: str):
        """The same as an expression of the shape variables."""
        return getattr(self, _BUILD_FIELDS[build][1])

    def live_bytes(self) -> list[int]:
        """Bytes of static-size tensors live at each program point, every tensor from its
        allocation to its last read (in a plan from ``memory_plan_at``, every tensor with a
        size at its values). Tensors placed together by copy-free concatenations (one
        ``group``) count the bytes they cover together once, as in the bound. Tensors the
        planner may not share (function results, escaping tensors) add their bytes to
        ``peak_live_bytes`` as a whole, so the maximum of this curve can be below the bound.
        Computed by the C++ core, as the bound is (``relax/memory_plan_figures.h``)."""
        return [int(b) for b in _ffi_api.live_bytes(self)]


def planner_input(mod: tvm.IRModule, target="llvm") -> tvm.IRModule:
    """The module the Relax pipeline ``tvm.compile`` runs for ``target`` hands to
    StaticPlanBlockMemory (LegalizeOps ... CallTIRRewrite applied)."""
    from ..pipeline import stock_relax_pipeline

    target = tvm.target.Target(target)
    with target:
        run = lambda: stock_relax_pipeline(target)(mod)  # noqa: E731
        return capture(run, [pass_names.STOCK_PLANNER])[pass_names.STOCK_PLANNER]


@takes_options(MemoryPlanOptions)
def memory_plan(
    mod: tvm.IRModule, target="llvm", *, pipeline: str | None = "default", options
) -> list[FunctionMemoryPlan]:
    """The plan of every Relax function of ``mod``, in name order.

    With ``pipeline="default"`` the module first goes through the Relax pipeline ``tvm.compile``
    runs for ``target`` up to the memory planner (LegalizeOps ... CallTIRRewrite), and both
    planners are judged on the IR the planner receives there. With ``pipeline=None``, ``mod``
    must already be that IR. Options are those of ``transform.StaticPlanBlockMemory``.
    """
    if not isinstance(mod, tvm.IRModule):
        raise TypeError(f"memory_plan expects a tvm.IRModule, got {type(mod).__name__}")
    if pipeline not in ("default", None):
        raise ValueError(f'pipeline must be "default" or None, got {pipeline!r}')
    target = tvm.target.Target(target)
    if pipeline == "default":
        mod = planner_input(mod, target)
    with target:
        return list(_ffi_api.memory_plan(mod, options))


def memory_plan_at(plan: FunctionMemoryPlan, shape_values: dict[str, int] | None = None):
    """``plan`` with every figure evaluated at the given shape variable values; variables not
    given take their ``tir_var_upper_bound``. Tensors take their size at those values, storages
    the size they are allocated with (those sized at a bound keep the bound), and the totals
    and the peak-live bound follow. A variable with neither a value nor a bound, or a value
    outside its bounds, raises ValueError naming it."""
    if not isinstance(plan, FunctionMemoryPlan):
        raise TypeError(f"memory_plan_at expects a FunctionMemoryPlan, got {type(plan).__name__}")
    values = dict(shape_values or {})
    for name, value in values.items():
        if not isinstance(name, str) or isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(
                f"shape_values must map variable names to ints, got {name!r}: {value!r}"
            )
    return _ffi_api.memory_plan_at(plan, values)


def unsafe_inplace_writes(mod: tvm.IRModule) -> dict[str, list[RevertedInplaceWrite]]:
    """Per Relax function of ``mod`` (Relax after CallTIRRewrite, as ``planner_input`` gives
    it), the in-place writes into a constant or into a value read afterwards, which
    tvm-memplan's planner (``transform.GuardInplaceWrites``) gives a copy to write; functions
    with none are left out."""
    if not isinstance(mod, tvm.IRModule):
        raise TypeError(f"unsafe_inplace_writes expects a tvm.IRModule, got {type(mod).__name__}")
    return {
        str(name): list(records) for name, records in _ffi_api.unsafe_inplace_writes(mod).items()
    }
