"""Recording the builds a process makes: within ``recording_builds()``, every pipeline built has
tvm-memplan's passes and every ``tvm.compile``, ``tvm.relax.build`` and ``tvm.tirx.build`` call
(the outermost of a thread: ``tvm.compile`` calling ``relax.build`` is one build) is traced under
the caller's own PassContext, recording what our passes receive. ``tvm-memplan run`` reads its
builds from here.

    with recording_builds(traced=RECORDED_PASSES) as builds:
        tvm.compile(mod, "llvm")
    builds[0].traced.before["tvm_memplan.StaticPlanBlockMemory"]   # what our planner received

The build entries are swapped back when the block ends; the pipelines' substitution
(``pipeline.substituted_everywhere``) is undone with them.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import inspect
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import tvm

from . import pipeline
from .instrument import PassTrace, trace

__all__ = ["BUILD_ENTRIES", "RecordedBuild", "recording_builds"]

#: The calls that build, as ``(module, attribute)``: each is traced while recording.
BUILD_ENTRIES = (("tvm", "compile"), ("tvm.relax", "build"), ("tvm.tirx", "build"))


@dataclass
class RecordedBuild:
    """One build: what it built, how, and the trace of our passes in it."""

    index: int
    entry: str
    mod: tvm.IRModule
    target: tvm.target.Target | None
    relax_pipeline: Any
    tir_pipeline: Any
    #: The PassContext the build ran under: opt_level, required, disabled passes and config.
    context: dict = field(default_factory=dict)
    traced: PassTrace = field(default_factory=PassTrace)


def _target_of(value) -> tvm.target.Target | None:
    if value is None:
        return tvm.target.Target.current(allow_none=True)
    try:
        return tvm.target.Target(value)
    except Exception:  # a per-device dict and the like: the report falls back to llvm
        return None


def _context_settings(config: dict) -> dict:
    ctx = tvm.transform.PassContext.current()
    return {
        "opt_level": ctx.opt_level,
        "required_pass": list(ctx.required_pass),
        "disabled_pass": list(ctx.disabled_pass),
        "config": {**dict(ctx.config), **config},
    }


class _Recorder:
    """While active, every build entry records the outermost build of each thread."""

    def __init__(self, traced: list[str], config: dict):
        self.builds: list[RecordedBuild] = []
        self._traced = traced
        self._config = config
        self._lock = threading.Lock()
        self._depth = threading.local()
        self._originals: list[tuple[Any, str, Any]] = []

    def _wrap(self, entry: str, original):
        signature = inspect.signature(original)

        @functools.wraps(original)
        def build(*args, **kwargs):
            if getattr(self._depth, "inside", False):
                return original(*args, **kwargs)
            try:
                bound = signature.bind(*args, **kwargs)
                bound.apply_defaults()
                arguments = bound.arguments
            except TypeError:  # the call is wrong: let TVM say so
                return original(*args, **kwargs)
            mod = arguments.get("mod")
            if isinstance(mod, tvm.tirx.PrimFunc):
                mod = tvm.IRModule({"main": mod})
            record = RecordedBuild(
                index=0,
                entry=entry,
                mod=mod,
                target=_target_of(arguments.get("target")),
                relax_pipeline=arguments.get("relax_pipeline"),
                tir_pipeline=arguments.get("tir_pipeline", arguments.get("pipeline")),
                context=_context_settings(self._config),
            )
            self._depth.inside = True
            try:
                record.traced = trace(
                    lambda: original(*args, **kwargs),
                    self._traced,
                    catch=True,
                    inherit=True,
                    config=self._config,
                )
            finally:
                self._depth.inside = False
            with self._lock:
                record.index = len(self.builds) + 1
                self.builds.append(record)
            if record.traced.error is not None:
                raise record.traced.error
            return record.traced.result

        return build

    def __enter__(self) -> _Recorder:
        for module_name, name in BUILD_ENTRIES:
            module = importlib.import_module(module_name)
            original = getattr(module, name)
            self._originals.append((module, name, original))
            setattr(module, name, self._wrap(f"{module_name}.{name}", original))
        return self

    def __exit__(self, *exc) -> None:
        for module, name, original in reversed(self._originals):
            setattr(module, name, original)
        self._originals.clear()


@contextlib.contextmanager
def recording_builds(traced: Iterable[str] = (), config: dict | None = None):
    """Within the block, every pipeline built in the process has our passes and every build
    is recorded, with the modules the passes named in ``traced`` receive and return, under the
    caller's PassContext with ``config`` added; the block receives the list of
    ``RecordedBuild`` (in the order they ended)."""
    recorder = _Recorder(list(traced), dict(config or {}))
    with pipeline.substituted_everywhere(), recorder:
        yield recorder.builds
