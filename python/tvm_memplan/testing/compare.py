"""One before/after test harness for every pass, in the shape of TVM's ``CompareBeforeAfter``.

A case is a class whose docstring states the rule it checks::

    class TestDeadTensorIsReused(PlanCase):          # PlanCase subclasses CompareBeforeAfter
        \"\"\"`c` takes the bytes of `a`, dead by then.\"\"\"
        before = ...                                   # the input IR
        expected = ...                                 # the IR the pass must make of it

``expected`` may instead be an exception class (the pass must raise it; ``match``, a regular
expression, then states what its message says, as in ``pytest.raises``), or be left None (the
pass must leave ``before`` unchanged: a ``keeps_*`` case). ``known_gap = "why"`` records a known
gap: the comparison is expected to fail, strictly
(``pytest.mark.xfail(reason=known_gap, strict=True)``). A pass-specific base class sets
``transform`` (and, where the IR needs normalizing before comparison, ``normalize``) and adds
checks of its own (results on the VM, idempotence, ...).

``relax_module`` builds modules whose Relax functions call PrimFuncs of one kernels module
through its GlobalVars, so that ``before`` and ``expected`` state their kernels once instead
of repeating them.
"""

from __future__ import annotations

import tvm

__all__ = ["CompareBeforeAfter", "relax_module", "skipped"]


def _marked_copy(check, mark):
    """``check`` (a test method shared by the cases of a base class) as a function of its own
    with ``mark``: a mark on the shared function would mark every case."""

    def test(self):
        check(self)

    test.__name__ = check.__name__
    return mark(test)


def skipped(check, reason: str):
    """``check`` skipped for one case, saying why (``reason`` may not be empty)."""
    import pytest

    if not reason:
        raise ValueError(f"skipping {check.__name__} needs a reason")
    return _marked_copy(check, pytest.mark.skip(reason=reason))


class CompareBeforeAfter:
    """``transform(before)`` equals ``expected`` (see the module docstring)."""

    before = None
    expected = None
    #: With an exception class as ``expected``: a regular expression its message must match
    #: (``re.search``, as ``pytest.raises(match=...)``).
    match: str | None = None
    #: Set to the reason to record a known gap (the comparison must then fail).
    known_gap: str | None = None
    #: Compare free variables (symbolic shape variables bound nowhere) by position.
    map_free_vars = False

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if cls.__dict__.get("known_gap"):
            import pytest

            mark = pytest.mark.xfail(reason=cls.known_gap, strict=True)
            # test_transform: the case's own check, if it has one
            cls.test_transform = _marked_copy(cls.test_transform, mark)

    def transform(self, before):
        raise NotImplementedError(f"{type(self).__name__} sets no transform")

    def normalize(self, ir):
        """What is compared: the IR as it is, unless a base class normalizes it."""
        return ir

    def compare(self, actual, expected) -> None:
        try:
            tvm.ir.assert_structural_equal(actual, expected, map_free_vars=self.map_free_vars)
        except ValueError as err:
            raise AssertionError(
                f"{type(self).__name__}: the pass's output differs from `expected`.\n"
                f"{type(self).__doc__ or ''}\n{err}"
            ) from None

    def test_transform(self):
        expected = self.expected
        if isinstance(expected, type) and issubclass(expected, Exception):
            import pytest

            with pytest.raises(expected, match=self.match):
                self.transform(self.before)
            return
        if self.match is not None:
            raise TypeError(
                f"{type(self).__name__}: `match` needs an exception class as `expected`"
            )
        after = self.normalize(self.transform(self.before))
        self.compare(after, self.normalize(self.before if expected is None else expected))


def relax_module(kernels: tvm.IRModule, **functions) -> tvm.IRModule:
    """``kernels`` (a module of PrimFuncs written once) with the Relax ``functions`` added under
    their names. The Relax functions, written standalone, call the kernels through the
    kernels' own GlobalVars (``EXP = Kernels.get_global_var("exp")``, then ``EXP(x, a)`` in
    TVMScript); each takes the ``global_symbol`` of its name, as in an ``@I.ir_module`` (a
    standalone ``@R.function`` takes its Python name's)."""
    items = dict(kernels.functions.items())
    for name, func in functions.items():
        items[tvm.ir.GlobalVar(name)] = func.with_attr("global_symbol", name)
    return tvm.IRModule(items)
