"""The scheduled workloads (zoo.workloads): same results on CPU, never more
bytes than stock."""

import re

import pytest
import tvm

from tvm_memplan import testing
from tvm_memplan.transform import CompactBufferAllocation
from zoo.workloads import WORKLOADS, before_compaction

CPU = sorted(name for name, w in WORKLOADS.items() if not w.gpu)
GPU = sorted(name for name, w in WORKLOADS.items() if w.gpu)


def _prepared(name):
    return before_compaction(WORKLOADS[name].build())


def _bytes(mod):
    return sum(testing.allocated_bytes(f) or 0 for f in mod.functions.values())


@pytest.mark.parametrize("name", ["matmul cpu cache_read/write", "row softmax local"])
def test_before_compaction_is_what_the_pipeline_hands_to_compaction(name):
    """before_compaction repeats the s_tir pipeline's passes before compaction: check it."""
    mod = WORKLOADS[name].build()
    captured = testing.capture_ir(mod, "s_tir.CompactBufferAllocation")
    # tvm.compile binds the target to each function first; nothing else may differ.
    captured = tvm.IRModule({gv: f.without_attr("target") for gv, f in captured.functions.items()})
    testing.assert_ir_equal(before_compaction(mod), captured)


@pytest.mark.parametrize("name", sorted(WORKLOADS))
def test_workload_is_never_larger_than_stock(name):
    mod = _prepared(name)
    ours = _bytes(CompactBufferAllocation()(mod))
    stock = _bytes(tvm.s_tir.transform.CompactBufferAllocation()(mod))
    assert ours <= stock


@pytest.mark.parametrize("name", CPU)
def test_workload_keeps_results_on_cpu(name):
    before = _prepared(name)
    after = CompactBufferAllocation()(before)
    testing.assert_same_results(before["main"], after["main"])


def _serialized(func):
    """Thread bindings turned into serial loops, so that a GPU schedule runs on the CPU."""
    source = re.sub(r'T\.thread_binding\((\d+), thread="[^"]+"\)', r"range(\1)", func.script())
    return tvm.script.from_source(source)


@pytest.mark.parametrize("name", sorted(GPU))
def test_gpu_workload_keeps_results_with_threads_run_serially(name):
    """Checks the index arithmetic of the rewrite; which threads share a buffer is checked on
    the IR in test_compact_buffer_allocation.py."""
    before = _prepared(name)["main"]
    after = CompactBufferAllocation()(tvm.IRModule({"main": before}))["main"]
    assert "thread_binding" in before.script()
    testing.assert_same_results(_serialized(before), _serialized(after))
