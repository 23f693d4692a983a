"""Started sandboxes: one process with its verdict channel, and a warm pool of them.

A warm sandbox is started before its job is known: the harness imports torch/triton, brings CUDA
up, runs the canary and says hello, then blocks on a control pipe. Its job folder (on the trusted
side, bound read-only at /job) holds only the harness until the runner writes the job into it and
sends `g`. Each sandbox runs exactly one attempt of one submission and is then killed: nothing
survives from one student to the next. The pool keeps `size` of them per (mode, device index),
refills in a background thread (every missing one at once, but at most `max_starting` in
start-up at a time), replaces any that die while waiting, and kills them all on close.

The refill thread starts the processes itself and lives as long as the pool: bwrap's
--die-with-parent follows the thread that started it, so the sandboxes die with the pool.

With KERNELGRADE_SANDBOX_START=fork (`forks`, the runner's fork server), a warm sandbox is a
child of the fork-server template instead: it has no folder; its job is streamed into its own
/job through its job pipe (`Sandbox.job_fd`), and it ends with the template, which ends with
the runner (docs/forkserver.md, "Warm children").
"""
from __future__ import annotations

import logging
import os
import select
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from sandbox.backends.base import Confinement, SandboxBackend, SandboxUnavailable
from sandbox.cgroups import MemoryEvents, SandboxCgroup
from sandbox.contract import DeviceMode, Limits
from sandbox.text import clean_text, hello_environment
from sandbox.wire import FrameError, FrameReader

log = logging.getLogger("kernelgrade.sandbox.pool")

HARNESS_FILES = ("harness.py", "wire.py", "exits.py", "shared_triton_cache.py", "gpu_compile.py", "launch_hook.py")
JOB_PREFIX = "kg-job-"
NO_FOLDER = "kg-forked-no-folder"  # a forked warm sandbox's job_dir until an attempt takes it: never made
FORK_RETRY_S = 60.0  # a warm pool whose template could not fork starts fresh sandboxes this long
_PACKAGE_DIR = Path(__file__).resolve().parent


class _LogSink:
    """Drains a pipe in a thread, keeping at most `limit` bytes (head and tail) with a marker."""

    def __init__(self, stream, limit: int) -> None:
        self._stream, self._limit = stream, limit
        self._head = bytearray()
        self._tail = bytearray()
        self._dropped = 0
        self._thread = threading.Thread(target=self._drain, daemon=True)
        self._thread.start()

    def _drain(self) -> None:
        half = self._limit // 2
        for chunk in iter(lambda: self._stream.read1(65536), b""):
            room = half - len(self._head)
            if room > 0:
                self._head += chunk[:room]
                chunk = chunk[room:]
            self._tail += chunk
            if len(self._tail) > half:
                self._dropped += len(self._tail) - half
                del self._tail[: len(self._tail) - half]

    def text(self) -> str:
        self._thread.join(timeout=2)
        marker = f"\n… [{self._dropped} bytes cut] …\n".encode() if self._dropped else b""
        return clean_text((bytes(self._head) + marker + bytes(self._tail)).decode("utf-8", "replace"), 2 * self._limit)


def new_job_dir(work_root: Path | None) -> Path:
    """A job folder named after this process (remove_stale_jobs deletes those of dead ones)."""
    return Path(tempfile.mkdtemp(prefix=f"{JOB_PREFIX}{os.getpid()}-", dir=work_root))


def copy_harness(job_dir: Path) -> None:
    for name in HARNESS_FILES:
        shutil.copyfile(_PACKAGE_DIR / name, job_dir / name)
        os.chmod(job_dir / name, 0o644)
    os.chmod(job_dir, 0o755)


@dataclass
class Sandbox:
    """One started sandbox process and the trusted end of its verdict channel."""

    proc: subprocess.Popen
    read_fd: int
    reader: FrameReader
    log: _LogSink
    job_dir: Path
    control_fd: int | None = None  # warm: write end of the control pipe
    job_fd: int | None = None  # warm and forked: the job pipe, which its job is streamed into (no folder)
    start: str = "fresh"  # "fresh" (a bwrap sandbox of its own) or "forked" (a child of the fork-server template)
    owns_job_dir: bool = False  # warm: the folder is this sandbox's, removed with it
    started_at: float = field(default_factory=time.monotonic)
    early_frames: list[tuple[dict, bytes]] = field(default_factory=list)  # read before the runner took it
    hello: dict | None = None
    confinement: Confinement | None = None  # its cgroups and host uid (bwrap), undone with it
    process_limit: str = ""  # what capped its processes: "pids cgroup", "RLIMIT_NPROC", ...
    memory_limit: str = ""  # what capped its memory: "memory cgroup 8 GiB, no swap", "RLIMIT_AS 16 GiB", ...
    oom_killed: bool = False  # its memory cgroup's OOM killer ended a process of it (known once it is gone)
    # (bwrap: its own cgroup; docker: the container's, as the launcher reports it)

    def memory_events(self) -> MemoryEvents | None:
        """Its memory cgroup's counters now, read on the trusted side (None: none known, or gone)."""
        return self.confinement.memory_events() if self.confinement is not None else None

    @property
    def cgroup(self) -> SandboxCgroup | None:
        """Its first cgroup (the pids one where there is one), while it exists."""
        cgroups = self.confinement.cgroups if self.confinement is not None else None
        return cgroups.children[0] if cgroups is not None else None

    def go(self) -> None:
        """The job is written: let the harness run it (warm sandboxes only)."""
        assert self.control_fd is not None
        try:
            os.write(self.control_fd, b"g")
        finally:
            os.close(self.control_fd)
            self.control_fd = None

    def alive(self) -> bool:
        return self.proc.poll() is None

    def kill(self, grace_s: float = 5.0) -> None:
        """SIGKILL the process group (bwrap's pid namespace takes everything inside with it), then
        whatever is left in its cgroup."""
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            try:
                self.proc.wait(timeout=grace_s)
            except subprocess.TimeoutExpired:
                self.proc.wait()
        self.dispose(grace_s)

    def dispose(self, grace_s: float = 5.0) -> None:
        """Close our ends of the pipes and remove the folder it owned (the process is gone); kill
        anything still in its cgroup (even a process that left the process group) and remove it."""
        if self.confinement is not None:
            self.oom_killed = self.oom_killed or self.confinement.oom_killed()
            self.confinement.close(grace_s)
            self.confinement = None
        for name in ("control_fd", "job_fd", "read_fd"):
            fd = getattr(self, name)
            if fd is not None and fd >= 0:
                try:
                    os.close(fd)
                except OSError:
                    pass
                setattr(self, name, -1 if name == "read_fd" else None)
        if self.owns_job_dir:
            shutil.rmtree(self.job_dir, ignore_errors=True)


def start_sandbox(*, backend: SandboxBackend, limits: Limits, job_dir: Path, mode: DeviceMode, device_index: int,
                  warm: bool) -> Sandbox:
    """Start the harness on `job_dir`. Raises OSError (or SandboxUnavailable) if it cannot start."""
    read_fd, write_fd = os.pipe()
    control_r, control_w = os.pipe() if warm else (None, None)
    pass_fds = (write_fd,) if control_r is None else (write_fd, control_r)
    confinement = None
    spec_fds: tuple[int, ...] = ()
    try:
        # bwrap: cgroups and a host uid, where they apply; docker: the launcher's memory report
        confine = getattr(backend, "confine", None)
        if confine is not None:
            confinement = confine(limits=limits, mode=mode, device_index=device_index, job_dir=job_dir)
        spec = backend.launch_spec(job_dir=job_dir, verdict_fd=write_fd, mode=mode, device_index=device_index,
                                   limits=limits, **({"control_fd": control_r} if warm else {}),
                                   **({"confinement": confinement} if confinement is not None else {}))
        spec_fds = spec.pass_fds
        argv = confinement.wrap(spec.argv) if confinement is not None else spec.argv  # in its cgroups from the start
        # umask 022: what a compile run writes into the shared cache is readable by every sandbox's uid.
        proc = subprocess.Popen(argv, env=spec.env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, pass_fds=pass_fds + spec_fds, start_new_session=True,
                                umask=0o022)
    except BaseException:
        for fd in (read_fd, control_w):
            if fd is not None:
                os.close(fd)
        if confinement is not None:
            confinement.close(limits.kill_grace_s)
        raise
    finally:
        for fd in (write_fd, control_r, *spec_fds):
            if fd is not None:
                os.close(fd)
    process_limit = (confinement.process_limit if confinement is not None and confinement.process_limit
                     else backend.process_limit(mode, device_index))
    return Sandbox(proc=proc, read_fd=read_fd, control_fd=control_w, job_dir=job_dir, owns_job_dir=warm,
                   confinement=confinement, process_limit=process_limit,
                   memory_limit=confinement.memory_limit if confinement is not None else "",
                   reader=FrameReader(max_blob_bytes=limits.case_output_bytes, max_total_bytes=limits.output_bytes),
                   log=_LogSink(proc.stdout, limits.log_bytes))


# How long close() waits for the refill thread. A fork server's template start (imports, CUDA) can
# take longer; whatever that thread starts after the pool closed, it kills itself (_start_one).
CLOSE_JOIN_S = 10.0


class WarmForks(Protocol):
    """What a warm pool needs of a fork server (sandbox/forkserver.py, which imports this module)."""

    def spawn_warm(self, *, job_dir: Path) -> Sandbox: ...


def default_max_starting(size: int, *, forked: bool = False) -> int:
    """Start-ups at once when none is configured: the pool's size, at most one per core. (Half
    the cores, to leave the rest to gradings, made a refill of 2 on the 2-core CPU machine take
    12.1 s instead of 6.9 s under load: docs/benchmarks.md, "Sandbox start-up".)

    Forked from the template (`forked`): the whole pool. The per-core bound is there because a
    fresh start-up is seconds of CPU-bound imports, and more of them than cores only delays every
    one; a forked child has those imports done and pays only its own start (about 0.1 s of CPU on
    the interpreter; CUDA's start and the canary's launch on a GPU, where the driver, not the
    cores, is what they share), so a drained pool refills at once rather than a core's worth at
    a time."""
    return max(1, size if forked else min(size, os.cpu_count() or 1))


class WarmPool:
    """`size` sandboxes of one (mode, device index), started ahead of demand."""

    def __init__(self, *, backend: SandboxBackend, limits: Limits, mode: DeviceMode, device_index: int, size: int,
                 work_root: Path | None = None, max_starting: int | None = None,
                 forks: WarmForks | None = None) -> None:
        if not getattr(backend, "supports_warm", False):
            raise SandboxUnavailable(f"the {backend.name} backend cannot start sandboxes ahead of their job")
        self.backend, self.limits, self.mode, self.device_index = backend, limits, mode, device_index
        self.size, self.work_root = size, work_root
        # KERNELGRADE_SANDBOX_START=fork: children of this fork server (the runner's template),
        # fresh sandboxes while it cannot fork (FORK_RETRY_S after a failure)
        self.forks = forks
        self._fork_off_until = 0.0
        # Sandboxes in start-up (started, no hello yet) at one time. Each start-up is mostly CPU
        # (imports, the canary's compile): more of them than there are cores only makes every
        # one later, the first included, while gradings wait for one (forked: default_max_starting).
        self._max_starting = max_starting
        self.peak_starting = 0  # the most that were in start-up at once (tests, benchmarks)
        self.environment: dict[str, str] = {}  # the last hello: device, torch, triton, python
        self.started_total = 0  # sandboxes this pool ever started (tests, metrics)
        self.replaced_total = 0  # of those, how many died or failed while waiting
        self.handed_total = 0  # sandboxes acquire() handed out (benchmarks: warm against cold starts)
        self.handed_after_wait = 0  # of those, how many a caller waited for (a start-up under way)
        self.forked_total = 0  # of the started ones, how many were forked from the template
        self._waiting: list[Sandbox] = []
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)  # a hello came, a sandbox went, or the pool closed
        self._callers_waiting = 0  # acquire(wait=True) calls waiting for a start-up in progress
        self._backoff_until = 0.0  # the refill thread starts nothing before this (after failures)
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._failures = 0
        self._thread = threading.Thread(target=self._loop, name=f"warm-pool-{mode.value}-{device_index}", daemon=True)

    def start(self) -> WarmPool:
        self._thread.start()
        return self

    @property
    def max_starting(self) -> int:
        """The configured bound, else default_max_starting's for the starts the pool makes now
        (fresh ones while the template cannot fork)."""
        if self._max_starting is not None:
            return max(1, self._max_starting)
        forking = self.forks is not None and time.monotonic() >= self._fork_off_until
        return default_max_starting(self.size, forked=forking)

    def acquire(self, *, wait: bool = False) -> Sandbox | None:
        """A sandbox that said hello, or None (the caller starts one cold).

        With `wait`, when none is ready but one is in start-up that no earlier caller waits for,
        wait for a hello rather than start one cold: a start-up already under way is ready sooner
        than one begun now under the same load, and a cold start beside the pool's refills only
        slows them all (CPU-bound imports: the class burst's stalls, docs/benchmarks.md). Not
        bounded by a typical start-up time: under a burst every start-up takes longer than a quiet
        one, the cold one too. The wait ends as soon as the pool discards a sandbox (a start-up
        that died or hung: the pool is not well, and its next start-up would be waited for anew)
        and at the start-up timeout at the latest; a pool backing off has nothing under way."""
        with self._lock:
            sandbox = self._take_ready()
            if sandbox is not None or not wait or not self._thread.is_alive():
                return sandbox
            deadline = time.monotonic() + self.limits.startup_timeout_s
            discarded = self.replaced_total
            self._callers_waiting += 1
            try:
                while not self._stop.is_set():
                    left = deadline - time.monotonic()
                    if self._underway() < self._callers_waiting or left <= 0 or self.replaced_total != discarded:
                        return None  # nothing under way for this caller (or not well): it starts its own
                    self._changed.wait(left)
                    sandbox = self._take_ready()
                    if sandbox is not None:
                        self.handed_after_wait += 1
                        return sandbox
                return None
            finally:
                self._callers_waiting -= 1

    def _underway(self) -> int:
        """Sandboxes in start-up, and those the refill thread starts next (it is woken when one is
        taken), unless it backs off after failures. Called with the lock held."""
        starting = sum(1 for s in self._waiting if s.hello is None and s.alive())
        if time.monotonic() < self._backoff_until:
            return starting
        return starting + max(0, min(self.size - len(self._waiting), self.max_starting - starting))

    def _take_ready(self) -> Sandbox | None:
        """Called with the lock held."""
        for index, sandbox in enumerate(self._waiting):
            if sandbox.hello is not None and sandbox.alive():
                del self._waiting[index]
                self.handed_total += 1
                self._wake.set()
                return sandbox
        return None

    def ready_count(self) -> int:
        with self._lock:
            return sum(1 for s in self._waiting if s.hello is not None and s.alive())

    def pids(self) -> list[int]:
        with self._lock:
            return [s.proc.pid for s in self._waiting]

    def waiting(self) -> list[tuple[int, Path]]:
        """(pid, job folder) of each waiting sandbox (tests: what the pool keeps alive by design)."""
        with self._lock:
            return [(s.proc.pid, s.job_dir) for s in self._waiting]

    def wait_ready(self, count: int, timeout_s: float) -> bool:
        """Block until `count` sandboxes are ready (benchmarks and tests)."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.ready_count() >= count:
                return True
            time.sleep(0.05)
        return False

    def close(self) -> None:
        self._stop.set()
        self._wake.set()
        with self._lock:
            self._changed.notify_all()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout=CLOSE_JOIN_S)
        with self._lock:
            waiting, self._waiting = self._waiting, []
        for sandbox in waiting:
            sandbox.kill(self.limits.kill_grace_s)

    # --- the refill thread --------------------------------------------------------------------

    def _loop(self) -> None:
        while not self._stop.is_set():
            self._reap()
            now = time.monotonic()
            if now >= self._backoff_until:
                with self._lock:
                    starting = sum(1 for s in self._waiting if s.hello is None)
                    missing = min(self.size - len(self._waiting), self.max_starting - starting)
                for _ in range(max(0, missing)):
                    if self._stop.is_set():
                        break
                    try:
                        self._start_one()
                    except (OSError, SandboxUnavailable) as exc:
                        log.error("warm pool could not start a sandbox: %s", exc)
                        self._failures += 1
                        break
            if self._failures:
                self._backoff_until = time.monotonic() + min(60.0, 0.5 * 2 ** min(self._failures, 7))
                self._failures = 0
            self._poll(timeout_s=0.2)
        with self._lock:
            waiting, self._waiting = self._waiting, []
        for sandbox in waiting:
            sandbox.kill(self.limits.kill_grace_s)

    def _start_one(self) -> None:
        sandbox = self._fork_one() if self.forks is not None else None
        if sandbox is None:
            if self._stop.is_set():  # closed while the fork was tried (its templates closed with the runner)
                return
            job_dir = new_job_dir(self.work_root)
            try:
                copy_harness(job_dir)
                sandbox = start_sandbox(backend=self.backend, limits=self.limits, job_dir=job_dir, mode=self.mode,
                                        device_index=self.device_index, warm=True)
            except BaseException:
                shutil.rmtree(job_dir, ignore_errors=True)
                raise
        self.started_total += 1
        with self._lock:
            if self._stop.is_set():
                # close() gave up waiting for this thread (a template's start can outlast its join)
                # and has already killed the waiting ones: this one would outlive the pool
                sandbox.kill(self.limits.kill_grace_s)
                return
            self._waiting.append(sandbox)
            self.peak_starting = max(self.peak_starting, sum(1 for s in self._waiting if s.hello is None))

    def _fork_one(self) -> Sandbox | None:
        """A child of the template that waits for its job, or None (the template cannot fork:
        this start, and those of the next FORK_RETRY_S, are fresh; the log says why)."""
        assert self.forks is not None
        if time.monotonic() < self._fork_off_until:
            return None
        try:
            # no folder of its own: its job comes through its job pipe (docs/forkserver.md); the
            # runner that takes it names the attempt's own folder as its job_dir (a cold fork's)
            sandbox = self.forks.spawn_warm(job_dir=Path(self.work_root or tempfile.gettempdir()) / NO_FOLDER)
        except (OSError, SandboxUnavailable) as exc:
            self._fork_off_until = time.monotonic() + FORK_RETRY_S
            log.warning("warm pool %s/%d could not fork a sandbox from the template (%s): starting fresh ones "
                        "for %.0f s", self.mode.value, self.device_index, exc, FORK_RETRY_S)
            return None
        self.forked_total += 1
        return sandbox

    def _discard(self, sandbox: Sandbox, why: str) -> None:
        """Called with the lock held."""
        self._waiting.remove(sandbox)
        self.replaced_total += 1
        self._failures += sandbox.hello is None  # died before hello: back off before trying again
        log.warning("warm sandbox %d discarded (%s); log tail: %s", sandbox.proc.pid, why, sandbox.log.text()[-500:]
                    if sandbox.proc.poll() is not None else "")
        sandbox.kill(self.limits.kill_grace_s)
        self._changed.notify_all()  # a caller waiting for it looks again

    def _reap(self) -> None:
        with self._lock:
            for sandbox in list(self._waiting):
                if not sandbox.alive():
                    self._discard(sandbox, f"exited with {sandbox.proc.returncode} while waiting")
                elif sandbox.hello is None and time.monotonic() - sandbox.started_at > self.limits.startup_timeout_s:
                    self._discard(sandbox, "no hello within the start-up timeout")

    def _poll(self, timeout_s: float) -> None:
        with self._lock:
            fds = {s.read_fd: s for s in self._waiting}
        if not fds:
            self._wake.wait(timeout_s)
            self._wake.clear()
            return
        try:
            readable, _, _ = select.select(list(fds), [], [], timeout_s)
        except (OSError, ValueError):
            return  # a sandbox was taken and its fd closed meanwhile: poll again
        with self._lock:
            for fd in readable:
                sandbox = fds[fd]
                if sandbox not in self._waiting:
                    continue  # handed to a runner after the select: its frames are the runner's now
                try:
                    chunk = os.read(fd, 1 << 16)
                except OSError:
                    chunk = b""
                if not chunk:
                    self._discard(sandbox, "closed its verdict channel while waiting")
                    continue
                try:
                    frames = sandbox.reader.feed(chunk)
                except FrameError as exc:
                    self._discard(sandbox, f"broke the framing before its job: {exc}")
                    continue
                for message, blob in frames:
                    if message["type"] == "hello" and sandbox.hello is None:
                        sandbox.hello = message
                        self._changed.notify_all()
                        self.environment = hello_environment(message)
                        sandbox.early_frames.append((message, blob))
                    else:
                        self._discard(sandbox, f"sent {message['type']!r} before its job")
                        break
