"""Memory to run the model, per build, per function and in total: the figures a device budget is
checked against, computed here once from the report's records.

- weights: parameters and constants the module keeps;
- VM: what the Relax VM allocates for a function once planned (the plan's own figure:
  ``FunctionMemoryPlan.applied_bytes`` for the memplan build, ``stock_bytes`` for the stock
  build). Relax functions run one at a time, so the model's figure is the largest function's
  (their sum when Relax functions call each other);
- workspace and stack: kernels run one at a time on the VM, so the most one kernel takes (a
  kernel that calls another adds the callee's, which is live at the same time);
- total: their sum; and, as a secondary line, every allocation summed as if none were ever
  freed or reused.
"""

from __future__ import annotations

import math

import tvm

from . import origins
from .model import BUILDS, FunctionNeeds, Kernel, Needs, Report, Summary, Weight
from .origins import Origin

__all__ = ["placement_of", "summary", "vm_peak", "weights"]


def _sum(values) -> int | None:
    values = list(values)
    return None if any(v is None for v in values) else sum(values)


def _max(values) -> int | None:
    values = list(values)
    return None if any(v is None for v in values) else max(values, default=0)


def vm_peak(values, calls_each_other: bool) -> int | None:
    """The VM figure of several Relax functions: the largest (they run one at a time), or the
    sum when they call each other."""
    return _sum(values) if calls_each_other else _max(values)


def _tensor_bytes(ty) -> int | None:
    if not isinstance(ty, tvm.relax.TensorType) or ty.shape is None:
        return None
    dims = []
    for value in ty.shape.values:
        if not isinstance(value, tvm.prim.IntImm):
            return None
        dims.append(int(value.value))
    dtype = tvm.runtime.DataType(str(ty.dtype))
    return math.prod(dims) * ((dtype.bits + 7) // 8) * dtype.lanes


def weights(
    mod: tvm.IRModule,
    bindings: dict[str, dict[str, Origin]],
    constant_names: dict | None = None,
) -> list[Weight]:
    """Every constant (once, however many functions use it) and every parameter past a
    function's ``num_input``, largest first."""
    constant_names = constant_names or {}
    found: list[Weight] = []
    seen: set = set()
    for gv, func in sorted(mod.functions.items(), key=lambda item: item[0].name_hint):
        if not isinstance(func, tvm.relax.Function):
            continue
        name = gv.name_hint
        known = bindings.get(name, {})
        num_input = func.attrs.get("num_input") if func.attrs is not None else None
        if num_input is not None:
            for param in list(func.params)[int(num_input) :]:
                found.append(_weight(param.name, name, param.ty, "parameter", None))
        for binding in origins.bindings(func):
            constants = []

            def visit(node, constants=constants):
                if isinstance(node, tvm.ir.GenericConst):
                    constants.append(node)

            if not isinstance(binding.value, tvm.relax.If):  # its branches come on their own
                tvm.relax.analysis.post_order_visit(binding.value, visit)
            for c in constants:
                if c in seen:
                    continue
                seen.add(c)
                label = constant_names.get(c, f"constant {len(seen) - 1}")
                found.append(_weight(label, name, c.ty, "constant", known.get(binding.var.name)))
    return sorted(found, key=lambda w: (-(w.bytes or 0), w.function, w.name))


def _weight(name: str, function: str, ty, kind: str, used_by: Origin | None) -> Weight:
    shape = []
    if isinstance(ty, tvm.relax.TensorType) and ty.shape is not None:
        shape = [
            int(v.value) if isinstance(v, tvm.prim.IntImm) else str(v) for v in ty.shape.values
        ]
    dtype = str(ty.dtype) if isinstance(ty, tvm.relax.TensorType) else ""
    return Weight(name, function, _tensor_bytes(ty), shape, dtype, kind, used_by)


def placement_of(decision, build: str) -> str:
    """Where an allocation lives in a build: "stack" or "workspace" (or "other", memory that
    is neither: a device's). The memplan build leaves non-CPU memory to TVM's rule ("stock")
    and allocations annotated ``disable_lower_builtin`` as plain (stack) allocations."""
    where = str(decision.placement) if build == "memplan" else str(decision.stock_placement)
    if where == "stock":
        where = str(decision.stock_placement)
    if where == "unlowered":
        where = "stack"
    return where if where in ("stack", "workspace") else "other"


def _own(kernel: Kernel, build: str, where: str) -> int | None:
    decisions = kernel.placement if build == "memplan" else kernel.stock_placement
    return _sum(
        None if d.nbytes is None else int(d.nbytes)
        for d in decisions
        if placement_of(d, build) == where
    )


def _kernel_figures(kernels: list[Kernel]) -> None:
    """Each kernel's workspace and stack per build, with those of the kernels it calls."""
    by_name = {k.name: k for k in kernels}
    for where in ("workspace", "stack"):
        for build in BUILDS:
            done: dict[str, int | None] = {}

            def figure(name: str, visiting: frozenset, where=where, build=build, done=done):
                if name in done:
                    return done[name]
                kernel = by_name[name]
                own = _own(kernel, build, where)
                callees = [figure(c, visiting | {name}) for c in kernel.calls if c not in visiting]
                value = (
                    None
                    if own is None
                    else (own + (_max(callees) or 0) if None not in callees else None)
                )
                done[name] = value
                return value

            for k in kernels:
                getattr(k, where)[build] = figure(k.name, frozenset())


def _relax_calls(mod: tvm.IRModule | None, function: str) -> set[str]:
    """The PrimFuncs a Relax function of a planner's input calls."""
    if mod is None or function not in {gv.name_hint for gv in mod.functions}:
        return set()
    prim = {gv.name_hint for gv, f in mod.functions.items() if isinstance(f, tvm.tirx.PrimFunc)}
    called: set[str] = set()

    def visit(node):
        is_call = isinstance(node, tvm.relax.Call) and isinstance(node.op, tvm.ir.GlobalVar)
        if is_call and node.op.name_hint in prim:
            called.add(node.op.name_hint)

    tvm.relax.analysis.post_order_visit(mod[function], visit)
    return called


def _complete(n: Needs) -> Needs:
    n.total = _sum([n.weights, n.vm, n.workspace, n.stack])
    return n


def summary(report: Report, relax, shape_values: dict[str, int]) -> Summary:
    """The memory each build needs, per function and in total."""
    kernels = report.kernels
    _kernel_figures(kernels)
    by_name = {k.name: k for k in kernels}
    weight_total = _sum(w.bytes for w in report.weights)

    def kernel_peak(names, build: str, where: str) -> int | None:
        return _max(getattr(by_name[n], where).get(build) for n in names if n in by_name)

    def all_kernels(build: str) -> int | None:
        return _sum(
            getattr(k, where).get(build) for k in kernels for where in ("workspace", "stack")
        )

    functions: list[FunctionNeeds] = []
    calls_each_other = False
    for f in report.relax:
        if relax is not None and _calls_other_relax(relax.mod, f.function):
            calls_each_other = True
        per_build = {}
        for build in BUILDS:
            if build == "memplan":
                plan = f.plan
                vm = None if plan is None or plan.symbolic_allocations else int(plan.applied_bytes)
                called = _relax_calls(relax.memplan_input, f.function) if relax else set()
            else:
                plan = f.stock_build
                vm = None if plan is None or plan.stock_bytes < 0 else int(plan.stock_bytes)
                called = _relax_calls(relax.stock_input, f.function) if relax else set()
            n = Needs(
                weights=_sum(w.bytes for w in report.weights if w.function == f.function),
                vm=vm,
                workspace=kernel_peak(called, build, "workspace"),
                stack=kernel_peak(called, build, "stack"),
            )
            n.all_allocations = _sum(
                [n.weights, vm]
                + [
                    getattr(by_name[c], where).get(build)
                    for c in called
                    if c in by_name
                    for where in ("workspace", "stack")
                ]
            )
            per_build[build] = _complete(n)
        functions.append(
            FunctionNeeds(f.function, "relax", per_build["stock"], per_build["memplan"])
        )
    if not report.relax:
        for k in kernels:
            per_build = {
                build: _complete(
                    Needs(
                        weights=0,
                        vm=0,
                        workspace=k.workspace.get(build),
                        stack=k.stack.get(build),
                        all_allocations=_sum([k.workspace.get(build), k.stack.get(build)]),
                    )
                )
                for build in BUILDS
            }
            functions.append(FunctionNeeds(k.name, "tir", per_build["stock"], per_build["memplan"]))
    totals = {}
    for build in BUILDS:
        vms = [getattr(f, build).vm for f in functions if f.kind == "relax"]
        vm = vm_peak(vms, calls_each_other)
        n = Needs(
            weights=weight_total,
            vm=vm,
            workspace=kernel_peak([k.name for k in kernels], build, "workspace"),
            stack=kernel_peak([k.name for k in kernels], build, "stack"),
        )
        n.all_allocations = _sum([weight_total, _sum(vms), all_kernels(build)])
        totals[build] = _complete(n)
    notes = []
    if calls_each_other:
        notes.append("Relax functions call each other: the VM figure is their sum")
    elif len(report.relax) > 1:
        notes.append("Relax functions run one at a time: the VM figure is the largest function's")
    return Summary(totals["stock"], totals["memplan"], functions, notes=notes)


def _calls_other_relax(mod: tvm.IRModule, function: str) -> bool:
    relax_globals = {gv for gv, f in mod.functions.items() if isinstance(f, tvm.relax.Function)}
    found = False

    def visit(node):
        nonlocal found
        if isinstance(node, tvm.relax.Call) and node.op in relax_globals:
            found = True

    tvm.relax.analysis.post_order_visit(mod[function], visit)
    return found
