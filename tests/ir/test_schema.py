"""The load-time self-check of the TVM names the C++ core depends on."""

import re
import subprocess
import sys
from pathlib import Path

import pytest
import tvm_ffi

import tvm_memplan
from tvm_memplan import SchemaQuery, check_schema
from tvm_memplan._lib import verify_compatible

SRC = Path(__file__).resolve().parents[2] / "src_cpp"


def test_builtin_schema_matches_installed_tvm():
    assert check_schema() == []


def test_builtin_schema_lists_every_kind_of_entry():
    """The self-check above is only as good as the query schema.def expands to."""
    query = tvm_ffi.get_global_func("tvm_memplan.ir.BuiltinSchema")()
    assert "tirx.For" in list(query["types"])
    assert "tirx.For loop_var" in list(query["fields"])
    assert any(str(g).startswith("sym.AnalyzerSimplify ir.Expr(") for g in query["globals"])
    assert "tirx.buffer_data" in list(query["ops"])
    assert "tirx.disable_vectorize" in list(query["configs"])
    assert len(query["symbols"]) > 0


def test_unknown_type_key_is_reported():
    assert check_schema(SchemaQuery(types=["tirx.NoSuchNode"])) == [
        "type `tirx.NoSuchNode` is not defined"
    ]


def test_unknown_field_is_reported():
    assert check_schema(SchemaQuery(fields=[("tirx.For", "no_such_field")])) == [
        "field `tirx.For.no_such_field` does not exist"
    ]


def test_field_of_unknown_type_is_reported():
    assert check_schema(SchemaQuery(fields=[("tir.For", "body")])) == [
        "field `tir.For.body`: type `tir.For` is not defined"
    ]


def test_unknown_global_is_reported():
    assert check_schema(SchemaQuery(globals=[("tir.transform.NoSuchPass", "")])) == [
        "global function `tir.transform.NoSuchPass` is not registered"
    ]


def test_changed_signature_is_reported():
    problems = check_schema(SchemaQuery(globals=[("sym.AnalyzerSimplify", "ir.Expr(ir.Expr)")]))
    assert problems == [
        "global function `sym.AnalyzerSimplify` has signature "
        "`ir.Expr(sym.Analyzer, ir.Expr, int)`, expected `ir.Expr(ir.Expr)`"
    ]


def test_unknown_op_is_reported():
    assert check_schema(SchemaQuery(ops=["relax.no_such_op"])) == [
        "operator `relax.no_such_op` is not registered"
    ]


def test_unknown_pass_config_is_reported():
    assert check_schema(SchemaQuery(configs=["tir.disable_vectorize"])) == [
        "PassContext option `tir.disable_vectorize` is not registered"
    ]


def test_known_names_pass():
    query = SchemaQuery(
        types=["tirx.For"],
        fields=[("s_tir.SBlock", "alloc_buffers"), ("relax.expr.DataflowBlock", "bindings")],
        globals=[("sym.AnalyzerSimplify", "ir.Expr(sym.Analyzer, ir.Expr, int)")],
        ops=["relax.add"],
        configs=["tirx.disable_vectorize"],
    )
    assert check_schema(query) == []


def test_import_check_raises_import_error_naming_every_missing_item():
    query = SchemaQuery(types=["tirx.NoSuchNode"], globals=[("no.such.global", "")])
    with pytest.raises(ImportError) as info:
        verify_compatible(query)
    message = str(info.value)
    assert "apache-tvm==0.27.0.post1" in message
    assert "type `tirx.NoSuchNode` is not defined" in message
    assert "global function `no.such.global` is not registered" in message


def test_supported_version_is_the_pinned_one():
    """The version is written once, as pyproject.toml's pin; the library is compiled with it and
    Python reads it from the library, so no source file spells it out again."""
    root = Path(__file__).resolve().parents[2]
    (pin,) = re.findall(r'"apache-tvm==([^"]+)"', (root / "pyproject.toml").read_text())
    assert pin == tvm_memplan.SUPPORTED_TVM_VERSION
    sources = [*(root / "src_cpp").rglob("*.[ch]*"), *(root / "python").rglob("*.py")]
    spelled = [str(p) for p in sources if tvm_memplan.SUPPORTED_TVM_VERSION in p.read_text()]
    assert spelled == []


# A quoted name in one of TVM's namespaces is TVM vocabulary (tvm-ffi's own names are checked
# at compile time by its headers).
_TVM_NAME = re.compile(r'"((?:ir|tirx|s_tir|relax|sym|prim|transform|target)\.[A-Za-z_.]+)"')


def test_core_uses_tvm_names_only_through_the_schema():
    """Every TVM type key, global and op name in src_cpp is in schema.def, nowhere else."""
    offenders = []
    for path in sorted(SRC.rglob("*")):
        if path.suffix not in {".h", ".cc"} or path.name == "schema.def":
            continue
        for lineno, line in enumerate(path.read_text().splitlines(), 1):
            if line.lstrip().startswith(("//", "*", "/*")):
                continue
            for name in _TVM_NAME.findall(line):
                offenders.append(f"{path.relative_to(SRC)}:{lineno}: {name}")
    assert offenders == []


_REFLECTION = re.compile(
    r"\bschema::(field|type)::|using\s+namespace\s+(ir::)?schema\b|namespace\s+\w+\s*=\s*"
    r"(ir::)?schema::(field|type)\b"
)


def test_only_the_ir_layer_reads_fields_and_types():
    """Reflected fields and type keys are the IR layer's business: passes and target facts use
    its views (schema::op, attr, func, config and symbol names stay usable everywhere)."""
    offenders = []
    for path in sorted(SRC.rglob("*")):
        if path.suffix not in {".h", ".cc"} or path.parent.name == "ir":
            continue
        for lineno, line in enumerate(path.read_text().splitlines(), 1):
            if _REFLECTION.search(line):
                offenders.append(f"{path.relative_to(SRC)}:{lineno}: {line.strip()}")
    assert offenders == []


def test_every_global_with_a_registered_signature_has_it_recorded():
    """An entry recorded with "" escapes the signature check; the tool says which."""
    tool = Path(__file__).resolve().parents[2] / "tools" / "fill_schema_signatures.py"
    result = subprocess.run([sys.executable, str(tool), "--check"], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_analysis_records_are_declared_once_in_cpp():
    """Every record the analyses return is a reflected C++ object: Python reads its fields and
    their docs from C++ (no hand-written mirror that a renamed field could leave stale)."""
    from tvm_memplan.analysis import Allocation as AllocationRecord
    from tvm_memplan.analysis import (
        AllocationDecision,
        CompactedRegion,
        FunctionMemoryPlan,
        InplaceCandidate,
        PlannedTensor,
        StorageAllocation,
    )
    from tvm_memplan.transform import InplaceStats

    for cls in (
        AllocationRecord,
        AllocationDecision,
        CompactedRegion,
        FunctionMemoryPlan,
        InplaceCandidate,
        InplaceStats,
        PlannedTensor,
        StorageAllocation,
    ):
        info = cls.__tvm_ffi_type_info__
        assert info.type_key.startswith("tvm_memplan."), cls
        assert info.fields and all(f.doc for f in info.fields), cls
        assert not getattr(cls, "__dataclass_fields__", None), cls


_SCOPE_OR_TAG = re.compile(
    r'"(global|local|shared|warp)(\.[\w.]*)?"|"(threadIdx|blockIdx|vthread|cthread)[\w.]*"'
)


def test_storage_scopes_and_thread_tags_are_named_in_one_header():
    """Passes compare scopes and thread tags with the names of ir/scopes.h, not inline strings."""
    offenders = []
    for path in sorted(SRC.rglob("*")):
        if path.suffix not in {".h", ".cc"} or path.name == "scopes.h":
            continue
        for lineno, line in enumerate(path.read_text().splitlines(), 1):
            code = line.split("//", 1)[0]
            if code.lstrip().startswith(("*", "/*")):
                continue
            if _SCOPE_OR_TAG.search(code):
                offenders.append(f"{path.relative_to(SRC)}:{lineno}: {line.strip()}")
    assert offenders == []


def test_the_shape_check_uses_the_runtime_code_for_an_immediate_match():
    """The planner's entry checks call the VM's `match_shape` with its code for "equal to an
    immediate"; that code is the runtime's ABI (MatchShapeCode in the wheel's runtime header
    tvm/runtime/vm/builtin.h), so the one the core emits must be the header's."""
    import tvm
    from tvm.script import relax as R
    from tvm.script import tirx as T

    header = Path(tvm.__file__).parent / "include/tvm/runtime/vm/builtin.h"
    code = int(re.search(r"kAssertEqualToImm\s*=\s*(\d+)", header.read_text()).group(1))

    @R.function
    def main(x: R.Tensor(("n",), "float32")):
        n = T.int64()
        R.func_attr({"relax.force_pure": True, "tir_var_upper_bound": {"n": 32}})
        a = R.builtin.alloc_tensor(R.shape([n]), R.dtype("float32"), 0, R.str("global"))
        b = R.builtin.alloc_tensor(R.shape([n]), R.dtype("float32"), 0, R.str("global"))
        _ = R.call_packed("test.write", x, a, ty_args=R.Tuple)
        _ = R.call_packed("test.write", a, b, ty_args=R.Tuple)
        return x

    planned = tvm_memplan.transform.StaticPlanBlockMemory()(tvm.IRModule({"main": main}))
    checks = [
        binding.value
        for block in planned["main"].body.blocks
        for binding in block.bindings
        if getattr(binding.value.op, "global_symbol", None) == "vm.builtin.match_shape"
    ]
    assert len(checks) == 1
    assert int(checks[0].args[3]) == code  # (shape, heap, count, code, value, ..., message)


def test_the_plan_alignment_is_the_runtimes():
    """The planner's default alignment is the runtime's allocation alignment (kAllocAlignment in
    the wheel's runtime header tvm/runtime/device_api.h): below it ensure_zero_offset copies."""
    import tvm

    from tvm_memplan.transform import MemoryPlanOptions, StaticPlanBlockMemory

    header = (Path(tvm.__file__).parent / "include/tvm/runtime/device_api.h").read_text()
    runtime = int(re.search(r"constexpr int kAllocAlignment = (\d+);", header).group(1))
    assert MemoryPlanOptions().alignment == runtime
    assert f"a multiple of {runtime}, the TVM runtime's" in StaticPlanBlockMemory.__doc__
