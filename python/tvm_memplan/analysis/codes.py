"""The code families of the records (why a concatenation keeps its copy, why a tensor is not
planned, where an allocation lives, ...): each family is one table in C++ (``src_cpp/ir/codes.h``
and the records headers), read here as it is declared there.

    codes("concat")["unaligned"].sentence   # why the code was given
    codes("concat")["unaligned"].remedy     # what would lift it ("" where nothing can)
"""

from __future__ import annotations

from typing import NamedTuple

from . import _ffi_api

__all__ = ["Code", "code_families", "codes"]


class Code(NamedTuple):
    """One code of a family: the sentence that explains it, and what would lift it."""

    sentence: str
    remedy: str


def code_families() -> list[str]:
    """The names of the code families."""
    return [str(name) for name in _ffi_api.code_families()]


def codes(family: str) -> dict[str, Code]:
    """Value -> Code, in the order of the C++ table (a ValueError names an unknown family)."""
    return {str(v): Code(str(s), str(r)) for v, s, r in _ffi_api.codes(family)}
