"""The sandbox backends the suites run against, and the Docker images the docker ones need.

`bwrap`: bubblewrap. `docker`: a container of the full kernelgrade image (the Dockerfile, as
production runs it; `KERNELGRADE_TEST_DOCKER_KIND=host` swaps in the host-system image, as on a
GPU host that cannot build the full one). `docker-host`: a container of the bare host-system
image that gets this machine's /usr and Python read-only. Docker images are built (or reused,
when their inputs have not changed) once per session; without an engine the docker variants are
skipped, or fail where KERNELGRADE_REQUIRE_DOCKER=1 (scripts/test sets it: CI must run them).
"""
from __future__ import annotations

import os
import shutil
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache

import pytest

from sandbox.backends import make_backend
from sandbox.backends.base import SandboxBackend
from service.bootstrap import build_grader
from service.config import Settings
from service.grading.pipeline import Grader

DEFAULT_BACKENDS = ("bwrap", "docker")
ALL_BACKENDS = ("bwrap", "docker", "docker-host")
FULL_TAG = "kernelgrade:latest"
HOST_TAG = "kernelgrade-sandbox:host"


def docker_required() -> bool:
    return os.environ.get("KERNELGRADE_REQUIRE_DOCKER") == "1"


def docker_kind(name: str) -> str:
    if name == "docker-host":
        return "host"
    return os.environ.get("KERNELGRADE_TEST_DOCKER_KIND", "full")


@cache
def _image(kind: str) -> tuple[str | None, str]:
    """(tag, "") once built or reused, or (None, why not). kind: full, host, stack or base (the
    debootstrap Debian the others start from)."""
    try:
        from sandbox.backends.docker import engine, images

        api = engine.client(timeout_s=10)
        try:
            api.ping()
        finally:
            api.close()
        say = lambda line: print(f"[docker images] {line}", file=sys.stderr, flush=True)  # noqa: E731
        started = time.monotonic()
        if kind == "host":
            built = [images.build_host_image(HOST_TAG, say=say)]
        elif kind == "stack":
            built = images.build_stack_images(say=say)
        elif kind == "base":
            built = [images.build_base_image(say=say)]
        else:
            built = [images.build_full_image(FULL_TAG, torch="cpu", say=say)]
        state = "reused" if all(b.cached for b in built) else "built"
        say(f"{kind}: {', '.join(b.tag for b in built)} {state} in {time.monotonic() - started:.1f} s")
        return built[0].tag, ""
    except Exception as exc:  # noqa: BLE001 - no SDK, no engine, a failed build: said in the skip
        print(f"[docker images] {kind}: not available: {type(exc).__name__}: {exc}", file=sys.stderr, flush=True)
        return None, f"{type(exc).__name__}: {exc}"


def _skipped(item: pytest.Item) -> bool:
    """Marked to be skipped whatever happens (skip, or skipif on a plain true condition: no GPU)."""
    return item.get_closest_marker("skip") is not None or any(
        m.args and m.args[0] is True for m in item.iter_markers("skipif"))


def prepare_images(items: list[pytest.Item]) -> None:
    """Build the images the selected tests need before the first of them runs (outside any
    test's timeout: a first build takes minutes)."""
    kinds: set[str] = set()
    for item in items:
        if _skipped(item):
            continue
        name = getattr(item, "callspec", None) and item.callspec.params.get("sandbox_backend_name")
        if isinstance(name, str) and name.startswith("docker"):
            kinds.add(docker_kind(name))
        if item.get_closest_marker("docker_images") is not None:
            kinds.update(item.get_closest_marker("docker_images").args)
    for kind in sorted(kinds):
        _image(kind)


def docker_image(name: str, kind: str | None = None) -> str:
    """The image tag for backend `name` (docker or docker-host), or of `kind`; skips (or fails
    where Docker is required) without an engine."""
    tag, why = _image(kind or docker_kind(name))
    if tag is None:
        message = f"{name} needs a Docker engine and its images: {why}"
        if docker_required():
            pytest.fail(message)
        pytest.skip(message)
    return tag


def backend_env(name: str) -> dict[str, str]:
    """KERNELGRADE_* variables that make Settings() choose backend `name`."""
    if name == "bwrap":
        if shutil.which("bwrap") is None:
            pytest.skip("bubblewrap (bwrap) is not installed: the sandbox tests need the real sandbox")
        return {"KERNELGRADE_SANDBOX": "bwrap"}
    return {"KERNELGRADE_SANDBOX": "docker", "KERNELGRADE_DOCKER_IMAGE": docker_image(name)}


def make_sandbox_backend(name: str) -> SandboxBackend:
    env = backend_env(name)
    previous = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:  # DockerOptions reads KERNELGRADE_DOCKER_* from the environment
        return make_backend(env["KERNELGRADE_SANDBOX"], python=sys.executable, hidden_paths=Settings().hidden_paths())
    finally:
        for key, value in previous.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def parametrize_backends(metafunc: pytest.Metafunc) -> None:
    """Tests that use the `sandbox_backend_name` fixture run once per backend (module scope, so
    a module's slow fixtures are built once per backend); `@pytest.mark.sandbox_backends(...)`
    names another set."""
    if "sandbox_backend_name" not in metafunc.fixturenames:
        return
    marker = metafunc.definition.get_closest_marker("sandbox_backends")
    names = marker.args if marker is not None else DEFAULT_BACKENDS
    params = [pytest.param(n, id=n, marks=[pytest.mark.docker] if n.startswith("docker") else []) for n in names]
    metafunc.parametrize("sandbox_backend_name", params, scope="module")


def grader_for(name: str, **overrides) -> Grader:
    """A grader on backend `name` (the docker backend reads KERNELGRADE_DOCKER_* when it is built)."""
    with pytest.MonkeyPatch.context() as patch:
        for key, value in backend_env(name).items():
            patch.setenv(key, value)
        return build_grader(Settings(**overrides))


@contextmanager
def warm_grader(name: str, *, ahead: int = 1, **overrides) -> Iterator[Grader]:
    """grader_for(name) with `ahead` sandboxes started ahead, as the service and `exercises validate`
    run: the next grading's sandbox starts while this one runs (and, as there, no compiling of the whole
    catalog ahead: each grading compiles its own). For modules that grade answer after answer."""
    grader = grader_for(name, warm_pool=ahead, compile_cache_prewarm=False, **overrides)
    grader.start()
    try:
        yield grader
    finally:
        grader.close()


def sandbox_name(backend_name: str) -> str:
    """What reports say in environment.sandbox for backend `backend_name`."""
    return "bwrap" if backend_name == "bwrap" else "docker"
