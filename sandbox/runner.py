"""Runs one submission's cases in fresh sandboxes and collects what came back, crashes included.

The trusted side writes the job folder (program, inputs, harness), starts the backend's command
with a pipe as the verdict channel, and reads frames under size caps and deadlines. A case that
crashes the process or outlives its deadline is recorded as such, the sandbox is killed, and the
remaining cases run in a fresh sandbox, so one bad case never decides the others. Nothing is ever
read back from the filesystem the sandbox could write to.

With a warm pool for the run's (mode, device index) (`start_pool`), an attempt takes a sandbox
that is already past its imports and writes the job into that sandbox's own folder; with none
ready, it starts one cold as before. Either way one sandbox runs one attempt and is killed.
"""
from __future__ import annotations

import contextlib
import functools
import json
import logging
import os
import re
import select
import shutil
import signal
import subprocess
import tempfile
import threading
import time
import weakref
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
from safetensors.numpy import load as _load_safetensors
from safetensors.numpy import save_file

from sandbox.backends.base import SandboxBackend, SandboxUnavailable
from sandbox.cgroups import remove_stale_cgroups
from sandbox.contract import (
    CaseJob,
    CaseRun,
    CompileAhead,
    DeviceMode,
    GivenRun,
    Job,
    Limits,
    RunResult,
    Said,
    SpeedJob,
    SpeedRun,
)
from sandbox.cpu_time import busy, sandbox_cpu_seconds
from sandbox.exits import HarnessExit
from sandbox.forkserver import START_ENV, ForkServer, UidTemplates, fork_server, send_job, start_mode
from sandbox.gpu_compile import COMPILER_CRASH_SIGNALS, compiler_crash_message, crash_diagnostics
from sandbox.guards import GUARD_PREFIXES
from sandbox.guards import check as check_guards
from sandbox.limit_watch import LimitWatch, timeout_said
from sandbox.pool import JOB_PREFIX, Sandbox, WarmPool, copy_harness, new_job_dir, start_sandbox
from sandbox.speed_phase import SpeedPhase
from sandbox.text import clean_text, hello_environment
from sandbox.wire import FrameError

log = logging.getLogger("kernelgrade.sandbox.runner")
_LOG = log  # for _attempt, whose `log` is the sandbox's own


def remove_stale_jobs(work_root: Path | None = None) -> int:
    """Delete job folders left by runners that died (kill -9): their pid is in the name."""
    root = Path(work_root or tempfile.gettempdir())
    removed = 0
    for path in root.glob(f"{JOB_PREFIX}*-*"):
        pid = path.name[len(JOB_PREFIX):].split("-", 1)[0]
        if pid.isdigit() and int(pid) != os.getpid() and not Path(f"/proc/{pid}").exists():
            shutil.rmtree(path, ignore_errors=True)
            removed += 1
    return removed


def compiler_crash(returncode: int, log_tail: str, *, inline_asm: bool) -> str | None:
    """The compile error to record for a sandbox that ended with `returncode` and `log_tail`, when
    its process died inside Triton's compiler: a crash signal, and the log's last words are a
    compiler's giving up (LLVM's `UNREACHABLE executed at`, `LLVM ERROR:`, a failed C++ assertion,
    an MLIR `error:`; only a stack dump after them). On a GPU the compile runs in the harness's process;
    the interpreter's gate compiles in a child of it and says the same (sandbox/gpu_compile.py). A
    process killed for its memory or time (SIGKILL), or one whose log ends otherwise, is no such crash."""
    ended = _signal_name(returncode)
    if ended not in COMPILER_CRASH_SIGNALS or not crash_diagnostics(log_tail, at_end=True):
        return None
    return compiler_crash_message(log_tail, ended, inline_asm, at_end=True)


def _signal_name(returncode: int) -> str:
    """bwrap reports a child killed by signal N as exit code 128 + N."""
    number = -returncode if returncode < 0 else returncode - 128 if 128 < returncode < 128 + 65 else None
    if number is None:
        return f"exit code {returncode}"
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


COMPILE_AHEAD_ENV = "KERNELGRADE_COMPILE_AHEAD"


def compile_ahead_setting() -> CompileAhead | None:
    """KERNELGRADE_COMPILE_AHEAD: compile threads (default 4); 0 turns the phase off."""
    raw = os.environ.get(COMPILE_AHEAD_ENV, "").strip() or "4"
    try:
        threads = int(raw)
    except ValueError:
        raise SandboxUnavailable(f"{COMPILE_AHEAD_ENV} must be a number of threads (0: off), not {raw!r}") from None
    if not 0 <= threads <= 16:
        raise SandboxUnavailable(f"{COMPILE_AHEAD_ENV} must be between 0 (off) and 16, not {threads}")
    return CompileAhead(threads=threads) if threads else None


def compile_ahead_for(setting: CompileAhead | None, *, in_flight: int, cpus: int) -> CompileAhead | None:
    """The compile-ahead phase of a GPU job that starts while `in_flight` sandbox runs of this
    process go on (itself included): at most `setting.threads`, and at most half the CPUs' share
    of each run; off below 2 threads. Measured on the H200 (docs/benchmarks.md, 2026-12-02): a
    fill graded alone took 15-30% less time, but a class burst with 8 runs at once lost a quarter
    of its rate with 4 threads each (16 CPUs: a refill stall appeared)."""
    if setting is None:
        return None
    threads = min(setting.threads, cpus // (2 * max(1, in_flight)))
    return setting.model_copy(update={"threads": threads}) if threads >= 2 else None


class _InFlight:
    """Sandbox runs in flight in this process, every runner's (compile runs included)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.count = 0

    @contextlib.contextmanager
    def one(self) -> Iterator[None]:
        with self._lock:
            self.count += 1
        try:
            yield
        finally:
            with self._lock:
                self.count -= 1


RUNS_IN_FLIGHT = _InFlight()
STOPPED = "stopped: the runner was stopped (SandboxRunner.stop) while the run was in progress"


class SandboxRunner:
    def __init__(self, *, backend: SandboxBackend, limits: Limits, work_root: Path | None = None,
                 pool_starts: int | None = None) -> None:
        self.backend = backend
        self.limits = limits
        self.work_root = work_root
        self.pool_starts = pool_starts  # a warm pool's start-ups at once (None: WarmPool's default)
        self.pools: dict[tuple[DeviceMode, int], WarmPool] = {}
        self.start = start_mode()  # KERNELGRADE_SANDBOX_START: fresh, or fork (cold starts forked from a template)
        self.compile_ahead = compile_ahead_setting()  # KERNELGRADE_COMPILE_AHEAD: GPU jobs compile their kernels first
        self.forks: dict[tuple[DeviceMode, int], ForkServer | UidTemplates] = {}
        self._no_forks: set[tuple[DeviceMode, int]] = set()  # fork mode, but none here for these (logged once)
        self._forks_lock = threading.Lock()
        self.cold_starts = 0  # attempts that found no warm sandbox and started one (benchmarks)
        self._stopped = threading.Event()  # stop(): no attempt starts, the one in progress ends
        weakref.finalize(self, _close_forks, self.forks)  # a runner dropped without close(): no template left
        remove_stale_jobs(work_root)
        remove_stale_cgroups()  # pids cgroups of runners that died, and anything left in them

    def start_pool(self, *, mode: DeviceMode, device_index: int, size: int) -> WarmPool | None:
        """Keep `size` sandboxes of (mode, device index) started ahead of demand (0: none)."""
        key = (mode, device_index)
        if size <= 0 or key in self.pools or not getattr(self.backend, "supports_warm", False):
            return self.pools.get(key)
        self.backend.check()
        # KERNELGRADE_SANDBOX_START=fork: the pool's sandboxes are children of this runner's template
        forks = self._fork_server(mode, device_index)
        if isinstance(forks, UidTemplates):  # a template per sandbox: their imports side by side, as a fresh pool's
            forks.start(size)
        pool = WarmPool(backend=self.backend, limits=self.limits, mode=mode, device_index=device_index, size=size,
                        work_root=self.work_root, max_starting=self.pool_starts, forks=forks)
        self.pools[key] = pool.start()
        return pool

    def stop(self) -> None:
        """End this runner's runs from another thread, for good: an attempt in progress kills its
        sandbox within about a second (it looks between reads of the channel), none starts after
        it, and each run returns with `infra_error` STOPPED (CompileWarmer.close)."""
        self._stopped.set()

    def close(self) -> None:
        """Kill every waiting sandbox (the service's shutdown)."""
        pools, self.pools = self.pools, {}
        for pool in pools.values():
            pool.close()
        _close_forks(self.forks)

    @RUNS_IN_FLIGHT.one()  # counted while it runs: how busy the CPUs are (compile_ahead_for)
    def run(
        self,
        *,
        program: str,
        given_check: str | None,
        given_seed: int,
        entry_point: str,
        cases: list[CaseJob],
        inputs: dict[str, np.ndarray],
        mode: DeviceMode,
        device_index: int = 0,
        speed: SpeedJob | None = None,
        deterministic: bool = False,
        detach_speed: bool = False,
        meanwhile: Callable[[], None] | None = None,
    ) -> RunResult:
        """`speed` (GPU): after the cases, time the entry point on one large input; asked again of a
        fresh sandbox only while it has not come back (a crash or timeout in it is its result).
        `deterministic` (a program whose every run is the same, such as whitelisted fills): the
        first timeout ends the run, since a fresh sandbox would only spend the same time again.
        `detach_speed`: return as soon as the sandbox starts its speed phase, every case result in
        hand; the phase goes on in `result.speed_pending` (sandbox/speed_phase.py). `meanwhile`: the
        caller's own work, done once in this thread as soon as the first sandbox has its job (it runs while
        the sandbox does; its frames wait in the pipe): the grader's written answers. What it raises is
        logged, never the run's."""
        result = RunResult(backend=self.backend.name, mode=mode)
        started = time.monotonic()
        try:
            self.backend.check()
        except SandboxUnavailable as exc:
            result.infra_error = str(exc)
            return result
        pending = list(cases)
        sizes = {key: int(array.size) for key, array in inputs.items()}  # which inputs the harness must guard
        run_given = given_check is not None
        run_deadline = started + self.limits.run_timeout_s
        job_root = new_job_dir(self.work_root)
        try:
            copy_harness(job_root)
            files = self._write_static(job_root, program=program, given_check=given_check or "", inputs=inputs)
            inline_asm = "inline_asm" in program  # the crash hint of the gate and of compiler_crash alike (Job)
            _lap(result.phases, "prepare", started)
            while (pending or run_given) and result.infra_error is None:
                if self._stopped.is_set():
                    result.infra_error = STOPPED
                    break
                result.ended_by_timeout = deterministic and _timed_out(result)
                # A compile that crashed the compiler settled its phase (a compile error, as on the
                # interpreter), so it costs no restart: each such attempt settles one phase.
                if (result.attempts - result.compile_crashes > self.limits.max_restarts
                        or time.monotonic() >= run_deadline
                        or result.ended_by_timeout):
                    said = Said("sandbox.skipped.after_timeout" if result.ended_by_timeout
                                else "sandbox.skipped.budget_spent" if time.monotonic() >= run_deadline
                                else "sandbox.skipped.crash_limit")
                    for case in pending:
                        result.cases.append(CaseRun(id=case.id, status="skipped", said=said))
                    if run_given:
                        result.given = GivenRun(status="skipped", said=said)
                    if speed is not None and result.speed is None:
                        result.speed = SpeedRun(status="skipped", said=said)
                    break
                cpus = os.cpu_count() or 1
                # The compile-ahead phase (a speed-up) in the first attempt only: if student code
                # hangs or crashes in it, the next sandbox goes straight to the given check and the cases.
                ahead = (self._ahead_within(compile_ahead_for(self.compile_ahead, in_flight=RUNS_IN_FLIGHT.count,
                                                              cpus=cpus))
                         if mode is DeviceMode.gpu and result.attempts == 0 else None)
                job = Job(mode=mode, entry_point=entry_point, run_given_check=run_given, given_seed=given_seed,
                          cases=pending, speed=speed if result.speed is None else None, compile_ahead=ahead,
                          inline_asm=inline_asm)
                done_ids = self._attempt(job_root, files, job, result, device_index=device_index,
                                         run_deadline=run_deadline, inputs=sizes, detach_speed=detach_speed,
                                         meanwhile=meanwhile if result.attempts == 0 else None)
                # An attempt that ended before the given check came back (a hang or a crash while
                # the program loaded or compiled ahead) leaves it to the next one, as it leaves its cases.
                run_given = run_given and result.given is None
                pending = [c for c in pending if c.id not in done_ids]
        finally:
            if result.speed_pending is None:  # else the speed phase removes it with its sandbox
                cleanup_started = time.monotonic()
                shutil.rmtree(job_root, ignore_errors=True)
                _lap(result.phases, "cleanup", cleanup_started)
        result.elapsed_s = time.monotonic() - started
        return result

    def _ahead_within(self, ahead: CompileAhead | None) -> CompileAhead | None:
        """The compile-ahead phase bounded to half a case's time limit: it runs before the given check
        in the same phase budget (the harness stops its calls of the entry point at that deadline too)."""
        if ahead is None:
            return None
        return ahead.model_copy(update={"wait_s": min(ahead.wait_s, self.limits.case_timeout_s / 2)})

    @staticmethod
    def _write_static(job_root: Path, *, program: str, given_check: str, inputs: dict[str, np.ndarray]) -> list[str]:
        """The submission's files (harness excluded) in `job_root`; returns their names, which
        a warm attempt copies into its sandbox's folder."""
        (job_root / "submission.py").write_text(program, encoding="utf-8")
        (job_root / "given_check.py").write_text(given_check, encoding="utf-8")
        save_file({k: np.ascontiguousarray(v) for k, v in inputs.items()}, str(job_root / "inputs.safetensors"))
        names = ["submission.py", "given_check.py", "inputs.safetensors"]
        for name in names:
            os.chmod(job_root / name, 0o644)
        return names

    @staticmethod
    def _write_job(target: Path, job: Job, *, source: Path, files: list[str]) -> None:
        if target != source:
            for name in files:
                shutil.copyfile(source / name, target / name)
                os.chmod(target / name, 0o644)
        (target / "job.json").write_text(job.model_dump_json(), encoding="utf-8")
        os.chmod(target / "job.json", 0o644)

    def _sandbox_for(self, job_root: Path, files: list[str], job: Job, *, device_index: int) -> Sandbox:
        """A warm sandbox with the job written into its folder, or a cold one started on `job_root`."""
        pool = self.pools.get((job.mode, device_index))
        # Wait for a start-up under way only where a cold start is one too: a fork from the
        # template (KERNELGRADE_SANDBOX_START=fork) is ready before any start-up.
        sandbox = (pool.acquire(wait=self._fork_server(job.mode, device_index) is None)
                   if pool is not None else None)
        if sandbox is not None:
            try:
                if sandbox.job_fd is not None:  # forked: streamed into its own /job (no folder is shared)
                    self._write_job(job_root, job, source=job_root, files=files)
                    send_job(sandbox.job_fd, [(job_root / name, name) for name in [*files, "job.json"]],
                             deadline=time.monotonic() + self.limits.startup_timeout_s)
                    os.close(sandbox.job_fd)
                    sandbox.job_fd = None
                    sandbox.job_dir = job_root  # its files' folder on this side, as a cold fork's
                else:
                    self._write_job(sandbox.job_dir, job, source=job_root, files=files)
                    sandbox.go()
                return sandbox
            except OSError:  # it died after it was taken (the pipe broke): start one cold instead
                sandbox.kill(self.limits.kill_grace_s)
        self._write_job(job_root, job, source=job_root, files=files)
        with self._forks_lock:
            self.cold_starts += 1
        forks = self._fork_server(job.mode, device_index)
        if forks is not None:  # KERNELGRADE_SANDBOX_START=fork (sandbox/forkserver.py)
            return forks.spawn(job_root=job_root, files=files, job=job)
        return start_sandbox(backend=self.backend, limits=self.limits, job_dir=job_root, mode=job.mode,
                             device_index=device_index, warm=False)

    @functools.cached_property
    def _forks_wanted(self) -> bool:
        """Cold starts and the warm pool's fork from a template (asked once: it reads the cgroup
        hierarchy). Where they cannot, they start fresh, and the log says why once."""
        if self.start != "fork":
            return False
        mount = getattr(self.backend, "triton_cache", None)
        if mount is not None and mount.writable:
            # a compile run (compile_warm.py): a staging folder of its own mounted writable, which a
            # template's children cannot get, and a template per run would cost more than the run
            return False
        why = (ForkServer.unavailable_reason() if hasattr(self.backend, "template_spec")
               else f"the {self.backend.name} backend has no fork-server template")
        if why is not None:
            log.warning("%s=fork, but sandboxes start fresh: %s", START_ENV, why)
        return why is None

    def _fork_server(self, mode: DeviceMode, device_index: int) -> ForkServer | UidTemplates | None:
        """The fork server of (mode, device index), made at first use; None where none can fork
        for it (root without a pids cgroup where no unprivileged sandbox starts: logged once)."""
        if not self._forks_wanted:
            return None
        with self._forks_lock:
            key = (mode, device_index)
            if key not in self.forks and key not in self._no_forks:
                why = ForkServer.unavailable_reason(self.backend, mode, device_index)
                if why is not None:
                    log.warning("%s=fork, but %s sandboxes start fresh: %s", START_ENV, mode.value, why)
                    self._no_forks.add(key)
                else:
                    self.forks[key] = fork_server(backend=self.backend, limits=self.limits, mode=mode,
                                                  device_index=device_index)
            return self.forks.get(key)

    def _attempt(self, job_root: Path, files: list[str], job: Job, result: RunResult, *, device_index: int,
                 run_deadline: float, inputs: dict[str, int], detach_speed: bool = False,
                 meanwhile: Callable[[], None] | None = None) -> set[str]:
        """One sandbox process. Returns the ids of cases that are settled (passed, failed, crashed)."""
        limits = self.limits
        result.attempts += 1
        attempt_started = time.monotonic()
        try:
            sandbox = self._sandbox_for(job_root, files, job, device_index=device_index)
        except (OSError, SandboxUnavailable) as exc:
            result.infra_error = f"could not start the sandbox ({self.backend.name}): {exc}"
            return set()
        mark = _lap(result.phases, "handover", attempt_started)  # the time split (RunResult.phases)
        if meanwhile is not None:  # the sandbox has its job: the caller's own work overlaps it
            try:
                meanwhile()
            except Exception:  # noqa: BLE001 - the caller's, not the run's: it does it again later
                _LOG.exception("the caller's work during the run failed")  # (`log` is the sandbox's here)
            mark = _lap(result.phases, "meanwhile", mark)
        began = finished = False  # a phase frame came / the `done` frame came
        # A compile run (a writable cache mount: compile_warm.py) lets its harness end by itself.
        mount = getattr(self.backend, "triton_cache", None)
        # Only where the sandbox's output comes straight through our pipe: a container's output is relayed
        # by `docker run`, and killing it at `done` lost the last of a flood's stdout (CI rehearsal).
        writable = mount is not None and mount.writable
        early_end = not writable and getattr(self.backend, "direct_output", False)
        # Where the output is relayed, the exit is waited for after `done`, but only for `exit_grace_s`: an
        # exit that never ends (an atexit sleep) would otherwise hold the sandbox until the case timeout.
        exit_by: float | None = None
        proc, read_fd, reader, log = sandbox.proc, sandbox.read_fd, sandbox.reader, sandbox.log
        result.process_limit = sandbox.process_limit
        result.memory_limit = sandbox.memory_limit
        result.sandbox_start = sandbox.start
        settled: set[str] = set()
        current: str | None = None  # case id, "<given>", or None between cases
        phase_started = attempt_started
        ready = False
        stop_reason: str | None = None  # why we killed it
        broken_channel: str | None = None
        watch, watched_phase = LimitWatch(sandbox.memory_events), None  # a timeout at the memory limit
        held_at_limit = False
        # The kernel whose compile runs now, as the harness tells it (`compile` frames): a limit met
        # then is said as the compile's ({"kernel": name}; empty between compiles).
        compiling: dict[str, str] = {}
        # The sandbox's CPU time at the current phase's start, to tell a timeout the program ran
        # into from one the machine made (sandbox/cpu_time.py). Its process tree only where the
        # process we hold is the sandbox's own (bwrap, a forked child), not a launcher (docker).
        tree_root = sandbox.proc.pid if self.backend.name == "bwrap" else None
        phase_cpu: float | None = None
        try:
            for message, blob in sandbox.early_frames:  # a warm sandbox's hello, read by the pool
                current, ready, phase_started = self._handle(
                    message, blob, job=job, result=result, settled=settled, current=current,
                    ready=ready, phase_started=phase_started, attempt_started=attempt_started, inputs=inputs,
                    compiling=compiling)
            while True:
                if self._stopped.is_set():
                    stop_reason = "stopped"
                    break
                if phase_started != watched_phase:
                    watch.restart()
                    watched_phase = phase_started
                    phase_cpu = sandbox_cpu_seconds(sandbox.confinement, tree_root)
                else:
                    watch.sample()
                budget = limits.case_timeout_s if ready else limits.startup_timeout_s
                deadline = min(phase_started + budget, run_deadline)
                if exit_by is not None and exit_by < deadline:
                    deadline = exit_by
                wait = deadline - time.monotonic()
                if wait <= 0 and deadline == exit_by:
                    stop_reason = "lingered"  # every phase is in and `done` said: its exit decides nothing
                    break
                if wait <= 0:
                    stop_reason = "timeout"
                    held_at_limit = ready and watch.held_at_limit()  # read before the kill
                    now_cpu = sandbox_cpu_seconds(sandbox.confinement, tree_root)
                    result.timeout_cpu_s = (now_cpu - phase_cpu if now_cpu is not None and phase_cpu is not None
                                            else None)
                    result.timeout_busy = busy(result.timeout_cpu_s, budget, limits.timeout_cpu_fraction)
                    break
                readable, _, _ = select.select([read_fd], [], [], min(wait, 1.0))
                if not readable:
                    continue
                chunk = os.read(read_fd, 1 << 20)
                mark = _lap(result.phases, _waiting_for(ready, began, finished, current), mark)
                if not chunk:
                    break  # the sandbox closed the channel (exited)
                try:
                    for message, blob in reader.feed(chunk):
                        current, ready, phase_started = self._handle(
                            message, blob, job=job, result=result, settled=settled, current=current,
                            ready=ready, phase_started=phase_started, attempt_started=attempt_started, inputs=inputs,
                    compiling=compiling)
                        began = began or message.get("type") in _PHASE_FRAMES
                        finished = finished or message.get("type") == "done"
                except FrameError as exc:
                    broken_channel = str(exc)
                    stop_reason = "channel"
                    break
                finally:
                    mark = _lap(result.phases, "frames", mark)
                if detach_speed and current == "<speed>" and _all_in(job, result, settled):
                    stop_reason = "detached"  # every phase the grade needs is in: the caller goes on now
                    break
                if (finished and current is None and _all_in(job, result, settled)
                        and (job.speed is None or result.speed is not None)):
                    # Every phase is in and the harness said `done`: what is left is its interpreter's exit
                    # (torch's teardown, seconds on a loaded CPU), which decides nothing. Kill it now, or
                    # (relayed output) once the exit grace is over.
                    if early_end:
                        stop_reason = "finished"
                        break
                    if exit_by is None and not writable:
                        exit_by = time.monotonic() + limits.exit_grace_s
        finally:
            if stop_reason == "detached":
                result.speed_pending = SpeedPhase(sandbox, limits=limits, job_root=job_root, parse=_speed_run,
                                                  exit_name=_signal_name)
            elif stop_reason is None:
                # The channel closed: the harness exited or crashed. Let it finish dying so the
                # exit status names the real cause (a segfault, not our kill).
                try:
                    proc.wait(timeout=limits.kill_grace_s)
                except subprocess.TimeoutExpired:
                    pass
            if stop_reason != "finished":  # (finished: nothing waited for since the last frame)
                mark = _lap(result.phases, _waiting_for(ready, began, finished, current), mark)
            if stop_reason != "detached":
                sandbox.kill(limits.kill_grace_s)  # also closes the channel and removes a warm sandbox's folder
        if stop_reason == "detached":
            return settled  # (no log tail: reading it waits for the sandbox's exit)
        result.log_tail = log.text()
        _lap(result.phases, "kill", mark)
        if stop_reason == "stopped":
            result.infra_error = STOPPED
            return settled
        if stop_reason in ("finished", "lingered"):
            return settled

        if stop_reason == "channel":
            said = Said("sandbox.broken_channel", {"detail": broken_channel})
        elif stop_reason == "timeout":  # out of memory where it was held at the limit (sandbox/limit_watch.py)
            said = timeout_said(held_at_limit=held_at_limit, memory_limit=sandbox.memory_limit,
                                elapsed=time.monotonic() - phase_started, time_limit=limits.case_timeout_s,
                                compiling=compiling.get("kernel"))
        elif sandbox.oom_killed:
            said = (Said("sandbox.out_of_memory.compile",
                         {"limit": sandbox.memory_limit, "kernel": compiling["kernel"]})
                    if "kernel" in compiling
                    else Said("sandbox.out_of_memory", {"limit": sandbox.memory_limit}))
        elif proc.returncode == HarnessExit.gpu_poisoned:
            said = Said("sandbox.gpu_poisoned")
        else:
            said = Said("sandbox.exited", {"signal": _signal_name(proc.returncode)})

        crash = (compiler_crash(proc.returncode, result.log_tail, inline_asm=job.inline_asm)
                 if stop_reason is None and ready and not sandbox.oom_killed else None)

        if not ready and result.infra_error is None:
            # Never got as far as running student code: that is our failure, not theirs.
            what = ("did not start in time" if stop_reason == "timeout"
                    else f"died during start-up ({_signal_name(proc.returncode)})")
            result.infra_error = f"sandbox {what}; log tail:\n{result.log_tail[-2000:]}"
            return settled
        if stop_reason == "channel":
            # Student code ran and broke the verdict channel: that is the submission's failure, for
            # every phase still open (no fresh sandbox: a retry would reward the tampering).
            if job.run_given_check and result.given is None:
                result.given = GivenRun(status="crashed", said=said)
            for case in job.cases:
                if case.id not in settled:
                    result.cases.append(CaseRun(id=case.id, status="crashed", said=said))
                    settled.add(case.id)
            if job.speed is not None and result.speed is None:
                result.speed = SpeedRun(status="crashed", said=said)
        elif crash is not None and current is not None:
            # The compiler crashed compiling the student's kernel (a GPU compiles in the harness's
            # process): the phase's compile error, said as the interpreter's gate says it, not a crash.
            result.compile_crashes += 1
            if current == "<speed>":
                result.speed = SpeedRun(status="error", error=crash)
            elif current == "<given>":
                result.given = GivenRun(status="failed", output=crash)
            else:
                result.cases.append(CaseRun(id=current, status="error", error=crash))
                settled.add(current)
        elif current == "<speed>":
            result.speed = SpeedRun(status="timeout" if stop_reason == "timeout" else "crashed", said=said)
        elif current == "<given>":
            result.given = GivenRun(status="timeout" if stop_reason == "timeout" else "crashed", said=said)
        elif current is not None:
            result.cases.append(CaseRun(id=current, status="timeout" if stop_reason == "timeout" else "crashed",
                                        said=said))
            settled.add(current)
        return settled

    def _handle(self, message: dict, blob: bytes, **state):
        """Apply one frame to the result; returns the new (current case, ready, phase start).
        Every frame comes from the sandbox: one that cannot be applied (a field of the wrong type,
        say) breaks the channel like a malformed frame, never the grading."""
        try:
            return self._apply(message, blob, **state)
        except FrameError:
            raise
        except Exception as exc:  # noqa: BLE001 - anything else a forged frame provokes
            raise FrameError(f"a {clean_text(message.get('type'), 40)!r} frame that cannot be applied: "
                             f"{type(exc).__name__}") from None

    def _apply(self, message: dict, blob: bytes, *, job: Job, result: RunResult, settled: set[str],
               current: str | None, ready: bool, phase_started: float, attempt_started: float, inputs: dict[str, int],
               compiling: dict[str, str]):
        kind = message["type"]
        if kind == "hello":
            # Only the harness's first frame, before any student code ran: a later one would let a
            # submission put a device and versions of its choosing into the report and memo keys.
            if ready:
                raise FrameError("a second 'hello' frame (written by the submission, not the harness)")
            ready = True
            result.startup_s.append(time.monotonic() - attempt_started)
            result.environment = hello_environment(message)
        elif kind == "fatal":
            if ready:  # the harness sends `fatal` only before `hello`; after it, student code wrote it
                raise FrameError("a 'fatal' frame after start-up (written by the submission, not the harness)")
            result.infra_error = f"sandbox harness refused to run: {clean_text(message.get('error'), 2000)}"
        elif kind == "load_error":
            said = Said("sandbox.load_error", {"detail": clean_text(message.get("error"))})
            if job.run_given_check:
                result.given = GivenRun(status="failed", said=said)
            for case in job.cases:
                result.cases.append(CaseRun(id=case.id, status="error", said=said))
                settled.add(case.id)
        elif kind == "given_start":
            current = "<given>"
        elif kind == "given":
            if not job.run_given_check or result.given is not None:
                raise FrameError("a 'given' frame the job did not ask for")
            result.given = GivenRun(status="passed" if message.get("status") == "passed" else "failed",
                                    output=clean_text(message.get("output")),
                                    elapsed_s=_as_float(message.get("elapsed_s")), calls=_given_calls(blob),
                                    gpu_only=message.get("status") != "passed" and message.get("gpu_only") is True,
                                    raised=_raised(message) if message.get("status") != "passed" else [],
                                    no_launch=message.get("status") != "passed" and message.get("no_launch") is True)
            current = None
        elif kind == "case_start":
            if message.get("id") not in {c.id for c in job.cases}:
                raise FrameError(f"a 'case_start' for unknown case {clean_text(str(message.get('id')), 100)!r}")
            current = message["id"]
        elif kind == "case":
            if message.get("id") in settled:
                raise FrameError("a second result for one case")
            settled.add(self._record_case(result, job, message, blob, inputs))
            current = None
        elif kind == "speed_start":
            if job.speed is None or current is not None or result.speed is not None:
                raise FrameError("a 'speed_start' frame the job did not ask for")
            current = "<speed>"
        elif kind == "speed":
            if current != "<speed>":
                raise FrameError("a 'speed' frame outside the speed phase")
            result.speed = _speed_run(message)
            current = None
        elif kind == "done":
            counts = message.get("triton_cache")
            if isinstance(counts, dict):  # told by the sandbox: shown in timing, never graded; summed over attempts
                for key in ("shared_hits", "compiled", "compiled_ahead"):
                    value = counts.get(key)
                    if type(value) is int and 0 <= value < 1 << 20:
                        result.triton_cache[key] = result.triton_cache.get(key, 0) + value
            split = message.get("split")  # the harness's own time split: shown in timing, never graded
            if isinstance(split, dict):
                for key in SPLIT_PARTS:
                    value = split.get(key)
                    if type(value) is float and 0.0 <= value < 86_400.0:
                        result.split[key] = result.split.get(key, 0.0) + value
            check = message.get("gpu_compile")  # interpreter: the GPU-target compiles before launches
            if isinstance(check, dict):
                compiles, seconds = check.get("compiles"), check.get("seconds")
                if type(compiles) is int and 0 <= compiles < 1 << 20:
                    result.triton_cache["gpu_compile_checks"] = (result.triton_cache.get("gpu_compile_checks", 0)
                                                                 + compiles)
                if type(seconds) is float and 0.0 <= seconds < 86_400.0:
                    result.gpu_compile_s += seconds
        elif kind == "compile":  # told by the sandbox (harness._announce_compiles): only the words of a limit met
            compiling.clear()
            if message.get("state") == "start":
                compiling["kernel"] = clean_text(message.get("kernel"), 100).replace("\n", " ") or "?"
        if kind in ("hello", "given_start", "case_start", "given", "case", "speed_start", "speed"):
            phase_started = time.monotonic()
            compiling.clear()  # a compile that raised told no end; the phase it was in is over
        return current, ready, phase_started

    def _record_case(self, result: RunResult, job: Job, message: dict, blob: bytes, inputs: dict[str, int]) -> str:
        case_id = message.get("id")
        known = {c.id: c for c in job.cases}
        if case_id not in known:
            raise FrameError(f"result for unknown case {clean_text(str(case_id), 100)!r}")
        elapsed = _as_float(message.get("elapsed_s"))
        if message.get("status") != "ok":
            breaches, allocations = _error_evidence(message.get("guards"), blob, known[case_id], inputs)
            result.cases.append(CaseRun(id=case_id, status="error", error=clean_text(message.get("error")),
                                        elapsed_s=elapsed, out_of_bounds=breaches, allocations=allocations,
                                        gpu_only=message.get("gpu_only") is True, raised=_raised(message)))
            return case_id
        try:
            tensors = load_tensors(blob)  # safetensors: no pickle, header validated by the library
        except Exception as exc:  # noqa: BLE001 - anything malformed is the submission's result
            result.cases.append(CaseRun(id=case_id, status="error", elapsed_s=elapsed,
                                        said=Said("sandbox.output_unparsable", {"detail": clean_text(str(exc), 500)})))
            return case_id
        raw = {name: tensors.pop(name) for name in list(tensors) if name.startswith(GUARD_PREFIXES)}
        after = {name[len("__input__."):]: tensors.pop(name) for name in list(tensors) if name.startswith("__input__.")}
        breaches, missing = check_guards(message.get("guards"), raw, required=_guarded_inputs(known[case_id], inputs))
        if missing is not None:  # the harness's guarding was switched off or its evidence forged away
            result.cases.append(CaseRun(id=case_id, status="error", elapsed_s=elapsed,
                                        said=Said("sandbox.guards_missing", {"missing": missing})))
        elif breaches:
            first = breaches[0]
            result.cases.append(CaseRun(id=case_id, status="error", elapsed_s=elapsed, out_of_bounds=breaches,
                                        said=Said("sandbox.out_of_bounds", {
                                            "changed": first["changed"], "side": first["side"],
                                            "buffer": first["output"] or first["buffer"]})))
        else:
            result.cases.append(CaseRun(id=case_id, status="ok", outputs=dict(tensors), elapsed_s=elapsed,
                                        inputs_after=after))
        return case_id


# The harness's time split (its `done` frame's `split`): the only parts read from it
# (compile_wait: the given check's and the cases' launches waiting for the compile-ahead phase's compiles, inside
# given_calls/case_calls; compile_ahead_done: from that phase's start until its last compile ended, beside the cases)
SPLIT_PARTS = ("warm_up", "job", "program", "inputs", "compile_ahead", "sweep", "send", "given_calls",
               "given_record", "case_setup", "case_calls", "case_evidence", "compile_wait", "compile_ahead_done")
_PHASE_FRAMES = frozenset({"given_start", "case_start", "load_error", "given", "case", "speed_start", "speed"})


# What one blob from the sandbox may hold (a case's outputs, guards, inputs after the call and allocations; the
# given check's recorded calls): the harness sends a few hundred tensors at most. The channel's byte caps
# alone let a forged blob of 16 MiB name 270 000 empty tensors, each a numpy array on the trusted side
# (red team 8: 8 s of the worker's CPU and 480 MiB of its memory per attempt, for 48 MiB of frames).
MAX_BLOB_TENSORS = 2048
MAX_BLOB_HEADER_BYTES = 256 << 10


def load_tensors(blob: bytes) -> dict[str, np.ndarray]:
    """A safetensors blob from the sandbox (no pickle), refused before any array is made when its header
    is over MAX_BLOB_HEADER_BYTES or names more than MAX_BLOB_TENSORS tensors (ValueError)."""
    if len(blob) < 8:
        raise ValueError("a safetensors blob shorter than its header's length")
    size = int.from_bytes(blob[:8], "little")
    if size > MAX_BLOB_HEADER_BYTES:
        raise ValueError(f"a safetensors header of {size} bytes (at most {MAX_BLOB_HEADER_BYTES})")
    header = json.loads(blob[8:8 + size])
    if not isinstance(header, dict):
        raise ValueError("a safetensors header that is not an object")
    if len(header) > MAX_BLOB_TENSORS + 1:  # and __metadata__
        raise ValueError(f"a safetensors blob of {len(header)} tensors (at most {MAX_BLOB_TENSORS})")
    return _load_safetensors(blob)


def _lap(phases: dict[str, float], name: str, since: float) -> float:
    """Add the time since `since` to `phases[name]`; returns now (the next lap's start)."""
    now = time.monotonic()
    phases[name] = phases.get(name, 0.0) + now - since
    return now


def _waiting_for(ready: bool, began: bool, finished: bool, current: str | None) -> str:
    """The phase the trusted side was waiting in (RunResult.phases), from what the frames said so far."""
    if not ready:
        return "startup"
    if current is not None:
        return {"<given>": "given", "<speed>": "speed"}.get(current, "cases")
    return "exit" if finished else "between" if began else "load"


def _raised(message: dict) -> list[str]:
    """A phase frame's `raised` (the reprs of the exception chain that ended it, harness._raised), bounded;
    anything else than a short list of strings is none."""
    raised = message.get("raised")
    if not isinstance(raised, list) or not all(isinstance(item, str) for item in raised):
        return []
    return [clean_text(item, 300) for item in raised[:8]]


def _all_in(job: Job, result: RunResult, settled: set[str]) -> bool:
    """Every case of the job and its given check came back (a `speed_start` that student code
    wrote before them must not end the reading early)."""
    return all(c.id in settled for c in job.cases) and (not job.run_given_check or result.given is not None)


def _close_forks(forks: dict) -> None:
    for server in list(forks.values()):
        server.close()
    forks.clear()


def _timed_out(result: RunResult) -> bool:
    return (any(c.status == "timeout" for c in result.cases)
            or (result.given is not None and result.given.status == "timeout")
            or (result.speed is not None and result.speed.status == "timeout"))


_NUMPY_DTYPES = {"float32": np.float32, "float64": np.float64, "float16": np.float16, "int8": np.int8,
                 "int16": np.int16, "int32": np.int32, "int64": np.int64, "uint8": np.uint8, "bool": np.bool_}


def _error_evidence(records: object, blob: bytes, case: CaseJob,
                    inputs: dict[str, int]) -> tuple[list[dict], list[dict]]:
    """(out-of-bounds evidence, allocated buffers' data) of a case that raised, from the guards'
    bytes compared here and the `__alloc__.<i>` arrays; nothing when the evidence is absent or
    malformed (the case stays a plain error, and no diagnosis can claim an out-of-bounds write)."""
    if not blob or not isinstance(records, list):
        return [], []
    try:
        tensors = load_tensors(blob)
    except Exception:  # noqa: BLE001 - malformed evidence is no evidence
        return [], []
    raw = {name: tensors[name] for name in tensors if name.startswith(GUARD_PREFIXES)}
    breaches, missing = check_guards(records, raw, required=_guarded_inputs(case, inputs))
    if missing is not None:
        return [], []
    allocations = []
    for name, array in tensors.items():
        if not name.startswith("__alloc__.") or array.dtype != np.uint8 or array.ndim != 1:
            continue
        index = name[len("__alloc__."):]
        record = records[int(index)] if index.isdigit() and int(index) < len(records) else None
        if not isinstance(record, dict):
            continue
        dtype = _NUMPY_DTYPES.get(record["dtype"]) if "dtype" in record else None
        if dtype is None or record.get("kind") != "allocated" or array.size % np.dtype(dtype).itemsize:
            continue
        allocations.append({"index": int(index), "shape": record.get("shape"), "dtype": record["dtype"],
                            "data": array.view(dtype)})
    return breaches, allocations


def _guarded_inputs(case: CaseJob, sizes: dict[str, int]) -> set[str]:
    """The names under which the harness reports the guards of the case's non-empty inputs."""
    return {arg.key[len(case.id) + 1:] if arg.key.startswith(case.id + ".") else arg.key
            for arg in case.args if sizes.get(arg.key, 0) > 0}


def _given_calls(blob: bytes) -> list[tuple[list, list]]:
    """The entry point's recorded calls during the given check (`callN.argJ`, `callN.outK`)."""
    if not blob:
        return []
    try:
        tensors = load_tensors(blob)  # safetensors: no pickle
    except Exception:  # noqa: BLE001 - a malformed record is no record: the check is then unverified
        return []
    calls: dict[int, tuple[dict[int, object], dict[int, object]]] = {}
    for name, array in tensors.items():
        match = re.fullmatch(r"call(\d{1,3})\.(arg|out)(\d{1,3})", name)
        if match is None:
            continue
        args, outs = calls.setdefault(int(match.group(1)), ({}, {}))
        (args if match.group(2) == "arg" else outs)[int(match.group(3))] = array
    return [([a[j] for j in sorted(a)], [o[k] for k in sorted(o)]) for _, (a, o) in sorted(calls.items())]


_STATS = ("median_ms", "p20_ms", "p80_ms", "min_ms", "max_ms")


def _timings(value) -> dict[str, float]:
    """One timed function's figures from the sandbox, or {} when any is missing or not a finite positive number."""
    if not isinstance(value, dict):
        return {}
    stats: dict[str, float] = {}
    for key in _STATS:
        figure = _as_float(value.get(key))
        if figure is None or not 0 < figure < 1e7:
            return {}
        stats[key] = figure
    reps = value.get("reps")
    if type(reps) is not int or not 0 < reps < 1 << 24:
        return {}
    return {**stats, "reps": reps}


def _plain(value, limit: int = 16) -> dict:
    """A flat dict of short strings and numbers (the device's and the method's description)."""
    if not isinstance(value, dict):
        return {}
    kept: dict[str, str | int | float] = {}
    for key, item in list(value.items())[:limit]:
        if isinstance(item, str):
            kept[clean_text(str(key), 64)] = clean_text(item, 200)
        elif isinstance(item, (int, float)) and not isinstance(item, bool) and item == item and abs(item) < 1e18:
            kept[clean_text(str(key), 64)] = item
    return kept


def _speed_run(message: dict) -> SpeedRun:
    """The `speed` frame, checked field by field (it comes from the sandbox, like every frame)."""
    elapsed = _as_float(message.get("elapsed_s"))
    device, method = _plain(message.get("device")), _plain(message.get("method"))
    if message.get("status") != "ok":
        return SpeedRun(status="error", error=clean_text(message.get("error")), device=device, method=method,
                        elapsed_s=elapsed)
    kernel = _timings(message.get("kernel"))
    shape = message.get("shape")
    if not kernel or not isinstance(shape, list) or not all(type(d) is int and d >= 0 for d in shape) or len(shape) > 8:
        return SpeedRun(status="error", said=Said("sandbox.speed_unparsable"), device=device, method=method,
                        elapsed_s=elapsed)
    copy_bytes = message.get("copy_bytes")
    return SpeedRun(status="ok", shape=shape, kernel=kernel, baseline=_timings(message.get("baseline")),
                    copy=_timings(message.get("copy")),
                    copy_bytes=copy_bytes if type(copy_bytes) is int and copy_bytes > 0 else None,
                    error=clean_text(message["baseline_error"], 2000) if message.get("baseline_error") else None,
                    device=device, method=method, elapsed_s=elapsed)


def _as_float(value) -> float | None:
    try:
        return float(value)
    except (TypeError, ValueError):
        return None
