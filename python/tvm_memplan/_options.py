"""Pass options as the C++ core declares them (``src_cpp/ir/options.h``): a wrapper's option
parameters, their defaults and their help are read off the options object's reflection, so an
option is written once, in C++.

Example::

    @takes_options(InplaceOptions)
    def DataflowUseInplaceCalls(options):
        \"\"\"Rewrite calls ...\"\"\"
        return _ffi_api.DataflowUseInplaceCalls(options)

    DataflowUseInplaceCalls(memory_aware=False)   # signature: (*, outside_dataflow=True, ...)
"""

from __future__ import annotations

import functools
import inspect
import textwrap
from dataclasses import dataclass

__all__ = ["Option", "declared", "options_object", "takes_options"]


@dataclass(frozen=True)
class Option:
    name: str
    default: object
    help: str


def declared(options_type) -> list[Option]:
    """The options of ``options_type`` in declaration order: name, default, help."""
    return [
        Option(f.name, f.c_default, f.doc or "") for f in options_type.__tvm_ffi_type_info__.fields
    ]


def options_object(options_type, given: dict):
    """``options_type`` with the ``given`` values; None stands for the declared default. Types and
    names are checked by the object's constructor, values by the C++ pass when it is built."""
    return options_type(**{name: value for name, value in given.items() if value is not None})


def _doc_section(options: list[Option]) -> str:
    lines = ["Options (declared in the C++ core; None also takes the default)", "-------"]
    for o in options:
        lines.append(f"{o.name} : default {o.default!r}")
        lines += textwrap.wrap(o.help, 88, initial_indent="    ", subsequent_indent="    ")
    return "\n".join(lines)


def takes_options(options_type, *, positional: bool = False):
    """Give the decorated function, whose last parameter is ``options``, one parameter per
    declared option instead (keyword-only, or positional too as in the stock pass it replaces),
    with the declared defaults, and their help in its docstring."""
    options = declared(options_type)
    names = [o.name for o in options]

    def decorate(func):
        signature = inspect.signature(func)
        kept = [p for name, p in signature.parameters.items() if name != "options"]
        kind = (
            inspect.Parameter.POSITIONAL_OR_KEYWORD
            if positional
            else inspect.Parameter.KEYWORD_ONLY
        )
        public = signature.replace(
            parameters=kept + [inspect.Parameter(o.name, kind, default=o.default) for o in options]
        )

        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            try:
                bound = public.bind(*args, **kwargs)
            except TypeError as err:
                raise TypeError(f"{func.__name__}(): {err}") from None
            given = {name: bound.arguments.pop(name) for name in names if name in bound.arguments}
            return func(**bound.arguments, options=options_object(options_type, given))

        wrapper.__signature__ = public
        wrapper.__doc__ = f"{inspect.cleandoc(func.__doc__ or '')}\n\n{_doc_section(options)}\n"
        return wrapper

    return decorate
