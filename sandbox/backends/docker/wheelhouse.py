"""The wheels an image installs, downloaded by this machine's pip for the image's Python.

The build then needs no index at all (PIP_NO_INDEX): an image build on a machine whose containers
cannot reach PyPI (no network, a TLS proxy they do not trust) still works, and this machine's pip
configuration counts (its own indexes and caches: the CPU build of torch is on no public index).
pip evaluates environment markers against the interpreter it runs in, not `--python-version`, so
`complete()` adds what only the image's Python needs (`async-timeout; python_full_version <
"3.11.3"` for Debian 12's 3.11.2, say) until nothing is missing.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import cast

from packaging.markers import default_environment
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name, parse_wheel_filename

MAX_ROUNDS = 8


def cache_root() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "kernelgrade"


def _download(dest: Path, python_version: str, constraints: Path, reqs: list[str]) -> None:
    subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--dest", str(dest), "--only-binary=:all:",
                    "--python-version", python_version, "-c", str(constraints), *reqs], check=True)


def _requires(wheel: Path) -> list[Requirement]:
    with zipfile.ZipFile(wheel) as archive:
        name = next(n for n in archive.namelist() if re.fullmatch(r"[^/]+\.dist-info/METADATA", n))
        metadata = archive.read(name).decode("utf-8", "replace")
    return [Requirement(line.split(":", 1)[1].strip()) for line in metadata.splitlines()
            if line.startswith("Requires-Dist:")]


def missing(folder: Path, python_full_version: str, requirements: list[str]) -> list[str]:
    """Requirements that apply to that Python, reached from `requirements` through the wheels in
    `folder` (with the extras asked for on the way), that no wheel there meets."""
    # every marker variable is a string (packaging types the TypedDict's values as object when unpacked)
    env: dict[str, str] = {**cast(dict[str, str], default_environment()), "python_full_version": python_full_version,
                           "python_version": ".".join(python_full_version.split(".")[:2]),
                           "implementation_version": python_full_version}
    wheels: dict[str, list[tuple[str, Path]]] = {}
    for wheel in folder.glob("*.whl"):
        name, version, _, _ = parse_wheel_filename(wheel.name)
        wheels.setdefault(name, []).append((str(version), wheel))
    extras: dict[str, set[str]] = {}
    pending = [Requirement(r) for r in requirements]
    seen: set[tuple[str, frozenset[str]]] = set()
    needed = set()
    while pending:
        req = pending.pop()
        name = canonicalize_name(req.name)
        if req.marker is not None and not req.marker.evaluate({**env, "extra": ""}):
            continue
        candidates = [w for v, w in wheels.get(name, []) if req.specifier.contains(v, prereleases=True)]
        if not candidates:
            needed.add(str(Requirement(f"{req.name}{req.specifier}")))
            continue
        asked = extras.setdefault(name, set())
        asked.update(req.extras)
        if (name, frozenset(asked)) in seen:
            continue
        seen.add((name, frozenset(asked)))
        for dep in _requires(candidates[0]):
            if dep.marker is None or any(dep.marker.evaluate({**env, "extra": e}) for e in ("", *asked)):
                pending.append(Requirement(f"{dep.name}{'[' + ','.join(sorted(dep.extras)) + ']' if dep.extras else ''}"
                                           f"{dep.specifier}"))
    return sorted(needed)


def fill(*, python_full_version: str, constraints: Path, requirements: list[str], key: str,
         say: Callable[[str], None]) -> Path:
    """A complete wheelhouse in the cache (reused when `key` matches)."""
    folder = cache_root() / "wheelhouse" / key
    if (folder / ".complete").exists():
        return folder
    say(f"pip download for Python {python_full_version} (constraints {constraints.name})…")
    partial = folder.with_name(folder.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    minor = ".".join(python_full_version.split(".")[:2])
    _download(partial, minor, constraints, requirements)
    for _ in range(MAX_ROUNDS):
        needed = missing(partial, python_full_version, requirements)
        if not needed:
            break
        say(f"  and for Python {python_full_version} only: {', '.join(needed)}")
        _download(partial, minor, constraints, needed)
    else:
        raise RuntimeError(f"the wheelhouse for Python {python_full_version} is still missing {needed}")
    (partial / ".complete").touch()
    shutil.rmtree(folder, ignore_errors=True)
    partial.rename(folder)
    return folder


def link_into(folder: Path, target: Path) -> None:
    """The wheels in `target` (the build context), hard-linked where possible."""
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir()
    for wheel in folder.glob("*.whl"):
        try:
            os.link(wheel, target / wheel.name)
        except OSError:  # another file system
            shutil.copyfile(wheel, target / wheel.name)
