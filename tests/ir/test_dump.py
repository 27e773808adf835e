"""The diagnostic channel: PassContext option tvm_memplan.dump_dir (ir/dump.h)."""

import pytest
import tvm

import tvm_memplan
from zoo.models import ZOO


def _stages(directory, pass_name):
    names = sorted(p.name for p in directory.iterdir() if f"-{pass_name}-" in p.name)
    return [name.split(f"-{pass_name}-", 1)[1].removesuffix(".txt") for name in names]


@pytest.fixture(scope="module")
def dumped(tmp_path_factory):
    directory = tmp_path_factory.mktemp("dump") / "memplan"  # created by the first write
    with tvm.transform.PassContext(config={"tvm_memplan.dump_dir": str(directory)}):
        tvm_memplan.compile(ZOO["small_cnn"]()[0], "llvm")
    return directory


def test_every_pass_writes_what_it_saw_and_decided(dumped):
    # The memplan Relax pipeline runs it twice: on operator calls, then on the final PrimFuncs.
    once = ["input", "forward-decisions", "output"]
    assert _stages(dumped, "DataflowUseInplaceCalls") == once + once
    assert _stages(dumped, "StaticPlanBlockMemory") == ["input", "plans", "output"]
    assert _stages(dumped, "TagAllocationPlacement") == ["input", "plan", "output"]
    assert _stages(dumped, "LowerTVMBuiltin") == [
        "input",
        "plan",
        "prepared",
        "lowered",
        "restored",
        "output",
    ]
    compaction = _stages(dumped, "CompactBufferAllocation")
    assert "conv2d-regions" in compaction and "conv2d-output" in compaction


def test_files_are_numbered_in_the_order_they_were_written(dumped):
    names = sorted(p.name for p in dumped.iterdir())
    numbers = [int(name.split("-", 1)[0]) for name in names]
    assert numbers == sorted(numbers) and len(set(numbers)) == len(numbers)
    order = [name.split("-", 2)[1] for name in names]
    assert order.index("DataflowUseInplaceCalls") < order.index("StaticPlanBlockMemory")
    assert order.index("StaticPlanBlockMemory") < order.index("LowerTVMBuiltin")


def test_modules_are_tvmscript_and_decisions_are_records(dumped):
    (lowered,) = [p for p in dumped.iterdir() if p.name.endswith("-LowerTVMBuiltin-lowered.txt")]
    assert "@I.ir_module" in lowered.read_text()
    (plans,) = [p for p in dumped.iterdir() if p.name.endswith("-StaticPlanBlockMemory-plans.txt")]
    assert 'tvm_memplan.relax.FunctionMemoryPlan(function="forward"' in plans.read_text()


def test_without_the_option_nothing_is_written(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    tvm_memplan.compile(ZOO["mlp"]()[0], "llvm")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("value", [3, ""])
def test_the_option_must_name_a_folder(value):
    with pytest.raises(ValueError, match="tvm_memplan.dump_dir must be a folder name"):
        tvm.transform.PassContext(config={"tvm_memplan.dump_dir": value})
