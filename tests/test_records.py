"""Every record and options type is declared once, in C++, the same way (docs/architecture.md,
"Passes"): one reflected object whose type key names the Python class, every field documented
there, and the analyses hand out those objects themselves."""

import importlib
import inspect
import re
from pathlib import Path

import tvm
from tvm.script import relax as R
from tvm.script import tirx as T

from tvm_memplan import analysis, transform
from tvm_memplan.testing import assert_same_relax_results, assert_same_results


def _reflected_types() -> dict[str, type]:
    """Python classes of tvm-memplan's reflected types, by type key."""
    found = {}
    # `analysis.memory_plan` is the function; its module holds the plan's record classes.
    plan_module = importlib.import_module("tvm_memplan.analysis.memory_plan")
    for module in (analysis, transform, plan_module):
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
        "tvm_memplan.relax.Concatenation",
        "tvm_memplan.relax.RevertedInplaceWrite",
        "tvm_memplan.relax.StorageAllocation",
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


SRC = Path(__file__).resolve().parents[1] / "src_cpp"


def _reflected_members(header: Path) -> dict[str, tuple[list[str], set[str]]]:
    """Per reflected class of `header`: the lines of its body before its C++-only members, and
    the names of the fields its RegisterReflection (in the .cc beside it) registers."""
    source = header.with_suffix(".cc").read_text()
    out = {}
    pattern = r"class (\w+Obj) : public ffi::Object \{\n public:\n(.*?)static void Register"
    for match in re.finditer(pattern, header.read_text(), re.S):
        cls, body = match.groups()
        start = source.find(f"void {cls}::RegisterReflection()")
        assert start >= 0, f"{cls}: no RegisterReflection in {header.with_suffix('.cc').name}"
        registration = source[start : source.find("\n}\n", start)]
        names = set(re.findall(r"&(?:R|\w+Obj)::(\w+)", registration))
        out[cls] = (body.split("// C++ only")[0].splitlines(), names)
    return out


def test_a_reflected_field_is_documented_once():
    """A reflected field's doc is its reflected text (what Python, the report and the docs pages
    show), never a header comment beside it as well: two copies drift apart."""
    headers = [h for h in SRC.rglob("*.h") if "RegisterReflection();" in h.read_text()]
    assert len(headers) >= 5
    checked = 0
    for header in headers:
        for cls, (lines, names) in _reflected_members(header).items():
            for previous, line in zip(lines, lines[1:], strict=False):
                declared = re.findall(r"(\w+)(?:\s*=[^,;]*)?(?=[,;])", line)
                if not line.startswith("  ") or not set(declared) & names:
                    continue
                checked += 1
                comment = previous.strip().endswith("*/") or (
                    previous.strip().startswith("//") and "Reflected fields" not in previous
                )
                assert not comment, f"{header.name}: {cls}: {line.strip()} has a header comment"
    assert checked > 60


@tvm.script.ir_module
class _PartlyUsed:
    @T.prim_func
    def main(A: T.Buffer((16, 8), "float32"), B: T.Buffer((4, 8), "float32")):
        T.func_attr({"target": T.target("llvm")})
        C = T.alloc_buffer((16, 8), "float32")
        W = T.alloc_buffer((16, 8), "float32")
        for i, j in T.grid(4, 8):
            C[i + 2, j] = A[i + 2, j]
        for i, j in T.grid(16, 8):
            W[i, j] = A[i, j]
        for i, j in T.grid(4, 8):
            B[i, j] = C[i + 2, j] + W[i * 4, j]


@tvm.script.ir_module
class _PartlyUsedCompacted:
    @T.prim_func
    def main(A: T.Buffer((16, 8), "float32"), B: T.Buffer((4, 8), "float32")):
        T.func_attr({"target": T.target("llvm")})
        C = T.alloc_buffer((4, 8), "float32")
        W = T.alloc_buffer((16, 8), "float32")
        for i, j in T.grid(4, 8):
            C[i + 2 - 2, j] = A[i + 2, j]
        for i, j in T.grid(16, 8):
            W[i, j] = A[i, j]
        for i, j in T.grid(4, 8):
            B[i, j] = C[i + 2 - 2, j] + W[i * 4, j]


def test_compaction_hands_out_the_record_the_rewrite_follows():
    """C shrinks along the dimension that moves (j keeps its index, with no `- 0`); W, whose
    accesses cover it, stays as it is."""
    c, w = analysis.compacted_regions(_PartlyUsed["main"])
    assert type(c) is analysis.CompactedRegion
    assert (c.name, c.compacted, list(c.shape), list(c.offset)) == ("C", True, [4, 8], [2, 0])
    assert (c.original_bytes, c.compacted_bytes) == (512, 128)
    assert (w.name, w.compacted, list(w.shape), list(w.offset)) == ("W", False, [16, 8], [0, 0])
    assert w.reason == "the accesses cover the whole buffer"
    assert w.original_bytes == w.compacted_bytes == 512
    out = transform.CompactBufferAllocation()(_PartlyUsed)
    tvm.ir.assert_structural_equal(out, _PartlyUsedCompacted)
    assert_same_results(_PartlyUsed["main"], out["main"])


def test_placement_hands_out_the_record():
    """On the CPU with TVM's limit (1024 bytes), C (512 bytes) is on the stack and W too; a
    buffer over the limit goes to the workspace, as stock puts it."""
    decisions = analysis.allocation_plan(_PartlyUsed)
    assert [type(d) for d in decisions] == [analysis.AllocationDecision] * 2
    assert [
        (d.function, d.name, d.kind, d.nbytes, d.placement, d.stock_placement) for d in decisions
    ] == [
        ("main", "C", "alloc_buffer", 512, "stack", "stack"),
        ("main", "W", "alloc_buffer", 512, "stack", "stack"),
    ]
    (big,) = analysis.allocation_plan(_Large)
    assert (big.nbytes, big.placement, big.stock_placement) == (4096, "workspace", "workspace")
    assert big.reason.startswith("4096 bytes > ")


@tvm.script.ir_module
class _Large:
    @T.prim_func
    def main(A: T.Buffer((1024,), "float32")):
        T.func_attr({"target": T.target("llvm")})
        C = T.alloc_buffer((1024,), "float32")
        for i in range(1024):
            C[i] = A[i]
        for i in range(1024):
            A[i] = C[i] + T.float32(1)


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
