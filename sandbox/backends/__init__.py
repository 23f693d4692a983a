"""Sandbox backends by name."""
from __future__ import annotations

from pathlib import Path

from sandbox.backends.base import LaunchSpec, SandboxBackend, SandboxUnavailable
from sandbox.backends.bwrap import BwrapBackend
from sandbox.backends.local import UnsafeLocalBackend

__all__ = ["LaunchSpec", "SandboxBackend", "SandboxUnavailable", "make_backend"]


def make_backend(name: str, *, python: str, hidden_paths: list[Path],
                 allow_unsafe_local: bool = False) -> SandboxBackend:
    if name == "bwrap":
        return BwrapBackend(python=python, hidden_paths=hidden_paths)
    if name == "local":
        if not allow_unsafe_local:
            raise SandboxUnavailable(
                "the 'local' backend runs student code with no isolation at all; it is for debugging only. "
                "Set KERNELGRADE_ALLOW_UNSAFE_LOCAL_SANDBOX=yes-i-understand to use it anyway."
            )
        return UnsafeLocalBackend(python=python)
    if name == "docker":
        # Settings of this backend come from KERNELGRADE_DOCKER_* (sandbox/backends/docker/options.py).
        from sandbox.backends.docker.backend import DockerBackend

        return DockerBackend(python=python, hidden_paths=hidden_paths)
    raise SandboxUnavailable(f"unknown sandbox backend {name!r} (known: bwrap, docker, local)")
