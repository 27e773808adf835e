"""The memory a Relax module's VM allocates once a planner has planned it, counted from the
planned IR itself: an independent count of what TVM's planner (or tvm-memplan's) emitted, which
the tests and the benchmarks check the planners' own records against."""

from __future__ import annotations

from dataclasses import dataclass

import tvm

from .. import pass_names
from ..instrument import capture
from ._helpers import element_bytes

__all__ = ["PlannedStorage", "planned_storage", "storage_after_planning"]


#: Bytes: an int, or an int64 TIR expression of the shape variables where the size is symbolic.
Bytes = int | tvm.prim.Expr


@dataclass(frozen=True)
class PlannedStorage:
    """Bytes allocated by the Relax functions of a module after memory planning (ints, or
    expressions of the shape variables where sizes are symbolic)."""

    storage_bytes: Bytes
    """``R.memory.alloc_storage``: the storage the planner planned and reuses."""
    output_bytes: Bytes
    """``R.builtin.alloc_tensor``: tensors the planner leaves alone (the functions' outputs,
    tensors that escape)."""

    @property
    def total_bytes(self) -> Bytes:
        return _add(self.storage_bytes, self.output_bytes)


def planned_storage(mod: tvm.IRModule, target="llvm") -> PlannedStorage:
    """Run TVM's default Relax pipeline (``relax.get_pipeline("default")``, what ``tvm.compile``
    runs on the CPU) on ``mod`` and count what its Relax functions allocate right after
    StaticPlanBlockMemory."""
    if not isinstance(mod, tvm.IRModule):
        raise TypeError(f"planned_storage expects a tvm.IRModule, got {type(mod).__name__}")
    with tvm.target.Target(target):
        planned = capture(
            lambda: tvm.relax.get_pipeline("default")(mod), [pass_names.STOCK_PLANNER], after=True
        )[pass_names.STOCK_PLANNER]
    return storage_after_planning(planned)


def _add(a: Bytes, b: Bytes) -> Bytes:
    if isinstance(a, int) and isinstance(b, int):
        return a + b
    total = tvm.sym.Analyzer().simplify(_expr(a) + _expr(b))
    return int(total.value) if isinstance(total, tvm.prim.IntImm) else total


def _expr(value: Bytes) -> tvm.prim.Expr:
    return tvm.tirx.IntImm("int64", value) if isinstance(value, int) else value


def _extent(value) -> Bytes:
    if isinstance(value, tvm.prim.IntImm):
        return int(value.value)
    return tvm.tirx.Cast("int64", value) if str(value.ty.dtype) != "int64" else value


def storage_after_planning(planned: tvm.IRModule) -> PlannedStorage:
    """What the Relax functions of ``planned``, a module a memory planner has just planned
    (TVM's or tvm-memplan's), allocate."""
    storage: Bytes = 0
    outputs: Bytes = 0

    def visit(node):
        nonlocal storage, outputs
        if not (isinstance(node, tvm.relax.Call) and isinstance(node.op, tvm.ir.Op)):
            return
        if node.op.name == "relax.memory.alloc_storage":
            storage = _add(storage, _extent(node.args[0].values[0]))
        elif node.op.name == "relax.builtin.alloc_tensor":
            size: Bytes = element_bytes(node.args[1].value)
            for extent in node.args[0].values:
                value = _extent(extent)
                size = (
                    size * value
                    if isinstance(size, int) and isinstance(value, int)
                    else (_expr(size) * _expr(value))
                )
            outputs = _add(outputs, size)

    for func in planned.functions.values():
        if isinstance(func, tvm.relax.Function):
            tvm.relax.analysis.post_order_visit(func, visit)
    return PlannedStorage(storage, outputs)
