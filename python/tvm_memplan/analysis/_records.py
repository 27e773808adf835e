"""Helpers shared by the analyses' Python wrappers: argument checks."""

from __future__ import annotations

import tvm


def check_tir(func_or_mod, what: str) -> None:
    """TypeError unless ``func_or_mod`` is a PrimFunc or an IRModule."""
    if not isinstance(func_or_mod, tvm.tirx.PrimFunc | tvm.IRModule):
        raise TypeError(
            f"{what} expects a tvm.tirx.PrimFunc or a tvm.IRModule, "
            f"got {type(func_or_mod).__name__}"
        )
