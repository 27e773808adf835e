"""End to end: every model of the zoo (zoo.models) and every CPU workload
(zoo.workloads), compiled with the stock pipelines (``tvm.compile``) and with
ours (``tvm_memplan.compile``) for ``llvm`` and for ``c`` (exported with gcc, loaded back, run),
computes bit-identical outputs from the same random inputs; and the ``"memplan"`` builds really
ran our passes, with effects the stock builds do not have.

Each (case, target, pipeline) is compiled once per module and shared by the tests. Outputs are
compared per target: the llvm and c builds of a model differ in the last bits with either
pipeline, because TVM's C codegen prints float constants with 7 significant digits
(``1.767767e-01f`` for the float32 0.17677669) and calls libm's ``tanhf`` where its llvm codegen
expands tanh through ``llvm.exp``. The zoo is float32 only (the C backend has no ``half``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np
import pytest
import tvm

import tvm_memplan
from tvm_memplan.analysis import count_calls, storage_after_planning
from tvm_memplan.instrument import trace
from tvm_memplan.testing import (
    allocated_bytes,
    c_workspace_allocations,
    random_args,
    relax_inputs,
    repeated_relax_results,
)
from zoo.models import ZOO
from zoo.workloads import WORKLOADS

TARGETS = ("llvm", "c")
PIPELINES = {"stock": tvm.compile, "memplan": tvm_memplan.compile}
MODELS = sorted(ZOO)
CPU_WORKLOADS = sorted(name for name, workload in WORKLOADS.items() if not workload.gpu)

# Passes whose output the tests look at (the last module each returned).
INPLACE = "tvm_memplan.DataflowUseInplaceCalls"
STOCK_COMPACTION = "s_tir.CompactBufferAllocation"
OUR_COMPACTION = "tvm_memplan.CompactBufferAllocation"
STOCK_PLANNER = "StaticPlanBlockMemory"
OUR_PLANNER = "tvm_memplan.StaticPlanBlockMemory"
WATCHED = (INPLACE, STOCK_COMPACTION, OUR_COMPACTION, STOCK_PLANNER, OUR_PLANNER)

# What a "memplan" build must have run (besides TVM's passes), by kind of input.
OUR_TIR_PASSES = {
    OUR_COMPACTION,
    "tvm_memplan.VectorizeInplaceLoops",
    "tvm_memplan.TagAllocationPlacement",
    "tvm_memplan.LowerTVMBuiltin",
}
OUR_RELAX_PASSES = OUR_TIR_PASSES | {INPLACE, OUR_PLANNER}


@dataclass
class Build:
    """One compiled case: what runs, what ran, and the IR the tests look at."""

    module: tvm.runtime.Executable | tvm.runtime.Module  # the library loaded back for c
    passes: list[str]
    after: dict[str, tvm.IRModule] = field(default_factory=dict)
    source: str | None = None  # generated C of a PrimFunc module (target c)


def _slug(*parts: str) -> str:
    return re.sub(r"\W+", "_", "-".join(parts))


@pytest.fixture(scope="module")
def build(tmp_path_factory):
    """``build(kind, name, target, pipeline)``: the case compiled, cached for the module."""
    cache: dict[tuple[str, str, str, str], Build] = {}
    directory = tmp_path_factory.mktemp("end_to_end")

    def get(kind: str, name: str, target: str, pipeline: str) -> Build:
        key = (kind, name, target, pipeline)
        if key not in cache:
            mod = ZOO[name]()[0] if kind == "model" else WORKLOADS[name].build()
            passes = trace(lambda: PIPELINES[pipeline](mod, target), WATCHED)
            executable = passes.result
            result = Build(executable, passes.names, passes.after)
            if target == "c":
                if kind == "workload":
                    result.source = executable.mod.inspect_source()
                path = directory / f"{_slug(*key)}.so"
                executable.export_library(str(path))
                result.module = tvm.runtime.load_module(str(path))
            cache[key] = result
        return cache[key]

    return get


# ---- identical outputs ------------------------------------------------------------------------


def _run_model(build: Build, name: str) -> list[np.ndarray]:
    """Three runs on fresh copies of the same inputs: the same outputs, the inputs untouched (an
    input or a constant overwritten in place would show from the second run on)."""
    mod, func_name = ZOO[name]()
    inputs = relax_inputs(mod[func_name], seed=0)
    vm = tvm.relax.VirtualMachine(build.module, tvm.cpu())
    return repeated_relax_results(vm, func_name, inputs)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("model", MODELS)
def test_model_outputs_are_identical(model, target, build):
    stock = _run_model(build("model", model, target, "stock"), model)
    ours = _run_model(build("model", model, target, "memplan"), model)
    assert len(ours) == len(stock)
    for i, (got, want) in enumerate(zip(ours, stock, strict=True)):
        np.testing.assert_array_equal(got, want, err_msg=f"output {i}")


def _run_workload(build: Build, name: str) -> list[np.ndarray]:
    args = random_args(WORKLOADS[name].build()["main"], seed=0)
    tensors = [tvm.runtime.tensor(a) for a in args]
    build.module["main"](*tensors)
    return [t.numpy() for t in tensors]


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("workload", CPU_WORKLOADS)
def test_workload_buffers_are_identical(workload, target, build):
    """Every buffer parameter (inputs and outputs) ends up bit-identical."""
    stock = _run_workload(build("workload", workload, target, "stock"), workload)
    ours = _run_workload(build("workload", workload, target, "memplan"), workload)
    for i, (got, want) in enumerate(zip(ours, stock, strict=True)):
        np.testing.assert_array_equal(got, want, err_msg=f"buffer {i}")


# ---- our pipeline ran ---------------------------------------------------------------------------

CASES = [("model", name) for name in MODELS] + [("workload", name) for name in CPU_WORKLOADS]


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("kind, name", CASES)
def test_memplan_build_runs_our_passes_in_place_of_the_stock_ones(kind, name, target, build):
    ours = set(build(kind, name, target, "memplan").passes)
    stock = set(build(kind, name, target, "stock").passes)
    expected = OUR_RELAX_PASSES if kind == "model" else OUR_TIR_PASSES
    assert expected <= ours, f"not run: {sorted(expected - ours)}"
    assert STOCK_COMPACTION not in ours
    assert STOCK_COMPACTION in stock
    if kind == "model":
        # Our planner plans every model of the zoo itself (it never needs the stock one).
        assert STOCK_PLANNER not in ours
        assert STOCK_PLANNER in stock
    assert not {p for p in stock if p.startswith("tvm_memplan.")}


@pytest.mark.parametrize("model", MODELS)
def test_memplan_build_of_a_model_makes_in_place_calls(model, build):
    """The Relax pipeline hands the model itself to our in-place pass, judging by our planner:
    the build contains the in-place calls the pass makes on its own (every model of the zoo has
    some)."""
    mod, _ = ZOO[model]()
    expected = count_calls(
        tvm_memplan.transform.DataflowUseInplaceCalls(planner="memplan")(mod),
        "relax.call_tir_inplace",
    )
    assert expected > 0
    built = build("model", model, "llvm", "memplan").after[INPLACE]
    assert count_calls(built, "relax.call_tir_inplace") == expected


def _planned_bytes(mod: tvm.IRModule) -> int:
    return storage_after_planning(mod).total_bytes


@pytest.mark.parametrize("model", MODELS)
def test_memplan_build_of_a_model_plans_no_more_bytes_than_stock(model, build):
    stock = _planned_bytes(build("model", model, "llvm", "stock").after[STOCK_PLANNER])
    ours = _planned_bytes(build("model", model, "llvm", "memplan").after[OUR_PLANNER])
    assert ours <= stock


def _compacted_bytes(build: Build, pass_name: str) -> int:
    sizes = {
        gv.name_hint: allocated_bytes(f)
        for gv, f in build.after[pass_name].functions.items()
        if isinstance(f, tvm.tirx.PrimFunc)
    }
    symbolic = sorted(name for name, size in sizes.items() if size is None)
    assert not symbolic, f"symbolic allocations in {symbolic}: the workloads are static"
    return sum(sizes.values())


@pytest.mark.parametrize("workload", CPU_WORKLOADS)
def test_memplan_build_compacts_to_no_more_bytes_than_stock(workload, build):
    ours = _compacted_bytes(build("workload", workload, "llvm", "memplan"), OUR_COMPACTION)
    stock = _compacted_bytes(build("workload", workload, "llvm", "stock"), STOCK_COMPACTION)
    assert ours <= stock


@pytest.mark.parametrize("workload", CPU_WORKLOADS)
def test_memplan_c_code_calls_the_workspace_no_more_than_stock(workload, build):
    """Ours keeps "local" buffers and buffers of exactly 1024 bytes on the stack too, and
    compaction only shrinks buffers: never more TVMBackendAllocWorkspace calls."""
    ours = c_workspace_allocations(build("workload", workload, "c", "memplan").source)
    stock = c_workspace_allocations(build("workload", workload, "c", "stock").source)
    assert ours <= stock


def test_memplan_builds_save_memory_on_some_workloads(build):
    """If the "memplan" builds were stock builds, neither saving would show anywhere."""
    fewer_bytes = [
        name
        for name in CPU_WORKLOADS
        if _compacted_bytes(build("workload", name, "llvm", "memplan"), OUR_COMPACTION)
        < _compacted_bytes(build("workload", name, "llvm", "stock"), STOCK_COMPACTION)
    ]
    fewer_workspace_calls = [
        name
        for name in CPU_WORKLOADS
        if c_workspace_allocations(build("workload", name, "c", "memplan").source)
        < c_workspace_allocations(build("workload", name, "c", "stock").source)
    ]
    assert fewer_bytes, "compaction saved no byte on any workload"
    assert fewer_workspace_calls, "no workload makes fewer workspace calls"


# ---- fused builds (the CPU recipe: the "zero" pipeline, then compile) ------------------------


@pytest.fixture(scope="module")
def fused_build():
    """``fused_build(name, pipeline)``: the model after ``relax.get_pipeline("zero")`` compiled
    for llvm, with the module its memory planner returned."""
    cache: dict[tuple[str, str], tuple] = {}

    def get(name: str, pipeline: str):
        if (name, pipeline) not in cache:
            fused = tvm.relax.get_pipeline("zero")(ZOO[name]()[0])
            planner = OUR_PLANNER if pipeline == "memplan" else STOCK_PLANNER
            passes = trace(lambda: PIPELINES[pipeline](fused, "llvm"), [planner])
            cache[name, pipeline] = (passes.result, passes.after[planner])
        return cache[name, pipeline]

    return get


@pytest.mark.parametrize("model", MODELS)
def test_fused_model_outputs_are_identical(model, fused_build):
    """In-place calls on fused kernels (and our planner) change no output bit, run after run."""
    stock = _run_model(Build(fused_build(model, "stock")[0], []), model)
    ours = _run_model(Build(fused_build(model, "memplan")[0], []), model)
    for i, (got, want) in enumerate(zip(ours, stock, strict=True)):
        np.testing.assert_array_equal(got, want, err_msg=f"output {i}")


@pytest.mark.parametrize("model", MODELS)
def test_fused_model_plans_no_more_bytes_than_stock(model, fused_build):
    stock = _planned_bytes(fused_build(model, "stock")[1])
    ours = _planned_bytes(fused_build(model, "memplan")[1])
    assert ours <= stock


def test_fused_builds_run_kernels_in_place(fused_build):
    """The fused kernels of most models run in place (their in-place forms are in the module
    the planner sees)."""
    with_inplace = [
        name
        for name in MODELS
        if any(
            gv.name_hint.startswith("fused_") and gv.name_hint.endswith("_inplace")
            for gv in fused_build(name, "memplan")[1].functions
        )
    ]
    assert len(with_inplace) >= len(MODELS) // 2, with_inplace
