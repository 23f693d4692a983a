"""Polling with a deadline, for tests that wait on real processes and servers."""
from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any


def wait_for(predicate: Callable[[], Any], *, timeout: float = 90, interval: float = 0.1, what: str = "condition",
             on_timeout: Callable[[], str] | None = None):
    """Poll until `predicate()` is truthy; returns its value. Fails naming `what` (and diagnostics)."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            extra = on_timeout() if on_timeout is not None else ""
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}" + (f"\n{extra}" if extra else ""))
        time.sleep(interval)
