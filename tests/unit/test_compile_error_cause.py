"""A Triton compile error says why, on every path that reports one (issue #15 item 4).

Triton raises `CompilationError(src, node, None) from` the real error; an error inside a @jit function
the kernel calls (tl.sort calls sort_impl) is such an error at the call, from one at the callee, from
the real one. Triton 3.6 on an H100 reported only `srt = tl.sort(x, dim=1)` for every case of the
third-party probe lsm6.right.sort_last_column_max: the outer error's text is the source and a caret.
"""
from __future__ import annotations

import ast
import sys

import pytest

from sandbox import gpu_compile, harness
from sandbox.gpu_compile import compile_cause, compile_error_message

errors = pytest.importorskip("triton.compiler.errors")

KERNEL = "def k(x_ptr):\n    x = tl.load(x_ptr)\n    srt = tl.sort(x, dim=1)\n"
SORT = ("def sort(x, dim=None, descending=0):\n    return sort_impl(x, dim=dim, descending=descending)\n")
SORT_IMPL = "def sort_impl(x, dim=None, descending=0):\n    core.static_assert(_dim == len(x.shape) - 1)\n"


def _at(src: str, message: str | None = None) -> Exception:
    node = ast.parse(src).body[0].body[-1].value
    return errors.CompilationError(src, node, message)


def _chain(innermost: BaseException) -> Exception:
    """The kernel's CompilationError, from the callee's, from the innermost's (Triton 3.6's tl.sort)."""
    try:
        try:
            try:
                raise innermost
            except Exception as real:
                raise _at(SORT_IMPL, repr(real)) from real
        except Exception as inner:
            raise _at(SORT) from inner
    except Exception as middle:
        try:
            raise _at(KERNEL) from middle
        except Exception as outer:
            return outer


def test_the_innermost_cause_of_a_chain_of_compile_errors_is_said():
    exc = _chain(ValueError("'__func__' is not in list"))
    assert str(exc).rstrip().endswith("^")  # what the exception itself says: the source and a caret
    assert compile_cause(exc) == "\nValueError: '__func__' is not in list"
    message = compile_error_message(exc)
    assert message.endswith("srt = tl.sort(x, dim=1)\n          ^\nValueError: '__func__' is not in list"), message


def test_a_callee_compile_error_with_words_is_said_without_its_source():
    inner = _at(SORT_IMPL, "only minor dimension is currently supported")
    try:
        try:
            raise inner
        except Exception as callee:
            raise _at(KERNEL) from callee
    except Exception as outer:
        exc = outer
    assert compile_cause(exc) == "\nCompilationError: only minor dimension is currently supported"


def test_only_a_triton_error_gets_a_cause_in_the_harness():
    try:
        try:
            raise KeyError("k")
        except KeyError as cause:
            raise RuntimeError("students own") from cause
    except RuntimeError as exc:
        assert compile_cause(exc) == ""


def test_the_harness_reports_a_gpu_compile_errors_cause_last(monkeypatch):
    monkeypatch.setitem(sys.modules, "gpu_compile", gpu_compile)  # as the harness imports it from the job folder
    said = harness._student_traceback(_chain(ValueError("'__func__' is not in list")))
    lines = said.strip().splitlines()
    assert lines[-1] == "ValueError: '__func__' is not in list", said
    assert "srt = tl.sort(x, dim=1)" in said and lines[-2].strip() == "^"


def test_the_case_summary_is_the_cause_not_the_caret():
    from service.grading.rubric import _case_failure
    from service.report import CaseReport

    def summary(error: str) -> str:
        case = CaseReport(id="c", kind="regular", description="", shape=[1], seed=0, passed=False, error=error)
        return _case_failure(case, "en")

    assert summary("CompilationError: at 3:10:\n    srt = tl.sort(x, dim=1)\n          ^\n"
                   "ValueError: '__func__' is not in list") == "ValueError: '__func__' is not in list"
    # without a cause, the source line, not the caret
    assert summary("CompilationError: at 3:10:\n    srt = tl.sort(x, dim=1)\n          ^\n") == "srt = tl.sort(x, dim=1)"
