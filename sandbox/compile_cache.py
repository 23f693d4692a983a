"""The shared Triton compile cache (GPU mode), filled only by the trusted side.

Layout: `<root>/<key>/...` exactly as Triton's FileCacheManager writes it, bound read-only at
/triton-shared in every grading sandbox (sandbox/shared_triton_cache.py reads it first);
`<root>/.staging/<pid>-<id>/` is the writable cache of one compile run. A compile run is a
sandbox run, with that staging folder as Triton's cache, of a program the trusted side chose: the
reference solution, a mutant, or a canonical program that graded before (whitelisted fills only;
never a `fill_policy: any` program, whose fill is arbitrary code).

`publish` moves each new key folder of a staging folder into the root with one rename. Nothing in
a staging folder is opened or followed on this side: entries are checked with lstat only (a
folder with a key-like name holding only regular files, within the size caps), anything else is
deleted (`shutil.rmtree` does not follow symbolic links). A key folder appears complete or not at
all, and the first one published for a key stays: a later run never replaces it.
"""
from __future__ import annotations

import logging
import os
import re
import shutil
import stat
import tempfile
import uuid
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)

STAGING = ".staging"
# Triton names a key folder after a hash (base32 of sha256 in 3.x; hex in older releases).
KEY_NAME = re.compile(r"^[A-Za-z0-9_-]{16,128}$")
MiB = 1 << 20


def default_root(preferred: Path) -> Path:
    """`preferred`, unless an unprivileged sandbox uid could not reach it (a data folder under
    /root, say: "Can't find source path .../triton-shared: Permission denied"); then a folder of
    this uid in the system temp folder, as reachable as the job folders are."""
    from sandbox.backends.bwrap import blocked_for_others

    preferred.mkdir(parents=True, exist_ok=True)
    blocked = blocked_for_others(preferred)
    if blocked is None or os.geteuid() != 0:
        return preferred
    fallback = Path(tempfile.gettempdir()) / f"kernelgrade-triton-shared-{os.geteuid()}"
    log.warning("the shared compile cache %s is not reachable by the sandboxes' unprivileged uids (%s has no "
                "search permission for others): using %s instead (set KERNELGRADE_COMPILE_CACHE_DIR to choose)",
                preferred, blocked, fallback)
    return fallback


@dataclass
class Published:
    added: int = 0
    already: int = 0
    refused: int = 0


class SharedCompileCache:
    def __init__(self, root: Path, *, max_total_bytes: int = 4096 * MiB, max_entry_bytes: int = 256 * MiB) -> None:
        self.root = root
        self.max_total_bytes = max_total_bytes
        self.max_entry_bytes = max_entry_bytes
        self.root.mkdir(parents=True, exist_ok=True)
        info = os.lstat(self.root)  # ours, a real folder: it may live in a shared temp folder (default_root)
        if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid():
            raise OSError(f"{self.root} is not a folder of uid {os.geteuid()}: refusing it as the shared compile cache")
        os.chmod(self.root, 0o755)  # readable by every sandbox's uid, writable by us alone
        (self.root / STAGING).mkdir(exist_ok=True)
        os.chmod(self.root / STAGING, 0o711)  # an unprivileged sandbox must reach its own staging folder
        self._remove_stale_staging()

    def new_staging(self, owner: int | None = None) -> Path:
        """An empty folder for one compile run, writable by the sandbox: it maps to our uid, or runs
        as a host uid of its own, to which BwrapBackend.confine hands the folder (or `owner`)."""
        path = self.root / STAGING / f"{os.getpid()}-{uuid.uuid4().hex}"
        path.mkdir(mode=0o755)
        if owner is not None:
            os.chown(path, owner, owner)
        return path

    def publish(self, staging: Path) -> Published:
        """Move the staging folder's valid new key folders into the cache, then delete it."""
        result = Published()
        try:
            budget = self.max_total_bytes - self.size_bytes()
            with os.scandir(staging) as entries:
                for entry in entries:
                    size = self._entry_size(entry)
                    if size is None or size > self.max_entry_bytes or size > budget:
                        result.refused += 1
                        continue
                    target = self.root / entry.name
                    if os.path.lexists(target):
                        result.already += 1
                        continue
                    try:
                        os.rename(entry.path, target)  # atomic: readers see all of it or nothing
                    except OSError:  # another publisher won the race for this key
                        result.already += 1
                        continue
                    budget -= size
                    result.added += 1
        finally:
            shutil.rmtree(staging, ignore_errors=True)
        return result

    def discard(self, staging: Path) -> None:
        shutil.rmtree(staging, ignore_errors=True)

    def entries(self) -> int:
        with os.scandir(self.root) as entries:
            return sum(1 for e in entries if e.name != STAGING)

    def size_bytes(self) -> int:
        total = 0
        with os.scandir(self.root) as entries:
            for entry in entries:
                if entry.name != STAGING:
                    total += self._entry_size(entry) or 0
        return total

    @staticmethod
    def _entry_size(entry: os.DirEntry) -> int | None:
        """The size of a key folder of regular files, or None if it is anything else."""
        if not KEY_NAME.match(entry.name) or not entry.is_dir(follow_symlinks=False):
            return None
        total = 0
        with os.scandir(entry.path) as files:
            for item in files:
                info = item.stat(follow_symlinks=False)
                if not stat.S_ISREG(info.st_mode) or info.st_nlink != 1:
                    return None  # a link, a folder (Triton's unfinished tmp.*), a FIFO, a hard link
                total += info.st_size
        return total

    def _remove_stale_staging(self) -> None:
        """Staging folders of processes that died mid-run (their pid is in the name)."""
        for path in (self.root / STAGING).iterdir():
            pid = path.name.split("-", 1)[0]
            if pid.isdigit() and int(pid) != os.getpid() and not Path(f"/proc/{pid}").exists():
                shutil.rmtree(path, ignore_errors=True)
