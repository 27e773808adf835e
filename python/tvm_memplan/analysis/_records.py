"""Helpers shared by the analyses' Python wrappers: argument checks and record fields."""

from __future__ import annotations

import tvm


def check_tir(func_or_mod, what: str) -> None:
    """TypeError unless ``func_or_mod`` is a PrimFunc or an IRModule."""
    if not isinstance(func_or_mod, tvm.tirx.PrimFunc | tvm.IRModule):
        raise TypeError(
            f"{what} expects a tvm.tirx.PrimFunc or a tvm.IRModule, "
            f"got {type(func_or_mod).__name__}"
        )


def shape_of(extents) -> tuple:
    """A shape with constant extents as ints and symbolic ones as TIR expressions."""
    return tuple(int(e) if isinstance(e, tvm.tirx.IntImm) else e for e in extents)
