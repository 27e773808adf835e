"""``tvm-memplan pack problem.csv``: the offset packer on a CSV of buffers, as the Relax planner
packs tensors (``tvm_memplan.analysis.pack_offsets``). Registered by ``cli.py``; its own flags
live here, the shared ``--exact-search-ms`` in ``command_line``.

The CSV has a header row naming at least the columns ``id,lower,upper,size`` (MiniMalloc's
format: a buffer live over ``[lower, upper)``); other columns are ignored. ``--output`` writes
the same rows with an ``offset`` column added. Exit status: 0 when placed (within
``--capacity`` if given), 1 when it does not fit (the message says why), 2 on bad input.
"""

from __future__ import annotations

import argparse
import csv
import sys
import time
from pathlib import Path

from .analysis.packing import DoesNotFitError, Packing, pack_offsets
from .command_line import PREFIX, UsageError, add_flags, error, parse_exact_search_ms

__all__ = ["PackInputError", "add_parser", "read_problem", "run"]

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
        try:
            packing = pack_offsets(
                items,
                capacity=args.capacity,
                alignment=args.alignment,
                exact_search_ms=exact_search_ms,
            )
        except DoesNotFitError as err:
            print(f"{PREFIX}: does not fit: {err}", file=sys.stderr)
            return 1
        seconds = time.perf_counter() - start
        if args.output:
            _write(args.output, rows, packing)
    except (PackInputError, UsageError) as err:
        return error(err)
    print(_summary(packing, len(items), seconds))
    return 0
