"""Memory to run the model, per build, per function and in total: the figures a device budget is
checked against, computed here once from the report's records.

- weights: parameters and constants the module keeps;
- VM: what the Relax VM allocates for a function once planned, the plan's own figure
  (``FunctionMemoryPlan.planned_size`` for the memplan build, or ``stock_size`` where the pass
  plans the function as TVM does; ``stock_size`` of the stock build). Relax functions run one at
  a time, so the model's figure is the largest function's (their sum when Relax functions call
  each other);
- workspace and stack: kernels run one at a time on the VM, so the most one kernel takes (a
  kernel that calls another adds the callee's, which is live at the same time);
- total: their sum; and, as a secondary line, everything summed as if no allocation were ever
  freed or reused.

Symbolic sizes are expressions of shape variables, evaluated at each variable's value: the one
given (``shape_values``), else its ``tir_var_upper_bound`` (of the function, or for kernels the
largest of the functions'). A figure that depends on a variable with neither stays an
expression (``Needs.symbolic``) and its number is None.
"""

from __future__ import annotations

import math

import tvm

from .. import analysis
from . import origins, sizes
from .load import ReportError
from .model import BUILDS, FunctionNeeds, Kernel, Needs, Report, Summary, Weight
from .origins import Origin

__all__ = ["bounds", "calls_other_relax", "placement_of", "summary", "vm_peak", "weights"]

PARTS = ("weights", "vm", "workspace", "stack")


def vm_peak(values, calls_each_other: bool):
    """The VM figure of several Relax functions: the largest (they run one at a time), or the
    sum when they call each other."""
    values = list(values)
    if not calls_each_other:
        return sizes.largest(values)
    return _total(values)


def _total(values):
    total = 0
    for v in values:
        total = sizes.add(total, v)
    return total


def _tensor_bytes(ty) -> int | None:
    if not isinstance(ty, tvm.relax.TensorType) or ty.shape is None:
        return None
    dims = []
    for value in ty.shape.values:
        if not isinstance(value, tvm.prim.IntImm):
            return None
        dims.append(int(value.value))
    return math.prod(dims) * analysis.element_bytes(ty.dtype)


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
            readers = _first_readers(func)
            for param in list(func.params)[int(num_input) :]:
                reader = readers.get(param.name)
                found.append(
                    _weight(param.name, name, param.ty, "parameter", known.get(reader or ""))
                )
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


def _first_readers(func: tvm.relax.Function) -> dict[str, str]:
    """Per variable, the first binding that reads it."""
    readers: dict[str, str] = {}
    for binding in origins.bindings(func):
        used: list = []

        def visit(node, used=used):
            if isinstance(node, tvm.relax.Var):
                used.append(node.name)

        if not isinstance(binding.value, tvm.relax.If):
            tvm.relax.analysis.post_order_visit(binding.value, visit)
        for name in used:
            readers.setdefault(name, binding.var.name)
    return readers


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


def _decision_size(d):
    if d.nbytes is not None:
        return int(d.nbytes)
    return d.size


def _own(kernel: Kernel, build: str, where: str):
    decisions = kernel.placement if build == "memplan" else kernel.stock_placement
    return _total(_decision_size(d) for d in decisions if placement_of(d, build) == where)


def _kernel_sizes(kernels: list[Kernel]) -> dict[tuple[str, str, str], object]:
    """(kernel, build, "workspace" | "stack") -> size, with the kernels it calls."""
    by_name = {k.name: k for k in kernels}
    result: dict[tuple[str, str, str], object] = {}

    def size(name: str, build: str, where: str, visiting: frozenset):
        key = (name, build, where)
        if key not in result:
            kernel = by_name[name]
            callees = [
                size(c, build, where, visiting | {name})
                for c in kernel.calls
                if c in by_name and c not in visiting
            ]
            result[key] = sizes.add(_own(kernel, build, where), sizes.largest(callees))
        return result[key]

    for k in kernels:
        for build in BUILDS:
            for where in ("workspace", "stack"):
                size(k.name, build, where, frozenset())
    return result


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


def calls_other_relax(mod: tvm.IRModule, function: str) -> bool:
    """Whether Relax function ``function`` of ``mod`` calls another Relax function."""
    relax_globals = {gv for gv, f in mod.functions.items() if isinstance(f, tvm.relax.Function)}
    found = False

    def visit(node):
        nonlocal found
        if isinstance(node, tvm.relax.Call) and node.op in relax_globals:
            found = True

    tvm.relax.analysis.post_order_visit(mod[function], visit)
    return found


def bounds(mod: tvm.IRModule) -> dict[str, dict[str, int]]:
    """Per Relax function, its ``tir_var_upper_bound``."""
    result = {}
    for gv, func in mod.functions.items():
        if isinstance(func, tvm.relax.Function):
            attr = func.attrs.get("tir_var_upper_bound") if func.attrs is not None else None
            result[gv.name_hint] = {str(k): int(v) for k, v in (attr or {}).items()}
    return result


def _needs(parts: dict[str, object], everything, values: dict[str, int]) -> Needs:
    """Needs at ``values`` from sizes (ints or expressions)."""
    parts = dict(parts)
    parts["total"] = _total(parts[p] for p in PARTS)
    parts["all_allocations"] = everything
    needs = Needs()
    for key, size in parts.items():
        value = sizes.evaluate(size, values)
        setattr(needs, key, value)
        if value is None and size is not None and sizes.free_vars(size):
            needs.symbolic[key] = sizes.text(size)
    return needs


def _at(size, values: dict[str, int]):
    """The size at ``values`` when they fix it, else the size itself."""
    value = sizes.evaluate(size, values)
    return size if value is None else value


def plan_vars(plan) -> set[str]:
    """The shape variables a plan's sizes depend on."""
    found = set(sizes.free_vars(plan.planned_size)) | set(sizes.free_vars(plan.stock_size))
    for t in plan.tensors:
        found |= set(sizes.free_vars(t.size))
    for s in [*plan.storages, *plan.stock_storages]:
        found |= set(sizes.free_vars(s.size))
    return found


def _evaluated(plan, values: dict[str, int]):
    """The plan at ``values`` (``analysis.memory_plan_at``), when its sizes are symbolic and
    every variable they depend on has a value; otherwise None."""
    if plan is None:
        return None
    needed = plan_vars(plan)
    if not needed or needed - set(values):
        return None
    return analysis.memory_plan_at(plan, {name: values[name] for name in sorted(needed)})


def _vm(plan, evaluated, stock: bool):
    """What the VM allocates for a function: the plan's own figure, at the values where it is
    symbolic, else its expression. ``stock``: TVM's planner's figure; otherwise what the pass
    allocates (its plan, or the stock plan where it plans the function as TVM does)."""
    if plan is None:
        return None
    build = "stock" if stock else "memplan"
    if evaluated is not None:
        return evaluated.bytes_of(build)
    return sizes.simplify(plan.size_of(build))


def summary(report: Report, relax, shape_values: dict[str, int]) -> Summary:
    """The memory each build needs, per function and in total; evaluates the Relax plans and
    the kernels at the shape values (``RelaxFunction.plan_at``, ``Kernel.workspace``).
    ``relax``: the report's Relax builds (their modules and the plans without in-place pass),
    None for a module without Relax functions."""
    values = _ShapeValues(_module_bounds(relax), shape_values)
    appearing = _shape_vars(report)
    _check_given(shape_values, appearing)
    _evaluate_plans(report, values)
    kernels = _KernelSizes(report.kernels)
    _evaluate_kernels(report.kernels, kernels, values.kernels)
    calls_each_other = relax is not None and any(
        calls_other_relax(relax.mod, f.function) for f in report.relax
    )
    functions, vm_sizes = _function_needs(report, relax, kernels, values)
    totals = _module_needs(report, vm_sizes, kernels, values, calls_each_other)
    if report.inplace is not None and relax is not None and relax.none_plans is not None:
        report.inplace.without_inplace = _vm_without_inplace(
            relax.none_plans, values, calls_each_other
        )
    evaluated_at, sources = _evaluated_at(appearing, values)
    return Summary(
        totals["stock"],
        totals["memplan"],
        functions,
        evaluated_at=evaluated_at,
        value_sources=sources,
        unknown_vars=sorted(appearing - set(evaluated_at)),
        notes=values.notes + _calls_note(report, calls_each_other),
    )


def _module_bounds(relax) -> dict[str, dict[str, int]]:
    """Per Relax function, its shape variable bounds: those of the module, and those a
    pipeline attaches itself (MLC-LLM's does): the bounds the planner saw count."""
    module_bounds = bounds(relax.mod) if relax is not None else {}
    for planned in (relax.stock_input, relax.memplan_input) if relax is not None else ():
        for function, found in (bounds(planned) if planned is not None else {}).items():
            module_bounds[function] = {**module_bounds.get(function, {}), **found}
    return module_bounds


class _ShapeValues:
    """The values the figures are evaluated at: per Relax function, the values given within
    its bounds, else its bounds; for kernels, the largest bound of any function (the peak over
    the functions' calls) unless a value is given."""

    def __init__(self, module_bounds: dict[str, dict[str, int]], given: dict[str, int]):
        self.bounds, self.given = module_bounds, given
        self.kernels: dict[str, int] = {}
        for found in module_bounds.values():
            for name, bound in found.items():
                self.kernels[name] = max(bound, self.kernels.get(name, bound))
        self.kernels.update(given)
        #: Per function, the given values past its bounds (its figures stay at the bound).
        self.past: dict[str, set[str]] = {}
        self.notes: list[str] = []
        for function, found in module_bounds.items():
            for name, bound in found.items():
                value = given.get(name)
                if value is not None and value > bound:
                    self.past.setdefault(function, set()).add(name)
                    self.notes.append(
                        f"{name} = {value} is past its tir_var_upper_bound {bound} in "
                        f"{function}: such a call raises an error; its figures are at the bound"
                    )

    def of(self, function: str) -> dict[str, int]:
        """The values a Relax function's figures are evaluated at."""
        past = self.past.get(function, set())
        given = {k: v for k, v in self.given.items() if k not in past}
        return {**self.bounds.get(function, {}), **given}


def _shape_vars(report: Report) -> set[str]:
    """Every shape variable a figure depends on: of the Relax plans and the placements."""
    appearing: set[str] = set()
    for f in report.relax:
        for plan in (f.plan, f.stock_build):
            if plan is not None:
                appearing |= set(sizes.free_vars(plan.planned_size))
                appearing |= set(sizes.free_vars(plan.stock_size))
    for k in report.kernels:
        for d in [*k.placement, *k.stock_placement]:
            appearing |= set(sizes.free_vars(d.size))
    return appearing


def _check_given(shape_values: dict[str, int], appearing: set[str]) -> None:
    """A ReportError when a value is given for a variable no size depends on."""
    unknown_given = sorted(set(shape_values) - appearing)
    if unknown_given:
        raise ReportError(
            f"shape variable values name {', '.join(unknown_given)}, which no size of this "
            f"model depends on (its shape variables: {', '.join(sorted(appearing)) or 'none'})"
        )


def _evaluate_plans(report: Report, values: _ShapeValues) -> None:
    """Each Relax function's plans at its values (``plan_at``, ``stock_build_at``), and the
    bytes of its plan with every concatenation copying (``with_copies``)."""
    for f in report.relax:
        at = values.of(f.function)
        f.plan_at = _evaluated(f.plan, at)
        f.stock_build_at = _evaluated(f.stock_build, at)
        if f.copies_plan is not None:
            copies = _vm(f.copies_plan, _evaluated(f.copies_plan, at), False)
            f.with_copies = sizes.evaluate(copies, at)


class _KernelSizes:
    """The kernels' workspace and stack per build, each with the kernels it calls, and which
    kernels each build has."""

    def __init__(self, kernels: list[Kernel]):
        self.sizes = _kernel_sizes(kernels)
        self.names = {k.name for k in kernels}
        self.present = {build: {k.name for k in kernels if build in k.builds} for build in BUILDS}

    def size(self, name: str, build: str, where: str):
        return self.sizes[(name, build, where)]

    def peak(self, names, build: str, where: str):
        """The most one of ``names`` takes in ``where`` (they run one at a time), its terms in
        name order so that a symbolic figure reads the same from run to run."""
        present = sorted(n for n in names if n in self.present[build])
        return sizes.largest(self.size(n, build, where) for n in present)

    def total(self, build: str, names):
        """Everything ``names`` allocate, workspace and stack, as if nothing were reused."""
        return _total(
            self.size(n, build, w)
            for n in sorted(names)
            if n in self.present[build]
            for w in ("workspace", "stack")
        )


def _evaluate_kernels(kernels: list[Kernel], found: _KernelSizes, values: dict[str, int]):
    """Each kernel's workspace and stack per build at ``values`` (``Kernel.workspace``,
    ``Kernel.stack``; None where the build has no such kernel), with the expressions of those
    that stay symbolic (``Kernel.symbolic``)."""
    for k in kernels:
        for where in ("workspace", "stack"):
            table = getattr(k, where)
            for build in BUILDS:
                if build not in k.builds:
                    table[build] = None  # the build has no such kernel
                    continue
                size = found.size(k.name, build, where)
                table[build] = sizes.evaluate(size, values)
                if table[build] is None and size is not None:
                    k.symbolic[f"{where}.{build}"] = sizes.text(size)


def _function_needs(
    report: Report, relax, kernels: _KernelSizes, values: _ShapeValues
) -> tuple[list[FunctionNeeds], dict[str, list]]:
    """What each function needs in each build, and per build each Relax function's VM size.
    Without Relax functions, each kernel is a function of its own."""
    functions: list[FunctionNeeds] = []
    vm_sizes: dict[str, list] = {build: [] for build in BUILDS}
    for f in report.relax:
        per_build = {}
        for build in BUILDS:
            if build == "memplan":
                vm = _vm(f.plan, f.plan_at, stock=False)
                called = _relax_calls(relax.memplan_input, f.function) if relax else set()
            else:
                vm = _vm(f.stock_build, f.stock_build_at, stock=True)
                called = _relax_calls(relax.stock_input, f.function) if relax else set()
            vm_sizes[build].append(vm)
            called &= kernels.names
            weight = _total(w.bytes for w in report.weights if w.function == f.function)
            parts = {
                "weights": weight,
                "vm": vm,
                "workspace": kernels.peak(called, build, "workspace"),
                "stack": kernels.peak(called, build, "stack"),
            }
            everything = _total([weight, vm, kernels.total(build, called)])
            per_build[build] = _needs(parts, everything, values.of(f.function))
        functions.append(
            FunctionNeeds(f.function, "relax", per_build["stock"], per_build["memplan"])
        )
    if not report.relax:
        for k in report.kernels:
            per_build = {}
            for build in BUILDS:
                parts = {
                    "weights": 0,
                    "vm": 0,
                    "workspace": kernels.size(k.name, build, "workspace"),
                    "stack": kernels.size(k.name, build, "stack"),
                }
                per_build[build] = _needs(parts, kernels.total(build, [k.name]), values.kernels)
            functions.append(FunctionNeeds(k.name, "tir", per_build["stock"], per_build["memplan"]))
    return functions, vm_sizes


def _module_needs(
    report: Report,
    vm_sizes: dict[str, list],
    kernels: _KernelSizes,
    values: _ShapeValues,
    calls_each_other: bool,
) -> dict[str, Needs]:
    """What the module needs in each build: the VM figure at each function's values, the
    kernels' at theirs."""
    weight_total = _total(w.bytes for w in report.weights)
    totals = {}
    for build in BUILDS:
        vms = [
            _at(v, values.of(f.function))
            for v, f in zip(vm_sizes[build], report.relax, strict=True)
        ]
        parts = {
            "weights": weight_total,
            "vm": vm_peak(vms, calls_each_other),
            "workspace": kernels.peak(kernels.names, build, "workspace"),
            "stack": kernels.peak(kernels.names, build, "stack"),
        }
        everything = _total([weight_total, _total(vms), kernels.total(build, kernels.names)])
        totals[build] = _needs(parts, everything, values.kernels)
        totals[build].held = _held(report, build)
    return totals


def _held(report: Report, build: str) -> int | None:
    """What the pooled allocator holds once every function of ``build`` has run: our plans
    (pool-sized) in the memplan build, TVM's planner's in the stock build; None without Relax
    functions or where a plan is missing (a failing pass)."""
    records = [f.plan if build == "memplan" else f.stock_build for f in report.relax]
    if not records or any(r is None for r in records):
        return None
    return analysis.held_by_records(records, build).held_bytes


def _vm_without_inplace(none_plans: dict, values: _ShapeValues, calls_each_other: bool):
    """The VM figure with TVM's planner and no in-place pass (``Inplace.without_inplace``)."""
    none = [
        _vm(p, _evaluated(p, values.of(name)), stock=True) for name, p in sorted(none_plans.items())
    ]
    return sizes.evaluate(vm_peak(none, calls_each_other), values.kernels)


def _calls_note(report: Report, calls_each_other: bool) -> list[str]:
    """How the functions' VM figures make the module's."""
    if calls_each_other:
        return ["Relax functions call each other: the VM figure is their sum"]
    if len(report.relax) > 1:
        return ["Relax functions run one at a time: the VM figure is the largest function's"]
    return []


def _evaluated_at(
    appearing: set[str], values: _ShapeValues
) -> tuple[dict[str, int], dict[str, str]]:
    """The value of each variable the figures depend on, and where it comes from: "given" or
    "bound" (variables with neither are left out)."""
    evaluated_at, sources = {}, {}
    for name in sorted(appearing):
        if name in values.given:
            evaluated_at[name], sources[name] = values.given[name], "given"
        elif name in values.kernels:
            evaluated_at[name], sources[name] = values.kernels[name], "bound"
    return evaluated_at, sources
