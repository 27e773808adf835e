"""The before/after harness every pass's tests share (tvm_memplan.testing.compare)."""

import pytest
from tvm.script import tirx as T

from tvm_memplan.testing.compare import CompareBeforeAfter


@T.prim_func
def _copy(A: T.Buffer((4,), "float32"), B: T.Buffer((4,), "float32")):
    for i in range(4):
        B[i] = A[i]


@T.prim_func
def _double(A: T.Buffer((4,), "float32"), B: T.Buffer((4,), "float32")):
    for i in range(4):
        B[i] = A[i] * T.float32(2)


class _Identity(CompareBeforeAfter):
    def transform(self, before):
        return before


def test_expected_none_means_unchanged():
    class Keeps(_Identity):
        before = _copy

    Keeps().test_transform()


def test_a_difference_fails_and_names_the_case():
    class Differs(_Identity):
        """The rule this case states."""

        before = _copy
        expected = _double

    with pytest.raises(AssertionError, match="Differs: the pass's output differs"):
        Differs().test_transform()


def test_an_exception_class_is_expected_to_be_raised():
    class Raises(CompareBeforeAfter):
        before = _copy
        expected = ValueError

        def transform(self, before):
            raise ValueError("rejected")

    Raises().test_transform()

    class DoesNotRaise(_Identity):
        before = _copy
        expected = ValueError

    with pytest.raises(pytest.fail.Exception):
        DoesNotRaise().test_transform()


def test_a_known_gap_is_expected_to_fail_strictly():
    class Gap(_Identity):
        before = _copy
        expected = _double
        known_gap = "the pass does not double yet"

    (mark,) = Gap.test_transform.pytestmark
    assert mark == pytest.mark.xfail(reason=Gap.known_gap, strict=True).mark
    assert not hasattr(_Identity.test_transform, "pytestmark")
    with pytest.raises(AssertionError):  # the gap is real: the comparison fails
        Gap().test_transform()


def test_a_known_gap_marks_the_cases_own_check():
    class OwnCheck(_Identity):
        before = _copy
        known_gap = "a check of its own that fails"

        def test_transform(self):
            raise KeyError("the case's own check ran")

    with pytest.raises(KeyError, match="own check ran"):
        OwnCheck().test_transform()


class _RaisesAlignment(CompareBeforeAfter):
    before = _copy
    expected = ValueError
    match = "alignment must be"

    def transform(self, before):
        raise ValueError("alignment must be a positive multiple of 64")


def test_an_expected_exceptions_message_is_matched():
    """With `match`, the raised error's message must match it, as with pytest.raises."""
    _RaisesAlignment().test_transform()

    class WrongMessage(_RaisesAlignment):
        match = "something else"

    with pytest.raises(AssertionError, match="Regex pattern did not match"):
        WrongMessage().test_transform()


def test_match_needs_an_expected_exception():
    class NoException(_Identity):
        before = _copy
        match = "x"

    with pytest.raises(TypeError, match="`match` needs an exception class"):
        NoException().test_transform()
