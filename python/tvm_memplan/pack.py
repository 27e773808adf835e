"""``tvm-memplan pack problem.csv``: the offset packer on a CSV of buffers, as the Relax planner
packs tensors (``tvm_memplan.analysis.pack_offsets``). Registered by ``cli.py``; its own flags
live here, the shared ``--exact-search-ms`` in ``command_line``.

The CSV has a header row naming at least the columns ``id,lower,upper,size`` (MiniMalloc's
format: a buffer live over ``[lower, upper)``); other columns are ignored. ``--output`` writes
the same rows with an ``offset`` column added; ``--json`` prints the record (bound, size,
optimality, steps and seconds per phase) instead of the summary line. On a terminal, work that
takes over a second shows its phase, the best size so far and its gap to the bound on one line
of stderr, cleared when done. Exit status: 0 when placed (within ``--capacity`` if given), 1
when it does not fit (the message says why), 2 on bad input.
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
import time
from pathlib import Path
from typing import TextIO

from .analysis.packing import DoesNotFitError, Packing, pack_offsets
from .command_line import PREFIX, UsageError, add_flags, error, parse_exact_search_ms

__all__ = ["PackInputError", "Progress", "add_parser", "read_problem", "record", "run"]

COLUMNS = ("id", "lower", "upper", "size")


class PackInputError(Exception):
    """A malformed problem file or flag, named with its line or flag."""


def add_parser(commands) -> None:
    """The ``pack`` subcommand and its flags, on the CLI's subparsers."""
    pack = commands.add_parser(
        "pack",
        help="place buffers with fixed lifetimes at offsets of one arena (a CSV of "
        "id,lower,upper,size, each live over [lower, upper))",
        description="Exit status: 0 when placed, 1 when the buffers do not fit --capacity, "
        "2 on an error.",
    )
    pack.add_argument("problem", help="CSV file with a header row id,lower,upper,size")
    pack.add_argument(
        "--capacity",
        type=int,
        metavar="N",
        help="arena bytes: any placement within it will do (default: the smallest found)",
    )
    pack.add_argument(
        "--alignment", type=int, default=1, metavar="A", help="offsets are multiples of A"
    )
    add_flags(pack, "--exact-search-ms")
    pack.add_argument(
        "--output", metavar="FILE", help="write the rows with an offset column to this CSV"
    )
    pack.add_argument(
        "--json",
        action="store_true",
        help="print the record as JSON (bound, size, optimality, steps and seconds per phase) "
        "instead of the summary line",
    )


def read_problem(path: str) -> tuple[list[dict[str, str]], list[tuple[str, int, int, int]]]:
    """The rows of the CSV at ``path`` and its items ``(id, lower, upper, size)``;
    PackInputError naming the line for anything malformed."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise PackInputError(
            f"cannot read {path}: {getattr(err, 'strerror', None) or err}"
        ) from err
    reader = csv.DictReader(text.splitlines())
    fields = [f.strip() for f in reader.fieldnames or []]
    missing = [c for c in COLUMNS if c not in fields]
    if missing:
        raise PackInputError(
            f"{path}: the header must name the columns {','.join(COLUMNS)} "
            f"(missing {','.join(missing)})"
        )
    reader.fieldnames = fields
    rows, items, seen = [], [], {}
    for line, row in enumerate(reader, start=2):
        if not any((v or "").strip() for v in row.values()):
            continue
        values = {}
        for column in COLUMNS[1:]:
            text_value = (row.get(column) or "").strip()
            try:
                values[column] = int(text_value)
            except ValueError:
                raise PackInputError(
                    f"{path}:{line}: {column} must be an integer, got {text_value!r}"
                ) from None
        ident = (row.get("id") or "").strip()
        if ident in seen:
            raise PackInputError(f"{path}:{line}: id {ident!r} already on line {seen[ident]}")
        seen[ident] = line
        lower, upper, size = values["lower"], values["upper"], values["size"]
        if lower < 0 or upper <= lower:
            raise PackInputError(
                f"{path}:{line}: buffer {ident!r} has an empty lifetime [{lower}, {upper})"
            )
        if size < 0:
            raise PackInputError(f"{path}:{line}: buffer {ident!r} has a negative size {size}")
        rows.append(row)
        items.append((ident, lower, upper, size))
    if not items:
        raise PackInputError(f"{path}: no buffers")
    return rows, items


def _summary(packing: Packing, count: int, seconds: float) -> str:
    gap = f", {packing.gap_bytes} over the bound" if packing.gap_bytes else ""
    return (
        f"{count} buffers in {packing.size} bytes (peak-live bound {packing.bound}{gap}; "
        f"{packing.optimality}; {packing.algorithm}; {seconds:.3f} s)"
    )


def record(packing: Packing, count: int, seconds: float) -> dict:
    """What ``--json`` prints: the packing's figures without its offsets, each phase's work
    (steps, which do not vary between runs) and time (which does)."""
    return {
        "buffers": count,
        "size": packing.size,
        "bound": packing.bound,
        "gap_bytes": packing.gap_bytes,
        "optimality": packing.optimality,
        "algorithm": packing.algorithm,
        "fits": packing.fits,
        "why_not": packing.why_not,
        "greedy": {
            "orders": packing.greedy_orders,
            "steps": packing.greedy_steps,
            "seconds": round(packing.greedy_seconds, 6),
        },
        "exact_search": {
            "steps": packing.search_steps,
            "timed_out": packing.timed_out,
            "seconds": round(packing.search_seconds, 6),
        },
        "seconds": round(seconds, 6),
    }


class Progress:
    """The packer's progress on one line of a terminal, rewritten in place: the phase, the best
    size so far and its gap to the bound, once the work has taken ``delay`` seconds; cleared by
    ``close``. Writes nothing when ``stream`` is not a terminal."""

    def __init__(self, stream: TextIO, delay: float = 1.0, clock=time.monotonic):
        self._stream = stream
        self._live = stream.isatty()
        self._clock = clock
        self._start = clock()
        self._delay = delay
        self._width = 0

    def __call__(self, phase: str, best: int, bound: int) -> None:
        elapsed = self._clock() - self._start
        if not self._live or elapsed < self._delay:
            return
        gap = best - bound
        share = f" ({100 * gap / bound:.2f}%)" if bound else ""
        line = f"{PREFIX}: pack: {phase}, best {best} bytes, {gap} over the bound{share}, "
        line += f"{elapsed:.1f} s"
        self._stream.write("\r" + line.ljust(self._width))
        self._stream.flush()
        self._width = max(self._width, len(line))

    def close(self) -> None:
        if self._width:
            self._stream.write("\r" + " " * self._width + "\r")
            self._stream.flush()
            self._width = 0


def _write(path: str, rows: list[dict[str, str]], packing: Packing) -> None:
    columns = list(rows[0].keys())
    if "offset" not in columns:
        columns.append("offset")
    try:
        with open(path, "w", encoding="utf-8", newline="") as out:
            writer = csv.DictWriter(out, columns, lineterminator="\n")
            writer.writeheader()
            for row in rows:
                writer.writerow({**row, "offset": packing.offsets[row["id"].strip()]})
    except OSError as err:
        raise PackInputError(f"cannot write {path}: {err.strerror}") from err


def run(args: argparse.Namespace) -> int:
    """Run ``tvm-memplan pack`` on parsed arguments; returns the exit status."""
    try:
        if args.alignment <= 0:
            raise PackInputError(f"--alignment must be positive, got {args.alignment}")
        if args.capacity is not None and args.capacity < 0:
            raise PackInputError(f"--capacity must be >= 0, got {args.capacity}")
        exact_search_ms = parse_exact_search_ms(args.exact_search_ms)
        rows, items = read_problem(args.problem)
        start = time.perf_counter()
        progress = Progress(sys.stderr)
        try:
            packing = pack_offsets(
                items,
                capacity=args.capacity,
                alignment=args.alignment,
                exact_search_ms=exact_search_ms,
                progress=progress,
            )
        except DoesNotFitError as err:
            progress.close()
            if args.json:
                print(json.dumps(record(err.packing, len(items), time.perf_counter() - start)))
            print(f"{PREFIX}: does not fit: {err}", file=sys.stderr)
            return 1
        progress.close()
        seconds = time.perf_counter() - start
        if args.output:
            _write(args.output, rows, packing)
    except (PackInputError, UsageError) as err:
        return error(err)
    print(
        json.dumps(record(packing, len(items), seconds))
        if args.json
        else _summary(packing, len(items), seconds)
    )
    return 0
