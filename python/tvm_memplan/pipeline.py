"""The ``"memplan"`` pipelines: TVM's own pipelines with tvm-memplan's passes in place of the
stock ones they improve.

    import tvm_memplan  # registers both pipelines
    lib = tvm.compile(mod, target="c", tir_pipeline="memplan", relax_pipeline="memplan")
    lib = tvm_memplan.compile(mod, target="c")  # the same

TIR (``tir_pipeline="memplan"``): TVM's ``"s_tir"`` pipeline with our CompactBufferAllocation,
placement tagging before StorageRewrite, and our LowerTVMBuiltin in the host finalization.
Relax (``relax_pipeline="memplan"``): our DataflowUseInplaceCalls (it must run before
LegalizeOps, and judges by our memory planner), then the Relax pipeline ``tvm.compile`` would
have run for the target with our StaticPlanBlockMemory in place of TVM's.

Both pipelines are built from the stock ones, not from copies of their pass lists: while a stock
pipeline runs, the pass constructors listed in ``MAIN_SUBSTITUTIONS``,
``HOST_FINALIZE_SUBSTITUTIONS`` and ``RELAX_SUBSTITUTIONS`` return our passes instead (only on
the compiling thread; TVM's module attributes are restored afterwards). A substitution that
never happens is an error, so a TVM whose pipeline stops building a pass through its module
fails loudly instead of compiling without our pass.
"""

from __future__ import annotations

import contextlib
import functools
import threading
from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType

import tvm

from . import transform

__all__ = [
    "HOST_FINALIZE_SUBSTITUTIONS",
    "MAIN_SUBSTITUTIONS",
    "RELAX_SUBSTITUTIONS",
    "PIPELINE_NAME",
    "STOCK_PIPELINE",
    "Substitution",
    "compile",
    "memplan_pipeline",
    "memplan_relax_pipeline",
    "stock_relax_pipeline",
]

PIPELINE_NAME = "memplan"
STOCK_PIPELINE = "s_tir"


@dataclass(frozen=True)
class Substitution:
    """Use ``replace(stock_constructor, *args)`` wherever the stock pipeline calls
    ``module.name(*args)`` to build a pass."""

    module: ModuleType
    name: str
    replace: Callable[..., tvm.transform.Pass]
    #: Whether the stock pipeline must have built this pass, given the PassContext.
    required: Callable[[tvm.transform.PassContext], bool] = lambda ctx: True

    @property
    def key(self) -> tuple[str, str]:
        return (self.module.__name__, self.name)


def _before_storage_rewrite(stock_storage_rewrite):
    # Placement is decided while the allocations are still as written: StorageRewrite merges and
    # hoists them and drops their annotations. The decisions travel in scopes, which it keeps.
    return tvm.transform.Sequential(
        [transform.TagAllocationPlacement(), stock_storage_rewrite()],
        name="tvm_memplan.StorageRewrite",
    )


# The passes of the main pipeline that "memplan" replaces.
MAIN_SUBSTITUTIONS: tuple[Substitution, ...] = (
    Substitution(
        tvm.s_tir.transform,
        "CompactBufferAllocation",
        lambda stock, is_strict=True: transform.CompactBufferAllocation(is_strict=is_strict),
    ),
    Substitution(
        tvm.tirx.transform,
        "StorageRewrite",
        _before_storage_rewrite,
        required=lambda ctx: not bool(ctx.config.get("tirx.disable_storage_rewrite", False)),
    ),
)

# The passes of the host finalization that "memplan" replaces.
HOST_FINALIZE_SUBSTITUTIONS: tuple[Substitution, ...] = (
    Substitution(tvm.tirx.transform, "LowerTVMBuiltin", lambda stock: transform.LowerTVMBuiltin()),
)


# ---- substituting pass constructors, per thread ----------------------------------------------

_lock = threading.Lock()
_installed: dict[tuple[str, str], tuple[Callable, int]] = {}  # key -> (stock constructor, users)
_active = threading.local()  # .table: key -> Substitution, .used: set of keys


def _dispatching(key: tuple[str, str], stock: Callable) -> Callable:
    @functools.wraps(stock)
    def constructor(*args, **kwargs):
        substitution = (getattr(_active, "table", None) or {}).get(key)
        if substitution is None:
            return stock(*args, **kwargs)
        _active.used.add(key)
        return substitution.replace(stock, *args, **kwargs)

    return constructor


@contextlib.contextmanager
def _substituted(substitutions: tuple[Substitution, ...], pipeline: str):
    """Within the block, on this thread, the constructors build our passes. When the block ends
    normally, a substitution that was required but never happened is an error naming
    `pipeline`."""
    with _lock:
        for s in substitutions:
            stock, users = _installed.get(s.key, (getattr(s.module, s.name), 0))
            if users == 0:
                setattr(s.module, s.name, _dispatching(s.key, stock))
            _installed[s.key] = (stock, users + 1)
    outer = getattr(_active, "table", None), getattr(_active, "used", None)
    _active.table = {s.key: s for s in substitutions}
    used = _active.used = set()
    try:
        yield
    finally:
        _active.table, _active.used = outer
        with _lock:
            for s in substitutions:
                stock, users = _installed[s.key]
                if users == 1:
                    setattr(s.module, s.name, stock)
                    del _installed[s.key]
                else:
                    _installed[s.key] = (stock, users - 1)
    _check_used(substitutions, used, pipeline)


def _check_used(substitutions: tuple[Substitution, ...], used: set, pipeline: str) -> None:
    ctx = tvm.transform.PassContext.current()
    missing = [s for s in substitutions if s.key not in used and s.required(ctx)]
    if missing:
        names = ", ".join(f"{s.module.__name__}.{s.name}" for s in missing)
        raise RuntimeError(
            f'the "{PIPELINE_NAME}" {pipeline} could not replace {names}: the stock '
            "pipeline of this TVM no longer builds it through that module"
        )


def memplan_pipeline(**kwargs):
    """The pipeline factory registered as ``"memplan"``: the stock ``"s_tir"`` factory's
    ``(pipeline, finalize_host_passes, finalize_device_passes)`` with the substitutions."""
    stock_main, stock_finalize_host, stock_finalize_device = tvm.tirx.get_tir_pipeline(
        STOCK_PIPELINE, **kwargs
    )

    @tvm.transform.module_pass(opt_level=0, name="tvm_memplan.MemplanPipeline")
    def main(mod: tvm.IRModule, _ctx: tvm.transform.PassContext) -> tvm.IRModule:
        with _substituted(MAIN_SUBSTITUTIONS, f'TIR pipeline (from "{STOCK_PIPELINE}")'):
            mod = stock_main(mod)
        return mod

    def finalize_host_passes():
        with _substituted(HOST_FINALIZE_SUBSTITUTIONS, "TIR host finalization"):
            passes = stock_finalize_host()
        return passes

    return main, finalize_host_passes, stock_finalize_device


tvm.tirx.register_tir_pipeline(PIPELINE_NAME, memplan_pipeline)


# ---- Relax --------------------------------------------------------------------------------------


def stock_relax_pipeline(target: tvm.target.Target | None) -> tvm.transform.Pass:
    # What relax.build runs for relax_pipeline="default": the target's own pipeline on GPUs (it
    # schedules the TIR it creates), TVM's generic build pipeline otherwise.
    if target is not None and "gpu" in target.keys:
        try:
            return tvm.relax.get_default_pipeline(target)
        except (ValueError, AttributeError):
            pass
    return tvm.relax.get_pipeline("default")


# The passes of the stock Relax pipeline that "memplan" replaces.
RELAX_SUBSTITUTIONS: tuple[Substitution, ...] = (
    Substitution(
        tvm.relax.transform,
        "StaticPlanBlockMemory",
        lambda stock: transform.StaticPlanBlockMemory(),
    ),
)


@tvm.relax.register_pipeline(PIPELINE_NAME)
def memplan_relax_pipeline() -> tvm.transform.Pass:
    """The Relax pipeline registered as ``"memplan"``: in-place calls, then the default."""

    @tvm.transform.module_pass(opt_level=0, name="tvm_memplan.MemplanRelaxPipeline")
    def relax_pipeline(mod: tvm.IRModule, _ctx: tvm.transform.PassContext) -> tvm.IRModule:
        mod = transform.DataflowUseInplaceCalls(planner="memplan")(mod)
        stock = stock_relax_pipeline(tvm.target.Target.current(allow_none=True))
        with _substituted(RELAX_SUBSTITUTIONS, "Relax pipeline"):
            mod = stock(mod)
        return mod

    return relax_pipeline


def compile(mod, target=None, **kwargs):  # noqa: A001  (mirrors tvm.compile)
    """``tvm.compile`` with both ``"memplan"`` pipelines (other arguments pass through)."""
    for option in ("tir_pipeline", "relax_pipeline"):
        if option in kwargs:
            raise TypeError(
                f"tvm_memplan.compile selects {option} itself; call tvm.compile to choose another"
            )
    return tvm.compile(
        mod, target=target, tir_pipeline=PIPELINE_NAME, relax_pipeline=PIPELINE_NAME, **kwargs
    )
