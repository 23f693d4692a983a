"""Whether a phase that ran out of time was held at the sandbox's memory limit.

A process at its memory cgroup's limit is not always OOM-killed. The kernel first reclaims what it
can, file pages included (the code of Python and torch, mapped from files), and a process that
keeps faulting them back in crawls on until the case's deadline kills it (thrashing; seen on the
docker backend on a loaded 2-core machine, test_memory_bomb_is_refused). Its phase then ends as a
timeout, but the limit is why, and "timed out" would send the student looking for an endless loop.

The decision: a timeout is said as out of memory (`sandbox.out_of_memory.at_timeout`) when, in the
last `WINDOW_S` of the phase, the sandbox's memory cgroup counted meetings of its limit
(`MemoryEvents.at_limit`: v2 memory.events `max`, `oom`, `oom_kill`; v1 memory.failcnt and
`oom_kill`), or it was thrashing at its limit: pages it had evicted were faulted back in
(memory.stat's workingset refaults grew) and its usage was at the limit when it was stopped (the
second test is for cgroup v1, whose failcnt stays 0 on some kernels; see `MemoryEvents`). That is,
it was still pressing on the limit at the end, not merely at some time in the phase: a kernel that
met the limit once (page cache reclaimed, which costs nothing) and then loops forever timed out for
its loop, and is told so; nor before the phase (the imports' page cache). Refaults alone, with the
cgroup below its limit, are the host's memory pressure, not the sandbox's limit. The phase's
status stays `timeout` (it was stopped at its deadline; a deterministic program's later phases are
skipped as after any timeout): only the words change.

The counters are the kernel's, read on the trusted side: bwrap's own cgroup of the sandbox
(sandbox/cgroups.py), or the docker launcher's report of the container's cgroup
(sandbox/backends/docker/memory.py). Where none can be read, a timeout stays a timeout.
"""
from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable

from sandbox.cgroups import MemoryEvents
from sandbox.contract import Said

WINDOW_S = 2.0  # the end of a phase that counts; several of the runner's samples (at most 1 s apart)
SAMPLE_EVERY_S = 0.25


class LimitWatch:
    """Samples of `events` (the counters of one sandbox) during its current phase."""

    def __init__(self, events: Callable[[], MemoryEvents | None], *,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._events = events
        self._clock = clock
        self._samples: deque[tuple[float, MemoryEvents]] = deque()  # (monotonic time, what was read)

    def restart(self) -> None:
        """A new phase begins: what came before it is not its doing."""
        self._samples.clear()
        self.sample(force=True)

    def sample(self, *, force: bool = False) -> None:
        now = self._clock()
        if not force and self._samples and now - self._samples[-1][0] < SAMPLE_EVERY_S:
            return
        events = self._events()
        if events is None:
            return
        self._samples.append((now, events))
        # The first sample stays the newest one at least WINDOW_S old (or the phase's first).
        while len(self._samples) > 2 and now - self._samples[1][0] >= WINDOW_S:
            self._samples.popleft()

    def held_at_limit(self) -> bool:
        """At the phase's deadline, before the kill: did the cgroup meet its limit in the phase's last
        WINDOW_S (all of it, if shorter)?"""
        self.sample(force=True)
        if len(self._samples) < 2:
            return False
        first, last = self._samples[0][1], self._samples[-1][1]
        return last.at_limit > first.at_limit or (last.refaults > first.refaults and last.full)


def timeout_said(*, held_at_limit: bool, memory_limit: str, elapsed: float, time_limit: float,
                 compiling: str | None = None) -> Said:
    """What a phase stopped at its deadline tells the student: out of memory when it was held at the
    limit (above), else a timeout; either as the compile's when the sandbox said it was compiling
    the kernel `compiling` then (sandbox/harness.py, `compile` frames)."""
    if held_at_limit:
        if compiling is not None:
            return Said("sandbox.out_of_memory.compile", {"limit": memory_limit, "kernel": compiling})
        return Said("sandbox.out_of_memory.at_timeout",
                    {"limit": memory_limit, "elapsed": elapsed, "time_limit": time_limit})
    if compiling is not None:
        return Said("sandbox.timeout.compile", {"elapsed": elapsed, "limit": time_limit, "kernel": compiling})
    return Said("sandbox.timeout", {"elapsed": elapsed, "limit": time_limit})
