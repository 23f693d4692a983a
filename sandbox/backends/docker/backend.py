"""DockerBackend: one throw-away container per sandbox start, through the Docker engine."""
from __future__ import annotations

import json
import os
import sys
import threading
import time
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path

from sandbox.backends.base import Confinement, LaunchSpec, SandboxUnavailable, TritonCacheMount, size_words
from sandbox.backends.docker import engine
from sandbox.backends.docker.hostview import GpuView, gpu_view, system_binds
from sandbox.backends.docker.memory import LauncherMemoryReport
from sandbox.backends.docker.options import DockerOptions
from sandbox.backends.docker.reaper import owner_id, sweep
from sandbox.backends.docker.spec import SANDBOX_UID, ContainerView, container_spec
from sandbox.contract import DeviceMode, Limits

SWEEP_EVERY_S = 60.0
_sweep_lock = threading.Lock()
_last_sweep: dict[str, float] = {}  # per engine address


class DockerBackend:
    name = "docker"
    direct_output = False  # `docker run` relays the container's output
    # Warm: the pool's own job folder is bound when the container is created; the job is written
    # into it later, and `g` reaches the harness on the container's stdin (launcher.py).
    supports_warm = True

    def __init__(self, *, options: DockerOptions | None = None, python: str = sys.executable,
                 hidden_paths: Sequence[Path] = (), triton_cache: TritonCacheMount | None = None) -> None:
        """`python`: the worker's interpreter, which a host-system image runs (images.py)."""
        options = options or DockerOptions()
        # The engine refuses a CPU quota above the CPUs it has (this machine's, in the usual case).
        self.options = options.model_copy(update={"cpus": min(options.cpus, float(os.cpu_count() or 1))})
        self.python = python
        self.hidden_paths = [Path(p).resolve() for p in hidden_paths]
        self.triton_cache = triton_cache
        self._image: engine.SandboxImage | None = None

    def with_triton_cache(self, mount: TritonCacheMount | None) -> DockerBackend:
        """The same backend with another view of the shared compile cache (GPU mode)."""
        other = DockerBackend(options=self.options, python=self.python, hidden_paths=self.hidden_paths,
                              triton_cache=mount)
        other._image = self._image
        return other

    def check(self) -> None:
        """The engine answers and holds the image; stale sandbox containers are swept now and then."""
        self._image = engine.inspect_image(self.options.image, timeout_s=self.options.ping_timeout_s)
        self._sweep()

    def _sweep(self) -> None:
        address = engine.engine_address()
        with _sweep_lock:
            if time.monotonic() - _last_sweep.get(address, -SWEEP_EVERY_S) < SWEEP_EVERY_S:
                return
            _last_sweep[address] = time.monotonic()
        api = engine.client(self.options.ping_timeout_s)
        try:
            sweep(api)
        except Exception:  # noqa: BLE001 - the sweep is housekeeping; grading goes on
            pass
        finally:
            api.close()

    def process_limit(self, mode: DeviceMode, device_index: int = 0) -> str:
        return "docker pids_limit"

    def host_uid(self, mode: DeviceMode = DeviceMode.interpreter, device_index: int = 0) -> int | None:
        """The host uid the sandbox's files belong to (the compile cache's staging folder): the
        container's own uid, without user-namespace remapping."""
        return SANDBOX_UID

    def view(self, mode: DeviceMode, device_index: int) -> ContainerView:
        if self._image is None:
            self.check()
        assert self._image is not None
        host = self._image.host_system
        gpu: GpuView | None = None
        if mode is DeviceMode.gpu and self.options.gpu == "devices":
            gpu = _gpu_view(device_index, self.options.driver_dir)
            if not gpu.devices:
                raise SandboxUnavailable(f"GPU mode, but no NVIDIA device node for GPU {device_index} under /dev")
        return ContainerView(python=self.python if host else self.options.python,
                             system_binds=system_binds(self.python) if host else (), gpu=gpu,
                             triton_cache=self.triton_cache if mode is DeviceMode.gpu else None)

    def confine(self, *, limits: Limits, mode: DeviceMode, device_index: int, job_dir: Path) -> Confinement:
        """What the trusted side keeps of one container besides its command: the words for its
        memory limit, and a pipe on which the launcher reports its memory cgroup's counters."""
        return Confinement(memory_limit=f"docker memory cgroup {size_words(limits.memory_bytes)}, no swap",
                           memory_report=LauncherMemoryReport.pipe())

    def launch_spec(self, *, job_dir: Path, verdict_fd: int, mode: DeviceMode, device_index: int, limits: Limits,
                    control_fd: int | None = None, confinement: Confinement | None = None) -> LaunchSpec:
        """`confinement` (from `confine`): the launcher writes its memory report to that pipe,
        whose write end the spec passes on (the caller closes it once the launcher started)."""
        spec = container_spec(job_dir=job_dir, mode=mode, device_index=device_index, limits=limits,
                              options=self.options, view=self.view(mode, device_index),
                              hidden_paths=self.hidden_paths, owner=owner_id(), warm=control_fd is not None)
        budget_s = limits.startup_timeout_s + limits.run_timeout_s + limits.kill_grace_s
        argv = [sys.executable, "-P", "-s", "-m", "sandbox.backends.docker", "run",
                "--verdict-fd", str(verdict_fd), "--output-cap", str(limits.output_bytes),
                "--timeout", repr(budget_s), "--kill-grace", repr(limits.kill_grace_s),
                "--spec", json.dumps(spec)]
        if control_fd is not None:
            argv += ["--control-fd", str(control_fd)]
        report = confinement.memory_report if confinement is not None else None
        memory_fd = report.take_write_fd() if isinstance(report, LauncherMemoryReport) else None
        if memory_fd is not None:
            argv += ["--memory-fd", str(memory_fd)]
        return LaunchSpec(argv=argv, env=engine.launcher_env(), pass_fds=() if memory_fd is None else (memory_fd,))


@lru_cache(maxsize=16)
def _gpu_view(device_index: int, driver_dir: str | None) -> GpuView:
    return gpu_view(device_index, driver_dir=driver_dir)
