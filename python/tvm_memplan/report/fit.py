"""``--fit vm=2MiB,stack=4KiB,workspace=64KiB``: whether the memplan build fits a device, read off
the report's data.

- ``vm``: the bytes the Relax VM allocates for all Relax functions after planning (storages and
  tensors left unplanned), in the memplan build;
- ``stack``: the most stack one PrimFunc takes (PrimFuncs run one at a time), our placement;
- ``workspace``: the most ``TVMBackendAllocWorkspace`` bytes one PrimFunc takes.
"""

from __future__ import annotations

import re

from .load import ReportError
from .model import FitBudget, FitContributor, FitResult, Report

__all__ = ["BUDGETS", "check_fit", "parse_budgets", "parse_size"]

BUDGETS = ("vm", "stack", "workspace")
CONTRIBUTORS = 5

_UNITS = {
    "": 1,
    "b": 1,
    "k": 1000,
    "kb": 1000,
    "kib": 1024,
    "m": 1000**2,
    "mb": 1000**2,
    "mib": 1024**2,
    "g": 1000**3,
    "gb": 1000**3,
    "gib": 1024**3,
}
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*$")


def parse_size(text: str) -> int:
    """``"64KiB"`` -> 65536; plain bytes, K/M/G (powers of 1000) or KiB/MiB/GiB (of 1024)."""
    match = _SIZE.match(text)
    unit = match.group(2).lower() if match else None
    if match is None or unit not in _UNITS:
        raise ValueError(text)
    value = float(match.group(1)) * _UNITS[unit]
    if value != int(value):
        raise ValueError(text)
    return int(value)


def parse_budgets(text: str) -> dict[str, int]:
    """``"vm=2MiB,stack=4KiB"`` -> ``{"vm": 2097152, "stack": 4096}``; any subset of
    vm, stack and workspace."""
    budgets: dict[str, int] = {}
    for item in text.split(","):
        name, sep, size = item.partition("=")
        name = name.strip()
        if not sep or name not in BUDGETS:
            raise ReportError(
                f"--fit {text!r}: {item.strip()!r} is not NAME=SIZE with NAME one of "
                f"{', '.join(BUDGETS)} (for example vm=2MiB,stack=4KiB,workspace=64KiB)"
            )
        if name in budgets:
            raise ReportError(f"--fit {text!r}: {name} is given twice")
        try:
            budgets[name] = parse_size(size)
        except ValueError:
            raise ReportError(
                f"--fit {text!r}: {size.strip()!r} is not a size (bytes, or a number with K, "
                "KiB, M, MiB, G or GiB)"
            ) from None
    return budgets


def _vm(report: Report, budget: int) -> FitBudget:
    figure = 0 if report.inplace is None else report.inplace.planned_bytes["ours"]
    contributors = []
    for m in report.memory:
        for t in m.tensors:
            if t.bytes < 0:
                continue
            if t.storage >= 0:
                note = (
                    f"shares storage {t.storage} at offset {t.offset} with tensors not live "
                    "at the same time (StaticPlanBlockMemory)"
                )
            else:
                note = f"allocated on its own: {t.reason}"
            contributors.append(
                FitContributor(t.binding, m.function, t.bytes, note, t.storage >= 0)
            )
    return _budget(
        "vm", budget, figure, "VM bytes of all Relax functions after planning", contributors
    )


def _placed(report: Report, name: str, budget: int) -> FitBudget:
    compacted = {(b.function, b.buffer): b for b in report.compaction.buffers}
    by_buffer: dict[str, list] = {}
    for b in report.compaction.buffers:
        by_buffer.setdefault(b.buffer, []).append(b)
    per_function: dict[str, int] = {}
    contributors = []
    for a in report.placement.allocations:
        if a.ours != name or a.bytes is None:
            continue
        per_function[a.function] = per_function.get(a.function, 0) + a.bytes
        # Placement sees the host functions after the host/device split; compaction the
        # PrimFuncs before it: match by name, and by buffer alone when that is unambiguous.
        region = compacted.get((a.function, a.buffer))
        if region is None and len(by_buffer.get(a.buffer, [])) == 1:
            region = by_buffer[a.buffer][0]
        shrunk = (
            region is not None
            and region.original_bytes is not None
            and region.ours_bytes is not None
            and region.ours_bytes < region.original_bytes
        )
        note = a.reason
        if shrunk:
            note = f"compacted from {region.original_bytes} B (CompactBufferAllocation); {note}"
        contributors.append(FitContributor(a.buffer, a.function, a.bytes, note, shrunk))
    worst = max(per_function.items(), key=lambda item: item[1], default=(None, 0))
    meaning = f"the most {name} bytes one PrimFunc takes"
    if worst[0] is not None:
        meaning += f": {worst[0]}"
        contributors = [c for c in contributors if c.function == worst[0]]
    return _budget(name, budget, worst[1], meaning, contributors)


def _budget(name, budget, figure, meaning, contributors) -> FitBudget:
    fits = figure is not None and figure <= budget
    largest = sorted(contributors, key=lambda c: (-c.bytes, c.function, c.name))[:CONTRIBUTORS]
    return FitBudget(name, budget, figure, fits, meaning, [] if fits else largest)


def check_fit(report: Report, budgets: dict[str, int]) -> FitResult:
    """Each budget against the memplan build, in the order vm, stack, workspace."""
    checked = []
    for name in BUDGETS:
        if name not in budgets:
            continue
        if name == "vm":
            checked.append(_vm(report, budgets[name]))
        else:
            checked.append(_placed(report, name, budgets[name]))
    return FitResult(all(b.fits for b in checked), checked)
