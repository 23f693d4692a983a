"""The launcher: a trusted process, the runner's child, that runs one sandbox container.

The runner hands every backend the write end of a pipe (the verdict channel) and starts
`LaunchSpec.argv` with it. Here that is this process: it creates the container, attaches to it
before starting it, and copies the container's stdout (where the harness writes its frames) to
the verdict fd unparsed, at most `output_cap + 1` bytes (one byte over is enough for the runner's
FrameReader to reject the channel, and the container is killed), and its stderr (everything the
student's code prints) to its own stdout, which the runner keeps capped as the log. Nothing is
read back from anything the container could write: only the attach stream.

A warm start (a pool's sandbox, started before its job exists) also gets the runner's control
pipe: what arrives there (`g` once the job is written, or end of file when the pool closes) goes
to the container's stdin over the same attach stream, and the run's budget starts with `g`.

With a memory fd (the runner's pipe of its own for it), it tells the runner whether the container
met its memory limit: from the container's cgroup on this host and the engine's State.OOMKilled,
never from anything the container wrote (memory.py).

It removes the container in every case: in a `finally`, after the run's whole budget, when the
runner closes the channel, when its parent dies (PR_SET_PDEATHSIG), and through a reaper process
when the runner kills it with SIGKILL (reaper.py).
"""
from __future__ import annotations

import ctypes
import os
import signal
import socket
import struct
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any

from sandbox.backends.docker.memory import MemoryWatch

EXIT_LAUNCHER_FAILED = 125  # like `docker run`: the container could not be run at all
EXIT_KILLED = 128 + 9
PR_SET_PDEATHSIG = 1

_DOCKER_FRAME = struct.Struct(">BxxxL")  # the engine's multiplexing header: stream, 3 pad, size


def demux(sock: socket.socket) -> Iterator[tuple[int, bytes]]:
    """(stream, chunk) from the engine's attach stream (1 stdout, 2 stderr), chunks of <= 64 KiB."""
    def read_exactly(n: int) -> bytes | None:
        buf = bytearray()
        while len(buf) < n:
            part = sock.recv(n - len(buf))
            if not part:
                return None
            buf += part
        return bytes(buf)

    while True:
        header = read_exactly(_DOCKER_FRAME.size)
        if header is None:
            return
        stream, size = _DOCKER_FRAME.unpack(header)
        while size:
            part = sock.recv(min(size, 65536))
            if not part:
                return
            size -= len(part)
            yield stream, part


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _raw_socket(attached: Any) -> socket.socket:
    """The socket under what `attach_socket` returned, with the client's read timeout removed."""
    sock = getattr(attached, "_sock", attached)
    sock.settimeout(None)  # the harness may be silent for minutes (start-up, a long case)
    return sock


def die_with_parent() -> None:
    """SIGKILL this process when the runner thread that started it dies (as bwrap --die-with-parent);
    the reaper then removes the container."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        return
    if os.getppid() == 1:  # the parent died before the call took effect
        os.kill(os.getpid(), signal.SIGKILL)


def _forward_control(control_fd: int, sock: socket.socket, on_go: Callable[[], None]) -> None:
    """The control pipe to the container's stdin, until end of file (then stdin closes too)."""
    try:
        while chunk := os.read(control_fd, 64):
            sock.sendall(chunk)
            if b"g" in chunk:
                on_go()
    except OSError:
        pass  # the container or the runner went away: the main loop settles it
    finally:
        try:
            sock.shutdown(socket.SHUT_WR)
        except OSError:
            pass
        os.close(control_fd)


def launch(spec: dict[str, Any], *, client: Any, verdict_fd: int, log_fd: int, output_cap: int, timeout_s: float,
           kill_grace_s: float, reaper_factory: Callable[[str], Any], control_fd: int | None = None,
           memory_fd: int | None = None) -> int:
    """Run one container to completion; returns the exit status the runner should see."""
    container: Any = None  # the SDK's Container, once created
    reaper = None
    watch = MemoryWatch(memory_fd) if memory_fd is not None else None
    killed = threading.Event()
    budget_lock = threading.Lock()

    def log(text: str) -> None:
        try:
            _write_all(log_fd, f"[docker sandbox] {text}\n".encode())
        except OSError:
            pass

    def send_kill() -> None:
        try:
            container.kill()
        except Exception as exc:  # noqa: BLE001 - gone already; remove() below settles it
            log(f"kill failed: {exc}")

    killers: list[threading.Thread] = []

    def kill(reason: str) -> None:
        """Kill the container without blocking the caller: the engine's kill can wait for the
        container's output to be copied out, so the attach stream must keep being drained meanwhile
        (a blocking kill in the reading loop waited for the run budget, 60 s in a test)."""
        if killed.is_set():
            return
        killed.set()
        log(reason)
        killer = threading.Thread(target=send_kill, name="docker-kill", daemon=True)
        killers.append(killer)
        killer.start()

    timer: threading.Timer | None = None
    finished = False

    def start_budget() -> None:
        nonlocal timer
        with budget_lock:
            if timer is None and not finished:
                timer = threading.Timer(timeout_s, kill,
                                        args=(f"run budget of {timeout_s:g} s exhausted: container killed",))
                timer.daemon = True
                timer.start()

    try:
        container = client.containers.create(spec["image"], spec["command"], **spec["kwargs"])
        reaper = reaper_factory(container.id)
        params = {"stdout": 1, "stderr": 1, "stream": 1, "logs": 0, **({"stdin": 1} if control_fd is not None else {})}
        sock = _raw_socket(container.attach_socket(params=params))
        container.start()
        if watch is not None:
            watch.attach(container)
        if control_fd is None:
            start_budget()
        else:
            threading.Thread(target=_forward_control, args=(control_fd, sock, start_budget), daemon=True).start()
            control_fd = None  # the forwarder closes it
        forwarded = 0
        try:
            for stream, chunk in demux(sock):
                if stream == 1:
                    if forwarded > output_cap:
                        continue  # already over: keep draining until the kill lands
                    room = output_cap + 1 - forwarded
                    _write_all(verdict_fd, chunk[:room])
                    forwarded += min(len(chunk), room)
                    if forwarded > output_cap:
                        kill(f"verdict channel exceeded {output_cap} bytes: container killed")
                else:
                    _write_all(log_fd, chunk)
        except BrokenPipeError:
            kill("the runner closed the verdict channel: container killed")
        finally:
            try:
                sock.close()
            except OSError:
                pass
        try:
            status = container.wait(timeout=kill_grace_s)
        except Exception:  # noqa: BLE001 - still running after its output closed: kill it
            kill("container did not exit after closing its output: killed")
            status = container.wait(timeout=kill_grace_s)
        if killed.is_set():
            return EXIT_KILLED  # we killed it: the runner reports SIGKILL, whatever the container said
        return int(status.get("StatusCode", EXIT_LAUNCHER_FAILED))
    except Exception as exc:  # noqa: BLE001 - our failure (engine, image, spec), never the student's
        log(f"could not run the sandbox container: {type(exc).__name__}: {exc}")
        return EXIT_LAUNCHER_FAILED
    finally:
        with budget_lock:
            finished = True
            if timer is not None:
                timer.cancel()
        if control_fd is not None:
            os.close(control_fd)
        for killer in killers:  # its log line goes to log_fd, which is the caller's once we return
            killer.join(kill_grace_s)
        if watch is not None:  # before the removal: the engine forgets the container's state with it
            if container is not None:
                watch.finish(container)
            watch.close()
        if container is not None:
            try:
                container.remove(force=True)
            except Exception as exc:  # noqa: BLE001
                log(f"could not remove container {container.id}: {exc}")
            else:
                if reaper is not None:
                    reaper.done()


def main(*, spec: dict[str, Any], verdict_fd: int, output_cap: int, timeout_s: float, kill_grace_s: float,
         control_fd: int | None = None, memory_fd: int | None = None) -> int:
    """The `run` command: this process's whole life."""
    from sandbox.backends.docker import engine
    from sandbox.backends.docker.reaper import Reaper

    die_with_parent()
    try:
        api = engine.client()
    except Exception as exc:  # noqa: BLE001 - SandboxUnavailable, with the operator's message
        _write_all(sys.stdout.fileno(), f"[docker sandbox] {exc}\n".encode())
        return EXIT_LAUNCHER_FAILED
    try:
        return launch(spec, client=api, verdict_fd=verdict_fd, log_fd=sys.stdout.fileno(), output_cap=output_cap,
                      timeout_s=timeout_s, kill_grace_s=kill_grace_s,
                      reaper_factory=lambda cid: Reaper(cid, env=dict(os.environ)), control_fd=control_fd,
                      memory_fd=memory_fd)
    finally:
        os.close(verdict_fd)
        api.close()
