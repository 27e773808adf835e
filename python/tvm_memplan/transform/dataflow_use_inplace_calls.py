"""DataflowUseInplaceCalls v2: a sound, wider drop-in for
``tvm.relax.transform.DataflowUseInplaceCalls`` (see docs/passes/dataflow_use_inplace_calls.md).
"""

from __future__ import annotations

from collections.abc import Callable

import tvm
import tvm_ffi

from .. import _lib  # noqa: F401  (registers the options type before it is bound below)
from .._options import takes_options
from . import _ffi_api


@tvm_ffi.register_object("tvm_memplan.relax.InplaceOptions")
class InplaceOptions(tvm_ffi.Object):
    """Options of DataflowUseInplaceCalls, declared once in the C++ core
    (``src_cpp/relax/inplace_records.h``): names, docs and defaults."""


@takes_options(InplaceOptions)
def DataflowUseInplaceCalls(options) -> tvm.transform.Pass:
    """Rewrite calls whose result can overwrite one of their arguments into
    ``R.call_tir_inplace`` calls of in-place PrimFuncs: operator calls (before ``LegalizeOps``)
    and ``R.call_tir`` of any PrimFunc (legalized, fused by FuseTIR, scheduled, hand-written).
    """
    return _ffi_api.DataflowUseInplaceCalls(options)


@takes_options(InplaceOptions)
def LegalizeOpsAfterInplaceCalls(
    customize_legalize_map: dict[str, Callable] | None = None,
    skip_ops: list[str] | None = None,
    enable_warning: bool = False,
    options=None,
) -> tvm.transform.Pass:
    """``DataflowUseInplaceCalls(**options)`` then TVM's
    ``LegalizeOps(customize_legalize_map, skip_ops, enable_warning)``, in one pass that
    legalizes each operator call signature once: the in-place pass ran each signature's
    ``FLegalize`` to decide, and LegalizeOps takes those legalizations instead of running it
    again. The result is the module the two passes give in a row; calls whose legalization
    emitted bindings, and the operators of ``customize_legalize_map``, are legalized by
    LegalizeOps as usual. The ``"memplan"`` pipelines run it in place of LegalizeOps on CPUs."""
    return _ffi_api.LegalizeOpsAfterInplaceCalls(
        options, customize_legalize_map, skip_ops, enable_warning
    )


@tvm_ffi.register_object("tvm_memplan.relax.InplaceStats")
class InplaceStats(tvm_ffi.Object):
    """What one run of DataflowUseInplaceCalls did (fields and docs from
    ``src_cpp/relax/inplace_records.h``)."""


@takes_options(InplaceOptions)
def use_inplace_calls(mod: tvm.IRModule, options) -> tuple[tvm.IRModule, InplaceStats]:
    """Run DataflowUseInplaceCalls on ``mod`` and also return what it did."""
    if not isinstance(mod, tvm.IRModule):
        raise TypeError(f"use_inplace_calls expects a tvm.IRModule, got {type(mod).__name__}")
    new_mod, stats = _ffi_api.use_inplace_calls(mod, options)
    return new_mod, stats
