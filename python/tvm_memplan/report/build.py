"""Building the report: what each memory pass does to a model, next to what the stock TVM pass
does to the same IR.

The module is compiled once with the ``"memplan"`` pipelines while an instrument records what
our compaction and our placement tagging receive; both our pass and the stock pass (or rule)
are then judged on exactly that IR. The Relax functions are judged before legalization, where
the in-place passes run, and where our planner runs in the memplan pipeline (after our in-place
pass). The result is a ``model.Report``, which every renderer reads.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import tvm

from .. import analysis, pipeline, transform
from ..instrument import capture
from .load import ReportError, one_line
from .model import (
    CompactedBuffer,
    Compaction,
    FunctionMemory,
    FunctionSummary,
    Inplace,
    InplaceBinding,
    PlacedAllocation,
    Placement,
    Report,
    StorageRecord,
    TensorRecord,
)

__all__ = ["build_report"]

_OUR_COMPACTION = "tvm_memplan.CompactBufferAllocation"
_OUR_PLACEMENT = "tvm_memplan.TagAllocationPlacement"


@contextmanager
def stage(name: str, progress: Callable[[str], None] | None) -> Iterator[None]:
    """Run one stage: say so on `progress` once it has taken a second, and turn a failure into
    a one-line ReportError naming the stage."""
    timer = None
    if progress is not None:
        timer = threading.Timer(1.0, progress, args=(f"{name}...",))
        timer.daemon = True
        timer.start()
    try:
        yield
    except ReportError:
        raise
    except Exception as err:
        raise ReportError(f"{name} failed: {one_line(err)}") from err
    finally:
        if timer is not None:
            timer.cancel()


def _relax_functions(mod: tvm.IRModule) -> dict[str, tvm.relax.Function]:
    return {
        gv.name_hint: f
        for gv, f in sorted(mod.functions.items(), key=lambda item: item[0].name_hint)
        if isinstance(f, tvm.relax.Function)
    }


def _calls_relax_functions(mod: tvm.IRModule) -> bool:
    """Whether a Relax function calls another Relax function of the module."""
    relax_globals = {gv for gv, f in mod.functions.items() if isinstance(f, tvm.relax.Function)}
    found = False

    def visit(node):
        nonlocal found
        if isinstance(node, tvm.relax.Call) and node.op in relax_globals:
            found = True

    for func in _relax_functions(mod).values():
        tvm.relax.analysis.post_order_visit(func, visit)
    return found


def _count_inplace_calls(mod: tvm.IRModule) -> int:
    count = 0

    def visit(node):
        nonlocal count
        if isinstance(node, tvm.relax.Call) and getattr(node.op, "name", "") == (
            "relax.call_tir_inplace"
        ):
            count += 1

    for func in _relax_functions(mod).values():
        tvm.relax.analysis.post_order_visit(func, visit)
    return count


# ---- Relax: in-place calls and memory plans ----------------------------------------------------


def _storages(records) -> list[StorageRecord]:
    return [StorageRecord(int(s.bytes), str(s.size), int(s.device), str(s.scope)) for s in records]


def _function_memory(plan, stock_build: int | None) -> FunctionMemory:
    tensors = [
        TensorRecord(
            binding=str(t.binding),
            op=str(t.op),
            shape=_json_shape(t.shape),
            dtype=str(t.dtype),
            bytes=int(t.bytes),
            first=int(t.first),
            last=int(t.last),
            storage=int(t.storage),
            offset=int(t.offset),
            stock_storage=int(t.stock_storage),
            reason=str(t.reason),
        )
        for t in plan.tensors
    ]
    return FunctionMemory(
        function=str(plan.function),
        planner=str(plan.planner),
        reason=str(plan.reason),
        num_points=int(plan.num_points),
        bound_bytes=int(plan.peak_live_bytes),
        stock_bytes=None if plan.stock_bytes < 0 else int(plan.stock_bytes),
        ours_bytes=int(plan.applied_bytes),
        stock_build_bytes=stock_build,
        tensors=tensors,
        storages=_storages(plan.storages),
        stock_storages=_storages(plan.stock_storages),
        live_bytes=[int(b) for b in plan.live_bytes()],
    )


def _relax_sections(
    mod: tvm.IRModule, target: tvm.target.Target
) -> tuple[Inplace, list[FunctionMemory]]:
    """In-place conversions and planned VM storage: no in-place pass and TVM's planner / TVM's
    in-place pass and planner / ours (as the memplan pipeline runs them), and our plan per
    function."""
    notes = []
    ours, stats = transform.use_inplace_calls(mod, planner="memplan")
    stock = None
    if _calls_relax_functions(mod):
        # TVM 0.27's pass can recurse without end (and kill the process) on such calls.
        notes.append(
            "the stock DataflowUseInplaceCalls is not run: this module calls Relax functions "
            "from Relax functions, on which it can recurse without end"
        )
    else:
        stock = tvm.relax.transform.DataflowUseInplaceCalls()(mod)
    already = _count_inplace_calls(mod)
    ours_plans = analysis.memory_plan(ours, target)
    # The stock build: TVM's in-place pass (if it can run) and TVM's planner.
    stock_build = {
        str(p.function): (None if p.stock_bytes < 0 else int(p.stock_bytes))
        for p in analysis.memory_plan(stock if stock is not None else mod, target)
    }
    memory = [_function_memory(p, stock_build.get(str(p.function))) for p in ours_plans]
    symbolic = any(p.symbolic_allocations or p.stock_bytes < 0 for p in ours_plans)
    stock_total = None if stock is None else _sum(stock_build.values())
    planned = {
        "none": analysis.planned_storage(mod, target).total_bytes,
        "stock": stock_total,
        "ours": None if symbolic else sum(m.ours_bytes for m in memory),
        "bound": None if symbolic else sum(m.bound_bytes for m in memory),
    }
    bindings = [
        InplaceBinding(
            function=name,
            binding=c.binding,
            op=c.op,
            inplace=c.inplace,
            arg=c.arg,
            reason=c.reason,
        )
        for name, func in _relax_functions(mod).items()
        for c in analysis.inplace_candidates(func, mod, planner="memplan")
    ]
    conversions = {
        "stock": None if stock is None else _count_inplace_calls(stock) - already,
        "ours": stats.rewritten,
    }
    return Inplace(conversions, planned, bindings, notes), memory


# ---- TIR: compaction and placement -------------------------------------------------------------


def _allocated(mod: tvm.IRModule) -> dict[tuple[str, str], int | None]:
    """(function, buffer) -> bytes, for every buffer a module's PrimFuncs allocate."""
    return {
        (a.function or "", a.name): a.size_bytes
        for a in analysis.allocation_summary(mod)
        if a.allocates
    }


def _json_shape(shape: tuple) -> list:
    return [dim if isinstance(dim, int) else str(dim) for dim in shape]


def _sum(values) -> int | None:
    values = list(values)
    return None if None in values else sum(values)


def _compaction_section(before: tvm.IRModule) -> Compaction:
    """Per allocated buffer: bytes as scheduled, after the stock pass, after ours."""
    stock = _allocated(tvm.s_tir.transform.CompactBufferAllocation()(before))
    buffers = []
    for gv, func in sorted(before.functions.items(), key=lambda item: item[0].name_hint):
        if not isinstance(func, tvm.tirx.PrimFunc):
            continue
        for region in analysis.compacted_regions(func):
            buffers.append(
                CompactedBuffer(
                    function=gv.name_hint,
                    buffer=region.name,
                    dtype=region.dtype,
                    shape=_json_shape(region.original_shape),
                    compacted_shape=_json_shape(region.shape),
                    original_bytes=region.original_bytes,
                    stock_bytes=stock.get((gv.name_hint, region.name)),
                    ours_bytes=region.compacted_bytes,
                    reason=region.reason,
                )
            )
    totals = {
        f"{column}_bytes": _sum(getattr(b, f"{column}_bytes") for b in buffers)
        for column in ("original", "stock", "ours")
    }
    return Compaction(buffers, totals)


def _placement_section(before: tvm.IRModule) -> Placement:
    """Per allocation of host code: where TVM's rule puts it and where ours does, and why."""
    allocations = [
        PlacedAllocation(
            function=d.function,
            buffer=d.name,
            scope=d.scope,
            bytes=d.nbytes,
            stock=d.stock_placement,
            ours=d.placement,
            reason=d.reason,
        )
        for d in analysis.allocation_plan(before)
    ]
    totals = {}
    for side in ("stock", "ours"):
        for placement in ("stack", "workspace"):
            chosen = [a for a in allocations if getattr(a, side) == placement]
            totals[f"{side}_{placement}"] = {
                "count": len(chosen),
                "bytes": _sum(a.bytes for a in chosen),
            }
    return Placement(allocations, totals)


def _summary(
    compaction: Compaction, placement: Placement, memory: list[FunctionMemory]
) -> list[FunctionSummary]:
    """One line per function: stock build against memplan build."""
    rows = [
        FunctionSummary(
            function=m.function,
            kind="relax",
            vm_stock=m.stock_build_bytes,
            vm_ours=m.ours_bytes,
            vm_bound=m.bound_bytes,
        )
        for m in memory
    ]
    functions = sorted(
        {b.function for b in compaction.buffers} | {a.function for a in placement.allocations}
    )
    for name in functions:
        buffers = [b for b in compaction.buffers if b.function == name]
        placed = [a for a in placement.allocations if a.function == name]

        def placed_bytes(side: str, where: str, placed=placed) -> int | None:
            return _sum(a.bytes for a in placed if getattr(a, side) == where)

        rows.append(
            FunctionSummary(
                function=name,
                kind="tir",
                compacted_stock=_sum(b.stock_bytes for b in buffers),
                compacted_ours=_sum(b.ours_bytes for b in buffers),
                stack_stock=placed_bytes("stock", "stack"),
                stack_ours=placed_bytes("ours", "stack"),
                workspace_stock=placed_bytes("stock", "workspace"),
                workspace_ours=placed_bytes("ours", "workspace"),
            )
        )
    return rows


def build_report(
    mod: tvm.IRModule,
    target: tvm.target.Target,
    *,
    source: str = "",
    progress: Callable[[str], None] | None = None,
) -> Report:
    """The report as data. ``progress`` receives a line for each stage that takes more than a
    second."""
    inplace, memory = None, []
    if _relax_functions(mod):
        with stage("in-place calls and memory plans (ours and stock)", progress):
            inplace, memory = _relax_sections(mod, target)
    with stage('compiling with the "memplan" pipelines', progress):
        seen = capture(
            lambda: pipeline.compile(mod, target=target), [_OUR_COMPACTION, _OUR_PLACEMENT]
        )
    with stage("compaction (CompactBufferAllocation, ours and stock)", progress):
        compaction = _compaction_section(seen[_OUR_COMPACTION])
    with stage("placement (LowerTVMBuiltin, ours and stock)", progress):
        placement = _placement_section(seen[_OUR_PLACEMENT])
    return Report(
        input=source,
        target=target.kind.name,
        compaction=compaction,
        placement=placement,
        inplace=inplace,
        memory=memory,
        summary=_summary(compaction, placement, memory),
    )
