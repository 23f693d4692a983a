"""The interface every sandbox backend implements: turn a prepared job folder into a command."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from sandbox.cgroups import MemoryEvents, SandboxCgroups
from sandbox.contract import DeviceMode, GiB, Limits


def size_words(n: int) -> str:
    """A limit in bytes as the report says it: "8 GiB", "1.5 GiB", "512 MiB"."""
    return f"{n / GiB:g} GiB" if n >= GiB else f"{n >> 20} MiB"


@dataclass(frozen=True)
class LaunchSpec:
    """How to start one sandbox: argv, the environment of the launcher itself, and file
    descriptors it must inherit (closed by the caller once it started)."""

    argv: list[str]
    env: dict[str, str]
    pass_fds: tuple[int, ...] = ()


class MemoryReport(Protocol):
    """A sandbox's memory cgroup counters as a trusted process outside it reports them (docker: the
    launcher, which reads the container's cgroup on the host and asks the engine; launcher.py)."""

    def events(self) -> MemoryEvents | None:
        """The latest counters reported (None: none yet, or none can be read where the launcher runs)."""

    def cpu_seconds(self) -> float | None:
        """The container's CPU time as its cgroup last counted it (None: none reported)."""

    def close(self) -> None: ...


@dataclass
class Confinement:
    """What bounds one sandbox besides its command line, made before it starts and undone after
    it ends: its cgroups (entered before its first instruction), the host uid it runs as, the
    words the report uses for its process and memory limits, and (docker) the launcher's report
    of its memory cgroup's counters."""

    cgroups: SandboxCgroups | None = None
    host_uid: int | None = None
    process_limit: str = ""
    memory_limit: str = ""
    release: Callable[[], None] | None = None  # gives the host uid back
    memory_report: MemoryReport | None = None

    def wrap(self, argv: list[str]) -> list[str]:
        return self.cgroups.wrap(argv) if self.cgroups is not None else argv

    def memory_events(self) -> MemoryEvents | None:
        """Its memory cgroup's counters, from the host (None where none is known)."""
        if self.cgroups is not None:
            return self.cgroups.memory_events()
        return self.memory_report.events() if self.memory_report is not None else None

    def cpu_seconds(self) -> float | None:
        """The sandbox's CPU time so far, from its cgroup on the host (None where none is known:
        sandbox/cpu_time.py then reads its process tree, where the process held is the sandbox's)."""
        if self.cgroups is not None:
            return self.cgroups.cpu_seconds()
        return self.memory_report.cpu_seconds() if self.memory_report is not None else None

    def oom_killed(self) -> bool:
        events = self.memory_events()
        return events is not None and events.oom_kills > 0

    def close(self, grace_s: float) -> None:
        """Kill whatever is left in its cgroups and remove them; give the uid back (after: no
        process of the sandbox is left to count against it)."""
        if self.cgroups is not None:
            self.cgroups.close(grace_s)
            self.cgroups = None
        if self.memory_report is not None:
            self.memory_report.close()
            self.memory_report = None
        if self.release is not None:
            self.release()
            self.release = None


@dataclass(frozen=True)
class TritonCacheMount:
    """The shared Triton compile cache as sandboxes see it (GPU mode only): read-only for every
    grading sandbox; writable only in the trusted side's compile runs (sandbox/compile_cache.py),
    each of which gets a fresh staging folder that is published only after the run."""

    host_dir: Path
    writable: bool = False
    # A compile run (writable): the shared cache itself, read-only at TRITON_CACHE_READS_MOUNT_POINT,
    # where Triton looks first (launchers and kernels already there do not compile again).
    reads: Path | None = None


TRITON_CACHE_MOUNT_POINT = "/triton-shared"
TRITON_CACHE_READS_MOUNT_POINT = "/triton-shared-read"
SHARED_FIRST_MANAGER = "shared_triton_cache:SharedFirstCacheManager"


class SandboxUnavailable(RuntimeError):
    """The backend cannot run here (tool missing, no user namespaces, ...): our failure, not the student's."""


class SandboxBackend(Protocol):
    name: str
    supports_warm: bool  # can start before the job is written (a control fd reaches the harness)
    # the sandbox's output reaches our pipe with no process between (killing the sandbox loses none of it)
    direct_output: bool

    def check(self) -> None:
        """Raise SandboxUnavailable with a readable reason if this backend cannot run here."""

    def process_limit(self, mode: DeviceMode, device_index: int = 0) -> str:
        """What caps the processes of this backend's sandboxes in `mode` (environment.process_limit)."""

    def launch_spec(self, *, job_dir: Path, verdict_fd: int, mode: DeviceMode, device_index: int, limits: Limits,
                    control_fd: int | None = None) -> LaunchSpec:
        """The command that runs the harness on `job_dir`, writing frames to `verdict_fd`. With
        `control_fd` (backends whose `supports_warm` is true): a warm start, see harness.py."""
