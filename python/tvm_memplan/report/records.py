"""The analyses' records as plain data, read from their reflection: each record type is declared
once, in C++, and the report's JSON carries its fields under the names C++ gives them."""

from __future__ import annotations

import dataclasses
from typing import Any

import tvm
import tvm_ffi

__all__ = ["fields", "to_data"]


def fields(record: tvm_ffi.Object) -> list[str]:
    """The reflected field names of a record, its ancestors' first."""
    names: list[str] = []
    info = type(record).__tvm_ffi_type_info__
    chain = []
    while info is not None:
        chain.append(info)
        info = info.parent_type_info
    for info in reversed(chain):
        names += [f.name for f in info.fields]
    return names


def to_data(value: Any) -> Any:
    """JSON-ready data: records by their reflected fields, dataclasses by theirs (but those
    marked ``metadata={"json": False}``), containers
    element by element, integer constants as ints and other TIR expressions as TVM prints
    them."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, tvm.prim.IntImm):
        return int(value.value)
    if isinstance(value, tvm.prim.Expr):
        return str(value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {
            f.name: to_data(getattr(value, f.name))
            for f in dataclasses.fields(value)
            if f.metadata.get("json", True)
        }
    if isinstance(value, dict | tvm_ffi.Map):
        return {str(k): to_data(v) for k, v in value.items()}
    if isinstance(value, list | tuple | tvm_ffi.Array):
        return [to_data(v) for v in value]
    if isinstance(value, tvm_ffi.Object) and type(value).__tvm_ffi_type_info__.fields:
        return {name: to_data(getattr(value, name)) for name in fields(value)}
    return str(value)
