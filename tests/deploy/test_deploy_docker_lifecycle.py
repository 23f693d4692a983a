"""Lifecycle of the docker backend's launcher: the container is always removed, killed on timeout.

FAKE DOCKER CLIENT. There is no Docker engine in CI, so `FakeClient` below stands in for
`docker.DockerClient` ONLY to record the lifecycle calls the launcher makes (create, attach,
start, wait, kill, remove) and to play a scripted output stream in the daemon's multiplexed
format over a real socket pair. It runs no code and isolates nothing: it proves bookkeeping, not
isolation. Isolation is proven by the real sandbox tests (tests/integration/test_sandbox_isolation.py
with bwrap); the docker backend's isolation is its container specification
(test_deploy_docker_spec.py) and was not exercised against a real engine here.
"""
from __future__ import annotations

import io
import os
import socket
import struct
import subprocess
import sys
import threading
import time

import pytest

from sandbox.backends.docker import EXIT_KILLED, EXIT_LAUNCHER_FAILED, Reaper, demux, launch, reap
from sandbox.wire import FrameReader, encode_frame

SPEC = {"image": "kernelgrade:test", "command": ["/bin/sh", "-c", "true"], "kwargs": {"network_mode": "none"}}


def mux(stream: int, data: bytes) -> bytes:
    return struct.pack(">BxxxL", stream, len(data)) + data


class FakeContainer:
    """FAKE: records calls; `script` is what the 'container' writes to the attach stream."""

    def __init__(self, calls: list, script: list, *, exit_code: int = 0, hang: bool = False, fail_start: bool = False):
        self.id = "fake0123"
        self.calls, self.script, self.exit_code, self.hang, self.fail_start = calls, script, exit_code, hang, fail_start
        self._ours, self._theirs = socket.socketpair()
        self._exited = threading.Event()

    def attach_socket(self, params):
        self.calls.append(("attach", tuple(sorted(params.items()))))
        return self._ours

    def start(self):
        self.calls.append(("start",))
        if self.fail_start:
            raise RuntimeError("could not select device driver 'nvidia'")
        threading.Thread(target=self._run, daemon=True).start()

    def _run(self):
        try:
            for piece in self.script:
                self._theirs.sendall(piece)
        except OSError:
            return
        if not self.hang:
            self._exit(self.exit_code)

    def _exit(self, code):
        if not self._exited.is_set():
            self.exit_code = code
            self._exited.set()
            self._theirs.close()

    def kill(self):
        self.calls.append(("kill",))
        self._exit(137)

    def wait(self, timeout):
        self.calls.append(("wait",))
        if not self._exited.wait(timeout):
            raise TimeoutError("read timed out")
        return {"StatusCode": self.exit_code, "Error": None}

    def remove(self, force):
        self.calls.append(("remove", force))


class FakeClient:
    """FAKE docker.DockerClient: `client.containers.create(...)` returns the prepared FakeContainer."""

    def __init__(self, container: FakeContainer | None, fail_create: bool = False):
        self.container, self.fail_create = container, fail_create
        self.containers = self
        self.created = None

    def create(self, image, command, **kwargs):
        if self.fail_create:
            raise RuntimeError("No such image: kernelgrade:test")
        self.created = (image, command, kwargs)
        self.container.calls.append(("create",))
        return self.container


class FakeReaper:
    def __init__(self, container_id):
        self.container_id, self.told_done = container_id, False

    def done(self):
        self.told_done = True


def run(client, *, timeout_s=10.0, output_cap=1 << 20):
    verdict_r, verdict_w = os.pipe()
    log_r, log_w = os.pipe()
    reapers = []

    def make_reaper(cid):
        reapers.append(FakeReaper(cid))
        return reapers[-1]

    outcome = {}

    def go():
        try:
            outcome["code"] = launch(SPEC, client=client, verdict_fd=verdict_w, log_fd=log_w, output_cap=output_cap,
                                     timeout_s=timeout_s, kill_grace_s=1.0, reaper_factory=make_reaper)
        finally:
            os.close(verdict_w)
            os.close(log_w)

    chunks = {verdict_r: bytearray(), log_r: bytearray()}
    readers = [threading.Thread(target=lambda fd=fd: [chunks[fd].extend(c) for c in iter(lambda: os.read(fd, 65536), b"")])
               for fd in chunks]
    for t in readers:
        t.start()
    started = time.monotonic()
    go()
    for t in readers:
        t.join(5)
    os.close(verdict_r)
    os.close(log_r)
    return outcome["code"], bytes(chunks[verdict_r]), bytes(chunks[log_r]).decode(), reapers, time.monotonic() - started


def names(calls):
    return [c[0] for c in calls]


def test_frames_cross_unchanged_and_student_output_goes_to_the_log_then_the_container_is_removed():
    hello = encode_frame({"type": "hello", "mode": "interpreter"})
    case = encode_frame({"type": "case", "id": "c1", "status": "ok"}, b"\x00" * 5000)
    calls = []
    container = FakeContainer(calls, [mux(1, hello), mux(2, b"student print\n"), mux(1, case[:100]), mux(1, case[100:])])
    code, verdict, log, reapers, _ = run(FakeClient(container))
    assert code == 0
    assert verdict == hello + case
    frames = FrameReader(max_blob_bytes=1 << 20, max_total_bytes=1 << 20).feed(verdict)
    assert [m["type"] for m, _ in frames] == ["hello", "case"] and frames[1][1] == b"\x00" * 5000
    assert log == "student print\n"
    assert names(calls) == ["create", "attach", "start", "wait", "remove"]
    assert calls[-1] == ("remove", True)
    assert ("attach", (("logs", 0), ("stderr", 1), ("stdout", 1), ("stream", 1))) in calls  # attached BEFORE start
    assert reapers[0].container_id == "fake0123" and reapers[0].told_done


def test_exit_status_passes_through():
    calls = []
    code, *_ = run(FakeClient(FakeContainer(calls, [mux(2, b"illegal address\n")], exit_code=4)))
    assert code == 4  # EXIT_GPU_POISONED reaches the runner as it would from bwrap
    assert names(calls)[-1] == "remove"


def test_a_container_that_outlives_its_budget_is_killed_and_removed():
    calls = []
    container = FakeContainer(calls, [mux(1, encode_frame({"type": "hello"}))], hang=True)
    code, verdict, log, reapers, elapsed = run(FakeClient(container), timeout_s=0.5)
    assert code == EXIT_KILLED
    assert names(calls) == ["create", "attach", "start", "kill", "wait", "remove"]
    assert "run budget" in log and "killed" in log
    assert elapsed < 5
    assert reapers[0].told_done


def test_output_over_the_cap_is_cut_one_byte_past_it_and_the_container_killed():
    calls = []
    container = FakeContainer(calls, [mux(1, b"x" * 3000), mux(1, b"y" * 3000)], hang=True)
    code, verdict, log, _, _ = run(FakeClient(container), output_cap=4096)
    assert len(verdict) == 4097  # one byte over: the runner's FrameReader rejects the channel
    assert code == EXIT_KILLED
    assert "kill" in names(calls) and names(calls)[-1] == "remove"
    assert "exceeded 4096 bytes" in log


def test_a_failed_start_still_removes_the_container():
    calls = []
    code, verdict, log, reapers, _ = run(FakeClient(FakeContainer(calls, [], fail_start=True)))
    assert code == EXIT_LAUNCHER_FAILED
    assert names(calls) == ["create", "attach", "start", "remove"]
    assert "could not select device driver" in log
    assert verdict == b""
    assert reapers[0].told_done


def test_a_failed_create_reports_and_leaves_nothing_to_remove():
    code, verdict, log, reapers, _ = run(FakeClient(None, fail_create=True))
    assert code == EXIT_LAUNCHER_FAILED
    assert "No such image" in log and reapers == []


def test_demux_splits_large_frames_and_stops_at_a_truncated_one():
    a, b = socket.socketpair()
    a.sendall(mux(1, b"A" * 200_000) + mux(2, b"err") + struct.pack(">BxxxL", 1, 10) + b"12")
    a.close()
    out = list(demux(b))
    assert b"".join(c for s, c in out if s == 1) == b"A" * 200_000 + b"12"
    assert all(len(c) <= 65536 for _, c in out)
    assert [c for s, c in out if s == 2] == [b"err"]


def test_reaper_logic_removes_unless_told_done():
    removed = []
    assert reap(io.BytesIO(b""), lambda: removed.append(1)) is True  # launcher died (SIGKILL): EOF only
    assert reap(io.BytesIO(b"done"), lambda: removed.append(2)) is False
    assert removed == [1]


def test_the_reaper_process_leaves_the_launchers_session():
    """The runner kills the launcher's whole process group with SIGKILL; the reaper must survive it."""
    pytest.importorskip("docker", reason="the optional 'docker' extra is not installed")
    reaper = Reaper("no-such-container", env=dict(os.environ))
    try:
        assert os.getsid(reaper._proc.pid) == reaper._proc.pid != os.getsid(0)
    finally:
        reaper.done()
        assert reaper._proc.wait(timeout=30) == 0
