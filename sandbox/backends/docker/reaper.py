"""Containers never outlive what started them: a reaper process per container, and a sweep.

The runner's per-case deadline kills the launcher's process group with SIGKILL, which no
`finally` survives, so the launcher first starts a reaper in a session of its own: it waits for
the launcher's pipe to close and, unless the launcher said `done`, force-removes the container.
Whatever escapes that (a worker killed with its whole container, a host crash) is removed by
`sweep`: containers whose owner process is gone, or that outlived their whole run budget.
"""
from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from typing import IO, Any

from sandbox.backends.docker.spec import BUDGET_LABEL, LABEL, OWNER_LABEL

SWEEP_MARGIN_S = 60.0  # beyond a container's own budget before it counts as stale whoever owns it


class Reaper:
    """The reaper process of one container; `done()` tells it the launcher removed the container."""

    def __init__(self, container_id: str, env: dict[str, str] | None = None) -> None:
        self._proc = subprocess.Popen(
            [sys.executable, "-P", "-s", "-m", "sandbox.backends.docker", "reap", container_id],
            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            start_new_session=True, env=env, close_fds=True)

    @property
    def pid(self) -> int:
        return self._proc.pid

    def done(self) -> None:
        try:
            assert self._proc.stdin is not None
            self._proc.stdin.write(b"done")
            self._proc.stdin.close()
        except OSError:
            pass


def reap(stream: IO[bytes], remove: Callable[[], None]) -> bool:
    """The reaper's whole logic: wait for EOF; remove unless the launcher said done. True if removed."""
    data = b""
    while chunk := stream.read(64):
        data += chunk
    if data.startswith(b"done"):
        return False
    remove()
    return True


def _start_time(pid: int) -> str | None:
    """The process's start time in clock ticks since boot (/proc/PID/stat field 22), None if gone."""
    try:
        stat = open(f"/proc/{pid}/stat", encoding="ascii").read()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()[19]


def owner_id(pid: int | None = None) -> str:
    """This process as a container's owner: host name, pid and start time (pids are reused)."""
    pid = os.getpid() if pid is None else pid
    return f"{socket.gethostname()}/{pid}/{_start_time(pid)}"


def is_stale(labels: dict[str, str], created: float, *, now: float | None = None) -> bool:
    """Its owner on this host is gone, or it has lived past its budget plus a margin (`created`: epoch s)."""
    host, _, rest = labels.get(OWNER_LABEL, "").partition("/")
    pid, _, started = rest.partition("/")
    if host == socket.gethostname() and pid.isdigit() and _start_time(int(pid)) != started:
        return True
    try:
        budget = float(labels.get(BUDGET_LABEL, ""))
    except ValueError:
        return False
    return (now or time.time()) > created + budget + SWEEP_MARGIN_S


def sweep(api: Any) -> list[str]:
    """Remove every stale sandbox container of this engine; returns their ids."""
    removed = []
    # The list endpoint's own rows (labels, creation time): docker-py's `containers.list` inspects
    # each listed container again, and one removed in between (its reaper finishing) would raise
    # NotFound and end the whole sweep.
    for row in api.api.containers(all=True, filters={"label": LABEL}):
        if is_stale(row.get("Labels") or {}, float(row.get("Created") or 0)):
            try:
                api.api.remove_container(row["Id"], force=True)
                removed.append(row["Id"])
            except Exception:  # noqa: BLE001 - removed meanwhile, or the engine is busy: next sweep
                pass
    return removed
