"""Loading libtvm_memplan.so and checking it against the running TVM.

The C++ core reaches TVM only through tvm-ffi reflection, so it depends on TVM's type keys,
field names and global functions. All of them are listed in ``src_cpp/ir/schema.def``; the
self-check below verifies them when the package is imported, so an incompatible TVM fails
here, with a list of what is missing, and never inside a pass.
"""

from __future__ import annotations

import os
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import tvm  # noqa: F401  (first: it registers the TVM types and globals the library resolves)
import tvm_ffi
import tvm_ffi.libinfo

_DISTRIBUTION = "tvm-memplan"
_TARGET = "tvm_memplan"
_PACKAGE_DIR = Path(__file__).resolve().parent


def _load_library():
    explicit = os.environ.get("TVM_MEMPLAN_LIBRARY")
    if explicit:
        if not Path(explicit).is_file():
            raise ImportError(f"TVM_MEMPLAN_LIBRARY={explicit} is not a file")
        return tvm_ffi.load_module(explicit)
    # Installed wheel first (its RECORD), then the package folder, then a source checkout's
    # `cmake -B build/dev` tree (see docs/development.md).
    extra = [_PACKAGE_DIR / "lib", _PACKAGE_DIR.parents[1] / "build" / "dev" / "lib"]
    try:
        return tvm_ffi.libinfo.load_lib_module(_DISTRIBUTION, _TARGET, extra_lib_paths=extra)
    except RuntimeError as err:
        raise ImportError(f"tvm-memplan: cannot find libtvm_memplan.so: {err}") from err


LIB = _load_library()
# pyproject.toml's apache-tvm pin, as the library was compiled with it (CMakeLists.txt).
SUPPORTED_TVM_VERSION = str(tvm_ffi.get_global_func("tvm_memplan.ir.SupportedTVMVersion")())


@dataclass
class SchemaQuery:
    """TVM names to check: type keys, (type key, field), (global, signature), op names,
    PassContext option keys and mangled C++ symbols exported by libtvm_compiler.so."""

    types: list[str] = field(default_factory=list)
    fields: list[tuple[str, str]] = field(default_factory=list)
    globals: list[tuple[str, str]] = field(default_factory=list)
    ops: list[str] = field(default_factory=list)
    configs: list[str] = field(default_factory=list)
    symbols: list[str] = field(default_factory=list)


def check_schema(query: SchemaQuery | None = None) -> list[str]:
    """Problems found checking ``query`` (default: everything the C++ core uses)."""
    if query is None:
        return list(tvm_ffi.get_global_func("tvm_memplan.ir.SelfCheck")())
    check = tvm_ffi.get_global_func("tvm_memplan.ir.CheckSchema")
    return list(
        check(
            list(query.types),
            [list(f) for f in query.fields],
            [list(g) for g in query.globals],
            list(query.ops),
            list(query.configs),
            list(query.symbols),
        )
    )


def verify_compatible(query: SchemaQuery | None = None) -> None:
    """Raise ImportError naming every missing item when TVM does not match the schema."""
    problems = check_schema(query)
    installed = getattr(tvm, "__version__", "unknown")
    if problems:
        listing = "\n".join(f"  - {p}" for p in problems)
        raise ImportError(
            f"tvm-memplan supports apache-tvm=={SUPPORTED_TVM_VERSION}, but the installed TVM "
            f"({installed}) lacks what its C++ core uses:\n{listing}\n"
            f"Install apache-tvm=={SUPPORTED_TVM_VERSION} (pip install "
            f"'apache-tvm=={SUPPORTED_TVM_VERSION}')."
        )
    if installed != SUPPORTED_TVM_VERSION:
        warnings.warn(
            f"tvm-memplan is tested with apache-tvm=={SUPPORTED_TVM_VERSION}; TVM {installed} "
            "passed the schema self-check but is untested.",
            stacklevel=2,
        )


verify_compatible()
# What TVM registers at its own load time for its options: PassContext keys and target-kind
# attributes (tvm_memplan.target documents them).
tvm_ffi.get_global_func("tvm_memplan.target.RegisterOptions")()
# The diagnostic channel: PassContext option tvm_memplan.dump_dir (docs/development.md).
tvm_ffi.get_global_func("tvm_memplan.ir.RegisterDumpOption")()
# The planner's exact-search budget for a whole build: PassContext option
# tvm_memplan.exact_search_ms (src_cpp/relax/search_budget.h).
tvm_ffi.get_global_func("tvm_memplan.relax.RegisterOptions")()
