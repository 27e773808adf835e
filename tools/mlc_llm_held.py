"""What TVM's pooled allocator holds serving MLC-LLM's own models: Llama, Qwen2 and Gemma2 built
by MLC-LLM's own compile path for the host CPU (llvm), stock TVM against tvm-memplan, run side by
side in one process through the calls MLC-LLM's engine makes.

MLC-LLM is imported at run time from the source checkout given as the argument (its ``python``
folder), with the stubs of ``tools/mlc_llm_cuda_graphs.py`` (printed), and compiles as there
(``mlc_compile``: the model's own class, config and quantization, ``export_tvm`` with its default
spec, its ``mlc_llm`` pipeline with its variable bounds and pass config), for ``llvm`` at
opt-level 0 with no optimization flag on. Our ``build_func`` builds the module it is handed twice:
stock (``tvm.compile(mod, target, relax_pipeline=pipeline)``) and ours
(``tvm_memplan.relax_pipeline(pipeline)`` and ``tir_pipeline="memplan"``). Per model and build:

1. held: inside ``analysis.recorded_pool()`` (every distinct block TVM's PooledAllocator hands
   out, rounded as it rounds), a VM on the CPU serves with random weights as MLC-LLM's engine
   does (``zoo.llm.serve``: a paged KV cache from ``create_paged_kv_cache`` sized from the
   executable's metadata, ``embed``, ``begin_forward``/``end_forward`` around each call). First
   the base day: a prefill of 5 tokens and decodes, a batch prefill of 2 and batch decodes; then
   the varied one: prefills of 3, 17, 40 and prefill_chunk_size tokens, batch prefills and
   decodes of every batch size up to max_batch_size. The pool holds what it held after the base
   day and, again, after the varied one: a plan that holds steady does not grow;
2. the rule's figure (``analysis.held_by_plan``) and MLC-LLM's "temporary buffer" (the max of its
   memory_usage estimate, as ``mlc_llm compile`` reports it) on the module MLC-LLM's
   AttachMetadata receives, right after the memory planner;
3. results: the logits of a prefill of 7 tokens and 3 decodes, then a batch prefill of two and 3
   batch decodes, fed the same random tokens, three times with fresh inputs and a fresh VM: ours
   must give stock's, bit for bit (at opt-level 0 both run the same kernels), or to a tight
   tolerance (rtol 1e-6), which the table tells apart.

Random weights: the shapes and dtypes of ``embed``'s packed parameter tuple (``vocab_size`` from
the config), normal with scale 0.02, norm weights around 1 (named by the metadata's params);
integer (quantized) weights uniform over their dtype. The engine creates Gemma2's KV cache without
a sliding window: its config sets the context window to the sliding window (MLC-LLM's metadata
has ``sliding_window_size`` -1), so the engine passes support_sliding_window 0, as ``serve`` does.
A model with a sliding window (Mistral) is reported as not served.

    PYTHONPATH=python python tools/mlc_llm_held.py [MLC_PYTHON] [--models llama,qwen2,gemma2]
        [--quantization q0f32] [--set prefill_chunk_size=256]

Exit status: 0 when, on every model, ours holds after the varied day what it held after the base
day and gives stock's results; 1 otherwise (a build failing included); 2 on bad input.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from collections import Counter
from pathlib import Path

import mlc_llm_cuda_graphs as mlc  # tools/, beside this script
import numpy as np
import tvm
from tvm import relax

from tvm_memplan import analysis
from tvm_memplan.analysis.held_memory import recorded_pool
from tvm_memplan.instrument import trace

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # the repository's workloads (zoo/), as bench/_zoo.py finds them
    sys.path.insert(0, str(ROOT))

from bench._table import print_header  # noqa: E402
from zoo import llm  # noqa: E402

TARGET = {"kind": "llvm", "opt-level": 0}
BUILDS = ("stock", "ours")
BASE_LENGTHS, BASE_BATCHES = [5], [2]
VARIED_LENGTHS = [3, 17, 40]  # and the prefill chunk
CHECK_ROUNDS, CHECK_STEPS = 3, 3
KV_CACHE_CREATION = "create_tir_paged_kv_cache"


# ---- one model, stock and ours ----------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class EngineConfig:
    """What zoo.llm.serve reads of a config, from the executable's metadata (as MLC-LLM's engine
    reads it) and the model's vocab_size."""

    vocab_size: int
    max_batch_size: int
    context_window_size: int
    prefill_chunk_size: int


class EngineVM:
    """A VM as zoo.llm's engine calls it: MLC-LLM's DispatchKVCacheCreation replaced
    ``create_paged_kv_cache`` by ``create_tir_paged_kv_cache`` (FlashInfer's form is for cuda
    only), which MLC-LLM's engine calls where FlashInfer's is absent, with the same arguments."""

    def __init__(self, vm: relax.VirtualMachine):
        self.vm = vm

    def __getitem__(self, name: str):
        return self.vm[KV_CACHE_CREATION if name == "create_paged_kv_cache" else name]


@dataclasses.dataclass
class Build:
    """What one build (stock or ours) gave."""

    error: str | None = None
    executable: tvm.runtime.Executable | None = None
    #: On the module AttachMetadata receives: held_by_plan (its storages of symbolic size
    #: apart) and MLC-LLM's temporary buffer.
    rule_bytes: int | None = None
    symbolic: dict[str, int] = dataclasses.field(default_factory=dict)  # per function
    temp_bytes: int | None = None
    #: The pool's blocks (rounded size -> count) after the base day and after the varied one.
    base: Counter | None = None
    varied: Counter | None = None

    @staticmethod
    def held(blocks: Counter | None) -> int | None:
        return None if blocks is None else sum(size * n for size, n in blocks.items())

    @property
    def grew(self) -> bool | None:
        if self.base is None or self.varied is None:
            return None
        return self.held(self.varied) != self.held(self.base)


@dataclasses.dataclass
class ModelResult:
    name: str
    stock: Build
    ours: Build
    #: "yes" (bit for bit), "close" (within tolerance), "NO", or None (not compared).
    results: str | None = None
    note: str | None = None  # why a model was not served, or where the results differ

    @property
    def holds(self) -> bool:
        return self.ours.grew is False and self.results in ("yes", "close")


def _build(build_fn, config: dict) -> Build:
    """The whole build, with the module MLC-LLM's AttachMetadata receives kept."""
    result = Build()
    t = trace(build_fn, [mlc.ATTACH_METADATA], catch=True, config=config)
    if t.error is not None:
        where = f" (in {'/'.join(t.failing[-2:])})" if t.failing else " (after the passes)"
        result.error = mlc._one_line(t.error) + where
    elif not isinstance(t.result, relax.VMExecutable):
        result.error = f"the build returned {type(t.result).__name__}, not an executable"
    else:
        result.executable = t.result
    planned = t.before.get(mlc.ATTACH_METADATA)
    if planned is not None:
        rule = analysis.held_by_plan(planned)
        result.rule_bytes = rule.held_bytes
        result.symbolic = {name: n for name, n in rule.symbolic.items() if n}
        result.temp_bytes = mlc._temporary_buffer(planned)
    return result


def compile_model(name: str, quantization: str, overrides: dict) -> tuple[dict, tvm.ir.Type]:
    """MLC-LLM's compile of model `name` for llvm, built stock then ours; and the type of
    ``embed``'s packed parameters."""
    builds: dict[str, Build] = {}
    params: list[tvm.ir.Type] = []

    def build_func(mod: tvm.IRModule, args, pipeline: tvm.transform.Pass) -> None:
        config = dict(tvm.transform.PassContext.current().config)  # MLC-LLM's pass config
        for who, build_fn in mlc.stock_and_ours(mod, args.target, pipeline).items():
            builds[who] = _build(build_fn, config)
        params.append(mod["embed"].params[-1].ty)

    mlc.mlc_compile(name, quantization, overrides, tvm.target.Target(TARGET), build_func)
    if set(builds) != set(BUILDS):
        raise RuntimeError(f"mlc_llm compile of {name} ended before both builds ran")
    return builds, params[0]


def random_weights(packed: tvm.ir.Type, names: list[str], sizes: dict, seed: int = 0) -> list:
    """Weights for ``embed``'s packed parameters (``packed``, a tuple type): normal with scale
    0.02, those named as norms around 1, integer ones uniform over their dtype; symbolic
    extents (``vocab_size``) from ``sizes``."""
    rng = np.random.default_rng(seed)
    weights = []
    for ty, name in zip(packed.fields, names, strict=True):
        shape = [
            int(e.value) if isinstance(e, tvm.tirx.IntImm) else int(sizes[str(e)])
            for e in ty.shape.values
        ]
        dtype = np.dtype(str(ty.dtype))
        if np.issubdtype(dtype, np.integer):
            info = np.iinfo(dtype)
            value = rng.integers(info.min, info.max, size=shape, dtype=dtype, endpoint=True)
        else:
            noise = rng.standard_normal(shape) * 0.02
            value = (1.0 + noise if "norm" in name else noise).astype(dtype)
        weights.append(value)
    return weights


def pool_after_days(executable, config: EngineConfig, weights: list) -> tuple[Counter, Counter]:
    """The pool's blocks for one VM after the base day, then after the varied one."""
    with recorded_pool() as pool:
        vm = EngineVM(relax.VirtualMachine(executable, tvm.cpu()))
        llm.serve(vm, config, weights, BASE_LENGTHS, BASE_BATCHES)
        base = pool.sizes()
        lengths = [*VARIED_LENGTHS, config.prefill_chunk_size]
        llm.serve(vm, config, weights, lengths, range(1, config.max_batch_size + 1), seed=1)
        return base, pool.sizes()


def generate(executable, config: EngineConfig, weights: list, seed: int) -> list[np.ndarray]:
    """Every logits of a prefill and decodes of one sequence, then a batch prefill of two and
    batch decodes, in a fresh VM, fed tokens drawn from ``seed`` (not the greedy ones: both
    builds get the same inputs whatever they return)."""
    rng = np.random.default_rng(seed)

    def tokens(count: int) -> np.ndarray:
        return rng.integers(0, config.vocab_size, size=count).astype("int32")

    device = tvm.cpu()
    vm = EngineVM(relax.VirtualMachine(executable, device))
    params = [[tvm.runtime.tensor(w, device) for w in weights]]
    outputs: dict[str, list[np.ndarray]] = {}
    engine = llm._Engine(vm, llm.create_kv_cache(vm, config), params, outputs, device)
    engine.prefill("prefill", [0], [tokens(7)])
    for _ in range(CHECK_STEPS):
        engine.decode("decode", [0], tokens(1))
    engine.prefill("batch_prefill", [1, 2], [tokens(4), tokens(6)])
    for _ in range(CHECK_STEPS):
        engine.decode("batch_decode", [1, 2], tokens(2))
    return [
        a for name in ("prefill", "decode", "batch_prefill", "batch_decode") for a in outputs[name]
    ]


def compare_results(stock, ours, config: EngineConfig, weights: list) -> tuple[str, str | None]:
    """Whether ours gives stock's logits, ``CHECK_ROUNDS`` times with fresh inputs: "yes" (bit
    for bit), "close" (within tolerance) or "NO"; and, where they differ, the largest
    difference."""
    verdict, largest, where = "yes", 0.0, ""
    for round_ in range(CHECK_ROUNDS):
        want = generate(stock, config, weights, seed=100 + round_)
        got = generate(ours, config, weights, seed=100 + round_)
        for i, (a, b) in enumerate(zip(got, want, strict=True)):
            if np.array_equal(a, b):
                continue
            diff = float(np.max(np.abs(a.astype("float64") - b.astype("float64"))))
            if diff >= largest:
                largest, where = diff, f"round {round_}, call {i}"
            if not np.allclose(a, b, rtol=1e-6, atol=1e-7):
                verdict = "NO"
            elif verdict == "yes":
                verdict = "close"
    note = None if verdict == "yes" else f"results: max |ours - stock| {largest:.3g} ({where})"
    return verdict, note


def measure(name: str, quantization: str, overrides: dict) -> ModelResult:
    builds, packed = compile_model(name, quantization, overrides)
    result = ModelResult(name, builds["stock"], builds["ours"])
    if any(b.executable is None for b in builds.values()):
        return result
    # What MLC-LLM's engine reads of the model (the same for both builds but memory_usage).
    metadata = json.loads(relax.VirtualMachine(result.stock.executable, tvm.cpu())["_metadata"]())
    if metadata.get("sliding_window_size", -1) != -1:
        result.note = "a sliding window: the engine's sliding-window calls are not driven here"
        return result
    sizes = {**mlc.MODELS[name].config, **overrides}
    config = EngineConfig(
        vocab_size=int(sizes["vocab_size"]),
        max_batch_size=int(metadata["max_batch_size"]),
        context_window_size=int(metadata["context_window_size"]),
        prefill_chunk_size=int(metadata["prefill_chunk_size"]),
    )
    names = [p["name"] for p in metadata["params"]]
    weights = random_weights(packed, names, sizes)
    for build in builds.values():
        build.base, build.varied = pool_after_days(build.executable, config, weights)
    result.results, result.note = compare_results(
        result.stock.executable, result.ours.executable, config, weights
    )
    return result


# ---- output -----------------------------------------------------------------------------------


def _pair(stock, ours) -> str:
    return f"{'-' if stock is None else stock}/{'-' if ours is None else ours}"


def _grew(build: Build) -> str:
    return "-" if build.grew is None else ("yes" if build.grew else "no")


def print_table(results: list[ModelResult]) -> None:
    header = (
        f"{'model':<8} {'held after base':>17} {'held after varied':>17} {'ratio':>6} "
        f"{'grew':>7} {'held by rule':>17} {'temp buffer T':>17} {'results':>7}  holds"
    )
    rule = print_header(header)
    for r in results:
        s, o = r.stock, r.ours
        held_s, held_o = Build.held(s.varied), Build.held(o.varied)
        ratio = f"{held_o / held_s:.3f}" if held_s and held_o is not None else "-"
        print(
            f"{r.name:<8} {_pair(Build.held(s.base), Build.held(o.base)):>17} "
            f"{_pair(held_s, held_o):>17} {ratio:>6} {_grew(s) + '/' + _grew(o):>7} "
            f"{_pair(s.rule_bytes, o.rule_bytes):>17} {_pair(s.temp_bytes, o.temp_bytes):>17} "
            f"{r.results or '-':>7}  {'yes' if r.holds else 'NO'}"
        )
    print(rule)
    print(
        "pairs are stock/ours, bytes. held: what TVM's pooled allocator holds for one VM "
        "(analysis.recorded_pool: its distinct blocks, rounded to 4096 B) after the base day "
        f"(prefill of {BASE_LENGTHS[0]}, batch prefill of {BASE_BATCHES[0]}, decodes) and after "
        f"the varied one (prefills of {', '.join(map(str, VARIED_LENGTHS))} and the chunk, "
        "batches of every size); ratio: ours/stock after the varied day; grew: held after the "
        "varied day is not held after the base day; held by rule: analysis.held_by_plan on the "
        "module MLC-LLM's AttachMetadata receives (storages of symbolic size left out); temp "
        "buffer T: MLC-LLM's estimate (max over functions); results: ours' logits are stock's "
        f"bit for bit (yes), within rtol 1e-6 (close) or not (NO), {CHECK_ROUNDS} rounds; "
        "holds: ours does not grow and gives stock's results"
    )
    for r in results:
        for build, who in ((r.stock, "stock"), (r.ours, "ours")):
            if build.error:
                print(f"{r.name} {who} build failed: {build.error[:300]}")
            if build.symbolic:
                where = ", ".join(f"{name} {n}" for name, n in sorted(build.symbolic.items()))
                print(
                    f"{r.name} {who}: storages of symbolic size (not in the rule's figure): {where}"
                )
            if build.grew:
                more = build.varied - build.base
                blocks = ", ".join(f"{n} x {size}" for size, n in sorted(more.items()))
                print(f"{r.name} {who}: the varied day added blocks {blocks}")
        if r.note:
            print(f"{r.name}: {r.note}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    mlc.add_checkout_arguments(parser, "q0f32")
    args = parser.parse_args()
    checkout = mlc.open_checkout(parser, args, TARGET)
    names, overrides = checkout.models, checkout.overrides
    results = [measure(name, args.quantization, overrides) for name in names]
    print_table(results)
    holds = all(r.holds for r in results)
    print(f"ours holds steady with stock's results on every model: {'yes' if holds else 'NO'}")
    return 0 if holds else 1


if __name__ == "__main__":
    sys.exit(main())
