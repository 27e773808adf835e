"""LowerTVMBuiltin, tvm_memplan's pass against TVM's in one process: the run time of kernels
whose temporaries ours keeps on the stack where TVM's uses the workspace, and the pass time.

1. Runtime of kernels with many small temporaries, compiled with the stock "s_tir" pipeline
   (TVM's rule: only "global" below 1024 bytes on the stack) and with the "memplan" pipeline
   (our rule, at the limit shown), on llvm. Ratio = stock time / ours (> 1: ours is faster).
2. Time of the pass itself on a large packed host function: ours / stock (target <= 1.2).

    python bench/alloc.py [--quick]

Kernels run on one thread (TVM_NUM_THREADS=1 unless set): on a shared machine the thread pool
makes the timings of the parallel loops mostly noise.
"""

from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("TVM_NUM_THREADS", "1")  # before TVM's runtime starts its thread pool

import numpy as np  # noqa: E402
import tvm  # noqa: E402

import tvm_memplan  # noqa: E402
from tvm_memplan.analysis import allocation_plan, placement_counts  # noqa: E402
from tvm_memplan.testing import capture_ir  # noqa: E402

ROWS = 4096


def temporaries_kernel(count: int, elements: int, scope: str) -> tvm.tirx.PrimFunc:
    """A parallel loop over ROWS rows; each row fills `count` temporaries of `elements` floats
    from its input row and sums them into the output row."""
    lines = [
        "@T.prim_func",
        f'def main(A: T.Buffer(({ROWS}, {elements}), "float32"), '
        f'B: T.Buffer(({ROWS}, {elements}), "float32")):',
        f"    for r in T.parallel({ROWS}):",
    ]
    for k in range(count):
        lines.append(f'        t{k} = T.alloc_buffer(({elements},), "float32", scope="{scope}")')
    for k in range(count):
        lines.append(f"        for j in range({elements}):")
        lines.append(f"            t{k}[j] = A[r, (j + {k}) % {elements}] * T.float32({k + 1})")
    terms = " + ".join(f"t{k}[{elements - 1} - j]" for k in range(count))
    lines.append(f"        for j in range({elements}):")
    lines.append(f"            B[r, j] = {terms}")
    return tvm.script.from_source("\n".join(lines))


def run_time(func, pipeline: str, config: dict, repeat: int) -> tuple[float, np.ndarray]:
    with tvm.transform.PassContext(config=config):
        lib = tvm.compile(tvm.IRModule({"main": func}), target="llvm", tir_pipeline=pipeline)
    shape = [int(x) for x in func.params[0].ty.shape]
    rng = np.random.default_rng(0)
    a = tvm.runtime.tensor(rng.standard_normal(shape).astype("float32"))
    b = tvm.runtime.tensor(np.zeros(shape, "float32"))
    timer = lib.jit().time_evaluator("main", tvm.cpu(), number=10, repeat=repeat)
    seconds = timer(a, b).median
    return seconds, b.numpy()


def runtime_table(quick: bool) -> list[tuple]:
    repeat = 3 if quick else 7
    cases = [
        # (label, temporaries, floats each, scope, memplan config)
        ("8 x 64 B local", 8, 16, "local", {}),
        ("8 x 512 B local", 8, 128, "local", {}),
        ("8 x 2 KB global", 8, 512, "global", {"tvm_memplan.max_stack_alloca": 65536}),
        ("4 x 8 KB global", 4, 2048, "global", {"tvm_memplan.max_stack_alloca": 65536}),
    ]
    rows = []
    for label, count, elements, scope, config in cases:
        func = temporaries_kernel(count, elements, scope)
        stock, stock_out = run_time(func, "s_tir", {}, repeat)
        ours, ours_out = run_time(func, "memplan", config, repeat)
        np.testing.assert_array_equal(ours_out, stock_out)
        limit = config.get("tvm_memplan.max_stack_alloca", 1024)
        with tvm.transform.PassContext(config=config):
            placed = placement_counts(allocation_plan(func, "llvm"))
        rows.append((label, limit, placed.get("stack", 0), stock * 1e3, ours * 1e3, stock / ours))
    return rows


def large_host_module(temporaries: int, scopes: tuple[str, ...]) -> tvm.IRModule:
    """A packed host function with `temporaries` buffers (sizes 16 B to 4 KB, never exactly
    1024 B, scopes taken in turn from `scopes`), as the stock pipeline hands it to
    LowerTVMBuiltin."""
    lines = ["@T.prim_func", 'def main(A: T.Buffer((4096,), "float32")):']
    for k in range(temporaries):
        n = [4, 64, 255, 300, 1024][k % 5]
        scope = scopes[k % len(scopes)]
        lines.append(f'    t{k} = T.alloc_buffer(({n},), "float32", scope="{scope}")')
        lines.append(f"    for j in range({n}):")
        lines.append(f"        t{k}[j] = A[({k} * 7 + j) % 4096] + T.float32({k})")
        lines.append(f"    for j in range({n}):")
        lines.append(f"        A[({k} * 13 + j) % 4096] = t{k}[{n - 1} - j]")
    func = tvm.script.from_source("\n".join(lines))
    return capture_ir(func, "tirx.LowerTVMBuiltin", "llvm", tir_pipeline="s_tir")


def pass_times(passes: list, mod, repeat: int) -> list[float]:
    """The fastest of `repeat` runs of each pass, runs interleaved so that load changes on the
    machine hit every pass alike."""
    times = [[] for _ in passes]
    for _ in range(repeat):
        for make_pass, samples in zip(passes, times, strict=True):
            start = time.perf_counter()
            make_pass()(mod)
            samples.append(time.perf_counter() - start)
    return [min(samples) for samples in times]


PASS_CASES = [
    # (label, scopes, max_stack_alloca): what our pass must do besides running TVM's
    ("global, default", ("global",), None),  # nothing: TVM's rule places every buffer as ours
    ("mixed, default", ("global", "local", "global.workspace"), None),  # "local" to "global"
    ("mixed, limit 0", ("global", "local", "global.workspace"), 0),  # + workspace stand-ins
    ("mixed, limit 64K", ("global", "local", "global.workspace"), 65536),  # + annotations
]


def pass_time_table(quick: bool) -> list[tuple]:
    repeat = 5 if quick else 21
    rows = []
    for temporaries in (400,) if quick else (400, 800):
        for label, scopes, limit in PASS_CASES:
            mod = large_host_module(temporaries, scopes)
            config = {} if limit is None else {"tvm_memplan.max_stack_alloca": limit}
            with tvm.transform.PassContext(config=config):
                stock, ours = pass_times(
                    [tvm.tirx.transform.LowerTVMBuiltin, tvm_memplan.transform.LowerTVMBuiltin],
                    mod,
                    repeat,
                )
            rows.append((temporaries, label, stock * 1e3, ours * 1e3, ours / stock))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer repetitions and sizes")
    args = parser.parse_args()

    threads = os.environ["TVM_NUM_THREADS"]
    print(f"Runtime, llvm, parallel loop over {ROWS} rows ({threads} thread), temporaries per row")
    print(
        f"{'temporaries':<18}{'limit':>7}{'on stack':>10}{'stock ms':>11}{'ours ms':>10}"
        f"{'stock/ours':>12}"
    )
    for label, limit, stacked, stock, ours, ratio in runtime_table(args.quick):
        print(f"{label:<18}{limit:>7}{stacked:>10}{stock:>11.3f}{ours:>10.3f}{ratio:>12.2f}")
    print()
    print("Pass time on a packed host function (fastest run), LowerTVMBuiltin")
    print(
        f"{'temporaries':<13}{'scopes, limit':<18}{'stock ms':>10}{'ours ms':>10}{'ours/stock':>12}"
    )
    for temporaries, label, stock, ours, ratio in pass_time_table(args.quick):
        print(f"{temporaries:<13}{label:<18}{stock:>10.2f}{ours:>10.2f}{ratio:>12.2f}")


if __name__ == "__main__":
    main()
