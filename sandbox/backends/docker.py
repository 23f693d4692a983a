"""docker backend: one throw-away container per sandbox start, through the Docker Engine API.

The container: the kernelgrade image itself (it holds the same Python, torch and triton), no
network (`network_mode="none"`), a read-only root filesystem, a size-capped tmpfs at /tmp (the
only writable place), user 65534, every capability dropped, no-new-privileges, cgroup limits on
pids, memory (no swap) and CPU, rlimits on CPU time, file size, open files and core dumps,
exactly one GPU (a DeviceRequest by index) in GPU mode and none on the interpreter, the job folder
bind-mounted read-only at /job, folders of the image that must stay hidden (the source tree and
the exercises with their solutions) covered by empty read-only tmpfs mounts, no log driver (the
output never lands on the host's disk), no health check, and optionally another OCI runtime
(gVisor: `runsc`).

How the verdict channel crosses the container boundary. The runner hands every backend the write
end of a pipe (`verdict_fd`) and starts `LaunchSpec.argv` with it; the harness writes frames to
the fd it is given. Here `argv` starts a small trusted launcher (`python -m
sandbox.backends.docker run ...`, this module) that creates the container and attaches to it
before starting it. Inside the container `/bin/sh` moves the container's stdout to fd 3 and
points fd 1 at the container's stderr, then execs the harness with verdict fd 3: frames go to
the container's stdout, and everything the student's code prints goes to its stderr. The Docker
daemon multiplexes the two streams on the attach connection; the launcher copies stdout bytes,
unparsed, to `verdict_fd` (at most `output_bytes + 1` of them: one byte over the cap is enough for
the runner's FrameReader to reject the channel, and the container is killed) and stderr bytes to
its own stdout, which the runner keeps (capped) as the log. No path is ever read back from
anything the container could write: the channel is the attach stream, the job folder is
read-only, and /tmp disappears with the container.

Clean-up. The launcher removes the container in a `finally`, and kills it once the whole run's
budget (`startup_timeout_s + run_timeout_s + kill_grace_s`) has passed. The runner's own
per-case deadlines kill the launcher's process group with SIGKILL, which no `finally` survives,
so before starting the container the launcher spawns a reaper in its own session: the reaper
waits for the launcher's pipe to close and, unless the launcher said `done`, force-removes the
container (which kills it). Every container carries the label `kernelgrade.sandbox=1`, so an
operator can list leftovers after a host crash: `docker ps -a --filter label=kernelgrade.sandbox`.

`container_spec()` is a pure function (no Docker needed) so that the exact specification can be
tested; it returns plain JSON-able data that is valid input to `client.containers.create()` of
the Docker SDK for Python (`docker>=7`, the optional `docker` extra).
"""
from __future__ import annotations

import argparse
import json
import os
import socket
import struct
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from pydantic_settings import BaseSettings, SettingsConfigDict

from sandbox.backends.base import LaunchSpec, SandboxUnavailable
from sandbox.contract import DeviceMode, Limits

SANDBOX_UID = 65534
JOB_MOUNT = "/job"
VERDICT_FD_IN_CONTAINER = 3
LABEL = "kernelgrade.sandbox"
EXIT_LAUNCHER_FAILED = 125  # like `docker run`: the container could not be run at all
EXIT_KILLED = 128 + 9
# Passed through to the launcher so that docker.from_env() finds the same daemon as the service.
DOCKER_CLIENT_ENV = ("DOCKER_HOST", "DOCKER_TLS_VERIFY", "DOCKER_CERT_PATH", "DOCKER_CONFIG")
# /bin/sh -c SCRIPT PYTHON: stdout becomes the verdict fd, the student's stdout joins stderr.
SHELL_SCRIPT = f'exec {VERDICT_FD_IN_CONTAINER}>&1 1>&2 && exec "$0" -I -B {JOB_MOUNT}/harness.py {JOB_MOUNT} {VERDICT_FD_IN_CONTAINER}'


class DockerOptions(BaseSettings):
    """Settings of the docker backend (environment: KERNELGRADE_DOCKER_*)."""

    model_config = SettingsConfigDict(env_prefix="KERNELGRADE_DOCKER_", extra="ignore")

    image: str = "kernelgrade:latest"
    python: str = "/opt/venv/bin/python"  # the interpreter inside the image
    runtime: str | None = None  # e.g. "runsc" (gVisor); None: the daemon's default (runc)
    cpus: float = 4.0  # CPU cores a sandbox may use (cgroup quota)
    gpu_driver: str = "nvidia"
    # Folders of the image the sandbox must not see, on top of the service's hidden paths.
    hidden_paths: list[str] = ["/opt/kernelgrade"]
    ping_timeout_s: float = 10.0


def _is_within(path: str, folder: str) -> bool:
    path, folder = os.path.normpath(path), os.path.normpath(folder)
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def container_spec(*, job_dir: Path | str, mode: DeviceMode, device_index: int, limits: Limits,
                   options: DockerOptions, hidden_paths: list[Path | str] = ()) -> dict[str, Any]:
    """The exact container: {"image", "command", "kwargs"} for `client.containers.create(image, command, **kwargs)`."""
    environment = {
        "PATH": "/usr/bin:/bin",
        "HOME": "/tmp",
        "TRITON_CACHE_DIR": "/tmp/triton-cache",
        "PYTHONDONTWRITEBYTECODE": "1",
        "NVIDIA_DRIVER_CAPABILITIES": "compute,utility",
        # The CUDA base image says NVIDIA_VISIBLE_DEVICES=all; under the `nvidia` runtime that
        # alone would expose every GPU. Name exactly the requested one, or none at all.
        "NVIDIA_VISIBLE_DEVICES": str(device_index) if mode is DeviceMode.gpu else "void",
    }
    if mode is DeviceMode.interpreter:
        environment["TRITON_INTERPRET"] = "1"

    tmpfs = {"/tmp": f"rw,nosuid,nodev,size={limits.tmpfs_bytes},mode=1777"}
    protected = ("/", "/tmp", JOB_MOUNT, "/usr", "/proc", "/dev", "/sys", "/etc")
    for hidden in sorted({os.path.normpath(str(p)) for p in [*options.hidden_paths, *hidden_paths]}):
        if not os.path.isabs(hidden) or hidden in protected or _is_within(options.python, hidden):
            continue  # never hide the interpreter or the system (that would break every run)
        if any(_is_within(hidden, p) for p in ("/tmp", JOB_MOUNT, "/proc", "/dev", "/sys")):
            continue
        tmpfs[hidden] = "ro,nosuid,nodev,noexec,size=4k,mode=0555"

    ulimits = [
        {"name": "cpu", "soft": limits.cpu_time_s, "hard": limits.cpu_time_s},
        {"name": "fsize", "soft": limits.file_size_bytes, "hard": limits.file_size_bytes},
        {"name": "nofile", "soft": limits.open_files, "hard": limits.open_files},
        {"name": "core", "soft": 0, "hard": 0},
        # No RLIMIT_NPROC: it counts every process of uid 65534 on the host, across sandboxes;
        # pids_limit below is per container.
    ]
    kwargs: dict[str, Any] = {
        "user": f"{SANDBOX_UID}:{SANDBOX_UID}",
        "environment": environment,
        "working_dir": "/tmp",
        "hostname": "sandbox",
        "labels": {LABEL: "1", "kernelgrade.job": Path(job_dir).name},
        "network_mode": "none",
        "read_only": True,
        "tmpfs": tmpfs,
        "mounts": [{"Type": "bind", "Source": str(job_dir), "Target": JOB_MOUNT, "ReadOnly": True,
                    "BindOptions": {"Propagation": "rprivate"}}],
        "cap_drop": ["ALL"],
        "security_opt": ["no-new-privileges"],
        "privileged": False,
        "ipc_mode": "private",
        "shm_size": limits.tmpfs_bytes,
        "pids_limit": limits.processes,
        "mem_limit": limits.memory_bytes,
        "memswap_limit": limits.memory_bytes,  # equal to mem_limit: no swap
        "nano_cpus": int(options.cpus * 1e9),
        "ulimits": ulimits,
        "log_config": {"type": "none", "config": {}},
        "healthcheck": {"test": ["NONE"]},
        "stdin_open": False,
        "tty": False,
    }
    if mode is DeviceMode.gpu:
        kwargs["device_requests"] = [{"driver": options.gpu_driver, "device_ids": [str(device_index)],
                                      "capabilities": [["gpu"]]}]
    if options.runtime:
        kwargs["runtime"] = options.runtime
    return {"image": options.image, "command": ["/bin/sh", "-c", SHELL_SCRIPT, options.python], "kwargs": kwargs}


class DockerBackend:
    name = "docker"
    supports_warm = False  # the job folder is mounted when the container is created

    def __init__(self, *, options: DockerOptions | None = None, hidden_paths: list[Path] = ()) -> None:
        self.options = options or DockerOptions()
        self.hidden_paths = [str(p) for p in hidden_paths]

    def check(self) -> None:
        try:
            import docker
        except ImportError:
            raise SandboxUnavailable("the docker backend needs the Docker SDK: pip install 'kernelgrade[docker]'") from None
        try:
            client = docker.from_env(timeout=self.options.ping_timeout_s)
            client.ping()
        except Exception as exc:  # noqa: BLE001 - any failure to reach the daemon is ours
            raise SandboxUnavailable(f"the Docker daemon is not reachable (DOCKER_HOST={os.environ.get('DOCKER_HOST', 'default')}): {exc}") from None
        try:
            client.images.get(self.options.image)
        except Exception as exc:  # noqa: BLE001
            raise SandboxUnavailable(f"sandbox image {self.options.image!r} is not on this Docker host: {exc}") from None
        finally:
            client.close()

    def process_limit(self, mode: DeviceMode, device_index: int = 0) -> str:
        return "docker pids_limit"

    def launch_spec(self, *, job_dir: Path, verdict_fd: int, mode: DeviceMode, device_index: int, limits: Limits,
                    control_fd: int | None = None) -> LaunchSpec:
        if control_fd is not None:
            raise SandboxUnavailable("the docker backend has no warm start")
        spec = container_spec(job_dir=job_dir, mode=mode, device_index=device_index, limits=limits,
                              options=self.options, hidden_paths=self.hidden_paths)
        hard_timeout = limits.startup_timeout_s + limits.run_timeout_s + limits.kill_grace_s
        argv = [sys.executable, "-I", "-m", "sandbox.backends.docker", "run",
                "--verdict-fd", str(verdict_fd), "--output-cap", str(limits.output_bytes),
                "--timeout", repr(hard_timeout), "--kill-grace", repr(limits.kill_grace_s),
                "--spec", json.dumps(spec)]
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}
        env.update({k: os.environ[k] for k in DOCKER_CLIENT_ENV if k in os.environ})
        return LaunchSpec(argv=argv, env=env)


# --- the launcher (trusted side, runs as the runner's child) ------------------------------------

_DOCKER_FRAME = struct.Struct(">BxxxL")  # the daemon's multiplexing header: stream, 3 pad, size


def demux(sock: socket.socket) -> Iterator[tuple[int, bytes]]:
    """(stream, chunk) from the daemon's attach stream (1 stdout, 2 stderr), chunks of <= 64 KiB."""
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


def _raw_socket(attached) -> socket.socket:
    """The socket under what `attach_socket` returned, with the client's read timeout removed."""
    sock = getattr(attached, "_sock", attached)
    sock.settimeout(None)  # the harness may be silent for minutes (start-up, a long case)
    return sock


class Reaper:
    """Removes the container if the launcher dies without saying `done` (SIGKILL from the runner)."""

    def __init__(self, container_id: str, env: dict[str, str] | None = None) -> None:
        self._proc = subprocess.Popen(
            [sys.executable, "-I", "-m", "sandbox.backends.docker", "reap", container_id],
            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            start_new_session=True, env=env, close_fds=True)

    def done(self) -> None:
        try:
            self._proc.stdin.write(b"done")
            self._proc.stdin.close()
        except OSError:
            pass


def reap(stream, remove: Callable[[], None]) -> bool:
    """The reaper's whole logic: wait for EOF; remove unless the launcher said done. True if removed."""
    data = b""
    while chunk := stream.read(64):
        data += chunk
    if data.startswith(b"done"):
        return False
    remove()
    return True


def launch(spec: dict[str, Any], *, client, verdict_fd: int, log_fd: int, output_cap: int, timeout_s: float,
           kill_grace_s: float, reaper_factory: Callable[[str], Any] = Reaper) -> int:
    """Run one container to completion; returns the exit status the runner should see."""
    container = None
    reaper = None
    killed = threading.Event()

    def log(text: str) -> None:
        try:
            _write_all(log_fd, f"[docker sandbox] {text}\n".encode())
        except OSError:
            pass

    def kill(reason: str) -> None:
        if killed.is_set():
            return
        killed.set()
        log(reason)
        try:
            container.kill()
        except Exception as exc:  # noqa: BLE001 - gone already; remove() below settles it
            log(f"kill failed: {exc}")

    timer = None
    try:
        container = client.containers.create(spec["image"], spec["command"], **spec["kwargs"])
        reaper = reaper_factory(container.id)
        attached = container.attach_socket(params={"stdout": 1, "stderr": 1, "stream": 1, "logs": 0})
        sock = _raw_socket(attached)
        container.start()
        timer = threading.Timer(timeout_s, kill, args=(f"run budget of {timeout_s:g} s exhausted: container killed",))
        timer.daemon = True
        timer.start()
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
    except Exception as exc:  # noqa: BLE001 - our failure (daemon, image, spec), never the student's
        log(f"could not run the sandbox container: {type(exc).__name__}: {exc}")
        return EXIT_LAUNCHER_FAILED
    finally:
        if timer is not None:
            timer.cancel()
        if container is not None:
            try:
                container.remove(force=True)
            except Exception as exc:  # noqa: BLE001
                log(f"could not remove container {container.id}: {exc}")
            else:
                if reaper is not None:
                    reaper.done()


def _main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m sandbox.backends.docker")
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run")
    run.add_argument("--verdict-fd", type=int, required=True)
    run.add_argument("--output-cap", type=int, required=True)
    run.add_argument("--timeout", type=float, required=True)
    run.add_argument("--kill-grace", type=float, required=True)
    run.add_argument("--spec", required=True)
    reap_cmd = sub.add_parser("reap")
    reap_cmd.add_argument("container_id")
    args = parser.parse_args(argv)

    import docker

    if args.command == "reap":
        def remove() -> None:
            client = docker.from_env()
            try:
                client.api.remove_container(args.container_id, force=True)
            except docker.errors.NotFound:
                pass
        reap(sys.stdin.buffer, remove)
        return 0

    client = docker.from_env()
    try:
        return launch(json.loads(args.spec), client=client, verdict_fd=args.verdict_fd, log_fd=sys.stdout.fileno(),
                      output_cap=args.output_cap, timeout_s=args.timeout, kill_grace_s=args.kill_grace,
                      reaper_factory=lambda cid: Reaper(cid, env=dict(os.environ)))
    finally:
        os.close(args.verdict_fd)
        client.close()


if __name__ == "__main__":
    sys.exit(_main())
