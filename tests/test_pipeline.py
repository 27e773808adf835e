"""The "memplan" TIR pipeline end to end: tvm.compile on llvm and c (built with export_library
and run), placements as the rules say, results identical to the stock pipeline."""

import threading

import numpy as np
import pytest
import tvm
from tvm.script import ir as I
from tvm.script import relax as R
from tvm.script import tirx as T

import tvm_memplan
from tvm_memplan import pass_names, pipeline
from tvm_memplan.analysis import allocation_plan, placement_counts
from tvm_memplan.instrument import trace
from tvm_memplan.testing import (
    c_stack_arrays,
    c_workspace_allocations,
    capture_ir,
    compile_and_run,
    random_args,
    random_kernel,
)

# Every temporary is live until the last loop, so StorageRewrite cannot fold two into one and
# each allocation of the input reaches codegen: the plan's counts are the generated code's.


@T.prim_func
def temporaries(A: T.Buffer((512,), "float32"), B: T.Buffer((512,), "float32")):
    L = T.alloc_buffer((16,), "float32", scope="local")  # 64 B
    small = T.alloc_buffer((64,), "float32")  # 256 B
    mid = T.alloc_buffer((256,), "float32")  # 1024 B: stack here, workspace in stock TVM
    big = T.alloc_buffer((512,), "float32")  # 2048 B
    W = T.alloc_buffer((8,), "float32", scope="global.workspace")
    for i in range(16):
        L[i] = A[i] * T.float32(2)
    for i in range(64):
        small[i] = A[i] + L[i % 16]
    for i in range(256):
        mid[i] = A[i] - small[i % 64]
    for i in range(512):
        big[i] = A[i] * mid[i % 256]
    for i in range(8):
        W[i] = big[i * 64] + L[i]
    for i in range(512):
        B[i] = big[i] + mid[i % 256] + small[i % 64] + L[i % 16] + W[i % 8]


@T.prim_func
def parallel_rows(A: T.Buffer((64, 128), "float32"), B: T.Buffer((64, 128), "float32")):
    for r in T.parallel(64):
        acc = T.alloc_buffer((8,), "float32", scope="local")  # 32 B per row
        row = T.alloc_buffer((128,), "float32")  # 512 B per row
        for j in range(8):
            acc[j] = T.float32(0)
        for j in range(128):
            row[j] = A[r, j] * T.float32(0.5)
            acc[j % 8] = acc[j % 8] + row[j]
        for j in range(128):
            B[r, j] = row[127 - j] + acc[j % 8]


@T.prim_func
def mixed_dtypes(A: T.Buffer((32, 32), "int32"), B: T.Buffer((32, 32), "int32")):
    bytes_ = T.alloc_buffer((32, 32), "uint8")  # 1024 B
    words = T.alloc_buffer((32, 32), "int32")  # 4096 B
    wide = T.alloc_buffer((16,), "float64", scope="local")  # 128 B
    for i, j in T.grid(32, 32):
        bytes_[i, j] = T.Cast("uint8", A[i, j] % 251)
        words[i, j] = A[j, i] * 3
    for i in range(16):
        wide[i] = T.Cast("float64", A[i, i]) / T.float64(3)
    for i, j in T.grid(32, 32):
        B[i, j] = T.Cast("int32", bytes_[j, i]) + words[i, j] + T.Cast("int32", wide[(i + j) % 16])


KERNELS = {"temporaries": temporaries, "parallel_rows": parallel_rows, "mixed_dtypes": mixed_dtypes}
LIMITS = {"zero": 0, "default": None, "large": 65536}
TARGETS = ["llvm", "c"]


def config_for(limit):
    return {} if limit is None else {"tvm_memplan.max_stack_alloca": limit}


def plan_counts(func, target, config):
    with tvm.transform.PassContext(config=config):
        counts = placement_counts(allocation_plan(func, target))
    return counts.get("stack", 0), counts.get("workspace", 0)


@pytest.fixture(scope="module")
def stock_results():
    """Each kernel compiled with the stock pipeline, per target."""
    results = {}
    for name, func in KERNELS.items():
        args = random_args(func, seed=7)
        for target in TARGETS:
            results[name, target] = (args, compile_and_run(func, args, target, "s_tir")[0])
    return results


@pytest.mark.parametrize("limit", list(LIMITS))
@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("kernel", list(KERNELS))
def test_same_results_and_planned_placements(kernel, target, limit, stock_results):
    """Under max_stack_alloca 0 / default / 65536 the kernel computes exactly what the stock
    pipeline computes, and the generated code has the allocations allocation_plan reports."""
    func, config = KERNELS[kernel], config_for(LIMITS[limit])
    args, want = stock_results[kernel, target]
    got, lib = compile_and_run(func, args, target, "memplan", config)
    for w, g in zip(want, got, strict=True):
        np.testing.assert_array_equal(g, w)
    stack, workspace = plan_counts(func, target, config)
    if target == "c":
        source = lib.mod.inspect_source()
        assert (len(c_stack_arrays(source)), c_workspace_allocations(source)) == (stack, workspace)
        if LIMITS[limit] == 0:  # every buffer through TVMBackendAllocWorkspace
            assert stack == 0 and c_stack_arrays(source) == []
            assert workspace == len(allocation_plan(func, target))
    else:
        calls = lib.mod.inspect_source("ll").count("load ptr, ptr @__TVMBackendAllocWorkspace")
        assert calls == workspace


def test_expected_plans():
    """The placements the kernels exercise, written out."""
    table = {
        (kernel, limit): plan_counts(func, "c", config_for(value))
        for kernel, func in KERNELS.items()
        for limit, value in LIMITS.items()
    }
    assert table == {
        ("temporaries", "zero"): (0, 5),
        ("temporaries", "default"): (3, 2),  # L, small, mid; big and W in the workspace
        ("temporaries", "large"): (4, 1),  # W is "global.workspace"
        ("parallel_rows", "zero"): (0, 2),
        ("parallel_rows", "default"): (2, 0),
        ("parallel_rows", "large"): (2, 0),
        ("mixed_dtypes", "zero"): (0, 3),
        ("mixed_dtypes", "default"): (2, 1),
        ("mixed_dtypes", "large"): (3, 0),
    }


def test_stock_pipeline_sends_local_and_1024_byte_buffers_to_the_workspace():
    """For comparison: what TVM itself generates for `temporaries` (L and mid differ)."""
    _, lib = compile_and_run(temporaries, random_args(temporaries), "c", "s_tir")
    source = lib.mod.inspect_source()
    assert (len(c_stack_arrays(source)), c_workspace_allocations(source)) == (1, 4)


def test_budget_moves_the_largest_to_the_workspace():
    config = {"tvm_memplan.max_stack_alloca": 65536, "tvm_memplan.max_stack_bytes": 2500}
    assert plan_counts(temporaries, "c", config) == (3, 2)  # big (2048 B) moved
    args = random_args(temporaries, seed=3)
    want, _ = compile_and_run(temporaries, args, "c", "s_tir")
    got, lib = compile_and_run(temporaries, args, "c", "memplan", config)
    np.testing.assert_array_equal(got[1], want[1])
    source = lib.mod.inspect_source()
    assert sorted(size for _, size in c_stack_arrays(source)) == [16, 64, 256]


# ---- annotations and forced placements through the whole pipeline ------------------------------


@T.prim_func
def with_unlowered(A: T.Buffer((64,), "float32"), B: T.Buffer((64,), "float32")):
    K = T.alloc_buffer((4,), "float32", scope="local", annotations={"disable_lower_builtin": 1})
    G = T.alloc_buffer((64,), "float32")
    for i in range(4):
        K[i] = A[i]
    for i in range(64):
        G[i] = A[i] + K[i % 4]
    for i in range(64):
        B[i] = G[63 - i] * K[i % 4]


@pytest.mark.parametrize("target", TARGETS)
def test_disable_lower_builtin_survives_the_pipeline(target):
    """StorageRewrite drops the annotation in the stock pipeline, so the "local" K goes to the
    workspace there; in "memplan" K stays a plain allocation even when everything else must use
    the workspace."""
    config = {"tvm_memplan.max_stack_alloca": 0}
    args = random_args(with_unlowered, seed=5)
    want, stock_lib = compile_and_run(with_unlowered, args, target, "s_tir")
    got, lib = compile_and_run(with_unlowered, args, target, "memplan", config)
    np.testing.assert_array_equal(got[1], want[1])
    host = capture_ir(
        with_unlowered, "tvm_memplan.LowerTVMBuiltin", target, "memplan", config, after=True
    )
    assert 'annotations={"disable_lower_builtin": 1}' in host.script()
    if target == "c":
        assert c_stack_arrays(lib.mod.inspect_source()) == [("K_ptr", 4)]
        assert c_workspace_allocations(lib.mod.inspect_source()) == 1
        stock_source = stock_lib.mod.inspect_source()
        assert c_stack_arrays(stock_source) == [("G_ptr", 64)]
        assert c_workspace_allocations(stock_source) == 1  # K


@T.prim_func
def two_stack_buffers(A: T.Buffer((64,), "float32"), B: T.Buffer((64,), "float32")):
    S = T.alloc_buffer((64,), "int32", scope="global.stack")
    F = T.alloc_buffer((2048,), "float32", scope="global.stack")
    for i in range(64):
        S[i] = T.Cast("int32", A[i])
    for i in range(2048):
        F[i] = A[i % 64]
    for i in range(64):
        B[i] = T.Cast("float32", S[i]) + F[i * 32]


@pytest.mark.parametrize("target", TARGETS)
def test_global_stack_stays_on_the_stack_after_storage_rewrite_merges_it(target):
    """StorageRewrite merges all "global.stack" buffers into one; it stays on the stack (8448 B,
    over the default limit), in scope "global" for the C backend. The stock pipeline sends it to
    the workspace."""
    args = random_args(two_stack_buffers, seed=2)
    want, _ = compile_and_run(two_stack_buffers, args, target, "s_tir")
    got, lib = compile_and_run(two_stack_buffers, args, target, "memplan")
    np.testing.assert_array_equal(got[1], want[1])
    if target == "c":
        source = lib.mod.inspect_source()
        assert [size for _, size in c_stack_arrays(source)] == [2112]  # 64 + 2048 words
        assert c_workspace_allocations(source) == 0


def test_global_stack_errors_name_the_buffer_in_the_pipeline():
    with pytest.raises(ValueError, match='buffer `S` has scope "global.stack"'):
        compile_and_run(
            two_stack_buffers,
            random_args(two_stack_buffers),
            "c",
            "memplan",
            {"tvm_memplan.max_stack_alloca": 0},
        )


def test_dynamic_global_stack_is_our_error_not_storage_rewrites():
    @T.prim_func
    def func(A: T.Buffer((64,), "float32"), n: T.int32):
        S = T.alloc_buffer((n,), "float32", scope="global.stack")
        for i in range(n):
            S[i] = A[i]
        for i in range(n):
            A[i] = S[i] * T.float32(2)

    with pytest.raises(ValueError, match="buffer `S`.*not a compile-time constant"):
        tvm.compile(tvm.IRModule({"main": func}), target="llvm", tir_pipeline="memplan")


def test_an_annotated_dynamic_buffer_builds_as_in_stocks_pipeline():
    """disable_lower_builtin on a buffer of dynamic size: StorageRewrite drops the annotation in
    TVM's pipeline and the buffer goes to the workspace; ours builds it the same way (it used to
    raise) and computes what stock computes. (llvm: TVM's C code generator cannot print this
    workspace size, in stock's build as in ours.)"""
    target = "llvm"

    @T.prim_func
    def func(A: T.Buffer((64,), "float32"), n: T.int32):
        K = T.alloc_buffer((n,), "float32", annotations={"disable_lower_builtin": 1})
        for i in range(n):
            K[i] = A[i] * T.float32(2)
        for i in range(n):
            A[i] = K[n - 1 - i]

    data = np.arange(64, dtype="float32")
    results = []
    for pipeline_name in ("default", "memplan"):
        lib = tvm.compile(tvm.IRModule({"main": func}), target=target, tir_pipeline=pipeline_name)
        a = tvm.runtime.tensor(data.copy())
        lib["main"](a, 16)
        results.append(a.numpy())
    np.testing.assert_array_equal(results[1], results[0])
    np.testing.assert_array_equal(results[1][:16], data[:16][::-1] * 2)


def test_feature_key_on_the_target_reaches_the_host_functions():
    target = tvm.target.Target({"kind": "c", "feature.max_stack_alloca": 0})
    args = random_args(temporaries, seed=4)
    want, _ = compile_and_run(temporaries, args, "c", "s_tir")
    got, lib = compile_and_run(temporaries, args, target, "memplan")
    np.testing.assert_array_equal(got[1], want[1])
    assert c_stack_arrays(lib.mod.inspect_source()) == []


def test_without_storage_rewrite_the_rules_still_hold():
    config = {"tirx.disable_storage_rewrite": True, "tvm_memplan.max_stack_alloca": 0}
    args = random_args(with_unlowered, seed=6)
    want, _ = compile_and_run(with_unlowered, args, "c", "s_tir")
    got, lib = compile_and_run(with_unlowered, args, "c", "memplan", config)
    np.testing.assert_array_equal(got[1], want[1])
    assert c_stack_arrays(lib.mod.inspect_source()) == [("K_ptr", 4)]


@I.ir_module
class RelaxModel:
    @T.prim_func(private=True)
    def reverse_scaled(A: T.Buffer((64,), "float32"), B: T.Buffer((64,), "float32")):
        L = T.alloc_buffer((64,), "float32", scope="local")
        for i in range(64):
            L[i] = A[i] * T.float32(2)
        for i in range(64):
            B[i] = L[63 - i]

    @R.function
    def main(x: R.Tensor((64,), "float32")):
        cls = RelaxModel
        y = R.call_tir(cls.reverse_scaled, (x,), out_ty=R.Tensor((64,), "float32"))
        return y


@pytest.mark.parametrize("limit, workspace_calls", [(0, 1), (1024, 0)])
def test_relax_build_uses_the_pipeline_for_its_tir(limit, workspace_calls):
    config = {"tvm_memplan.max_stack_alloca": limit}
    host = capture_ir(RelaxModel, "tvm_memplan.LowerTVMBuiltin", "llvm", "memplan", config, True)
    assert host.script().count("T.TVMBackendAllocWorkspace(") == workspace_calls
    with tvm.transform.PassContext(config=config):
        executable = tvm.compile(RelaxModel, target="llvm", tir_pipeline="memplan")
    vm = tvm.relax.VirtualMachine(executable, tvm.cpu())
    x = np.arange(64, dtype="float32")
    np.testing.assert_array_equal(vm["main"](tvm.runtime.tensor(x)).numpy(), x[::-1] * 2)


# ---- the substitution mechanism -----------------------------------------------------------------


def test_pipeline_is_registered_and_stock_constructors_are_restored():
    storage_rewrite = tvm.tirx.transform.StorageRewrite
    lower_builtin = tvm.tirx.transform.LowerTVMBuiltin
    assert pipeline.PIPELINE_NAME in tvm.tirx.compilation_pipeline.PIPELINE_MAP
    compile_and_run(with_unlowered, random_args(with_unlowered), "llvm", "memplan")
    assert tvm.tirx.transform.StorageRewrite is storage_rewrite
    assert tvm.tirx.transform.LowerTVMBuiltin is lower_builtin
    assert storage_rewrite().info.name == "tirx.StorageRewrite"


def test_substitutions_apply_only_to_the_compiling_thread():
    """While a memplan compile runs (held inside its pipeline), another thread building the
    stock passes gets the stock passes."""
    inside, release = threading.Event(), threading.Event()
    seen = {}

    @tvm.instrument.pass_instrument
    class Hold:
        def run_before_pass(self, mod, info):
            if info.name == "tvm_memplan.StorageRewrite" and not inside.is_set():
                inside.set()
                release.wait(timeout=60)

    def compile_memplan():
        with tvm.transform.PassContext(instruments=[Hold()]):
            tvm.compile(tvm.IRModule({"main": with_unlowered}), "llvm", tir_pipeline="memplan")

    worker = threading.Thread(target=compile_memplan)
    worker.start()
    try:
        assert inside.wait(timeout=60)
        seen["other thread"] = tvm.tirx.transform.StorageRewrite().info.name
    finally:
        release.set()
        worker.join()
    assert seen == {"other thread": "tirx.StorageRewrite"}


def test_a_substitution_that_never_happens_is_an_error(monkeypatch):
    never = pipeline.Substitution(tvm.s_tir.transform, "InjectPTXLDG32", lambda stock: stock())
    monkeypatch.setattr(pipeline, "MAIN_SUBSTITUTIONS", (*pipeline.MAIN_SUBSTITUTIONS, never))
    with pytest.raises(RuntimeError, match="could not replace tvm.s_tir.transform.InjectPTXLDG32"):
        tvm.compile(tvm.IRModule({"main": with_unlowered}), "llvm", tir_pipeline="memplan")


def _relax_model():
    from zoo.models import ZOO

    return ZOO["small_cnn"]()[0]


def _ran_passes(run) -> list[str]:
    return trace(run).names


def test_the_relax_pipeline_plans_memory_with_our_planner():
    """The memplan Relax pipeline runs our StaticPlanBlockMemory where the stock pipeline runs
    TVM's, and restores TVM's constructor afterwards."""
    stock_constructor = tvm.relax.transform.StaticPlanBlockMemory
    ran = _ran_passes(lambda: tvm_memplan.compile(_relax_model(), "llvm"))
    assert "tvm_memplan.StaticPlanBlockMemory" in ran
    assert "StaticPlanBlockMemory" not in ran
    assert ran.index("CallTIRRewrite") < ran.index("tvm_memplan.StaticPlanBlockMemory")
    assert tvm.relax.transform.StaticPlanBlockMemory is stock_constructor


def test_a_relax_substitution_that_never_happens_is_an_error(monkeypatch):
    never = pipeline.Substitution(tvm.relax.transform, "FuseOps", lambda stock, *a: stock(*a))
    monkeypatch.setattr(pipeline, "RELAX_SUBSTITUTIONS", (*pipeline.RELAX_SUBSTITUTIONS, never))
    with pytest.raises(RuntimeError, match="Relax pipeline could not replace tvm.relax.transform"):
        tvm_memplan.compile(_relax_model(), "llvm")


# ---- our passes inside any Relax pipeline ------------------------------------------------------


def _same_results(stock_executable, ours_executable, mod):
    """Both builds called three times (fresh copies of the inputs): the same outputs."""
    from tvm_memplan.testing import assert_same_relax_results

    vms = tuple(tvm.relax.VirtualMachine(e, tvm.cpu()) for e in (stock_executable, ours_executable))
    assert_same_relax_results(mod, mod, "forward", vms=vms)  # "forward": the zoo's models


def _assert_our_relax_passes_ran(ran: list[str], fused: bool = True):
    assert "tvm_memplan.StaticPlanBlockMemory" in ran and "StaticPlanBlockMemory" not in ran
    after_scheduling = ran.index("tvm_memplan.RewriteDataflowReshape")
    assert ran[after_scheduling + 1] == "tvm_memplan.DataflowUseInplaceCalls"
    if fused:
        assert ran.index("FuseTIR") < after_scheduling


def test_fused_cpu_recipe_zero_then_default():
    """The fused CPU build, `relax_pipeline(["zero", "default"])`: the in-place pass runs on the
    fused kernels, before RewriteDataflowReshape; the results are the stock fused build's."""
    mod = _relax_model()
    built = {}
    ran = _ran_passes(
        lambda: built.setdefault(
            "ours", tvm_memplan.compile(mod, "llvm", relax_pipeline=["zero", "default"])
        )
    )
    _assert_our_relax_passes_ran(ran)
    stock = tvm.compile(tvm.relax.get_pipeline("zero")(mod), "llvm")
    _same_results(stock, built["ours"], mod)
    # The fused kernels really ran in place (their names carry the suffix).
    from tvm_memplan.instrument import capture

    after = capture(
        lambda: tvm_memplan.compile(mod, "llvm", relax_pipeline=["zero", "default"]),
        ["tvm_memplan.RewriteDataflowReshape"],
        after=True,
    )["tvm_memplan.RewriteDataflowReshape"]
    in_place = [gv.name_hint for gv in after.functions if gv.name_hint.endswith("_inplace")]
    assert any(name.startswith("fused_") for name in in_place), in_place


def test_fused_cpu_recipe_zero_first_then_compile():
    """The same recipe as users write it: the "zero" pipeline first, then tvm_memplan.compile
    (the default pipeline legalizes nothing more; the kernels are already fused)."""
    mod = _relax_model()
    fused = tvm.relax.get_pipeline("zero")(mod)
    built = {}
    ran = _ran_passes(lambda: built.setdefault("ours", tvm_memplan.compile(fused, "llvm")))
    _assert_our_relax_passes_ran(ran, fused=False)
    _same_results(tvm.compile(fused, "llvm"), built["ours"], mod)


def test_fused_cpu_recipe_with_fuse_transpose_matmul():
    """docs/pipelines.md's recipe for transposed weights: TVM's FuseTransposeMatmul first. The
    zoo's MLP then plans no transposed weight (a megabyte of its 1.07 MB), and its results are
    the stock fused build's."""
    from tvm_memplan.analysis import storage_after_planning
    from tvm_memplan.instrument import capture
    from zoo.models import ZOO

    mod, _ = ZOO["mlp"]()
    planner = "tvm_memplan.StaticPlanBlockMemory"

    def planned(pipeline):
        built = {}
        after = capture(
            lambda: built.setdefault(
                "ex", tvm_memplan.compile(mod, "llvm", relax_pipeline=pipeline)
            ),
            [planner],
            after=True,
        )[planner]
        return built["ex"], storage_after_planning(after).total_bytes

    ours, with_transposes = planned(["zero", "default"])
    folded, without = planned([tvm.relax.transform.FuseTransposeMatmul(), "zero", "default"])
    weight = 512 * 512 * 4  # fc2's weight, transposed: the largest tensor without the pass
    assert with_transposes >= weight > without
    stock = tvm.compile(tvm.relax.get_pipeline("zero")(mod), "llvm")
    _same_results(stock, folded, mod)
    _same_results(ours, folded, mod)


def test_static_shape_tuning_pipeline_without_tuning(tmp_path):
    """TVM's tuning pipeline with total_trials=0 (no tuning; applies an empty database), then
    the default build."""
    mod = _relax_model()
    tuning = tvm.relax.get_pipeline(
        "static_shape_tuning", total_trials=0, target="llvm", work_dir=str(tmp_path)
    )
    built = {}
    ran = _ran_passes(
        lambda: built.setdefault(
            "ours", tvm_memplan.compile(mod, "llvm", relax_pipeline=[tuning, "default"])
        )
    )
    _assert_our_relax_passes_ran(ran)
    assert "MetaScheduleTuneIRMod" not in ran
    tuned = tvm.relax.get_pipeline(
        "static_shape_tuning", total_trials=0, target="llvm", work_dir=str(tmp_path)
    )
    with tvm.target.Target("llvm"):
        stock_mod = tuned(mod)
    _same_results(tvm.compile(stock_mod, "llvm"), built["ours"], mod)


def _hand_written_passes():
    t = tvm.relax.transform
    return [
        t.LegalizeOps(),
        t.AnnotateTIROpPattern(),
        t.FoldConstant(),
        t.FuseOps(),
        t.FuseTIR(),
        t.DeadCodeElimination(),
        t.RewriteDataflowReshape(),
        t.ToNonDataflow(),
        t.RemovePurityChecking(),
        t.CallTIRRewrite(),
        t.StaticPlanBlockMemory(),
        t.LowerAllocTensor(),
        t.KillAfterLastUse(),
        t.LowerRuntimeBuiltin(),
        t.ComputePrimValue(),
        t.VMShapeLower(),
        t.AttachGlobalSymbol(),
    ]


def test_hand_written_sequential_built_beforehand():
    """A Sequential whose passes were built before relax_pipeline saw it: the stock planner,
    LegalizeOps and RewriteDataflowReshape are replaced by name."""
    mod = _relax_model()
    hand = tvm.transform.Sequential(_hand_written_passes(), name="hand_written")
    built = {}
    ran = _ran_passes(
        lambda: built.setdefault("ours", tvm_memplan.compile(mod, "llvm", relax_pipeline=hand))
    )
    _assert_our_relax_passes_ran(ran)
    assert ran[ran.index("tvm_memplan.LegalizeOps") + 1] == "tvm_memplan.DataflowUseInplaceCalls"
    _same_results(tvm.compile(mod, "llvm", relax_pipeline=hand), built["ours"], mod)


def test_mlc_style_pipeline_builds_its_passes_when_it_runs():
    """MLC-LLM's pipelines are module passes that build their Sequential when they run: the
    constructors give ours then."""

    @tvm.transform.module_pass(opt_level=0, name="mlc_style")
    def mlc_style(mod, _ctx):
        return tvm.transform.Sequential(_hand_written_passes())(mod)

    mod = _relax_model()
    built = {}
    ran = _ran_passes(
        lambda: built.setdefault("ours", tvm_memplan.compile(mod, "llvm", relax_pipeline=mlc_style))
    )
    _assert_our_relax_passes_ran(ran)
    _same_results(tvm.compile(mod, "llvm", relax_pipeline=mlc_style), built["ours"], mod)


def test_a_pipeline_that_plans_no_memory_is_an_error():
    with pytest.raises(RuntimeError, match=r'never builds it.*relax_pipeline\(\["zero"'):
        tvm_memplan.compile(_relax_model(), "llvm", relax_pipeline="zero")


@pytest.mark.parametrize(
    "base, error",
    [
        ("no_such_pipeline", ValueError),
        ("memplan", ValueError),
        (42, TypeError),
        ([], TypeError),
        (["zero", 3], TypeError),
    ],
)
def test_bad_relax_pipelines_are_refused_when_made(base, error):
    with pytest.raises(error):
        tvm_memplan.relax_pipeline(base)


@I.ir_module
class _SkipConcat:
    """A U-Net skip: `a` and `b` concatenated along the channels, at batch 1."""

    @R.function
    def forward(x: R.Tensor((1, 16, 8), "float32")):
        with R.dataflow():
            a = R.exp(x)
            b = R.sigmoid(x)
            c = R.concat((a, b), axis=1)
            d = R.sum(c, axis=1)
            R.output(d)
        return d


@pytest.mark.parametrize("base", ["default", "hand_written"])
def test_planner_options_reach_our_planner(base):
    """relax_pipeline(base, planner_options=...) builds our planner with those options, through
    the constructors and in a Sequential built beforehand alike: without copy-free
    concatenation the planned storage grows by the concatenation's copy, and the results stay
    the stock build's."""
    from tvm_memplan.analysis import storage_after_planning
    from tvm_memplan.instrument import capture

    if base == "hand_written":  # unfused: fusion would put the concatenation in a kernel
        passes = [p for p in _hand_written_passes() if p.info.name not in ("FuseOps", "FuseTIR")]
        base = tvm.transform.Sequential(passes, name="hand_written")
    planned = {}
    executables = {}
    for options in (None, {"copy_free_concat": False}):
        key = "copies" if options else "copy_free"
        pipeline_ = tvm_memplan.relax_pipeline(base, planner_options=options)
        run = lambda p=pipeline_, key=key: executables.setdefault(  # noqa: E731
            key, tvm.compile(_SkipConcat, "llvm", tir_pipeline="memplan", relax_pipeline=p)
        )
        after = capture(run, ["tvm_memplan.StaticPlanBlockMemory"], after=True)
        planned[key] = storage_after_planning(after["tvm_memplan.StaticPlanBlockMemory"])
    assert planned["copies"].total_bytes > planned["copy_free"].total_bytes
    _same_results(tvm.compile(_SkipConcat, "llvm"), executables["copy_free"], _SkipConcat)
    _same_results(tvm.compile(_SkipConcat, "llvm"), executables["copies"], _SkipConcat)


@pytest.mark.parametrize(
    "options, error",
    [({"copy_free": False}, TypeError), ([("copy_free_concat", False)], TypeError)],
)
def test_bad_planner_options_are_refused_when_made(options, error):
    with pytest.raises(error):
        tvm_memplan.relax_pipeline("default", planner_options=options)


def test_compile_chooses_the_tir_pipeline_itself():
    with pytest.raises(TypeError, match="selects tir_pipeline itself"):
        tvm_memplan.compile(_relax_model(), "llvm", tir_pipeline="s_tir")
    with pytest.raises(ValueError, match="relax_pipeline=None runs no Relax pipeline"):
        tvm_memplan.compile(_relax_model(), "llvm", relax_pipeline=None)


def test_stock_constructors_are_restored_after_relax_pipeline():
    constructors = {
        name: getattr(tvm.relax.transform, name)
        for name in ("StaticPlanBlockMemory", "RewriteDataflowReshape", "LegalizeOps")
    }
    tvm_memplan.compile(_relax_model(), "llvm", relax_pipeline=["zero", "default"])
    for name, constructor in constructors.items():
        assert getattr(tvm.relax.transform, name) is constructor


# ---- property: random kernels -------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(12))
def test_random_kernels_compute_what_the_stock_pipeline_computes(seed):
    """Seeded random temporaries (scopes, dtypes, sizes), random limit and budget: the same
    results as the stock pipeline, and the placements allocation_plan reports."""
    rng = np.random.default_rng(1000 + seed)
    limit = int(rng.choice([0, 64, 1024, 4096, 65536]))
    scopes = ["global", "local", "global.workspace"] + ([] if limit == 0 else ["global.stack"])
    func, buffers = random_kernel(seed, scopes)
    config = {"tvm_memplan.max_stack_alloca": limit}
    forced = sum(nbytes for scope, nbytes in buffers if scope == "global.stack")
    if rng.random() < 0.5:
        config["tvm_memplan.max_stack_bytes"] = forced + int(rng.integers(0, 4096))
    args = random_args(func, seed=seed)
    target = "c" if seed % 3 == 0 else "llvm"
    want, _ = compile_and_run(func, args, target, "s_tir")
    got, lib = compile_and_run(func, args, target, "memplan", config)
    np.testing.assert_array_equal(got[0], want[0])
    if target == "c":
        stack, workspace = plan_counts(func, target, config)
        source = lib.mod.inspect_source()
        assert c_workspace_allocations(source) == workspace
        # StorageRewrite merges the "global.stack" buffers into one array.
        merged = max(0, sum(scope == "global.stack" for scope, _ in buffers) - 1)
        assert len(c_stack_arrays(source)) == stack - merged


def _planner_built_here() -> str:
    return tvm.relax.transform.StaticPlanBlockMemory().info.name


def test_process_wide_substitution_reaches_every_thread_and_ends():
    """Within substituted_everywhere, a pass constructor called on any thread (one started
    before the block, one started in it) builds ours; a thread inside `substituted` keeps its
    own table; afterwards the stock constructor is back and builds TVM's pass again."""
    stock = tvm.relax.transform.StaticPlanBlockMemory
    seen: dict[str, str] = {}
    go, done = threading.Event(), threading.Event()

    def early():
        go.wait(timeout=60)
        seen["early"] = _planner_built_here()
        done.set()

    thread = threading.Thread(target=early)
    thread.start()
    with pipeline.substituted_everywhere() as used:
        go.set()
        done.wait(timeout=60)
        late = threading.Thread(target=lambda: seen.setdefault("late", _planner_built_here()))
        late.start()
        late.join()
        none = pipeline.Substitution(
            tvm.relax.transform, "StaticPlanBlockMemory", lambda s, *a, **k: s(*a, **k)
        )
        with pipeline.substituted((none,), "test"):
            seen["local"] = _planner_built_here()
        assert (tvm.relax.transform.__name__, "StaticPlanBlockMemory") in used
        nested = pytest.raises(RuntimeError, match="already substituted process-wide")
        with nested, pipeline.substituted_everywhere():
            pass
    thread.join()
    assert seen == {
        "early": pass_names.PLANNER,
        "late": pass_names.PLANNER,
        "local": "StaticPlanBlockMemory",
    }
    assert tvm.relax.transform.StaticPlanBlockMemory is stock
    assert _planner_built_here() == "StaticPlanBlockMemory"
