"""The memory a Relax module's VM allocates once TVM has planned it."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import tvm

from ..instrument import capture

__all__ = ["PlannedStorage", "planned_storage", "storage_after_planning"]

_PLANNER = "StaticPlanBlockMemory"


@dataclass(frozen=True)
class PlannedStorage:
    """Bytes allocated by the Relax functions of a module after memory planning."""

    storage_bytes: int
    """``R.memory.alloc_storage``: the storage StaticPlanBlockMemory planned and reuses."""
    output_bytes: int
    """``R.builtin.alloc_tensor``: tensors the planner leaves alone (the functions' outputs,
    tensors that escape)."""

    @property
    def total_bytes(self) -> int:
        return self.storage_bytes + self.output_bytes


def planned_storage(mod: tvm.IRModule, target="llvm") -> PlannedStorage:
    """Run TVM's default Relax pipeline (``relax.get_pipeline("default")``, what ``tvm.compile``
    runs on the CPU) on ``mod`` and count what its Relax functions allocate right after
    StaticPlanBlockMemory. Shapes must be static."""
    if not isinstance(mod, tvm.IRModule):
        raise TypeError(f"planned_storage expects a tvm.IRModule, got {type(mod).__name__}")
    with tvm.target.Target(target):
        planned = capture(lambda: tvm.relax.get_pipeline("default")(mod), [_PLANNER], after=True)[
            _PLANNER
        ]
    return storage_after_planning(planned)


def storage_after_planning(planned: tvm.IRModule) -> PlannedStorage:
    """What the Relax functions of ``planned``, a module a memory planner has just planned
    (TVM's or tvm-memplan's), allocate. Shapes must be static."""
    storage = outputs = 0

    def visit(node):
        nonlocal storage, outputs
        if not (isinstance(node, tvm.relax.Call) and isinstance(node.op, tvm.ir.Op)):
            return
        if node.op.name == "relax.memory.alloc_storage":
            storage += int(node.args[0].values[0])
        elif node.op.name == "relax.builtin.alloc_tensor":
            elements = int(np.prod([int(v) for v in node.args[0].values]))
            outputs += elements * tvm.runtime.DataType(node.args[1].value).bits // 8

    for func in planned.functions.values():
        if isinstance(func, tvm.relax.Function):
            tvm.relax.analysis.post_order_visit(func, visit)
    return PlannedStorage(storage, outputs)
