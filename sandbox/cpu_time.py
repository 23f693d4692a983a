"""How much CPU a sandbox used, measured on the trusted side: whether a timeout was the program's.

A deterministic program's run that hits a phase's time limit is stopped there, and its timeout is
memoised as that program's result (service/grading/pipeline.py `_remember`): resubmitting an
endless loop then costs nothing. But a phase also runs out of time when the machine, not the
program, was slow: a host starved by other work, or a sandbox that was not scheduled at all. So a
timeout counts as the program's (`RunResult.timeout_busy`) only when the sandbox's own CPU time
over the phase that timed out shows that it was really running: at least
`Limits.timeout_cpu_fraction` (default 0.25) of the phase's time limit.

Why that bound is sound: CPU time only grows while the program computes, so a phase that used
`fraction * limit` seconds of CPU without finishing needs more than that on any machine. A
program that needs less (every correct submission of an exercise whose limits leave the usual
margin: 60 s per case against a few seconds for the solution) can never reach it, however slow
the machine made it: its timeouts are never memoised. Only a program that needs between a quarter
of the limit and the limit itself, and ran more than four times slower than on an idle machine,
could be memoised wrongly. A lower bound would memoise more machine-made timeouts; a higher one
would re-run more endless loops that a busy host held below it (a loop in a sandbox beside three
others on two cores gets half a core).

Where the figure comes from, never from the sandbox itself:

- the sandbox's cgroup where it has one with a CPU counter (`SandboxCgroups.cpu_seconds`: v1
  `cpuacct.usage`, v2 `cpu.stat`), which counts every process ever in it;
- otherwise its process tree on this host, from the first process the trusted side knows (bwrap
  itself, or a forked child's host pid): `utime + stime + cutime + cstime` of each process in
  /proc/<pid>/stat, so that processes that exited and were reaped inside the tree still count
  through their parent (a process reaped while the tree is read may be missed in that read: off
  by that one process's CPU time);
- on the docker backend, the container's cgroup on the host as its launcher, a trusted process
  outside the container, last read it (at most `memory.POLL_S` old; sandbox/backends/docker/memory.py).

Where none can be read (a docker worker that cannot see the host's cgroups), the figure is None and
a timeout is never memoised.
"""
from __future__ import annotations

import os
from pathlib import Path

_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
_MAX_TREE = 100_000  # processes walked at most (a pids cap bounds a sandbox far below this)


def busy(cpu_s: float | None, limit_s: float, fraction: float) -> bool:
    """Did a phase that timed out after `limit_s` use enough CPU (`fraction` of it) to be the program's timeout?"""
    return cpu_s is not None and cpu_s >= fraction * limit_s


def _read(path: str) -> bytes | None:
    """A /proc file's bytes, None if it cannot be read. os.open/os.read on a str path: the runner reads the
    sandbox's tree at every phase's start (sandbox/runner.py), and pathlib's reads took 2 ms per tree of
    a 50-thread process where these take 0.3 ms (docs/benchmarks.md, 2026-12-06)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        chunks = []
        while chunk := os.read(fd, 65536):
            chunks.append(chunk)
        return b"".join(chunks)
    except OSError:
        return None
    finally:
        os.close(fd)


def _stat_fields(pid: int, proc: str) -> list[bytes] | None:
    """The fields of /proc/<pid>/stat after the command name (which may hold spaces and parentheses)."""
    data = _read(f"{proc}/{pid}/stat")
    if data is None:
        return None
    fields = data.rpartition(b")")[2].split()
    return fields if len(fields) > 15 else None


def _children(pid: int, proc: str) -> list[int]:
    """The children of every thread of `pid` (/proc/<pid>/task/<tid>/children)."""
    found: list[int] = []
    tasks_dir = f"{proc}/{pid}/task"
    try:
        tasks = os.listdir(tasks_dir)
    except OSError:
        return found
    for tid in tasks:
        data = _read(f"{tasks_dir}/{tid}/children")
        if data is None:
            continue
        try:
            found += [int(p) for p in data.split()]
        except ValueError:
            continue
    return found


def tree_cpu_seconds(root: int, *, proc: Path | str = "/proc") -> float | None:
    """utime + stime + cutime + cstime, summed over `root` and its descendants; None if `root` is gone."""
    proc = str(proc)
    if _stat_fields(root, proc) is None:
        return None
    ticks, todo = 0, [root]
    seen: set[int] = set()
    while todo and len(seen) < _MAX_TREE:
        pid = todo.pop()
        if pid in seen:
            continue
        seen.add(pid)
        fields = _stat_fields(pid, proc)
        if fields is None:
            continue
        # after the name: state(0) ppid(1) ... utime(11) stime(12) cutime(13) cstime(14)
        try:
            ticks += sum(int(fields[i]) for i in (11, 12, 13, 14))
        except ValueError:
            continue
        todo += _children(pid, proc)
    return ticks / _TICKS


def sandbox_cpu_seconds(confinement, root_pid: int | None) -> float | None:
    """The sandbox's CPU time so far: its cgroup's counter (`Confinement.cpu_seconds`), else its
    process tree from `root_pid`."""
    if confinement is not None:
        seconds = confinement.cpu_seconds()
        if seconds is not None:
            return seconds
    return tree_cpu_seconds(root_pid) if root_pid is not None and root_pid > 0 else None
