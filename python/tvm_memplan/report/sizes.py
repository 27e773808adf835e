"""Symbolic sizes: the analyses give bytes as int64 expressions of the shape variables (an IntImm
when static). The report evaluates them at the values of the variables (a value given by the
user, else the variable's ``tir_var_upper_bound``), and shows the expression when a variable has
neither."""

from __future__ import annotations

import re

import tvm
import tvm_ffi

__all__ = ["Size", "add", "evaluate", "free_vars", "largest", "text"]

#: Bytes: an int, or an int64 TIR expression of shape variables.
Size = int | tvm.prim.Expr


def free_vars(size) -> list[str]:
    """Names of the shape variables a size depends on, sorted."""
    if size is None or isinstance(size, int):
        return []
    names: set[str] = set()
    tvm_ffi.structural_walk(size, [(tvm.tirx.Var, lambda v: names.add(str(v.name)))])
    return sorted(names)


def evaluate(size, values: dict[str, int]) -> int | None:
    """The size at ``values`` (shape variable name -> value); None when a variable it depends
    on has no value."""
    if size is None or isinstance(size, int):
        return size
    if isinstance(size, tvm.prim.IntImm):
        return int(size.value)
    analyzer = tvm.sym.Analyzer()
    found: list = []
    tvm_ffi.structural_walk(size, [(tvm.tirx.Var, found.append)])
    for var in found:
        name = str(var.name)
        if name not in values:
            return None
        analyzer.bind(var, tvm.tirx.IntImm(str(var.ty.dtype), values[name]))
    result = analyzer.simplify(size)
    return int(result.value) if isinstance(result, tvm.prim.IntImm) else None


def _canonical(size):
    """The size with each shape variable replaced by one variable per name: each kernel has
    its own ``seq_len`` variable, and sizes of several kernels combine into one expression."""
    analyzer = tvm.sym.Analyzer()
    found: list = []
    tvm_ffi.structural_walk(size, [(tvm.tirx.Var, found.append)])
    for var in found:
        key = (str(var.name), str(var.ty.dtype))
        if key not in _VARS:
            _VARS[key] = tvm.tirx.Var(key[0], key[1])
        if not var.same_as(_VARS[key]):
            analyzer.bind(var, _VARS[key])
    return analyzer.simplify(size)


_VARS: dict[tuple[str, str], tvm.tirx.Var] = {}


def simplify(size):
    """An int when the size is constant, else the simplified expression."""
    if size is None or isinstance(size, int):
        return size
    result = _canonical(size)
    return int(result.value) if isinstance(result, tvm.prim.IntImm) else result


def add(a, b):
    """a + b, either an int or an expression."""
    if a is None or b is None:
        return None
    if isinstance(a, int) and isinstance(b, int):
        return a + b
    return simplify(_expr(a) + _expr(b))


def largest(sizes):
    """The largest of several sizes: an int, or ``max(...)`` of the expressions."""
    sizes = list(sizes)
    if any(s is None for s in sizes):
        return None
    if all(isinstance(s, int) for s in sizes):
        return max(sizes, default=0)
    result = None
    for s in sizes:
        result = _expr(s) if result is None else tvm.tirx.max(result, _expr(s))
    return simplify(result)


def _expr(size):
    return tvm.tirx.IntImm("int64", size) if isinstance(size, int) else size


_CONST = re.compile(r"T\.int(?:64|32)\((-?\d+)\)")


def _terms(expr, kind) -> list:
    if isinstance(expr, kind):
        return _terms(expr.a, kind) + _terms(expr.b, kind)
    return [expr]


def _print(expr, inner: bool = False) -> str:
    if isinstance(expr, tvm.prim.IntImm):
        return str(int(expr.value))
    if isinstance(expr, tvm.tirx.Var):
        return str(expr.name)
    if isinstance(expr, tvm.prim.Max):
        # Sizes are not negative: max(x, 0) is x.
        terms = [t for t in _terms(expr, tvm.prim.Max) if not _is_zero(t)]
        if len(terms) == 1:
            return _print(terms[0], inner)
        return "max(" + ", ".join(sorted(_print(t) for t in terms)) + ")"
    if isinstance(expr, tvm.prim.Add):
        text = " + ".join(_print(t) for t in _terms(expr, tvm.prim.Add))
        return f"({text})" if inner else text
    if isinstance(expr, tvm.prim.Sub):
        text = f"{_print(expr.a)} - {_print(expr.b, True)}"
        return f"({text})" if inner else text
    if isinstance(expr, tvm.prim.Mul):
        return "*".join(_print(t, True) for t in _terms(expr, tvm.prim.Mul))
    return _CONST.sub(r"\1", str(expr))


def _is_zero(expr) -> bool:
    return isinstance(expr, tvm.prim.IntImm) and int(expr.value) == 0


def text(size) -> str:
    """``seq_len*512 + 163840``, ``max(seq_len*776, seq_len*seq_len*112 + seq_len*2080)``."""
    if size is None:
        return "-"
    size = simplify(size)
    return str(size) if isinstance(size, int) else _print(size)
