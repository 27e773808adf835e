"""DataflowUseInplaceCalls v2: a sound, wider drop-in for
``tvm.relax.transform.DataflowUseInplaceCalls`` (see docs/passes/dataflow_use_inplace_calls.md).
"""

from __future__ import annotations

from collections.abc import Callable

import tvm
import tvm_ffi

from .. import _lib  # noqa: F401  (registers the options type before it is bound below)
from . import _ffi_api


@tvm_ffi.register_object("tvm_memplan.relax.InplaceOptions")
class InplaceOptions(tvm_ffi.Object):
    """Options of DataflowUseInplaceCalls; fields, docs and defaults come from the C++ core
    (``src_cpp/relax/inplace_analysis.h``)."""


def DataflowUseInplaceCalls(
    *,
    outside_dataflow: bool = True,
    memory_aware: bool = True,
    planner: str = "stock",
    gpu: bool | None = None,
) -> tvm.transform.Pass:
    """Rewrite calls whose result can overwrite one of their arguments into
    ``R.call_tir_inplace`` calls of in-place PrimFuncs: operator calls (before ``LegalizeOps``)
    and ``R.call_tir`` of any PrimFunc (legalized, fused by FuseTIR, scheduled, hand-written).

    Parameters
    ----------
    outside_dataflow
        Also rewrite bindings outside dataflow blocks (the stock pass only rewrites inside).
    memory_aware
        Keep only rewrites that do not raise the bytes the memory planner plans, judged by a
        model of it; ``False`` keeps every safe rewrite.
    planner
        The planner that will run: ``"stock"`` (TVM's ``StaticPlanBlockMemory``, as in TVM's
        pipelines) or ``"memplan"`` (``tvm_memplan.transform.StaticPlanBlockMemory``, as in the
        ``"memplan"`` pipeline).
    gpu
        Whether the module is compiled for a GPU, whose pipeline schedules the PrimFuncs it
        legalizes and fuses (dlight): then operator calls are kept and only calls of PrimFuncs
        already bound to threads run in place. ``None``: the target current when the pass runs
        decides (its key ``"gpu"``).
    """
    return _ffi_api.DataflowUseInplaceCalls(
        InplaceOptions(
            outside_dataflow=outside_dataflow, memory_aware=memory_aware, planner=planner, gpu=gpu
        )
    )


def LegalizeOpsAfterInplaceCalls(
    customize_legalize_map: dict[str, Callable] | None = None,
    skip_ops: list[str] | None = None,
    enable_warning: bool = False,
    **inplace_options,
) -> tvm.transform.Pass:
    """``DataflowUseInplaceCalls(**inplace_options)`` then TVM's
    ``LegalizeOps(customize_legalize_map, skip_ops, enable_warning)``, in one pass that
    legalizes each operator call signature once: the in-place pass ran each signature's
    ``FLegalize`` to decide, and LegalizeOps takes those legalizations instead of running it
    again. The result is the module the two passes give in a row; calls whose legalization
    emitted bindings, and the operators of ``customize_legalize_map``, are legalized by
    LegalizeOps as usual. The ``"memplan"`` pipelines run it in place of LegalizeOps on CPUs."""
    return _ffi_api.LegalizeOpsAfterInplaceCalls(
        InplaceOptions(**inplace_options), customize_legalize_map, skip_ops, enable_warning
    )


@tvm_ffi.register_object("tvm_memplan.relax.InplaceStats")
class InplaceStats(tvm_ffi.Object):
    """What one run of DataflowUseInplaceCalls did (fields and docs from
    ``src_cpp/relax/inplace_rewrite.h``)."""


def use_inplace_calls(
    mod: tvm.IRModule,
    *,
    outside_dataflow: bool = True,
    memory_aware: bool = True,
    planner: str = "stock",
    gpu: bool | None = None,
) -> tuple[tvm.IRModule, InplaceStats]:
    """Run DataflowUseInplaceCalls on ``mod`` and also return what it did."""
    if not isinstance(mod, tvm.IRModule):
        raise TypeError(f"use_inplace_calls expects a tvm.IRModule, got {type(mod).__name__}")
    options = InplaceOptions(
        outside_dataflow=outside_dataflow, memory_aware=memory_aware, planner=planner, gpu=gpu
    )
    new_mod, stats = _ffi_api.use_inplace_calls(mod, options)
    return new_mod, stats
