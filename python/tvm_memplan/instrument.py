"""What a pass receives (or returns) inside a real pipeline, recorded with a pass instrument.

Example: the packed host functions as our LowerTVMBuiltin sees them in ``tvm.compile``::

    mods = capture(lambda: tvm_memplan.compile(mod, "llvm"), ["tvm_memplan.LowerTVMBuiltin"])
    host = mods["tvm_memplan.LowerTVMBuiltin"]
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import tvm

__all__ = ["capture"]


def capture(
    run: Callable[[], object],
    pass_names: Iterable[str],
    *,
    after: bool = False,
    config: dict | None = None,
) -> dict[str, tvm.IRModule]:
    """Call ``run()`` under a PassContext (with ``config``) that records the module handed to
    each pass named in ``pass_names`` (with ``after``: the module it returns). Returns the last
    module recorded per name; a ValueError names the passes that never ran."""
    wanted = set(pass_names)
    captured: dict[str, tvm.IRModule] = {}

    @tvm.instrument.pass_instrument
    class Capture:
        def run_before_pass(self, mod, info):
            if not after and info.name in wanted:
                captured[info.name] = mod

        def run_after_pass(self, mod, info):
            if after and info.name in wanted:
                captured[info.name] = mod

    with tvm.transform.PassContext(config=config or {}, instruments=[Capture()]):
        run()
    missing = sorted(wanted - set(captured))
    if missing:
        raise ValueError(f"no pass named {', '.join(missing)} ran")
    return captured
