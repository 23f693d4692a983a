"""Sandbox images made on a machine with a Docker engine and no registry (`kernelgrade image build`).

- `full`: the kernelgrade image from the `Dockerfile` (API, workers, and the sandbox that holds its
  own Python), on a Debian base made here with debootstrap and `docker import`, its Python packages
  from a wheelhouse that pip fills on this machine (wheelhouse.py): the build needs no network.
- `host`: a bare image of empty folders and the merged-/usr links; the backend binds this machine's
  /usr and Python environment into it read-only, as bwrap does. Needs no network at all.
- `stack`: PostgreSQL and Redis for docker-compose.yml, on the same Debian base.

Every image carries a label with a hash of its inputs; an image whose label matches is reused, so
a second build costs seconds. Docker's own layer cache keeps the heavy layers (Python packages)
across source changes.
"""
from __future__ import annotations

import fcntl
import functools
import hashlib
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import tomllib
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sandbox.backends.bwrap import MERGED_USR_LINKS
from sandbox.backends.docker import engine, wheelhouse

INPUTS_LABEL = "kernelgrade.inputs"
PYTHON_LABEL = "kernelgrade.python"
REPO_ROOT = Path(__file__).resolve().parents[3]
# What the Dockerfile installs with apt, preinstalled in the Debian base so the build needs no apt.
BASE_PACKAGES = ("python3", "python3-venv", "python3-dev", "gcc", "libc6-dev", "bubblewrap", "util-linux",
                 "ca-certificates")
DEBIAN_PYTHON = {"bookworm": "3.11", "trixie": "3.13"}
# The files the Dockerfile copies (with .dockerignore): their contents decide the image.
FULL_INPUTS = ("Dockerfile", ".dockerignore", "pyproject.toml", "constraints", "deploy/constraints-gpu.txt",
               "deploy/healthcheck.py", "service", "sandbox", "exercises")
WHEELHOUSE_IN_CONTEXT = ".whl"  # gitignored; the Dockerfile's WHEELHOUSE build argument

Say = Callable[[str], None]


@dataclass(frozen=True)
class Built:
    tag: str
    id: str
    cached: bool
    seconds: float


def digest(*parts: str | bytes) -> str:
    h = hashlib.sha256()
    for part in parts:
        h.update(part.encode() if isinstance(part, str) else part)
        h.update(b"\0")
    return h.hexdigest()[:16]


def tree_digest(root: Path, names: Iterable[str]) -> str:
    """A hash of the files under `names` (folders recursively, caches skipped)."""
    h = hashlib.sha256()
    for name in names:
        path = root / name
        files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else []
        for f in files:
            if "__pycache__" in f.parts or f.suffix == ".pyc" or any(p.endswith(".egg-info") for p in f.parts):
                continue
            h.update(str(f.relative_to(root)).encode() + b"\0" + f.read_bytes() + b"\0")
    return h.hexdigest()[:16]


def _one_at_a_time(kind: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """One build of each kind at a time on this machine: parallel processes (test files, CI steps)
    wait for the first and then find its image."""
    def wrap(build: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(build)
        def locked(*args: Any, **kwargs: Any) -> Any:
            folder = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "kernelgrade" / "locks"
            folder.mkdir(parents=True, exist_ok=True)
            with open(folder / f"image-{kind}.lock", "w") as fh:
                fcntl.flock(fh, fcntl.LOCK_EX)
                return build(*args, **kwargs)
        return locked
    return wrap


def _existing(api: Any, tag: str, key: str) -> Any | None:
    try:
        image = api.images.get(tag)
    except Exception:  # noqa: BLE001 - not there (or not readable): build it
        return None
    labels = image.attrs.get("Config", {}).get("Labels") or {}
    return image if labels.get(INPUTS_LABEL) == key else None


def _import_tar(api: Any, tar_path: Path, tag: str, labels: dict[str, str]) -> Any:
    repository, _, version = tag.rpartition(":")
    changes = [f"LABEL {k}={v}" for k, v in labels.items()] + ['CMD ["/bin/sh"]']
    with open(tar_path, "rb") as fh:
        api.api.import_image_from_data(fh, repository=repository, tag=version, changes=changes)
    return api.images.get(tag)


# --- host: a bare image for this machine's own system ---------------------------------------------

def host_layout() -> list[tuple[str, str | None]]:
    """(path, symlink target or None for a folder) of the bare image, mirroring this machine."""
    entries: list[tuple[str, str | None]] = [
        (d, None) for d in ("usr", "etc", "proc", "dev", "sys", "job", "run", "opt")]
    for link in MERGED_USR_LINKS:
        if os.path.islink(link):
            entries.append((link.lstrip("/"), os.readlink(link)))
        elif os.path.isdir(link):
            entries.append((link.lstrip("/"), None))
    return entries


@_one_at_a_time("host")
def build_host_image(tag: str = "kernelgrade-sandbox:host", *, say: Say = print) -> Built:
    started = time.monotonic()
    layout = host_layout()
    key = digest("host-image/1", repr(layout))
    api = engine.client()
    try:
        if (image := _existing(api, tag, key)) is not None:
            return Built(tag, image.id, True, time.monotonic() - started)
        with tempfile.TemporaryDirectory(prefix="kg-image-") as scratch:
            tar_path = Path(scratch) / "host.tar"
            with tarfile.open(tar_path, "w") as tar:
                for path, target in layout:
                    info = tarfile.TarInfo(path)
                    if target is None:
                        info.type, info.mode = tarfile.DIRTYPE, 0o755
                    else:
                        info.type, info.linkname, info.mode = tarfile.SYMTYPE, target, 0o777
                    tar.addfile(info)
                info = tarfile.TarInfo("tmp")  # runc gives a tmpfs the mode of the folder under it
                info.type, info.mode = tarfile.DIRTYPE, 0o1777
                tar.addfile(info)
            image = _import_tar(api, tar_path, tag, {engine.SYSTEM_LABEL: "host", INPUTS_LABEL: key})
        say(f"imported {tag}: bare folders and links; /usr and Python come from this machine")
        return Built(tag, image.id, False, time.monotonic() - started)
    finally:
        api.close()


# --- base: Debian from debootstrap ----------------------------------------------------------------

@_one_at_a_time("base")
def build_base_image(*, suite: str = "bookworm", mirror: str = "http://deb.debian.org/debian",
                     say: Say = print) -> Built:
    """`kernelgrade-base:SUITE`: a minimal Debian with what the Dockerfile would apt-get install."""
    started = time.monotonic()
    tag = f"kernelgrade-base:{suite}"
    key = digest("base/1", suite, mirror, *BASE_PACKAGES)
    api = engine.client()
    try:
        if (image := _existing(api, tag, key)) is not None:
            return Built(tag, image.id, True, time.monotonic() - started)
        debootstrap = shutil.which("debootstrap") or (
            "/usr/sbin/debootstrap" if os.path.exists("/usr/sbin/debootstrap") else None)
        if debootstrap is None:
            raise RuntimeError("debootstrap is not installed (apt-get install debootstrap)")
        if os.geteuid() != 0:
            raise RuntimeError("debootstrap needs root (run `kernelgrade image build` as root, or pass --base IMAGE)")
        say(f"debootstrap {suite} (minbase + {' '.join(BASE_PACKAGES)}) from {mirror}…")
        with tempfile.TemporaryDirectory(prefix="kg-base-", dir=_scratch_root()) as scratch:
            rootfs, tar_path = Path(scratch) / "rootfs", Path(scratch) / "base.tar"
            subprocess.run([debootstrap, "--variant=minbase", f"--include={','.join(BASE_PACKAGES)}", suite,
                            str(rootfs), mirror], check=True, stdout=subprocess.DEVNULL)
            shutil.rmtree(rootfs / "var/cache/apt/archives", ignore_errors=True)
            (rootfs / "var/cache/apt/archives/partial").mkdir(parents=True, exist_ok=True)
            subprocess.run(["tar", "-C", str(rootfs), "--numeric-owner", "-cf", str(tar_path), "."], check=True)
            shutil.rmtree(rootfs)
            image = _import_tar(api, tar_path, tag, {INPUTS_LABEL: key, PYTHON_LABEL: DEBIAN_PYTHON.get(suite, "")})
        say(f"imported {tag}")
        return Built(tag, image.id, False, time.monotonic() - started)
    finally:
        api.close()


def _scratch_root() -> str | None:
    """Large scratch space for the root file system (/var/tmp survives a tmpfs /tmp)."""
    return "/var/tmp" if os.path.isdir("/var/tmp") else None


# --- full: the Dockerfile -------------------------------------------------------------------------

def requirements(root: Path = REPO_ROOT) -> list[str]:
    """Everything `pip install -e '.[docker]'` needs, and the build backend for it."""
    pyproject = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
    project, build = pyproject["project"], pyproject["build-system"]["requires"]
    return [*project["dependencies"], *project["optional-dependencies"]["docker"], *build, "wheel"]


def _python_of(api: Any, image: str) -> str | None:
    """The full version of the image's python3 (pip's markers compare it: `python_full_version <
    "3.11.3"`), or None where the image has none yet (the Dockerfile installs it)."""
    try:
        out = api.containers.run(image, ["python3", "-c", "import platform; print(platform.python_version())"],
                                 remove=True, network_mode="none")
    except Exception:  # noqa: BLE001 - no python3 in that image
        return None
    return out.decode().strip() or None


def _docker_build(api: Any, *, root: Path, tag: str, dockerfile: str, buildargs: dict[str, str],
                  labels: dict[str, str], say: Say) -> Any:
    """`docker build` through the engine's API (no BuildKit, no CLI needed); the host network for
    any download a step makes (an engine started with --bridge=none has no other)."""
    log = []
    try:
        for chunk in api.api.build(path=str(root), dockerfile=dockerfile, tag=tag, buildargs=buildargs,
                                   labels=labels, network_mode="host", rm=True, forcerm=True, decode=True):
            if "stream" in chunk:
                line = chunk["stream"].rstrip()
                log.append(line)
                if line.startswith("Step "):
                    say(f"  {line[:150]}")
            if "error" in chunk:
                raise RuntimeError(f"docker build of {tag} failed: {chunk['error']}\n" + "\n".join(log[-30:]))
    except RuntimeError:
        raise
    except Exception as exc:  # noqa: BLE001 - the engine's own errors, with the build's tail
        raise RuntimeError(f"docker build of {tag} failed: {exc}\n" + "\n".join(log[-30:])) from None
    return api.images.get(tag)


@_one_at_a_time("full")
def build_full_image(tag: str = "kernelgrade:latest", *, base: str | None = None, torch: str = "cpu",
                     root: Path = REPO_ROOT, say: Say = print) -> Built:
    """The Dockerfile's image on `base` (default: the Debian base, made here if missing)."""
    started = time.monotonic()
    api = engine.client(timeout_s=3600)
    try:
        if not base:
            base = build_base_image(say=say).tag
        base_image = api.images.get(base)
        python_version = _python_of(api, base) or (base_image.attrs.get("Config", {}).get("Labels") or {}).get(
            PYTHON_LABEL) or f"{sys.version_info.major}.{sys.version_info.minor}"
        constraints = root / ("constraints/cpu.txt" if torch == "cpu" else "deploy/constraints-gpu.txt")
        buildargs = {"BASE_IMAGE": base, "PYTHON": "python" + ".".join(python_version.split(".")[:2]),
                     "CONSTRAINTS": str(constraints.relative_to(root)), "WHEELHOUSE": WHEELHOUSE_IN_CONTEXT,
                     "PIP_NO_INDEX": "1"}
        reqs = requirements(root)
        wheels = wheelhouse.fill(python_full_version=python_version, constraints=constraints, requirements=reqs,
                                 key=digest("wheels/2", python_version, constraints.read_text(encoding="utf-8"), *reqs),
                                 say=say)
        key = digest("full/1", base_image.id, repr(sorted(buildargs.items())), wheels.name,
                     tree_digest(root, FULL_INPUTS))
        if (image := _existing(api, tag, key)) is not None:
            return Built(tag, image.id, True, time.monotonic() - started)
        say(f"docker build {tag} on {base} (Python {python_version}, torch from {constraints.relative_to(root)})…")
        context_wheels = root / WHEELHOUSE_IN_CONTEXT
        wheelhouse.link_into(wheels, context_wheels)
        try:
            image = _docker_build(api, root=root, tag=tag, dockerfile="Dockerfile", buildargs=buildargs,
                                  labels={INPUTS_LABEL: key}, say=say)
        finally:
            shutil.rmtree(context_wheels, ignore_errors=True)
        return Built(tag, image.id, False, time.monotonic() - started)
    finally:
        api.close()


# --- stack: PostgreSQL and Redis for docker-compose.yml ---------------------------------------------

STACK = {"postgres": "kernelgrade-postgres:local", "redis": "kernelgrade-redis:local"}


@_one_at_a_time("stack")
def build_stack_images(*, base: str | None = None, root: Path = REPO_ROOT, say: Say = print) -> list[Built]:
    """PostgreSQL and Redis images (deploy/images/) for a host that cannot pull postgres and redis."""
    api = engine.client(timeout_s=3600)
    built = []
    try:
        if base is None:
            base = build_base_image(say=say).tag
        base_id = api.images.get(base).id
        for name, tag in STACK.items():
            started = time.monotonic()
            folder = f"deploy/images/{name}"
            key = digest("stack/1", base_id, tree_digest(root, [folder]))
            if (image := _existing(api, tag, key)) is not None:
                built.append(Built(tag, image.id, True, time.monotonic() - started))
                continue
            say(f"docker build {tag} on {base}…")
            image = _docker_build(api, root=root / folder, tag=tag, dockerfile="Dockerfile",
                                  buildargs={"BASE_IMAGE": base}, labels={INPUTS_LABEL: key}, say=say)
            built.append(Built(tag, image.id, False, time.monotonic() - started))
    finally:
        api.close()
    return built
