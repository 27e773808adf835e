"""What runs inside a real pipeline, recorded with one pass instrument: the passes in order, with
the passes that run them, and the module a watched pass receives and returns.

Example: the packed host functions as our LowerTVMBuiltin sees them in ``tvm.compile``::

    mods = capture(lambda: tvm_memplan.compile(mod, "llvm"), ["tvm_memplan.LowerTVMBuiltin"])
    host = mods["tvm_memplan.LowerTVMBuiltin"]

    t = trace(lambda: tvm_memplan.compile(mod, "llvm"), ["tvm_memplan.LegalizeOps/LegalizeOps"])
    t.names        # every pass run, in order
    t.paths        # the same as "Outer/Inner": Inner run by the pass Outer
    t.before[...]  # the module a watched pass (a name or a path) received; t.after: returned
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import tvm

__all__ = ["PassTrace", "capture", "trace"]


class _StopError(Exception):
    """Raised by the instrument once the trace has what it needs, to end a compilation early."""


@dataclass
class PassTrace:
    """What ``trace`` recorded."""

    #: Every pass run, in order (a pass run again appears again).
    names: list[str] = field(default_factory=list)
    #: The same, each as "Outer/Inner": Inner run by the pass Outer (a name alone at the top).
    paths: list[str] = field(default_factory=list)
    #: Per pass run, the passes running it, outermost first.
    nesting: list[tuple[str, ...]] = field(default_factory=list)
    #: The last module each watched pass (a name or a path) received, and the one it returned.
    before: dict[str, tvm.IRModule] = field(default_factory=dict)
    after: dict[str, tvm.IRModule] = field(default_factory=dict)
    #: With ``catch``: the passes running when the compilation raised, outermost first, and
    #: the error.
    failing: list[str] = field(default_factory=list)
    error: Exception | None = None
    #: What ``run()`` returned (None when stopped early or failed).
    result: object = None


def trace(
    run: Callable[[], object],
    watch: Iterable[str] = (),
    *,
    stop_before: str | None = None,
    stop_after: str | None = None,
    catch: bool = False,
    config: dict | None = None,
    inherit: bool = False,
) -> PassTrace:
    """Call ``run()`` under a PassContext (with ``config``) holding the one instrument; end it
    before the pass named ``stop_before`` or after ``stop_after`` runs. An error of ``run()``
    propagates, unless ``catch``: then it is recorded with the passes that were running.

    ``inherit``: the PassContext is the current one's copy (its opt_level, required and
    disabled passes, config, and instruments, which see one more enter and exit) with the
    instrument added, so that ``run()`` builds as it would without the trace (``tvm-memplan
    run`` traces a tool's builds under the tool's own PassContext)."""
    watched = set(watch)
    recorded = PassTrace()
    running: list[str] = []
    stopped = False

    def keys(name: str) -> tuple[str, str]:
        return name, f"{running[-1]}/{name}" if running else name

    @tvm.instrument.pass_instrument
    class Trace:
        def run_before_pass(self, mod, info):
            nonlocal stopped
            name, path = keys(info.name)
            recorded.names.append(name)
            recorded.paths.append(path)
            recorded.nesting.append(tuple(running))
            for key in (name, path):
                if key in watched:
                    recorded.before[key] = mod
            if name == stop_before:
                stopped = True
                raise _StopError()
            running.append(name)

        def run_after_pass(self, mod, info):
            nonlocal stopped
            if running and running[-1] == info.name:
                running.pop()
            for key in keys(info.name):
                if key in watched:
                    recorded.after[key] = mod
            if info.name == stop_after:
                stopped = True
                raise _StopError()

    try:
        with _context(Trace(), config or {}, inherit):
            recorded.result = run()
    except Exception as err:
        if not stopped:
            if not catch:
                raise
            recorded.failing = list(running)
            recorded.error = err
    return recorded


def _context(instrument, config: dict, inherit: bool) -> tvm.transform.PassContext:
    if not inherit:
        return tvm.transform.PassContext(config=config, instruments=[instrument])
    return configured(config, instrument)


def configured(config: dict, instrument=None) -> tvm.transform.PassContext:
    """The current PassContext's copy (opt_level, required and disabled passes, config and
    instruments) with ``config`` added, and ``instrument`` after the others when given."""
    current = tvm.transform.PassContext.current()
    return tvm.transform.PassContext(
        opt_level=current.opt_level,
        required_pass=list(current.required_pass),
        disabled_pass=list(current.disabled_pass),
        instruments=[*current.instruments, *([instrument] if instrument is not None else [])],
        config={**dict(current.config), **config},
    )


def capture(
    run: Callable[[], object],
    pass_names: Iterable[str],
    *,
    after: bool = False,
    config: dict | None = None,
) -> dict[str, tvm.IRModule]:
    """The module handed to each pass named in ``pass_names`` while ``run()`` runs (with
    ``after``: the module it returns), the last one per name; a ValueError names the passes
    that never ran."""
    wanted = list(pass_names)
    recorded = trace(run, wanted, config=config)
    captured = recorded.after if after else recorded.before
    missing = sorted(set(wanted) - set(captured))
    if missing:
        raise ValueError(f"no pass named {', '.join(missing)} ran")
    return {name: captured[name] for name in wanted}
