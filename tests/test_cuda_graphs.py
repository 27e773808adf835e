"""CUDA graphs: TVM's RewriteCUDAGraph (on with the PassContext option
`relax.backend.use_cuda_graph`, MLC-LLM's default for cuda) after our planner. Build only: no GPU
here (`python -m bench --gpu` runs these builds on one).

What holds, on the zoo, the LLM module in MLC-LLM's order and random programs with bounded sizes:
- ours builds wherever stock builds, and RewriteCUDAGraph's output is well formed (every variable
  defined: it was not, "Var storage is not defined", when the planner's entry checks started a
  captured region before the storages);
- the entry checks on bounded sizes run outside every captured graph, before anything else;
- ours captures at least the kernels stock's graphs capture, in no more graphs (a kernel ours no
  longer runs at all, a copy-free concatenation, needs no capturing).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import tvm
from tvm.script import ir as I
from tvm.script import relax as R
from tvm.script import tirx as T

import tvm_memplan
from tvm_memplan.analysis.cuda_graphs import (
    ENTRY_CHECK,
    USE_CUDA_GRAPH,
    compare_capture,
    cuda_graph_capture,
)
from tvm_memplan.instrument import trace
from zoo import llm
from zoo.models import ZOO

sys.path.insert(0, str(Path(__file__).parent / "relax"))
from random_relax import random_module  # noqa: E402

CUDA_GRAPHS = {USE_CUDA_GRAPH: True}


@I.ir_module
class BoundedMatmuls:
    """The program of the issue: `n` bounded by 32 and a hint that graphs may depend on it."""

    @R.function
    def main(x: R.Tensor(("n", 64), "float32"), w: R.Tensor((64, 64), "float32")):
        n = T.int64()  # noqa: F841
        R.func_attr(
            {
                "tir_var_upper_bound": {"n": 32},
                "relax.rewrite_cuda_graph.capture_symbolic_vars": ["n"],
            }
        )
        with R.dataflow():
            a = R.matmul(x, w)
            b = R.nn.relu(a)
            c = R.matmul(b, w)
            d = R.add(c, x)
            R.output(d)
        return d


@I.ir_module
class SevenOps:
    """A static function of seven operators (weights as `num_input`-marked parameters, so the
    kernels reading only them and intermediates can be captured)."""

    @R.function
    def main(
        x: R.Tensor((16, 64), "float32"),
        w: R.Tensor((64, 64), "float32"),
        bias: R.Tensor((16, 64), "float32"),
    ):
        R.func_attr({"num_input": 1})
        with R.dataflow():
            a = R.matmul(x, w)
            b = R.nn.relu(a)
            c = R.matmul(b, w)
            d = R.add(c, bias)
            e = R.nn.softmax(d)
            f = R.matmul(e, w)
            g = R.multiply(f, b)
            R.output(g)
        return g


def _after_rewrite(build) -> tvm.IRModule:
    """The module RewriteCUDAGraph returns in `build()` (which stops right after it)."""
    t = trace(build, ["RewriteCUDAGraph"], stop_after="RewriteCUDAGraph", config=CUDA_GRAPHS)
    return t.after["RewriteCUDAGraph"]


def _both(mod: tvm.IRModule, stock_build, ours_build) -> tuple[tvm.IRModule, tvm.IRModule]:
    return _after_rewrite(stock_build), _after_rewrite(ours_build)


def _tvm_and_memplan(mod: tvm.IRModule):
    return _both(mod, lambda: tvm.compile(mod, "cuda"), lambda: tvm_memplan.compile(mod, "cuda"))


def _assert_checks_outside_graphs(after: tvm.IRModule) -> int:
    """Every entry check of `after` is in a function the pass did not lift, before its first
    captured region; returns how many there are."""
    summaries = cuda_graph_capture(after)
    checks = 0
    for name, func in after.functions.items():
        if not isinstance(func, tvm.relax.Function):
            continue
        if name.name_hint not in summaries:  # lifted by the pass: a captured region or the alloc
            assert ENTRY_CHECK not in func.script(), f"{name.name_hint} captures an entry check"
            continue
        summary = summaries[name.name_hint]
        checks += len(summary.entry_checks)
        assert not summary.checks_after_a_graph, f"{name.name_hint}: {summary.calls}"
    return checks


def _assert_captures_as_much(stock: tvm.IRModule, ours: tvm.IRModule) -> int:
    """Ours captures every kernel stock captures, in no more graphs; returns the kernels stock
    captures (for tests to be sure they compared something)."""
    comparisons = compare_capture(cuda_graph_capture(stock), cuda_graph_capture(ours))
    for c in comparisons:
        assert c.holds, c
    return sum(c.stock_captured for c in comparisons)


def test_bounded_sizes_build_with_cuda_graphs():
    """Stock builds the issue's program with CUDA graphs on, and so does ours (it failed in
    VMCodeGen: the entry check's computed condition started a captured region that took the
    storage's variable with it)."""
    with tvm.transform.PassContext(opt_level=3, config=CUDA_GRAPHS):
        tvm.compile(BoundedMatmuls, "cuda")
        tvm_memplan.compile(BoundedMatmuls, "cuda")


def test_entry_checks_run_outside_every_captured_graph():
    """The check of `n` against its bound stays in `main`, first, where it runs on every call; a
    check inside a graph would run only when the graph is captured, not when it is replayed."""
    _, ours = _tvm_and_memplan(BoundedMatmuls)
    tvm.relax.analysis.well_formed(ours)
    assert _assert_checks_outside_graphs(ours) == 1


def test_a_static_function_captures_as_stock_does():
    stock, ours = _tvm_and_memplan(SevenOps)
    tvm.relax.analysis.well_formed(ours)
    assert _assert_captures_as_much(stock, ours) > 0


@pytest.mark.parametrize("name", sorted(ZOO))
def test_zoo_captures_at_least_what_stock_captures(name):
    mod, _ = ZOO[name]()
    stock, ours = _tvm_and_memplan(mod)
    tvm.relax.analysis.well_formed(ours)
    assert _assert_captures_as_much(stock, ours) > 0


@pytest.fixture(scope="module")
def llm_builds():
    """The zoo's LLM module for cuda, in MLC-LLM's order (its capture hints and alloc-init
    function included), stock and ours, as RewriteCUDAGraph returns it."""
    config, target = llm.SMALL, tvm.target.Target("cuda")
    mod, _ = llm.llm_module(config, target)

    def build(memplan: bool):
        pipeline = llm.mlc_llm_pipeline(variable_bounds=config.variable_bounds)
        if memplan:
            pipeline = tvm_memplan.relax_pipeline(pipeline)
        return lambda: tvm.compile(mod, target, relax_pipeline=pipeline)

    return _both(mod, build(False), build(True))


def test_llm_module_captures_as_stock_does_in_mlc_llm_order(llm_builds):
    """Every function: decode and batch decode and verify capture (three graphs each here: the
    KV cache's attention calls run between them), prefill nothing (its size is no hint)."""
    stock, ours = llm_builds
    tvm.relax.analysis.well_formed(ours)
    assert _assert_captures_as_much(stock, ours) > 0
    graphs = cuda_graph_capture(ours)
    for name in ("decode", "batch_decode", "batch_verify"):
        assert graphs[name].regions, name


def test_llm_module_checks_its_bounds_outside_the_graphs(llm_builds):
    _, ours = llm_builds
    assert _assert_checks_outside_graphs(ours) > 0


SEEDS = range(24)


@pytest.mark.parametrize("seed", SEEDS)
def test_random_bounded_programs(seed):
    """Random programs with `n` bounded and named a capture hint: well formed, checks outside
    the graphs, and captured at least as stock captures them."""
    mod = random_module(seed, branch_chains=True, dynamic="bounded")
    main = mod["main"].with_attr("relax.rewrite_cuda_graph.capture_symbolic_vars", ["n"])
    mod = tvm.IRModule({"main": main})
    stock, ours = _tvm_and_memplan(mod)
    tvm.relax.analysis.well_formed(ours)
    _assert_checks_outside_graphs(ours)
    _assert_captures_as_much(stock, ours)


def test_llm_module_builds_with_cuda_graphs():
    """The whole build, to the executable, in MLC-LLM's order with CUDA graphs on: stock's and
    ours (ours failed in VMCodeGen on the batch functions)."""
    config, target = llm.SMALL, tvm.target.Target("cuda")
    mod, _ = llm.llm_module(config, target)
    with tvm.transform.PassContext(opt_level=3, config=CUDA_GRAPHS):
        for memplan in (False, True):
            pipeline = llm.mlc_llm_pipeline(variable_bounds=config.variable_bounds)
            if memplan:
                pipeline = tvm_memplan.relax_pipeline(pipeline)
            tir = "memplan" if memplan else None
            text = tvm.compile(mod, target, relax_pipeline=pipeline, tir_pipeline=tir).as_text()
            assert "vm.builtin.cuda_graph.run_or_capture" in text
            assert "@cuda_graph_alloc_init" in text


ROOT = Path(__file__).resolve().parent.parent


def _gpu_check(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, *args], cwd=ROOT, capture_output=True, text=True, timeout=900
    )


def test_the_gpu_check_says_it_measured_nothing_without_a_gpu():
    """`python -m bench --gpu` on a machine without a GPU: it says so, measures nothing, and
    exits 0 (a GPU run is the only evidence it gives)."""
    if tvm.runtime.enabled("cuda") and tvm.cuda(0).exist:
        pytest.skip(reason="a GPU is here: the check measures (see the next test's figures)")
    result = _gpu_check("-m", "bench", "--gpu")
    assert result.returncode == 0, result.stderr
    assert "nothing measured" in result.stdout and "results match" not in result.stdout


def test_the_gpu_check_measures_on_the_cpu_what_it_measures_on_a_gpu():
    """The same script on llvm (no CUDA graphs there): a model and the LLM module, stock and
    memplan, three calls each, compared; so the GPU run cannot fail on the script itself."""
    target = json.dumps({"kind": "llvm", "opt-level": 0})
    result = _gpu_check("bench/_gpu.py", "--quick", "--target", target, "--models", "mobilenet_v2")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert any(line.startswith("mobilenet_v2") and " yes " in line for line in lines)
    assert any(line.startswith("llm (decode/s)") and " yes " in line for line in lines)
    assert "results match stock's: yes" in result.stdout


# MLC-LLM's own models through MLC-LLM's own compile path (tools/mlc_llm_cuda_graphs.py): run
# where a checkout of MLC-LLM's python folder is at hand, named by MLC_LLM_SOURCE.
MLC_LLM_SOURCE = os.environ.get("MLC_LLM_SOURCE", "/tmp/mlc-src/python")
MLC_LLM_CHECK = ROOT / "tools" / "mlc_llm_cuda_graphs.py"


def _mlc_llm_check(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "python"), str(ROOT)])}
    return subprocess.run(
        [sys.executable, str(MLC_LLM_CHECK), *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )


def test_the_mlc_llm_check_refuses_a_folder_that_is_not_mlc_llm(tmp_path):
    """Given a folder without MLC-LLM's compile pipeline, the check says so in one line and exits
    2, before importing anything from it."""
    result = _mlc_llm_check(str(tmp_path))
    assert result.returncode == 2
    assert "is not MLC-LLM's python folder" in result.stderr
    assert "Traceback" not in result.stderr


def test_the_mlc_llm_check_refuses_zero_build_rounds():
    """--build-rounds 0 would time nothing: one line and exit 2, before MLC-LLM is opened."""
    result = _mlc_llm_check("--build-rounds", "0")
    assert result.returncode == 2
    assert "--build-rounds 0: expected at least 1" in result.stderr
    assert "Traceback" not in result.stderr


def _load_check():
    """tools/mlc_llm_cuda_graphs.py as a module (it imports nothing of MLC-LLM at load)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("mlc_llm_check", MLC_LLM_CHECK)
    check = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = check  # its dataclasses look their module up
    spec.loader.exec_module(check)
    return check


def test_the_mlc_llm_check_flips_the_build_order_every_round():
    """The timed rounds alternate which build goes first (stock, ours; ours, stock; ...), so that
    neither always runs after the other; each build keeps its best round."""
    check = _load_check()
    calls = []
    build_fns = {who: (lambda who=who: calls.append(who)) for who in ("stock", "ours")}
    builds = {who: check.Build() for who in build_fns}
    check._time_builds(builds, build_fns, {}, rounds=3)
    assert calls == ["stock", "ours", "ours", "stock", "stock", "ours"]
    assert all(builds[who].seconds > 0 for who in build_fns)


def test_the_mlc_llm_check_times_each_pass_once_and_a_sequential_by_its_passes(monkeypatch):
    """--pass-split counts each pass's own time: a Sequential's time less its passes', so that
    no second is counted twice and a wrapper shows what it spends itself (here nothing)."""
    import types

    check = _load_check()
    # A clock that moves only when a pass says so: the counts are exact.
    clock = types.SimpleNamespace(now=0.0)
    monkeypatch.setattr(check, "time", types.SimpleNamespace(perf_counter=lambda: clock.now))

    def taking(name: str, seconds: float) -> tvm.transform.Pass:
        def run(mod, _ctx):
            clock.now += seconds
            return mod

        return tvm.transform.module_pass(run, opt_level=0, name=name)

    seq = tvm.transform.Sequential([taking("first", 2.0), taking("second", 3.0)], name="wrapper")
    times = check.PassSelfTimes()
    with tvm.transform.PassContext(instruments=[times]):
        seq(tvm.IRModule())
    # Counted inclusively, the wrapper would hold 5.0 and the build 10.0 in all.
    assert dict(times.seconds) == {"wrapper": 0.0, "first": 2.0, "second": 3.0}


MLC_LLM_AT_HAND = (Path(MLC_LLM_SOURCE) / "mlc_llm" / "compiler_pass" / "pipeline.py").is_file()
NO_MLC_LLM = f"no MLC-LLM checkout at {MLC_LLM_SOURCE} (set MLC_LLM_SOURCE to its python folder)"
needs_mlc_llm = pytest.mark.skipif(not MLC_LLM_AT_HAND, reason=NO_MLC_LLM)


@needs_mlc_llm
def test_mlc_llm_llama_captures_as_stock_does_in_mlc_llm_own_pipeline():
    """MLC-LLM's Llama built by MLC-LLM's compile for cuda with CUDA graphs on: ours builds,
    RewriteCUDAGraph's output is as well formed as stock's, no check is in or after a graph, and
    ours captures every kernel stock captures in no more graphs (the check exits 1 otherwise)."""
    result = _mlc_llm_check(MLC_LLM_SOURCE, "--models", "llama")
    assert result.returncode == 0, result.stdout + result.stderr[-3000:]
    row = next(line for line in result.stdout.splitlines() if line.startswith("llama "))
    assert row.split()[1] == "yes/yes" and row.split()[-1] == "yes", row
    assert "ours holds on every model: yes" in result.stdout


@needs_mlc_llm
def test_mlc_llm_llama_plans_every_function_at_its_bound():
    """MLC-LLM's Llama at hidden size 256 (the size at which a greedy order left `decode` above
    its bound) in MLC-LLM's own pipeline: our planner places every function at its peak-live
    bound, and says so; and our model of TVM's planner, by which the pass decides whether to run
    TVM's, predicts TVM's plan of every function (symbolic sizes at MLC-LLM's bounds)."""
    sizes = ["--set", "hidden_size=256", "--set", "intermediate_size=1024"]
    result = _mlc_llm_check(MLC_LLM_SOURCE, "--models", "llama", "--plans", *sizes)
    assert result.returncode == 0, result.stdout + result.stderr[-3000:]
    rows = [
        line.split() for line in result.stdout.splitlines() if re.match(r"llama +\w+ +\d", line)
    ]
    assert {row[1] for row in rows} >= {"decode", "prefill", "batch_decode", "batch_verify"}
    for row in rows:
        assert row[2] == row[3] and row[-1] == "at_bound", row
        assert row[-2] == "yes", row
    assert "the model predicts TVM's planner on every function: yes" in result.stdout


@needs_mlc_llm
def test_mlc_llm_llama_holds_steady_and_less_than_stock_at_run_time():
    """MLC-LLM's Llama built by MLC-LLM's compile for llvm and served on the CPU through every
    batch size and several prompt lengths (tools/mlc_llm_held.py): what TVM's pooled allocator
    holds does not grow after the first calls, is below what it holds with stock's planner, and
    the logits are stock's (the tool exits 1 otherwise)."""
    tool = ROOT / "tools" / "mlc_llm_held.py"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "python"), str(ROOT)])}
    result = subprocess.run(
        [sys.executable, str(tool), MLC_LLM_SOURCE, "--models", "llama"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert result.returncode == 0, result.stdout + result.stderr[-3000:]
    row = next(line for line in result.stdout.splitlines() if line.startswith("llama "))
    stock, ours = (int(b) for b in row.split()[2].split("/"))  # held after the varied calls
    assert ours < stock, row
