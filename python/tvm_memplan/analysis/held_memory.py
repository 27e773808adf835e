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
import dataclasses
from collections import Counter
from dataclasses import dataclass, field

import tvm
import tvm_ffi

__all__ = [
    "POOL_PAGE",
    "HeldByPlan",
    "MLCKVCache",
    "PoolRecord",
    "held_by_plan",
    "held_by_records",
    "held_by_sizes",
    "pool_size",
    "recorded_pool",
]

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
    #: Bytes allocated once and kept beside the pool (``held_by_plan``'s ``resident``).
    resident_bytes: int = 0

    @property
    def held_bytes(self) -> int:
        return self.resident_bytes + sum(size * count for size, count in self.blocks.items())

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


def held_by_plan(planned: tvm.IRModule, resident: tuple[str, ...] = ()) -> HeldByPlan:
    """The pool's rule applied to ``planned``, a module a memory planner (TVM's or ours) has just
    planned: its ``alloc_storage`` calls (bytes) and ``R.builtin.alloc_tensor`` calls (one block
    each, at their shape). Functions named in ``resident`` allocate once and keep what they
    allocate (RewriteCUDAGraph's ``cuda_graph_alloc``, run once per VM): their storages are held
    beside the pool's blocks (``HeldByPlan.resident_bytes``), not shared with them."""
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
                sizes.append(nbytes)

        tvm.relax.analysis.post_order_visit(func, visit)
        functions[gv.name_hint] = sizes
        symbolic[gv.name_hint] = len(unknown)
    kept = {name: functions.pop(name) for name in resident if name in functions}
    held = held_by_sizes(functions, symbolic)
    return dataclasses.replace(held, resident_bytes=sum(sum(sizes) for sizes in kept.values()))


def held_by_records(plans, build: str = "memplan") -> HeldByPlan:
    """The rule on planner records (``analysis.memory_plan``'s FunctionMemoryPlans): ``build``
    "memplan" takes what our pass allocates (each storage at its pool-sized ``pooled_bytes``,
    or TVM's storages where the pass plans a function as TVM does), "stock" TVM's planner's
    storages on the same IR; each with the tensors allocated on their own at a constant size.
    Storages and tensors of symbolic size are left out (each call's size is a block of its
    own: see held_by_plan's ``symbolic``)."""
    if build not in ("memplan", "stock"):
        raise ValueError(f'build is "memplan" or "stock", got {build!r}')
    sizes = {}
    for plan in plans:
        ours = build == "memplan" and str(plan.planner) != "stock"
        if ours:
            blocks = [int(s.pooled_bytes) for s in plan.storages]
        else:
            blocks = [int(s.bytes) for s in plan.stock_storages]
        # Tensors no storage holds (results) are blocks of their own where their size is fixed.
        for tensor in plan.tensors:
            storage = tensor.storage if ours else tensor.stock_storage
            if int(storage) < 0 and isinstance(tensor.size, tvm.tirx.IntImm):
                blocks.append(int(tensor.size))
        sizes[str(plan.function)] = blocks
    return held_by_sizes(sizes)


def held_by_sizes(functions: dict[str, list[int]], symbolic: dict[str, int] | None = None):
    """The rule alone, on the bytes each function's storages are allocated with."""
    rounded = {
        name: sorted((pool_size(b) for b in sizes if b > 0), reverse=True)
        for name, sizes in functions.items()
    }
    blocks: Counter = Counter()
    for sizes in rounded.values():
        for size, count in Counter(sizes).items():
            blocks[size] = max(blocks[size], count)
    return HeldByPlan(dict(blocks), rounded, dict(symbolic or {}))


# ---- what MLC-LLM's engine does with the planned bytes ---------------------------------------


@dataclass(frozen=True)
class MLCKVCache:
    """MLC-LLM's sizing of the paged KV cache (``cpp/serve/config.cc`` of mlc-ai/mlc-llm,
    ``InferMaxTotalSequenceLength``): what is left of ``gpu_bytes * gpu_memory_utilization``
    after the parameters, twice the largest function's temporary-buffer estimate (its
    ``memory_usage`` metadata, doubled by the engine) and its fixed workspaces, in tokens of
    ``head_dim * kv_heads * layers * 4 + 1.25`` bytes (f16 keys and values, its page metadata).
    """

    num_layers: int
    num_attention_heads: int
    num_key_value_heads: int
    head_dim: int
    vocab_size: int
    prefill_chunk_size: int
    max_num_sequence: int

    @property
    def bytes_per_token(self) -> float:
        return self.head_dim * self.num_key_value_heads * self.num_layers * 4 + 1.25

    def workspace_bytes(self) -> float:
        """The engine's KV auxiliary, model and logit-processor workspaces."""
        chunk, seqs, qo, kv = (
            self.prefill_chunk_size,
            self.max_num_sequence,
            self.num_attention_heads,
            self.num_key_value_heads,
        )
        hidden = self.head_dim * qo
        kv_aux = (
            (seqs + 1) * 88
            + chunk * (qo + 1) * 8
            + chunk * self.head_dim * (qo + kv) * 4
            + 48 * 1024 * 1024
        )
        model = chunk * 4 + seqs * 4 + (chunk * 2 + seqs) * hidden * 2
        logits = seqs * 20 + seqs * self.vocab_size * 16.125
        return kv_aux + model + logits

    def tokens(
        self,
        temporary_bytes: int,
        params_bytes: int,
        gpu_bytes: int,
        gpu_memory_utilization: float = 0.85,
    ) -> int:
        """KV-cache tokens for a build whose largest function plans `temporary_bytes`."""
        free = (
            gpu_bytes * gpu_memory_utilization
            - params_bytes
            - 2 * temporary_bytes
            - self.workspace_bytes()
        )
        return int(free / self.bytes_per_token)
