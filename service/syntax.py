"""Every `ast.parse` of the process behind one lock.

CPython 3.11 keeps the AST converter's recursion-depth counter in per-interpreter state that all
threads share, so two threads building Python AST objects at once can fail with "SystemError: AST
constructor recursion depth mismatch" (see python/cpython gh-106905). The in-process grading pool
runs graders in threads, and the thread that fails is not always ours: CI saw a grader break while
three other graders parsed (tests/integration/test_memo_in_flight.py), and later a library in
another thread (hypothesis, next to the fuzzed live server) break while a grader parsed. A lock
around our own parses cannot protect the other thread, so importing this module routes the
process's `ast.parse` through the same lock as ours (libraries call it as `ast.parse`). Parsing a
cell takes milliseconds, so serialising it costs nothing.
"""
from __future__ import annotations

import ast
import functools
import threading
from typing import Literal, overload

_lock = threading.RLock()  # re-entrant: a finalizer that parses, run by GC inside a parse, must not deadlock
_unlocked_parse = getattr(ast.parse, "__wrapped__", ast.parse)  # the original, even if re-imported


@functools.wraps(_unlocked_parse)
def _parse_locked(*args, **kwargs):
    with _lock:
        return _unlocked_parse(*args, **kwargs)


ast.parse = _parse_locked


@overload
def parse(source: str, mode: Literal["exec"] = "exec") -> ast.Module: ...
@overload
def parse(source: str, mode: Literal["eval"]) -> ast.Expression: ...
@overload
def parse(source: str, mode: str) -> ast.AST: ...
def parse(source: str, mode: str = "exec") -> ast.AST:
    return _parse_locked(source, mode=mode)
