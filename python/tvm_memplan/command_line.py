"""The layer every subcommand of ``tvm-memplan`` stands on: the usage error, the parsers of flag
values, each flag that more than one subcommand takes (declared here once, with its help, and
added to each subcommand that takes it), and the one way an error is printed.

    parser = commands.add_parser("report")
    add_flags(parser, "--shape-var", "--fit", "--exact-search-ms")
    ...
    except UsageError as err:
        return error(err)          # "tvm-memplan: error: ...", exit status 2

``cli`` (``report`` and the dispatch), ``run`` and ``pack`` import this module; it imports no
subcommand.
"""

from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass
from typing import Any

import tvm

from .analysis.packing import search_defaults
from .report import BUDGET_ALIASES, BUDGETS, UnfixedInputsError, UnknownSizesError
from .report.format import shape
from .report.load import one_line

__all__ = [
    "FLAGS",
    "PREFIX",
    "Flag",
    "UsageError",
    "add_flags",
    "error",
    "message",
    "parse_budgets",
    "parse_exact_search_ms",
    "parse_input_shapes",
    "parse_shape_vars",
    "parse_size",
    "parse_target",
    "progress",
]

#: How every line the command writes to stderr begins.
PREFIX = "tvm-memplan"


class UsageError(Exception):
    """A malformed argument, named by its flag."""


# ---- flag values ----------------------------------------------------------------------------

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
_SHAPE = re.compile(r"^([^=]+)=(\d+(?:x\d+)*)$")
_SHAPE_VAR = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(\d+)\s*$")


def parse_size(text: str) -> int:
    """``"64KiB"`` -> 65536; plain bytes, K/M/G (powers of 1000) or KiB/MiB/GiB (of 1024).
    ValueError for anything else."""
    match = _SIZE.match(text)
    unit = match.group(2).lower() if match else None
    if match is None or unit not in _UNITS:
        raise ValueError(text)
    value = float(match.group(1)) * _UNITS[unit]
    if value != int(value):
        raise ValueError(text)
    return int(value)


def parse_budgets(text: str) -> dict[str, int]:
    """``--fit "vm=2MiB,stack=4KiB"`` -> ``{"vm": 2097152, "stack": 4096}``."""
    budgets: dict[str, int] = {}
    for item in text.split(","):
        name, sep, size = item.partition("=")
        name = BUDGET_ALIASES.get(name.strip(), name.strip())
        if not sep or name not in BUDGETS:
            raise UsageError(
                f"--fit {text!r}: {item.strip()!r} is not NAME=SIZE with NAME one of "
                f"{', '.join([*BUDGETS, *BUDGET_ALIASES])} (for example "
                "vm=2MiB,stack=4KiB,total=16MiB)"
            )
        if name in budgets:
            raise UsageError(f"--fit {text!r}: {name} is given twice")
        try:
            budgets[name] = parse_size(size)
        except ValueError:
            raise UsageError(
                f"--fit {text!r}: {size.strip()!r} is not a size (bytes, or a number with K, "
                "KiB, M, MiB, G or GiB)"
            ) from None
    return budgets


def parse_input_shapes(specs: list[str] | None) -> dict[str, list[int]]:
    """``--input-shape x=1x3x224x224`` (repeatable) -> ``{"x": [1, 3, 224, 224]}``."""
    shapes: dict[str, list[int]] = {}
    for spec in specs or []:
        match = _SHAPE.match(spec.strip())
        if match is None:
            raise UsageError(
                f"--input-shape {spec!r} is not NAME=DIMxDIMx... (for example x=1x3x224x224)"
            )
        shapes[match.group(1)] = [int(d) for d in match.group(2).split("x")]
    return shapes


def parse_shape_vars(specs: list[str] | None) -> dict[str, int]:
    """``--shape-var seq_len=128`` (repeatable) -> ``{"seq_len": 128}``."""
    values: dict[str, int] = {}
    for spec in specs or []:
        match = _SHAPE_VAR.match(spec)
        if match is None:
            raise UsageError(f"--shape-var {spec!r} is not NAME=VALUE (for example seq_len=128)")
        if match.group(1) in values:
            raise UsageError(f"--shape-var {match.group(1)} is given twice")
        values[match.group(1)] = int(match.group(2))
    return values


def parse_target(text: str | None) -> tvm.target.Target | None:
    """``--target '{"kind": "c"}'``; None: the report's default (llvm)."""
    if text is None:
        return None
    try:
        config: Any = json.loads(text)
    except json.JSONDecodeError as err:
        raise UsageError(f"--target is not valid JSON: {err}") from err
    if not isinstance(config, dict):
        raise UsageError('--target must be a JSON object such as {"kind": "llvm"}')
    try:
        return tvm.target.Target(config)
    except Exception as err:
        raise UsageError(f"--target is not a valid target: {one_line(err)}") from err


def parse_exact_search_ms(text: str | None) -> int | None:
    """``--exact-search-ms 250`` -> 250 (None: not given, the default applies)."""
    if text is None:
        return None
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise UsageError(
            f"--exact-search-ms must be a whole number of milliseconds >= 0, got {text!r}"
        )
    return value


# ---- flags shared by subcommands --------------------------------------------------------------


@dataclass(frozen=True)
class Flag:
    """A flag as argparse takes it: ``repeat`` for one that may be given several times."""

    name: str
    metavar: str
    help: str
    repeat: bool = False


def _flags() -> dict[str, Flag]:
    defaults = search_defaults()
    flags = [
        Flag(
            "--shape-var",
            "NAME=VALUE",
            "evaluate symbolic sizes at this value of a shape variable, e.g. seq_len=128 "
            "(repeat for more; bounded variables default to their tir_var_upper_bound)",
            repeat=True,
        ),
        Flag(
            "--fit",
            "BUDGETS",
            "check the memplan build against budgets, e.g. total=16MiB,vm=8MiB,stack=4KiB "
            f"(any subset of {', '.join(BUDGETS)}; bytes, or K, KiB, M, MiB, G, GiB); exit 1 "
            "when one is exceeded; temp is vm (MLC-LLM's temporary buffer)",
        ),
        Flag(
            "--solve",
            "VARIABLE",
            "with --fit vm=SIZE (or temp=SIZE): the largest bound of this shape variable "
            "(e.g. seq_len, the prefill chunk) for which each build's VM figure fits, planned "
            "again at each value; other variables at their bounds unless given with --shape-var",
        ),
        Flag(
            "--exact-search-ms",
            "MS",
            "milliseconds the exact offset search may take where the greedy orders stay above "
            f"the peak-live bound (the planner: per function, default {defaults.planner_ms}; "
            f"`pack`: the whole problem, default {defaults.pack_ms}; 0: greedy orders only); "
            f"the PassContext option {defaults.pass_config}",
        ),
    ]
    return {f.name: f for f in flags}


#: Each shared flag, by name.
FLAGS: dict[str, Flag] = _flags()


def add_flags(parser, *names: str, prefix: str = "") -> None:
    """Add the shared flags ``names`` to an argparse parser, each help after ``prefix`` (what
    the flag applies to in that subcommand, e.g. "with --report: ")."""
    for name in names:
        flag = FLAGS[name]
        parser.add_argument(
            flag.name,
            metavar=flag.metavar,
            help=prefix + flag.help,
            action="append" if flag.repeat else "store",
        )


# ---- what the command writes ------------------------------------------------------------------


def message(err: Exception) -> str:
    """The error as the command line says it: with the flags that fix it."""
    if isinstance(err, UnfixedInputsError):
        example = " ".join(
            f"--input-shape {name}={shape([d or 1 for d in dims])}" for name, dims in err.inputs
        )
        return f"{err}: {example} (your sizes in place of the 1s)"
    if isinstance(err, UnknownSizesError):
        example = " ".join(f"--shape-var {v}=N" for v in err.variables)
        return f"--fit needs a value for each shape variable without a bound: {example}"
    return str(err)


def error(err: Exception | str) -> int:
    """Print ``tvm-memplan: error: ...`` (the message of ``err``) and return exit status 2."""
    text = err if isinstance(err, str) else message(err)
    print(f"{PREFIX}: error: {text}", file=sys.stderr)
    return 2


def progress(line: str) -> None:
    """A line of progress on stderr, as the command writes it."""
    print(f"{PREFIX}: {line}", file=sys.stderr, flush=True)
