"""Pass constructors substituted: while a stock pipeline builds its passes, the constructors
named by ``Substitution``s return ours instead, on the compiling thread (``substituted``) or on
every thread (``substituted_everywhere``); the modules get their stock constructors back when
the block ends. This is how the ``"memplan"`` pipelines (``pipeline``) run TVM's own pipelines,
how ``tvm-memplan run`` reaches the pipelines a tool builds, and how the tests run a stock
pipeline with chosen passes replaced::

    swap = Substitution(tvm.tirx.transform, "LowerTVMBuiltin", lambda stock: ours())
    with substituted((swap,), "TIR pipeline") as used:
        tvm.compile(mod, "llvm")   # TVM's pipeline, with ours where it built LowerTVMBuiltin
    # a required substitution that never happened is an error naming it

A substitution that never happens is an error, so a TVM whose pipeline stops building a pass
through its module fails loudly instead of compiling without our pass.
"""

from __future__ import annotations

import contextlib
import functools
import threading
from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType

import tvm

__all__ = ["STOCK_CHANGED", "Substitution", "substituted", "substituted_everywhere"]


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


_lock = threading.Lock()
_installed: dict[tuple[str, str], tuple[Callable, int]] = {}  # key -> (stock constructor, users)
_active = threading.local()  # .table: key -> Substitution, .used: set of keys
# The process-wide table (``substituted_everywhere``): read by every thread that has no
# substitution of its own for a key. Replaced whole, never mutated, so a read needs no lock.
_everywhere: dict[tuple[str, str], Substitution] = {}
_everywhere_used: set[tuple[str, str]] = set()


def _dispatching(key: tuple[str, str], stock: Callable) -> Callable:
    @functools.wraps(stock)
    def constructor(*args, **kwargs):
        substitution = (getattr(_active, "table", None) or {}).get(key)
        used = getattr(_active, "used", None)
        if substitution is None:
            substitution, used = _everywhere.get(key), _everywhere_used
        if substitution is None:
            return stock(*args, **kwargs)
        with _lock:
            used.add(key)
        return substitution.replace(stock, *args, **kwargs)

    return constructor


def _install(substitutions: tuple[Substitution, ...]) -> None:
    """Puts the dispatching constructor of each substitution in its module (once, however
    many blocks use it)."""
    with _lock:
        for s in substitutions:
            stock, users = _installed.get(s.key, (getattr(s.module, s.name), 0))
            if users == 0:
                setattr(s.module, s.name, _dispatching(s.key, stock))
            _installed[s.key] = (stock, users + 1)


def _uninstall(substitutions: tuple[Substitution, ...]) -> None:
    """Gives each module its stock constructor back once the last block using it ends."""
    with _lock:
        for s in substitutions:
            stock, users = _installed[s.key]
            if users == 1:
                setattr(s.module, s.name, stock)
                del _installed[s.key]
            else:
                _installed[s.key] = (stock, users - 1)


# Why a required substitution may not happen, when the stock pipeline itself was run.
STOCK_CHANGED = "the stock pipeline of this TVM no longer builds it through that module"


@contextlib.contextmanager
def substituted(
    substitutions: tuple[Substitution, ...], pipeline: str, missing: str = STOCK_CHANGED
):
    """Within the block, on this thread, the stock pass constructors of `substitutions` build
    ours: how the "memplan" pipelines run TVM's own pipelines, and how a caller (as
    ``tvm_memplan.testing``) runs one with chosen passes replaced. The block receives the set
    of substitutions made (keys). When the block ends normally, a substitution that was
    required but never happened is an error naming `pipeline` and saying `missing`."""
    _install(substitutions)
    outer = getattr(_active, "table", None), getattr(_active, "used", None)
    _active.table = {s.key: s for s in substitutions}
    used = _active.used = set()
    try:
        yield used
    finally:
        _active.table, _active.used = outer
        _uninstall(substitutions)
    _check_used(substitutions, used, pipeline, missing)


@contextlib.contextmanager
def substituted_everywhere(substitutions: tuple[Substitution, ...]):
    """Within the block, on every thread (those started before it and during it), the stock
    pass constructors of `substitutions` build ours, wherever
    a pipeline is built: by name, TVM's defaults, or one that builds its passes as it runs
    (MLC-LLM's). A thread inside ``substituted`` uses its own table for the keys it has. The
    block receives the set of substitutions made so far (keys, from any thread); when it ends,
    every module has its stock constructor back. Only one such block at a time."""
    global _everywhere
    table = {s.key: s for s in substitutions}
    with _lock:
        if _everywhere:
            raise RuntimeError("pass constructors are already substituted process-wide")
        _everywhere_used.clear()
        _everywhere = table  # under the lock: a second block started meanwhile is refused
    _install(substitutions)
    try:
        yield _everywhere_used
    finally:
        _everywhere = {}
        _uninstall(substitutions)


def _check_used(
    substitutions: tuple[Substitution, ...], used: set, pipeline: str, why: str
) -> None:
    ctx = tvm.transform.PassContext.current()
    missing = [s for s in substitutions if s.key not in used and s.required(ctx)]
    if missing:
        names = ", ".join(f"{s.module.__name__}.{s.name}" for s in missing)
        raise RuntimeError(f'the "memplan" {pipeline} could not replace {names}: {why}')
