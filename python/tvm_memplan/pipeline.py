"""The ``"memplan"`` pipelines: TVM's own pipelines with tvm-memplan's passes in place of the
stock ones they improve.

    import tvm_memplan  # registers both pipelines
    lib = tvm.compile(mod, target="c", tir_pipeline="memplan", relax_pipeline="memplan")
    lib = tvm_memplan.compile(mod, target="c")  # the same

TIR (``tir_pipeline="memplan"``): TVM's ``"s_tir"`` pipeline with our CompactBufferAllocation,
in-place loops vectorized before VectorizeLoop, placement tagging before StorageRewrite, and our
LowerTVMBuiltin in the host finalization.
Relax (``relax_pipeline="memplan"``): the Relax pipeline ``tvm.compile`` would have run for the
target, with our StaticPlanBlockMemory in place of TVM's and our DataflowUseInplaceCalls before
RewriteDataflowReshape (on the final, fused and scheduled PrimFuncs) and, on CPUs, before
LegalizeOps (on operator calls). ``relax_pipeline(base)`` does the same to any Relax pipeline.

Both pipelines are built from the stock ones, not from copies of their pass lists: while a stock
pipeline runs, the pass constructors listed in ``MAIN_SUBSTITUTIONS``,
``HOST_FINALIZE_SUBSTITUTIONS`` and ``RELAX_SUBSTITUTIONS`` return our passes instead (the
mechanism is ``substitution``'s). The Relax ones, and the replacement by name of stock passes in
a ``Sequential`` built beforehand, come from one table, ``RELAX_REPLACEMENTS``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass

import tvm

from . import pass_names, transform
from .substitution import STOCK_CHANGED, Substitution, substituted
from .substitution import substituted_everywhere as _substituted_everywhere

__all__ = [
    "ALL_SUBSTITUTIONS",
    "HOST_FINALIZE_SUBSTITUTIONS",
    "MAIN_SUBSTITUTIONS",
    "PLANNER_SUBSTITUTIONS",
    "RELAX_REPLACEMENTS",
    "RELAX_SUBSTITUTIONS",
    "RelaxReplacement",
    "PIPELINE_NAME",
    "STOCK_PIPELINE",
    "Substitution",
    "compile",
    "memplan_pipeline",
    "memplan_relax_pipeline",
    "relax_pipeline",
    "stock_relax_pipeline",
    "resolve_relax_pipeline",
    "substituted",
    "substituted_everywhere",
]

PIPELINE_NAME = "memplan"
STOCK_PIPELINE = "s_tir"


def _before_storage_rewrite(stock_storage_rewrite):
    # Placement is decided while the allocations are still as written: StorageRewrite merges and
    # hoists them and drops their annotations. The decisions travel in scopes, which it keeps.
    return tvm.transform.Sequential(
        [transform.TagAllocationPlacement(), stock_storage_rewrite()],
        name=pass_names.STORAGE_REWRITE,
    )


def _before_vectorize_loop(stock_vectorize_loop, enable_vectorize=True):
    # In-place elementwise loops become vector loops, which VectorizeLoop then lowers. With
    # vectorization off (tirx.disable_vectorize) VectorizeLoop would only scalarize them again;
    # with VectorizeLoop disabled by name nothing would lower them.
    stock = stock_vectorize_loop(enable_vectorize)
    context = tvm.transform.PassContext.current()
    if not enable_vectorize or stock.info.name in list(context.disabled_pass):
        return stock
    return tvm.transform.Sequential(
        [transform.VectorizeInplaceLoops(), stock], name=pass_names.VECTORIZE_LOOP
    )


# The passes of the main pipeline that "memplan" replaces.
MAIN_SUBSTITUTIONS: tuple[Substitution, ...] = (
    Substitution(
        tvm.s_tir.transform,
        "CompactBufferAllocation",
        lambda stock, is_strict=True: transform.CompactBufferAllocation(is_strict=is_strict),
    ),
    Substitution(tvm.tirx.transform, "VectorizeLoop", _before_vectorize_loop),
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


def memplan_pipeline(**kwargs):
    """The pipeline factory registered as ``"memplan"``: the stock ``"s_tir"`` factory's
    ``(pipeline, finalize_host_passes, finalize_device_passes)`` with the substitutions."""
    stock_main, stock_finalize_host, stock_finalize_device = tvm.tirx.get_tir_pipeline(
        STOCK_PIPELINE, **kwargs
    )

    @tvm.transform.module_pass(opt_level=0, name="tvm_memplan.MemplanPipeline")
    def main(mod: tvm.IRModule, _ctx: tvm.transform.PassContext) -> tvm.IRModule:
        with substituted(MAIN_SUBSTITUTIONS, f'TIR pipeline (from "{STOCK_PIPELINE}")'):
            mod = stock_main(mod)
        return mod

    def finalize_host_passes():
        with substituted(HOST_FINALIZE_SUBSTITUTIONS, "TIR host finalization"):
            passes = stock_finalize_host()
        return passes

    return main, finalize_host_passes, stock_finalize_device


tvm.tirx.register_tir_pipeline(PIPELINE_NAME, memplan_pipeline)


# ---- Relax --------------------------------------------------------------------------------------


def _is_gpu(target: tvm.target.Target | None) -> bool:
    return target is not None and "gpu" in target.keys


def stock_relax_pipeline(target: tvm.target.Target | None) -> tvm.transform.Pass:
    # What relax.build runs for relax_pipeline="default": the target's own pipeline on GPUs (it
    # schedules the TIR it creates), TVM's generic build pipeline otherwise.
    if _is_gpu(target):
        try:
            return tvm.relax.get_default_pipeline(target)
        except (ValueError, AttributeError):
            pass
    return tvm.relax.get_pipeline("default")


def _inplace_before_legalization(legalize_ops: tvm.transform.Pass) -> tvm.transform.Pass:
    # Operator calls become in-place calls before they are legalized, except on GPUs: there the
    # pipeline schedules what it legalizes (dlight), and an in-place PrimFunc defeats its rules.
    if _is_gpu(tvm.target.Target.current(allow_none=True)):
        return legalize_ops
    return tvm.transform.Sequential(
        [transform.DataflowUseInplaceCalls(planner="memplan", gpu=False), legalize_ops],
        name=pass_names.LEGALIZE,
    )


def _legalize_after_inplace_calls(stock_legalize_ops, *args, **kwargs) -> tvm.transform.Pass:
    # As _inplace_before_legalization, for a LegalizeOps built while the pipeline runs: then its
    # arguments are known, and LegalizeOps takes the legalizations the in-place pass made (each
    # call signature is legalized once instead of twice).
    if _is_gpu(tvm.target.Target.current(allow_none=True)):
        return stock_legalize_ops(*args, **kwargs)
    return transform.LegalizeOpsAfterInplaceCalls(*args, **kwargs, planner="memplan", gpu=False)


def _inplace_after_scheduling(rewrite_dataflow_reshape: tvm.transform.Pass) -> tvm.transform.Pass:
    # The last point in every stock pipeline where the module is still dataflow Relax calling
    # its final PrimFuncs: after LegalizeOps, FuseOps, FuseTIR and the GPU schedules.
    return tvm.transform.Sequential(
        [transform.DataflowUseInplaceCalls(planner="memplan"), rewrite_dataflow_reshape],
        name=pass_names.REWRITE_DATAFLOW_RESHAPE,
    )


def _our_planner(
    _stock_planner: tvm.transform.Pass, options: dict | None = None
) -> tvm.transform.Pass:
    return transform.StaticPlanBlockMemory(**(options or {}))


def _our_inplace_pass(_stock_inplace_pass: tvm.transform.Pass) -> tvm.transform.Pass:
    return transform.DataflowUseInplaceCalls(planner="memplan")


@dataclass(frozen=True)
class RelaxReplacement:
    """One stock Relax pass that "memplan" replaces: the one table both mechanisms are built
    from (constructor substitution for pipelines that build their passes as they run, TVM's and
    MLC-LLM's; replacement by pass name in a Sequential built beforehand)."""

    #: The stock pass's name, and its constructor's in ``tvm.relax.transform``.
    name: str
    #: The stock pass, as built -> ours.
    replace: Callable[[tvm.transform.Pass], tvm.transform.Pass]
    #: Whether every stock pipeline builds it (its substitution must happen).
    required: bool
    #: Ours from the stock constructor and its arguments, when that does better than
    #: ``replace`` on the pass it builds.
    construct: Callable[..., tvm.transform.Pass] | None = None

    def substitution(self) -> Substitution:
        construct = self.construct or (
            lambda stock, *args, **kwargs: self.replace(stock(*args, **kwargs))
        )
        required = self.required
        return Substitution(tvm.relax.transform, self.name, construct, lambda ctx: required)


# The in-place pass before LegalizeOps is optional (RewriteDataflowReshape's suffices), and no
# stock pipeline has a DataflowUseInplaceCalls.
RELAX_REPLACEMENTS: tuple[RelaxReplacement, ...] = (
    RelaxReplacement("StaticPlanBlockMemory", _our_planner, True),
    RelaxReplacement("RewriteDataflowReshape", _inplace_after_scheduling, True),
    RelaxReplacement(
        "LegalizeOps", _inplace_before_legalization, False, _legalize_after_inplace_calls
    ),
    RelaxReplacement("DataflowUseInplaceCalls", _our_inplace_pass, False),
)


def _with_planner_options(options: dict) -> tuple[RelaxReplacement, ...]:
    """RELAX_REPLACEMENTS with our planner built with ``options``."""
    return tuple(
        dataclasses.replace(r, replace=lambda stock: _our_planner(stock, options))
        if r.name == "StaticPlanBlockMemory"
        else r
        for r in RELAX_REPLACEMENTS
    )


RELAX_SUBSTITUTIONS = tuple(r.substitution() for r in RELAX_REPLACEMENTS)
# Our planner alone, in place of TVM's (what tvm_memplan.testing compares planners with).
PLANNER_SUBSTITUTIONS: tuple[Substitution, ...] = tuple(
    s for s in RELAX_SUBSTITUTIONS if s.name == "StaticPlanBlockMemory"
)
#: Every substitution of the "memplan" pipelines, TIR and Relax: what ``substituted_everywhere``
#: makes for ``tvm-memplan run``.
ALL_SUBSTITUTIONS = RELAX_SUBSTITUTIONS + MAIN_SUBSTITUTIONS + HOST_FINALIZE_SUBSTITUTIONS


def substituted_everywhere(substitutions: tuple[Substitution, ...] | None = None):
    """``substitution.substituted_everywhere`` of `substitutions` (default: every pass the
    ``"memplan"`` pipelines replace, ``ALL_SUBSTITUTIONS``), as ``tvm-memplan run`` uses it."""
    return _substituted_everywhere(ALL_SUBSTITUTIONS if substitutions is None else substitutions)


def _replace_built_passes(
    pass_: tvm.transform.Pass, used: set, replacements: tuple[RelaxReplacement, ...]
) -> tvm.transform.Pass:
    """``pass_`` with the stock passes of ``replacements`` that were built before the pipeline
    ran replaced (by pass name), inside nested Sequentials too. A module pass that builds its
    passes when it runs (TVM's and MLC-LLM's pipelines) gets ours through the constructor
    substitution instead."""
    if isinstance(pass_, tvm.transform.Sequential):
        info = pass_.pass_info
        passes = [_replace_built_passes(p, used, replacements) for p in pass_.passes]
        return tvm.transform.Sequential(
            passes, opt_level=info.opt_level, name=info.name, required=list(info.required)
        )
    name = pass_.info.name
    replacement = next((r for r in replacements if r.name == name), None)
    if replacement is None:
        return pass_
    used.add((tvm.relax.transform.__name__, name))
    return replacement.replace(pass_)


def _check_base(base) -> None:
    if isinstance(base, str):
        if base == PIPELINE_NAME:
            raise ValueError(f'"{PIPELINE_NAME}" already is relax_pipeline("default")')
        if base not in tvm.relax.pipeline.PIPELINE_MAP:
            known = ", ".join(sorted(tvm.relax.pipeline.PIPELINE_MAP))
            raise ValueError(f"unknown Relax pipeline {base!r} (registered: {known})")
    elif isinstance(base, list | tuple) and base:
        for item in base:
            _check_base(item)
    elif not isinstance(base, tvm.transform.Pass):
        raise TypeError(
            "relax_pipeline expects a registered pipeline name, a tvm.transform.Pass or a "
            f"non-empty list of them, got {base!r}"
        )


def resolve_relax_pipeline(base, target: tvm.target.Target | None) -> list[tvm.transform.Pass]:
    """The stock passes a Relax pipeline argument stands for (a name, a Pass or a list of
    them), as ``relax.build`` resolves it for ``target``; names are resolved when the pipeline
    runs: "default" depends on the target."""
    if isinstance(base, str):
        return [stock_relax_pipeline(target) if base == "default" else tvm.relax.get_pipeline(base)]
    if isinstance(base, tvm.transform.Pass):
        return [base]
    return [p for item in base for p in resolve_relax_pipeline(item, target)]


def relax_pipeline(base="default", *, planner_options: dict | None = None) -> tvm.transform.Pass:
    """``base`` with tvm-memplan's Relax passes in place of the stock ones.

    ``base`` is a registered Relax pipeline name (``"default"``: the one ``tvm.compile`` runs
    for the target, the target's own pipeline on GPUs), any ``tvm.transform.Pass`` (TVM's,
    MLC-LLM's or your own ``Sequential``), or a list of them run in order, for example
    ``["zero", "default"]``, the fused CPU build. While it runs:

    - ``StaticPlanBlockMemory`` is tvm-memplan's planner;
    - before ``RewriteDataflowReshape`` (after legalization, fusion and the GPU schedules),
      tvm-memplan's ``DataflowUseInplaceCalls`` turns ``call_tir`` of PrimFuncs that prove it
      safe into ``call_tir_inplace``;
    - on CPUs, before ``LegalizeOps``, it also turns operator calls into in-place calls (a stock
      ``DataflowUseInplaceCalls`` is replaced by ours as well).

    Passes built when the pipeline runs are replaced through their constructors (as for the
    ``"memplan"`` pipelines); a ``Sequential`` built beforehand has its stock passes replaced by
    name. It is an error when no planner or no in-place pass could be put in place.

    ``planner_options`` are keyword arguments of ``tvm_memplan.transform.StaticPlanBlockMemory``
    for our planner (``{"copy_free_concat": False}``: every concatenation keeps its copy);
    None: its defaults.
    """
    _check_base(base)
    replacements = RELAX_REPLACEMENTS
    if planner_options is not None:
        if not isinstance(planner_options, dict):
            raise TypeError(
                "planner_options must be a dict of StaticPlanBlockMemory keyword arguments, "
                f"got {type(planner_options).__name__}"
            )
        planner_options = dict(planner_options)
        transform.StaticPlanBlockMemory(**planner_options)  # bad names or values raise here
        replacements = _with_planner_options(planner_options)

    @tvm.transform.module_pass(opt_level=0, name="tvm_memplan.MemplanRelaxPipeline")
    def pipeline(mod: tvm.IRModule, _ctx: tvm.transform.PassContext) -> tvm.IRModule:
        passes = resolve_relax_pipeline(base, tvm.target.Target.current(allow_none=True))
        missing = (
            STOCK_CHANGED
            if base == "default"
            else "the pipeline never builds it; one that stops before memory planning runs "
            'before one that plans, as in relax_pipeline(["zero", "default"])'
        )
        substitutions = (
            RELAX_SUBSTITUTIONS
            if replacements is RELAX_REPLACEMENTS
            else tuple(r.substitution() for r in replacements)
        )
        with substituted(substitutions, "Relax pipeline", missing) as used:
            for p in passes:
                mod = _replace_built_passes(p, used, replacements)(mod)
        return mod

    return pipeline


_relax_pipeline_of = relax_pipeline  # compile's parameter shadows the name


@tvm.relax.register_pipeline(PIPELINE_NAME)
def memplan_relax_pipeline() -> tvm.transform.Pass:
    """The Relax pipeline registered as ``"memplan"``: ``relax_pipeline("default")``."""
    return relax_pipeline("default")


def compile(mod, target=None, *, relax_pipeline="default", **kwargs):  # noqa: A001
    """``tvm.compile`` with the ``"memplan"`` TIR pipeline and ``relax_pipeline(...)`` of the
    given Relax pipeline (a name, a Pass or a list of them; other arguments pass through)."""
    if "tir_pipeline" in kwargs:
        raise TypeError(
            "tvm_memplan.compile selects tir_pipeline itself; call tvm.compile to choose another"
        )
    if relax_pipeline is None:
        raise ValueError(
            "relax_pipeline=None runs no Relax pipeline, so tvm-memplan's Relax passes cannot "
            'run; call tvm.compile(..., tir_pipeline="memplan") for the TIR passes alone'
        )
    return tvm.compile(
        mod,
        target=target,
        tir_pipeline=PIPELINE_NAME,
        relax_pipeline=_relax_pipeline_of(relax_pipeline),
        **kwargs,
    )
