"""Unprivileged host uids for sandboxes started by root without a pids cgroup: one per sandbox.

Why one each: RLIMIT_NPROC counts every task of a real uid on the host. Had every sandbox the
same uid (65534), sandboxes running side by side would share one budget: a fork bomb in one, or
just several busy ones, would make the next sandbox fail to start ("Creating new namespace
failed: Resource temporarily unavailable"), a failure of ours that a student caused. With a uid
of its own, each sandbox's `Limits.processes` is its alone, as with a pids cgroup.

The uids come from a block that no account uses (HOST_UID_BASE, HOST_UID_COUNT). A uid is held
by an exclusive `flock` on a file named after it, in a folder only root can write: held for the
sandbox's life, free again when its lock is released (or its holder dies), across every process
of the host. Leases start at a rotating place so that a uid is reused as late as possible.
"""
from __future__ import annotations

import fcntl
import itertools
import os
import stat
import tempfile
from pathlib import Path

HOST_UID_BASE = 2_046_820_352  # 0x7A000000: above the ranges that accounts, systemd and subuids use
HOST_UID_COUNT = 1024
_turn = itertools.count(os.getpid() * 7919)


class UidLease:
    """A host uid held until `release()`."""

    def __init__(self, uid: int, fd: int) -> None:
        self.uid = uid
        self._fd: int | None = fd

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing drops the flock
            self._fd = None


def _lock_dir() -> Path:
    """Root's folder of lock files, created 0700 and checked (owner, mode, not a link)."""
    folder = Path(tempfile.gettempdir()) / f"kernelgrade-host-uids-{os.geteuid()}"
    try:
        folder.mkdir(mode=0o700)
    except FileExistsError:
        pass
    info = os.lstat(folder)
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid() or info.st_mode & 0o077:
        raise OSError(f"{folder} is not a private folder of uid {os.geteuid()}: refusing to use it for uid locks")
    return folder


def lease_host_uid() -> UidLease:
    """A uid no other sandbox holds now. Raises OSError when all HOST_UID_COUNT are held."""
    folder = _lock_dir()
    start = next(_turn)
    for step in range(HOST_UID_COUNT):
        uid = HOST_UID_BASE + (start + step) % HOST_UID_COUNT
        fd = os.open(folder / str(uid), os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            continue
        return UidLease(uid, fd)
    raise OSError(f"all {HOST_UID_COUNT} sandbox host uids are in use")
