"""The Python package in layers (docs/architecture.md, "The Python layers"): a module imports only
modules of its own layer or below, and no two parts of the package import each other, directly
or around a circle, at import time or inside a function."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import tvm_memplan

PACKAGE = Path(tvm_memplan.__file__).resolve().parent
ARCHITECTURE = Path(__file__).resolve().parents[1] / "docs" / "architecture.md"


def _layers() -> list[list[str]]:
    """The layers as docs/architecture.md lists them, top first: each row of its table of Python
    layers names the parts of one layer in backticks."""
    text = ARCHITECTURE.read_text(encoding="utf-8")
    (table,) = re.findall(r"\| layer \| parts \| what it holds \|\n\| --- .*?\n((?:\|.*\n)+)", text)
    return [re.findall(r"`([a-z_]+)`", row.split("|")[2]) for row in table.strip().splitlines()]


def _part(path: Path) -> str:
    """The part of the package a file belongs to: its module, or its subpackage."""
    return path.relative_to(PACKAGE).parts[0].removesuffix(".py")


def _imported_parts(path: Path, source: str | None = None) -> set[str]:
    """The parts of the package that ``path`` (or ``source`` as if it stood there) imports,
    wherever in the file it imports them."""
    tree = ast.parse(source if source is not None else path.read_text(encoding="utf-8"))
    depth = len(path.relative_to(PACKAGE).parts) - 1  # folders below the package
    parts = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level == 0:
                names = node.module.split(".") if node.module else []
                if names[:1] != ["tvm_memplan"]:
                    continue
                target = names[1:]
            elif node.level <= depth:
                continue  # inside its own subpackage
            else:
                target = (node.module or "").split(".") if node.module else []
            if target and target[0]:
                parts.add(target[0])
            else:  # `from .. import a, b`
                parts.update(alias.name for alias in node.names)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                names = alias.name.split(".")
                if names[0] == "tvm_memplan" and len(names) > 1:
                    parts.add(names[1])
    return parts


def _graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        part = _part(path)
        if part == "__init__":
            continue  # the package's own entry imports what it re-exports
        graph.setdefault(part, set()).update(_imported_parts(path) - {part})
    return graph


def test_every_part_of_the_package_has_a_layer():
    """The architecture page's table names each module and subpackage once."""
    named = [part for layer in _layers() for part in layer]
    assert sorted(named) == sorted(set(named)), "a part is named in two layers"
    assert set(_graph()) == set(named)


def test_no_part_imports_one_above_it():
    """An import goes to the importer's own layer or one below."""
    layers = _layers()
    level = {part: len(layers) - i for i, layer in enumerate(layers) for part in layer}
    upward = [
        f"{part} (layer {level[part]}) imports {other} (layer {level[other]})"
        for part, imported in _graph().items()
        for other in imported
        if level[other] > level[part]
    ]
    assert upward == []


def test_no_import_circle():
    """The parts import each other without a circle (cli -> run -> cli was one)."""
    graph = _graph()
    state: dict[str, str] = {}
    circles = []

    def visit(part: str, path: list[str]) -> None:
        state[part] = "open"
        for other in sorted(graph.get(part, ())):
            if state.get(other) == "open":
                circles.append(" -> ".join([*path[path.index(other) :], other]))
            elif other not in state:
                visit(other, [*path, other])
        state[part] = "done"

    for part in sorted(graph):
        if part not in state:
            visit(part, [part])
    assert circles == []


def test_the_check_reads_imports_as_python_resolves_them():
    """The check can fail: in the report, ``..command_line`` is the command line (an upward
    import), ``.load`` its own module, and an import inside a function counts too."""
    source = "from . import load\ndef f():\n    from ..command_line import UsageError\n"
    assert _imported_parts(PACKAGE / "report" / "text.py", source) == {"command_line"}
    assert _imported_parts(PACKAGE / "run.py", "from . import pack, report\n") == {"pack", "report"}
