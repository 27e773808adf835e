"""Stack limits of CPU targets: registration, the four levels and their precedence, validation."""

import pytest
import tvm
import tvm_ffi

from tvm_memplan import SchemaQuery, check_schema
from tvm_memplan.target import (
    STACK_OPTIONS,
    max_stack_alloca,
    max_stack_bytes,
    set_kind_max_stack_alloca,
    set_kind_max_stack_bytes,
)

# Kind-level tests use TVM's "test" kind (a CPU kind nothing compiles for), so that the values
# they set cannot leak into other tests: TVM has no way to remove a kind attribute.
KIND = "test"


@pytest.fixture
def test_kind():
    yield KIND
    set_kind_max_stack_alloca(KIND, 1024)


def ctx(**config):
    return tvm.transform.PassContext(config={f"tvm_memplan.{k}": v for k, v in config.items()})


# ---- registration -------------------------------------------------------------------------------


def test_options_are_declared_once_with_defaults_and_docs():
    by_name = {o.name: o for o in STACK_OPTIONS}
    assert set(by_name) == {"max_stack_alloca", "max_stack_bytes"}
    alloca = by_name["max_stack_alloca"]
    assert (alloca.pass_config, alloca.target_attr, alloca.kind_attr, alloca.default) == (
        "tvm_memplan.max_stack_alloca",
        "feature.max_stack_alloca",
        "max_stack_alloca",
        1024,
    )
    assert by_name["max_stack_bytes"].default is None
    assert all(o.doc for o in STACK_OPTIONS)


def test_pass_context_options_are_registered_with_tvm():
    configs = tvm.transform.PassContext.list_configs()
    for option in STACK_OPTIONS:
        assert str(configs[option.pass_config]["type"]) == "int"


@pytest.mark.parametrize("kind", ["llvm", "c"])
def test_kind_attribute_is_1024_through_tvms_own_lookup(kind):
    assert int(tvm.target.Target(kind).get_kind_attr("max_stack_alloca")) == 1024


def test_registration_symbols_are_in_the_load_time_self_check():
    assert check_schema() == []  # includes the exported symbols of schema.def
    missing = "_ZN3tvm18TargetKindRegEntry10UpdateAttrERKNS_3ffi6StringEi"
    assert check_schema(SchemaQuery(symbols=[missing])) == [
        f"C++ symbol `{missing}` is not exported by libtvm_compiler.so"
    ]


def test_registering_again_is_harmless():
    tvm_ffi.get_global_func("tvm_memplan.target.RegisterOptions")()
    assert max_stack_alloca("llvm") == 1024


# ---- the four levels ----------------------------------------------------------------------------


def test_default_is_1024_and_no_budget():
    assert max_stack_alloca("llvm") == 1024
    assert max_stack_alloca({"kind": "c"}) == 1024
    assert max_stack_bytes("llvm") is None


def test_kind_attribute_sets_every_target_of_the_kind(test_kind):
    set_kind_max_stack_alloca(test_kind, 256)
    assert max_stack_alloca(test_kind) == 256
    assert int(tvm.target.Target(test_kind).get_kind_attr("max_stack_alloca")) == 256
    assert max_stack_alloca("llvm") == 1024


def test_kind_attribute_can_be_set_again(test_kind):
    for nbytes in (1, 0, 4096):
        set_kind_max_stack_alloca(test_kind, nbytes)
        assert max_stack_alloca(test_kind) == nbytes


def test_target_attribute_beats_kind_attribute(test_kind):
    set_kind_max_stack_alloca(test_kind, 256)
    assert max_stack_alloca({"kind": test_kind, "feature.max_stack_alloca": 64}) == 64


def test_pass_context_beats_target_attribute(test_kind):
    set_kind_max_stack_alloca(test_kind, 256)
    target = {"kind": test_kind, "feature.max_stack_alloca": 64}
    with ctx(max_stack_alloca=0):
        assert max_stack_alloca(target) == 0
        assert max_stack_alloca("llvm") == 0


def test_budget_has_the_same_levels():
    set_kind_max_stack_bytes(KIND, 100_000)
    assert max_stack_bytes(KIND) == 100_000
    assert max_stack_bytes({"kind": KIND, "feature.max_stack_bytes": 5000}) == 5000
    with ctx(max_stack_bytes=7):
        assert max_stack_bytes({"kind": KIND, "feature.max_stack_bytes": 5000}) == 7
    assert max_stack_bytes("llvm") is None


def test_target_attribute_survives_export():
    target = tvm.target.Target({"kind": "c", "feature.max_stack_alloca": 0})
    assert max_stack_alloca(tvm.target.Target(target.export())) == 0


def test_host_of_a_device_target_has_its_own_limits():
    target = tvm.target.Target(
        {"kind": "cuda", "host": {"kind": "llvm", "feature.max_stack_alloca": 128}}
    )
    assert max_stack_alloca(target.host) == 128
    with pytest.raises(ValueError, match="`cuda` does not run on the CPU"):
        max_stack_alloca(target)


# ---- invalid values -----------------------------------------------------------------------------


@pytest.mark.parametrize("value", [-1, True, 1.5, "4k"])
def test_pass_context_rejects_values_that_are_not_byte_counts(value):
    with pytest.raises(ValueError, match="PassContext option tvm_memplan.max_stack_alloca"):
        ctx(max_stack_alloca=value)


@pytest.mark.parametrize("value", [-8, False, "big"])
def test_target_attribute_rejects_values_that_are_not_byte_counts(value):
    target = {"kind": "llvm", "feature.max_stack_alloca": value}
    with pytest.raises(ValueError, match="target attribute feature.max_stack_alloca"):
        max_stack_alloca(target)


@pytest.mark.parametrize("value", [-1, 2.0])
def test_set_kind_rejects_values_that_are_not_byte_counts(value):
    with pytest.raises(ValueError, match="must be an integer >= 0"):
        set_kind_max_stack_alloca(KIND, value)


def test_set_kind_rejects_a_kind_that_does_not_run_on_the_cpu():
    with pytest.raises(ValueError, match="target kind `cuda` does not run on the CPU"):
        set_kind_max_stack_alloca("cuda", 0)


def test_set_kind_rejects_an_unknown_kind():
    with pytest.raises(ValueError, match="TVM has no target kind `no_such_kind`"):
        set_kind_max_stack_bytes("no_such_kind", 0)
    assert "no_such_kind" not in tvm_ffi.get_global_func("target.ListTargetKinds")()
