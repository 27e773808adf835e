"""Target facts the passes use: the stack limits of CPU targets (src_cpp/target/stack_limits.h).

``max_stack_alloca`` (bytes one allocation may take on the stack, default 1024) and
``max_stack_bytes`` (bytes all stack allocations of one function may take, default: no limit)
are each read from the first of these that sets them:

1. the PassContext option ``tvm_memplan.max_stack_alloca`` / ``tvm_memplan.max_stack_bytes``;
2. the target attribute ``feature.max_stack_alloca`` / ``feature.max_stack_bytes``
   (``tvm.target.Target({"kind": "c", "feature.max_stack_alloca": 0})``);
3. the target-kind attribute ``max_stack_alloca`` / ``max_stack_bytes`` (set with
   ``set_kind_max_stack_alloca``; ``max_stack_alloca`` is 1024 on the CPU kinds), readable with
   ``Target.get_kind_attr``;
4. the default.

Values must be integers >= 0; anything else raises ValueError naming where it was set.
"""

from __future__ import annotations

from dataclasses import dataclass

import tvm

from . import _ffi_api

__all__ = [
    "STACK_OPTIONS",
    "StackOption",
    "max_stack_alloca",
    "max_stack_bytes",
    "set_kind_max_stack_alloca",
    "set_kind_max_stack_bytes",
]


@dataclass(frozen=True)
class StackOption:
    """One stack option under its name at each level (declared once, in C++)."""

    name: str
    pass_config: str
    target_attr: str
    kind_attr: str
    default: int | None
    doc: str


STACK_OPTIONS: tuple[StackOption, ...] = tuple(
    StackOption(
        name=str(o["name"]),
        pass_config=str(o["pass_config"]),
        target_attr=str(o["target_attr"]),
        kind_attr=str(o["kind_attr"]),
        default=None if o["default"] is None else int(o["default"]),
        doc=str(o["doc"]),
    )
    for o in _ffi_api.ListOptions()
)


def _target(target) -> tvm.target.Target:
    return target if isinstance(target, tvm.target.Target) else tvm.target.Target(target)


def max_stack_alloca(target) -> int:
    """Bytes one allocation may take on the stack of ``target`` (a CPU target), under the current
    PassContext."""
    return int(_ffi_api.max_stack_alloca(_target(target)))


def max_stack_bytes(target) -> int | None:
    """Bytes all stack allocations of one function may take on ``target``, or None (no limit)."""
    value = _ffi_api.max_stack_bytes(_target(target))
    return None if value is None else int(value)


def set_kind_max_stack_alloca(kind_name: str, nbytes: int) -> None:
    """Set ``max_stack_alloca`` for every target of a CPU kind (``"llvm"``, ``"c"``, ...)."""
    _ffi_api.set_kind_max_stack_alloca(kind_name, nbytes)


def set_kind_max_stack_bytes(kind_name: str, nbytes: int) -> None:
    """Set ``max_stack_bytes`` for every target of a CPU kind."""
    _ffi_api.set_kind_max_stack_bytes(kind_name, nbytes)
