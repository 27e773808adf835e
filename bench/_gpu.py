"""The GPU evidence, stock against memplan in one process (``python -m bench --gpu``): models of
the zoo and the LLM module built for cuda, with and without CUDA graphs (RewriteCUDAGraph), each
build called three times with fresh inputs and its results compared with stock's; run time (ms
per call, decode steps per second for the LLM module) and the device memory the VM's allocator
holds once the calls ran. Without a GPU it measures nothing and says so.

    python bench/_gpu.py [--quick] [--target cuda]

``--target llvm`` (or a target as JSON, ``'{"kind": "llvm", "opt-level": 0}'``) runs the same
measurements on the CPU, without CUDA graphs (which only cuda has): what the tests use to check
the script itself. Exit status: 0 when every result matched
stock's, or when there was nothing to measure; 1 when a result differed.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import sys
import time

import numpy as np
import tvm
from _table import print_header  # bench/_table.py
from _zoo import llm, models  # zoo/ (bench/_zoo.py)
from tvm import relax

import tvm_memplan
from tvm_memplan.analysis.cuda_graphs import USE_CUDA_GRAPH
from tvm_memplan.testing import relax_inputs

#: Models of the zoo measured by default: a chain CNN, a depthwise CNN, a U-Net, transformer
#: blocks, and the two small graphs whose captures in-place writes used to cut.
DEFAULT_MODELS = (
    "resnet",
    "mobilenet_v2",
    "unet",
    "transformer_block",
    "vision_transformer",
    "residual_net",
    "lstm_cell",
)
#: The LLM module's size: the zoo's small Llama (a prefill chunk of 64 keeps it quick); with
#: --quick the tests' (hidden 64), which LLVM compiles in seconds.
LLM_CONFIG = llm.LlamaConfig(prefill_chunk_size=64, context_window_size=256)
QUICK_LLM_CONFIG = dataclasses.replace(llm.TEST, context_window_size=256)
CALLS = 3


def gpu_missing(target: tvm.target.Target) -> str | None:
    """Why nothing can run on `target`'s device here, or None."""
    kind = target.kind.name
    if kind == "llvm":
        return None
    if not tvm.runtime.enabled(kind):
        return (
            f"no {kind} GPU here: TVM's {kind} runtime is not loaded (tvm.runtime.enabled({kind!r})"
            " is False; it needs the GPU's driver)"
        )
    if not tvm.device(kind, 0).exist:
        return f"no {kind} device found (tvm.device({kind!r}, 0).exist is False)"
    return None


def held_bytes(device: tvm.runtime.Device, run) -> int | None:
    """Device memory the process holds after `run()` that it did not before, with the VM's
    pooled allocator emptied first (it keeps what it allocated until cleared); None where the
    device does not report its free memory (the CPU)."""
    tvm.get_global_func("vm.builtin.memory_manager.clear")()
    try:
        before = device.available_global_memory
    except Exception:  # noqa: BLE001  (devices without the attribute)
        before = None
    run()
    device.sync()
    if before is None:
        return None
    return before - device.available_global_memory


def build(mod: tvm.IRModule, target, memplan: bool, graphs: bool, relax_pipeline="default"):
    config = {USE_CUDA_GRAPH: graphs}
    with tvm.transform.PassContext(opt_level=3, config=config):
        if memplan:
            return tvm_memplan.compile(mod, target, relax_pipeline=relax_pipeline)
        if relax_pipeline != "default":
            return tvm.compile(mod, target, relax_pipeline=relax_pipeline)
        return tvm.compile(mod, target)


def _numpy(value) -> list[np.ndarray]:
    if isinstance(value, tvm.runtime.Tensor):
        return [value.numpy()]
    return [a for item in value for a in _numpy(item)]


def _compare(ours: list[np.ndarray], stock: list[np.ndarray]) -> tuple[bool, float]:
    """(identical, largest absolute difference)."""
    identical = all(np.array_equal(a, b) for a, b in zip(ours, stock, strict=True))
    worst = max(
        (
            float(np.max(np.abs(a.astype("float64") - b.astype("float64"))))
            for a, b in zip(ours, stock, strict=True)
            if a.size
        ),
        default=0.0,
    )
    return identical, worst


def measure_model(name: str, target, device, graphs: bool, timed_calls: int) -> dict:
    mod, func_name = models.ZOO[name]()
    executables = {
        who: build(mod, target, who == "memplan", graphs) for who in ("stock", "memplan")
    }
    vms = {who: relax.VirtualMachine(ex, device) for who, ex in executables.items()}
    outputs = {who: [] for who in vms}
    calls = {}
    for who, vm in vms.items():
        function = vm[func_name]

        def run(function=function, who=who):
            for call in range(CALLS):  # fresh inputs each call, the same for both builds
                inputs = [
                    tvm.runtime.tensor(x, device) for x in relax_inputs(mod[func_name], seed=call)
                ]
                outputs[who].append(_numpy(function(*inputs)))

        held = held_bytes(device, run)
        inputs = [tvm.runtime.tensor(x, device) for x in relax_inputs(mod[func_name], seed=0)]
        calls[who] = (lambda function=function, inputs=inputs: function(*inputs)), held
    same = [_compare(o, s) for o, s in zip(outputs["memplan"], outputs["stock"], strict=True)]
    times = {}
    for who, (call, _) in calls.items():
        call()
        device.sync()
        samples = []
        for _ in range(5):
            start = time.perf_counter()
            for _ in range(timed_calls):
                call()
            device.sync()
            samples.append((time.perf_counter() - start) / timed_calls)
        times[who] = statistics.median(samples)
    return {
        "identical": all(i for i, _ in same),
        "worst": max(w for _, w in same),
        "ms": {who: t * 1e3 for who, t in times.items()},
        "held": {who: held for who, (_, held) in calls.items()},
    }


def measure_llm(target, device, graphs: bool, steps: int, config: llm.LlamaConfig) -> dict:
    mod, _ = llm.llm_module(config, target)
    weights = llm.llm_weights(config, seed=0)
    results = {}
    for who in ("stock", "memplan"):
        pipeline = llm.mlc_llm_pipeline(variable_bounds=config.variable_bounds)
        executable = build(mod, target, who == "memplan", graphs, relax_pipeline=pipeline)
        vm = relax.VirtualMachine(executable, device)
        outputs = []

        def run(vm=vm, outputs=outputs):
            for generation in range(CALLS):
                rng = np.random.default_rng(generation)
                prompt = rng.integers(0, config.vocab_size, 9 + generation)
                outputs.append(
                    llm.run_llm(vm, config, weights, prompt, 3, seed=generation, device=device)
                )

        held = held_bytes(device, run)
        prompt = np.arange(8)
        rate = llm.decode_steps_per_second(vm, config, weights, prompt, steps, device=device)
        results[who] = (outputs, held, rate)
    pairs = []
    for run_ours, run_stock in zip(results["memplan"][0], results["stock"][0], strict=True):
        for name, arrays in run_stock.items():
            for ours, stock in zip(run_ours[name], arrays, strict=True):
                pairs.append(_compare([ours], [stock]))
    return {
        "identical": all(i for i, _ in pairs),
        "worst": max(w for _, w in pairs),
        "rate": {who: r[2] for who, r in results.items()},
        "held": {who: r[1] for who, r in results.items()},
    }


def _held(value: int | None) -> str:
    return "n/a" if value is None else f"{value:,}"


def _ratio(ours, stock) -> str:
    if ours is None or stock is None or stock == 0:
        return "n/a"
    return f"{ours / stock:.3f}"


def _row(label: str, graphs: bool, r: dict, figure: dict, fmt: str) -> str:
    """One line of the table: `figure` is per build (stock, memplan), printed as stock's value
    and the ratio memplan/stock."""
    ratio = _ratio(figure["memplan"], figure["stock"])
    return (
        f"{label:<19} {'on' if graphs else 'off':<6} {'yes' if r['identical'] else 'NO':<9} "
        f"{r['worst']:>10.2e} {figure['stock']:{fmt}} {ratio:>8} "
        f"{_held(r['held']['stock']):>12} {_ratio(r['held']['memplan'], r['held']['stock']):>10}"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="two models, fewer timed calls")
    parser.add_argument(
        "--target", default="cuda", help="cuda (default), or llvm to check the script"
    )
    parser.add_argument(
        "--models", nargs="*", help=f"zoo models (default: {', '.join(DEFAULT_MODELS)})"
    )
    args = parser.parse_args()
    target = tvm.target.Target(
        json.loads(args.target) if args.target.startswith("{") else args.target
    )
    missing = gpu_missing(target)
    if missing:
        print(f"GPU check: {missing}: nothing measured.")
        return 0
    device = tvm.device("cpu" if target.kind.name == "llvm" else target.kind.name, 0)
    names = args.models or (DEFAULT_MODELS[:2] if args.quick else DEFAULT_MODELS)
    timed_calls = 5 if args.quick else 20
    graph_modes = (False, True) if target.kind.name == "cuda" else (False,)
    print(f"GPU check on {target.kind.name} ({device}): {CALLS} calls per build with fresh inputs")
    rule = print_header(
        f"{'model':<19} {'graphs':<6} {'identical':<9} {'max |diff|':>10} {'stock ms':>9} "
        f"{'ms ratio':>8} {'stock held':>12} {'held ratio':>10}"
    )
    all_same = True
    for name in names:
        for graphs in graph_modes:
            r = measure_model(name, target, device, graphs, timed_calls)
            all_same = all_same and r["identical"]
            print(_row(name, graphs, r, r["ms"], "9.3f"))
    steps = 16 if args.quick else 64
    config = QUICK_LLM_CONFIG if args.quick else LLM_CONFIG
    for graphs in graph_modes:
        r = measure_llm(target, device, graphs, steps, config)
        all_same = all_same and r["identical"]
        print(_row("llm (decode/s)", graphs, r, r["rate"], "9.1f"))
    print(rule)
    print(
        "ms ratio: memplan/stock time per call (llm: decode steps per second, memplan/stock); "
        "held: device bytes the process holds after the calls (pool cleared before)"
    )
    print(f"results match stock's: {'yes' if all_same else 'NO'}")
    return 0 if all_same else 1


if __name__ == "__main__":
    sys.exit(main())
