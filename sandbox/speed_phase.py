"""The speed phase of a run whose case results the caller already holds (issue #20 item 1).

`SandboxRunner.run(detach_speed=True)` stops reading a sandbox when it announces its speed phase
(`speed_start`, sent after every case result) and hands it over as a `SpeedPhase`: the grading
goes on with the cases at once, and the sandbox keeps timing the kernel meanwhile. The caller then
either collects the `speed` frame (`collect`, bounded by `Limits.speed_timeout_s` from the
hand-over) or ends the phase unread (`cancel`: a kernel that did not pass is not worth timing).
Either way the sandbox is killed and its job folder removed exactly once; and if the caller does
neither (a bug of ours between the hand-over and the card), a watchdog kills it at the budget.

Every frame still comes from the sandbox: anything but the one `speed` frame breaks the phase
(`crashed`, said `sandbox.broken_channel`), as it would break the channel of a whole run.
"""
from __future__ import annotations

import os
import select
import shutil
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path

from sandbox.contract import Limits, Said, SpeedRun
from sandbox.exits import HarnessExit
from sandbox.limit_watch import LimitWatch, timeout_said
from sandbox.pool import Sandbox
from sandbox.wire import FrameError


class SpeedPhase:
    def __init__(self, sandbox: Sandbox, *, limits: Limits, job_root: Path | None,
                 parse: Callable[[dict], SpeedRun], exit_name: Callable[[int], str]) -> None:
        self._sandbox = sandbox
        self._limits = limits
        self._job_root = job_root
        self._parse = parse  # runner._speed_run: the frame checked field by field
        self._exit_name = exit_name
        self._started = time.monotonic()
        self._deadline = self._started + limits.speed_timeout_s
        self._watch = LimitWatch(sandbox.memory_events)  # a timeout at the memory limit (limit_watch.py)
        self._watch.restart()
        self._lock = threading.Lock()
        self._result: SpeedRun | None = None
        self._watchdog = threading.Timer(limits.speed_timeout_s + limits.kill_grace_s, self.cancel)
        self._watchdog.daemon = True
        self._watchdog.start()

    def collect(self) -> SpeedRun:
        """Wait (at most the speed budget) for the `speed` frame; then end the sandbox. Called
        again, returns the same result."""
        with self._lock:
            if self._result is None:
                try:
                    self._result = self._read()
                finally:
                    self._end()
            return self._result

    def cancel(self) -> None:
        """End the sandbox without reading its figures; a later `collect` returns `skipped`."""
        with self._lock:
            if self._result is None:
                self._result = SpeedRun(status="skipped")
                self._end()

    def _read(self) -> SpeedRun:
        sandbox = self._sandbox
        while True:
            wait = self._deadline - time.monotonic()
            if wait <= 0:
                return SpeedRun(status="timeout", said=timeout_said(
                    held_at_limit=self._watch.held_at_limit(), memory_limit=sandbox.memory_limit,
                    elapsed=time.monotonic() - self._started, time_limit=self._limits.speed_timeout_s))
            self._watch.sample()
            readable, _, _ = select.select([sandbox.read_fd], [], [], min(wait, 1.0))
            if not readable:
                continue
            chunk = os.read(sandbox.read_fd, 1 << 20)
            if not chunk:
                try:  # the harness exited or crashed: let it finish dying so the status names the cause
                    sandbox.proc.wait(timeout=self._limits.kill_grace_s)
                except subprocess.TimeoutExpired:
                    pass
                sandbox.kill(self._limits.kill_grace_s)
                return SpeedRun(status="crashed", said=self._exit_said())
            try:
                for message, _blob in sandbox.reader.feed(chunk):
                    if message.get("type") == "speed":
                        return self._parse(message)  # the harness's last frame (`done` came before the phase)
                    if message.get("type") == "compile":  # the timed shape's own compile (harness._announce_compiles)
                        continue
                    raise FrameError(f"a {str(message.get('type'))[:40]!r} frame during the speed phase")
            except FrameError as exc:
                return SpeedRun(status="crashed", said=Said("sandbox.broken_channel", {"detail": str(exc)}))
            except Exception as exc:  # noqa: BLE001 - a frame the parser cannot take is a broken channel
                return SpeedRun(status="crashed", said=Said("sandbox.broken_channel",
                                                            {"detail": f"a 'speed' frame that cannot be applied: "
                                                                       f"{type(exc).__name__}"}))

    def _exit_said(self) -> Said:
        sandbox = self._sandbox
        if sandbox.oom_killed:
            return Said("sandbox.out_of_memory", {"limit": sandbox.memory_limit})
        if sandbox.proc.returncode == HarnessExit.gpu_poisoned:
            return Said("sandbox.gpu_poisoned")
        return Said("sandbox.exited", {"signal": self._exit_name(sandbox.proc.returncode)})

    def _end(self) -> None:
        self._watchdog.cancel()
        self._sandbox.kill(self._limits.kill_grace_s)  # also closes the channel (and a warm sandbox's folder)
        if self._job_root is not None:
            shutil.rmtree(self._job_root, ignore_errors=True)
            self._job_root = None
