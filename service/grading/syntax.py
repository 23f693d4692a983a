"""`ast.parse` behind one process-wide lock.

CPython 3.11 keeps the AST converter's recursion-depth counter in per-interpreter state that all
threads share, so two threads building Python AST objects at once can fail with "SystemError: AST
constructor recursion depth mismatch" (see python/cpython gh-106905). The in-process grading pool
runs graders in threads, and CI saw it once (tests/integration/test_memo_in_flight.py, four
threads grading at once). Parsing a cell takes milliseconds, so serialising it costs nothing.
"""
from __future__ import annotations

import ast
import threading

_lock = threading.Lock()


def parse(source: str, mode: str = "exec") -> ast.AST:
    with _lock:
        return ast.parse(source, mode=mode)
