"""What the Relax VM's pooled allocator holds, measured at run time and read off a plan.

TVM's VM, and MLC-LLM's engine, allocate every ``R.memory.alloc_storage`` (and every
``R.builtin.alloc_tensor``, which LowerAllocTensor turns into one) per call through the
PooledAllocator (``src/runtime/memory/pooled_allocator.h``): a request is rounded up to
``POOL_PAGE`` bytes, a freed block is reused only for a request of exactly that rounded size, and
nothing goes back to the device until an allocation fails. A process therefore holds, per rounded
size, the most blocks of that size ever live at once; a size seen once is held for good.

- ``recorded_pool()`` measures it: within the block, every VM created there allocates through a
  wrapper of ``vm.builtin.alloc_storage`` that records each distinct block (data pointer) the
  pool hands out, with its rounded size.
- ``held_by_plan(mod)`` applies the rule to a planned module: per function, the constant sizes
  of the storages it allocates, rounded; per size, the most any one function allocates; held is
  their sum (functions that never run at the same time, each holding all its storages while it
  runs). Storages of symbolic size are counted apart: they add a block per distinct size calls
  bring.
"""

from __future__ import annotations

import contextlib
from collections import Counter
from dataclasses import dataclass, field

import tvm
import tvm_ffi

__all__ = ["POOL_PAGE", "HeldByPlan", "PoolRecord", "held_by_plan", "pool_size", "recorded_pool"]

#: The PooledAllocator's rounding (its page size, kDefaultPageSize in TVM's runtime).
POOL_PAGE = 4096
_ALLOC_STORAGE = "vm.builtin.alloc_storage"


def pool_size(nbytes: int) -> int:
    """The block the pool hands out for a request of `nbytes`."""
    return -(-nbytes // POOL_PAGE) * POOL_PAGE


@dataclass
class PoolRecord:
    """The blocks the pool handed out while ``recorded_pool`` was active."""

    #: Distinct blocks: data pointer -> rounded size.
    blocks: dict[int, int] = field(default_factory=dict)
    #: Requests made, in bytes as asked.
    requests: list[int] = field(default_factory=list)

    @property
    def held_bytes(self) -> int:
        """What the pool holds: the sum of the distinct blocks' rounded sizes."""
        return sum(self.blocks.values())

    def sizes(self) -> Counter:
        """Blocks per rounded size."""
        return Counter(self.blocks.values())


@contextlib.contextmanager
def recorded_pool():
    """Record the pool's blocks for the VMs created inside the block (builtins are looked up
    when a VM is created): yields the PoolRecord, which fills as they run. TVM's own
    ``vm.builtin.alloc_storage`` is back in place when the block ends."""
    original = tvm.get_global_func(_ALLOC_STORAGE)
    alloc_tensor = tvm.get_global_func("vm.builtin.alloc_tensor")
    record = PoolRecord()

    def alloc_storage(vm, shape, device_index, dtype_hint, scope):
        storage = original(vm, shape, device_index, dtype_hint, scope)
        nbytes = 1
        for extent in shape:
            nbytes *= int(extent)
        nbytes *= tvm.runtime.DataType(str(dtype_hint)).itemsize
        record.requests.append(nbytes)
        start = alloc_tensor(storage, 0, tvm_ffi.Shape([1]), "uint8").data_ptr()
        record.blocks[start] = max(record.blocks.get(start, 0), pool_size(nbytes))
        return storage

    tvm_ffi.register_global_func(_ALLOC_STORAGE, alloc_storage, override=True)
    try:
        yield record
    finally:
        tvm_ffi.register_global_func(_ALLOC_STORAGE, original, override=True)


@dataclass(frozen=True)
class HeldByPlan:
    """The pool's rule applied to a planned module."""

    #: Per rounded size, the most blocks of it one function allocates.
    blocks: dict[int, int]
    #: Per function, the rounded constant sizes of its storages.
    functions: dict[str, list[int]]
    #: Per function, how many storages (or unplanned tensors) have a symbolic size.
    symbolic: dict[str, int]

    @property
    def held_bytes(self) -> int:
        return sum(size * count for size, count in self.blocks.items())

    @property
    def largest_function_bytes(self) -> int:
        """What the largest function alone allocates (rounded): the least any plan holds."""
        return max((sum(sizes) for sizes in self.functions.values()), default=0)


def _constant_bytes(shape, dtype: str | None) -> int | None:
    nbytes = 1 if dtype is None else tvm.runtime.DataType(dtype).itemsize
    for extent in shape.values:
        if not isinstance(extent, tvm.tirx.IntImm):
            return None
        nbytes *= int(extent)
    return nbytes


def held_by_plan(planned: tvm.IRModule) -> HeldByPlan:
    """The pool's rule applied to ``planned``, a module a memory planner (TVM's or ours) has just
    planned: its ``alloc_storage`` calls (bytes) and ``R.builtin.alloc_tensor`` calls (one block
    each, at their shape)."""
    functions: dict[str, list[int]] = {}
    symbolic: dict[str, int] = {}
    for gv, func in planned.functions.items():
        if not isinstance(func, tvm.relax.Function):
            continue
        sizes: list[int] = []
        unknown: list[int] = []  # one entry per allocation of symbolic size

        def visit(node, sizes=sizes, unknown=unknown):
            if not (isinstance(node, tvm.relax.Call) and isinstance(node.op, tvm.ir.Op)):
                return
            if node.op.name == "relax.memory.alloc_storage":
                nbytes = _constant_bytes(node.args[0], None)
            elif node.op.name == "relax.builtin.alloc_tensor":
                nbytes = _constant_bytes(node.args[0], str(node.args[1].value))
            else:
                return
            if nbytes is None:
                unknown.append(1)
            else:
                sizes.append(pool_size(nbytes))

        tvm.relax.analysis.post_order_visit(func, visit)
        functions[gv.name_hint] = sorted(sizes, reverse=True)
        symbolic[gv.name_hint] = len(unknown)
    blocks: Counter = Counter()
    for sizes in functions.values():
        for size, count in Counter(sizes).items():
            blocks[size] = max(blocks[size], count)
    return HeldByPlan(dict(blocks), functions, symbolic)
