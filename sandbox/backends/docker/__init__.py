"""The docker sandbox backend: one throw-away container per sandbox start.

options.py   settings (KERNELGRADE_DOCKER_*)
spec.py      the exact container, as plain data (pure; no engine needed)
hostview.py  what of this machine the container is given: system folders, GPU nodes and driver
engine.py    the engine client, and a check that names what is missing in an operator's words
backend.py   DockerBackend: check, and the launcher command the runner starts
launcher.py  the trusted process that runs one container and copies its verdict stream
reaper.py    removal of containers whose launcher or worker died
images.py    sandbox images without a registry (`kernelgrade image build`)
"""
from __future__ import annotations

from typing import Any

__all__ = ["DockerBackend", "DockerOptions", "container_spec"]


def __getattr__(name: str) -> Any:
    # Lazy: the launcher and reaper processes (`python -m sandbox.backends.docker`) import this
    # package first and need none of the backend's imports.
    if name == "DockerBackend":
        from sandbox.backends.docker.backend import DockerBackend

        return DockerBackend
    if name == "DockerOptions":
        from sandbox.backends.docker.options import DockerOptions

        return DockerOptions
    if name == "container_spec":
        from sandbox.backends.docker.spec import container_spec

        return container_spec
    raise AttributeError(name)
