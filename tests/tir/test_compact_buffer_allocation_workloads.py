"""The scheduled workloads of bench/compact.py: same results on CPU, never more bytes than stock."""

import importlib.util
import re
from pathlib import Path

import pytest
import tvm

from tvm_memplan import testing
from tvm_memplan.transform import CompactBufferAllocation

_spec = importlib.util.spec_from_file_location(
    "bench_compact", Path(__file__).resolve().parents[2] / "bench" / "compact.py"
)
bench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench)

GPU = {
    "matmul gpu shared+local",
    "matmul gpu storage_align",
    "conv2d gpu shared+local",
    "transpose shared aligned",
}


@pytest.mark.parametrize("name", sorted(bench.WORKLOADS))
def test_workload_is_never_larger_than_stock(name):
    mod = bench.WORKLOADS[name]()
    ours = bench._bytes(CompactBufferAllocation()(mod))
    stock = bench._bytes(tvm.s_tir.transform.CompactBufferAllocation()(mod))
    assert ours <= stock


@pytest.mark.parametrize("name", sorted(set(bench.WORKLOADS) - GPU))
def test_workload_keeps_results_on_cpu(name):
    before = bench.WORKLOADS[name]()["main"]
    after = CompactBufferAllocation()(bench._module(before))["main"]
    testing.assert_same_results(before, after)


def _serialized(func):
    """Thread bindings turned into serial loops, so that a GPU schedule runs on the CPU."""
    source = re.sub(r'T\.thread_binding\((\d+), thread="[^"]+"\)', r"range(\1)", func.script())
    return tvm.script.from_source(source)


@pytest.mark.parametrize("name", sorted(GPU))
def test_gpu_workload_keeps_results_with_threads_run_serially(name):
    """Checks the index arithmetic of the rewrite; which threads share a buffer is checked on
    the IR in test_compact_buffer_allocation.py."""
    before = bench.WORKLOADS[name]()["main"]
    after = CompactBufferAllocation()(bench._module(before))["main"]
    assert "thread_binding" in before.script()
    testing.assert_same_results(_serialized(before), _serialized(after))
