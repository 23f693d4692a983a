"""UNSAFE: runs the harness as a plain child process, no isolation. For debugging only."""
from __future__ import annotations

from pathlib import Path

from sandbox.backends.base import LaunchSpec
from sandbox.contract import DeviceMode, Limits


class UnsafeLocalBackend:
    name = "local"
    direct_output = True
    supports_warm = True

    def __init__(self, *, python: str) -> None:
        self.python = python

    def check(self) -> None:
        return None

    def process_limit(self, mode: DeviceMode, device_index: int = 0) -> str:
        return "none"

    def launch_spec(self, *, job_dir: Path, verdict_fd: int, mode: DeviceMode, device_index: int, limits: Limits,
                    control_fd: int | None = None) -> LaunchSpec:
        env = {"PATH": "/usr/bin:/bin", "HOME": str(job_dir), "TRITON_CACHE_DIR": str(job_dir / "triton-cache"),
               "PYTHONDONTWRITEBYTECODE": "1"}
        if mode is DeviceMode.interpreter:
            env["TRITON_INTERPRET"] = "1"
        else:
            env["CUDA_VISIBLE_DEVICES"] = str(device_index)
        warm = ["--warm", mode.value, str(control_fd)] if control_fd is not None else []
        return LaunchSpec(argv=[self.python, "-I", "-B", str(job_dir / "harness.py"), str(job_dir), str(verdict_fd),
                                *warm],
                          env=env)
