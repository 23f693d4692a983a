"""How many of a warm pool's sandboxes may be in start-up at once (sandbox/pool.py): fresh ones at
most one per core (imports are CPU-bound), forked ones the whole pool (a fork has its imports
done), and fresh ones again while the pool's template cannot fork. The refill itself, counted in
real sandboxes: tests/integration/test_warm_pool.py."""
from __future__ import annotations

import os
import time

from sandbox.contract import DeviceMode, Limits
from sandbox.pool import WarmPool, default_max_starting


class _Backend:
    name = "bwrap"
    supports_warm = True


def _pool(size: int, *, forks: object | None, max_starting: int | None = None) -> WarmPool:
    return WarmPool(backend=_Backend(), limits=Limits(), mode=DeviceMode.interpreter, device_index=0, size=size,
                    max_starting=max_starting, forks=forks)  # type: ignore[arg-type]


def test_fresh_start_ups_are_bounded_by_the_cores_forked_ones_by_the_pool():
    cores = os.cpu_count() or 1
    assert default_max_starting(cores + 6) == cores
    assert default_max_starting(cores + 6, forked=True) == cores + 6
    assert default_max_starting(0, forked=True) == 1


def test_a_pool_whose_template_cannot_fork_bounds_its_fresh_starts_by_the_cores():
    cores = os.cpu_count() or 1
    pool = _pool(cores + 6, forks=object())
    assert pool.max_starting == cores + 6
    pool._fork_off_until = time.monotonic() + 60  # as _fork_one sets it after a failed fork
    assert pool.max_starting == cores
    assert _pool(cores + 6, forks=None).max_starting == cores
    assert _pool(cores + 6, forks=object(), max_starting=3).max_starting == 3  # a configured bound is kept
