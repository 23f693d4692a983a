"""One wrapper around Triton's kernel launch (`kernel[grid](...)`) that the harness's observers share.

Copied into each job folder next to the harness (pool.HARNESS_FILES), which imports it as
`launch_hook`. The GPU-target compile check (gpu_compile.CompileGate) and the launch counter
(harness.LaunchCounter) both need to see each launch before it runs; one wrapper per launch class
calls them in the order they registered, instead of each wrapping `run` on its own.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

# observer(kernel, args, kwargs, grid): called before each real launch (not a warmup), in order;
# an exception ends the launch with it (the compile check's verdict).
Observer = Callable[[Any, tuple, dict, Any], None]

_OBSERVERS: list[tuple[type, Observer]] = []
_WRAPPED: set[type] = set()


def launch_classes() -> list[type]:
    """Triton's launch classes present here: JITFunction (GPU) and InterpretedFunction (interpreter)."""
    classes: list[type] = []
    try:
        from triton.runtime.jit import JITFunction
        classes.append(JITFunction)
    except ImportError:
        pass
    try:
        from triton.runtime.interpreter import InterpretedFunction
        classes.append(InterpretedFunction)
    except ImportError:
        pass
    return classes


def on_launch(observer: Observer, *, classes: list[type] | None = None) -> None:
    """Call `observer` before every launch of a kernel of one of `classes` (default: every launch class)."""
    for cls in classes if classes is not None else launch_classes():
        _OBSERVERS.append((cls, observer))
        if cls not in _WRAPPED:
            _wrap(cls)


def _wrap(cls: type) -> None:
    original = cls.run  # type: ignore[attr-defined]

    def run(self, *args, grid, warmup, **kwargs):
        if not warmup:
            for owner, observer in list(_OBSERVERS):
                if owner is cls:
                    observer(self, args, kwargs, grid)
        return original(self, *args, grid=grid, warmup=warmup, **kwargs)

    cls.run = run  # type: ignore[attr-defined]
    _WRAPPED.add(cls)
