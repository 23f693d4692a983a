"""The Docker engine as the backend needs it: a client, and a check that says in an operator's
words what is missing (the SDK, the engine, the image), so that a grading fails as not_gradable.

The Docker SDK for Python is the optional `docker` extra; it is imported only here and in the
launcher and reaper processes.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from sandbox.backends.base import SandboxUnavailable

# Passed to the launcher and the reaper so that they find the same engine as the service.
CLIENT_ENV = ("DOCKER_HOST", "DOCKER_TLS_VERIFY", "DOCKER_CERT_PATH", "DOCKER_CONFIG")
SYSTEM_LABEL = "kernelgrade.sandbox.system"  # "host": a bare image that gets the worker's system (images.py)
BUILD_HINT = "build it with `kernelgrade image build` (docs/deploy.md)"


@dataclass(frozen=True)
class SandboxImage:
    id: str
    host_system: bool  # a bare host-system image: /usr and the Python environment come from the worker


def engine_address() -> str:
    return os.environ.get("DOCKER_HOST") or "unix:///var/run/docker.sock"


def client(timeout_s: float = 60.0) -> Any:
    """A Docker SDK client for the engine of DOCKER_HOST (default: the local socket)."""
    try:
        import docker
    except ImportError:
        raise SandboxUnavailable("the docker sandbox backend needs the Docker SDK for Python: "
                                 "pip install 'kernelgrade[docker]'") from None
    try:
        # types-docker says int; the SDK hands the timeout to requests, which takes a float
        return docker.from_env(timeout=timeout_s)  # type: ignore[arg-type]  # asks the engine for its API version: a first ping
    except Exception as exc:  # noqa: BLE001 - no engine there, a bad DOCKER_HOST, missing TLS files, ...
        raise unreachable(exc) from None


def unreachable(exc: Exception) -> SandboxUnavailable:
    return SandboxUnavailable(
        f"the Docker engine is not reachable at {engine_address()} ({type(exc).__name__}: {exc}); "
        "start it (systemctl start docker, or dockerd) or point DOCKER_HOST at it")


def inspect_image(name: str, *, timeout_s: float) -> SandboxImage:
    """Ping the engine and look up the sandbox image; SandboxUnavailable says which is missing."""
    api = client(timeout_s)
    try:
        try:
            api.ping()
        except Exception as exc:  # noqa: BLE001 - any failure to reach the engine is ours, not the student's
            raise unreachable(exc) from None
        try:
            image = api.images.get(name)
        except Exception as exc:  # noqa: BLE001
            raise SandboxUnavailable(f"the sandbox image {name!r} is not on the Docker engine at "
                                     f"{engine_address()} ({type(exc).__name__}); {BUILD_HINT}") from None
        labels = image.attrs.get("Config", {}).get("Labels") or {}
        return SandboxImage(id=image.id, host_system=labels.get(SYSTEM_LABEL) == "host")
    finally:
        api.close()


def launcher_env() -> dict[str, str]:
    """The environment of the launcher and reaper processes: PATH, the engine's address, and where
    the Docker SDK and this package are (nothing of the service's own environment)."""
    import sandbox

    paths = [os.path.dirname(os.path.dirname(os.path.abspath(sandbox.__file__)))]
    try:
        import docker

        paths.append(os.path.dirname(os.path.dirname(os.path.abspath(docker.__file__))))
    except ImportError:
        pass  # check() says so before anything is launched
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PYTHONPATH": os.pathsep.join(dict.fromkeys(paths))}
    env.update({k: os.environ[k] for k in CLIENT_ENV if k in os.environ})
    return env
