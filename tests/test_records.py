"""Every record and options type is declared once, in C++, the same way (docs/architecture.md,
"Passes"): one reflected object whose type key names the Python class, every field documented
there, and the analyses hand out those objects themselves."""

import inspect

import tvm
import tvm_ffi
from tvm.script import relax as R
from tvm.script import tirx as T

import tvm_memplan
from tvm_memplan import analysis, transform
from tvm_memplan.testing import assert_same_relax_results, assert_same_results


def _reflected_types() -> dict[str, type]:
    """Python classes of tvm-memplan's reflected types, by type key."""
    found = {}
    for module in (analysis, transform, tvm_memplan.analysis.memory_plan):
        for _, cls in inspect.getmembers(module, inspect.isclass):
            info = getattr(cls, "__tvm_ffi_type_info__", None)
            if info is not None and info.type_key.startswith("tvm_memplan."):
                found[info.type_key] = cls
    return found


def test_the_records_and_options_are_found():
    keys = set(_reflected_types())
    assert {
        "tvm_memplan.tir.CompactionOptions",
        "tvm_memplan.tir.CompactedRegion",
        "tvm_memplan.tir.AllocationDecision",
        "tvm_memplan.tir.Allocation",
        "tvm_memplan.relax.InplaceOptions",
        "tvm_memplan.relax.InplaceCandidate",
        "tvm_memplan.relax.InplaceStats",
        "tvm_memplan.relax.MemoryPlanOptions",
        "tvm_memplan.relax.FunctionMemoryPlan",
        "tvm_memplan.relax.PlannedTensor",
    } <= keys


def test_each_type_key_names_its_python_class():
    for key, cls in _reflected_types().items():
        assert key.rsplit(".", 1)[1] == cls.__name__, key
        assert key.split(".")[1] in ("tir", "relax"), key


def test_every_reflected_field_carries_its_doc():
    """The docs Python, the report and the docs pages show come from the one C++ declaration."""
    for key, cls in _reflected_types().items():
        for field in cls.__tvm_ffi_type_info__.fields:
            assert field.doc and field.doc.strip(), f"{key}.{field.name} has no doc"


@tvm.script.ir_module
class _PartlyUsed:
    @T.prim_func
    def main(A: T.Buffer((16,), "float32"), B: T.Buffer((4,), "float32")):
        T.func_attr({"target": T.target("llvm")})
        C = T.alloc_buffer((16,), "float32")
        for i in range(4):
            C[i + 2] = A[i + 2]
        for i in range(4):
            B[i] = C[i + 2]


@tvm.script.ir_module
class _PartlyUsedCompacted:
    @T.prim_func
    def main(A: T.Buffer((16,), "float32"), B: T.Buffer((4,), "float32")):
        T.func_attr({"target": T.target("llvm")})
        C = T.alloc_buffer((4,), "float32")
        for i in range(4):
            C[i + 2 - 2] = A[i + 2]
        for i in range(4):
            B[i] = C[i + 2 - 2]


def test_compaction_hands_out_the_record_the_rewrite_follows():
    (region,) = analysis.compacted_regions(_PartlyUsed["main"])
    assert type(region) is analysis.CompactedRegion
    assert (region.compacted, list(region.shape), list(region.offset)) == (True, [4], [2])
    assert (region.original_bytes, region.compacted_bytes) == (64, 16)
    out = transform.CompactBufferAllocation()(_PartlyUsed)
    tvm.ir.assert_structural_equal(out, _PartlyUsedCompacted)
    assert_same_results(_PartlyUsed["main"], out["main"])


def test_placement_hands_out_the_record():
    decisions = analysis.allocation_plan(_PartlyUsed["main"])
    assert [type(d) for d in decisions] == [analysis.AllocationDecision]
    (d,) = decisions
    assert (d.name, d.nbytes, d.placement, d.stock_placement) == ("C", 64, "stack", "stack")


@tvm.script.ir_module
class _Chain:
    @R.function
    def main(x: R.Tensor((4,), "float32")):
        with R.dataflow():
            a = R.exp(x)
            b = R.exp(a)
            R.output(b)
        return b


@tvm.script.ir_module
class _ChainInPlace:
    @T.prim_func(private=True, s_tir=True)
    def tir_exp_inplace(x: T.Buffer((T.int64(4),), "float32")):
        T.func_attr({"tirx.noalias": True})
        for i0 in range(T.int64(4)):
            with T.sblock("compute"):
                v_i0 = T.axis.spatial(T.int64(4), i0)
                T.reads(x[v_i0])
                T.writes(x[v_i0])
                x[v_i0] = T.exp(x[v_i0])

    @R.function
    def main(x: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):
        cls = _ChainInPlace
        with R.dataflow():
            a = R.exp(x)
            b = R.call_tir_inplace(
                cls.tir_exp_inplace, (a,), out_ty=R.Tensor((4,), "float32"), inplace_indices=[0]
            )
            R.output(b)
        return b


def test_inplace_hands_out_the_record_the_rewrite_follows():
    candidates = analysis.inplace_candidates(_Chain["main"], _Chain)
    assert [type(c) for c in candidates] == [analysis.InplaceCandidate] * 2
    refused, taken = candidates
    assert (refused.binding, refused.inplace, refused.arg_index, refused.arg) == (
        "a",
        False,
        None,
        None,
    )
    assert (taken.binding, taken.op, taken.inplace, taken.arg_index, taken.arg) == (
        "b",
        "relax.exp",
        True,
        0,
        "a",
    )
    out = transform.DataflowUseInplaceCalls()(_Chain)
    tvm.ir.assert_structural_equal(out, _ChainInPlace)
    assert_same_relax_results(_Chain, out)


def test_records_are_tvm_ffi_objects_not_copies():
    """No Python dataclass stands between a record and its reader."""
    for cls in _reflected_types().values():
        assert issubclass(cls, tvm_ffi.Object)
