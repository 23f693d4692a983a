"""The sandbox's seccomp filter (bwrap --seccomp): memory that no limit counts, nested user
namespaces and the kernel's keyrings, refused.

- `memfd_create` fails with ENOSYS, as on a kernel without it (libraries fall back to files, and
  /tmp and /dev/shm are size-capped tmpfs): a memfd's pages count against no rlimit.
- `unshare` and `clone` with CLONE_NEWUSER fail with EPERM, and `clone3` with ENOSYS (its flags
  are behind a pointer; glibc falls back to clone): a nested user namespace could mount a tmpfs
  of any size. bwrap's --disable-userns does the same where bwrap is 0.8 or newer.
- `add_key`, `keyctl` and `request_key` fail with EPERM (as in Docker's default profile): the
  kernel's keyrings are kept and counted per uid, not per sandbox, so a key is memory no limit of
  the sandbox counts and a channel to the next sandbox run as the same uid.
- Other architectures' system calls (32-bit x86 on x86-64, x32) kill the process (libseccomp's
  default), so the rules cannot be bypassed through another system call table.

The program is compiled by libseccomp (the system's libseccomp.so.2, through ctypes: its Python
binding is packaged for the system Python only) once per process. Where libseccomp is missing,
`filter_program` returns None and the sandbox runs without the filter, which the report says.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import errno
import logging
import os
import tempfile
import threading

log = logging.getLogger("kernelgrade.sandbox.seccomp")

CLONE_NEWUSER = 0x10000000
_ACT_ALLOW = 0x7FFF0000
_CMP_MASKED_EQ = 7


def _errno(code: int) -> int:
    return 0x00050000 | (code & 0xFFFF)


class _ArgCmp(ctypes.Structure):
    _fields_ = [("arg", ctypes.c_uint), ("op", ctypes.c_int), ("datum_a", ctypes.c_uint64),
                ("datum_b", ctypes.c_uint64)]


_lock = threading.Lock()
_program: list[bytes | None] = []


def filter_program() -> bytes | None:
    """The BPF program (bytes), built once; None where libseccomp cannot be loaded."""
    with _lock:
        if not _program:
            try:
                _program.append(_build())
            except OSError as exc:
                log.warning("no seccomp filter for sandboxes (%s): memfd and nested user namespaces are refused "
                            "only by bwrap's --disable-userns and the memory cgroup where there is one", exc)
                _program.append(None)
        return _program[0]


def _build() -> bytes:
    name = ctypes.util.find_library("seccomp") or "libseccomp.so.2"
    lib = ctypes.CDLL(name, use_errno=True)
    lib.seccomp_init.restype = ctypes.c_void_p
    lib.seccomp_init.argtypes = [ctypes.c_uint32]
    lib.seccomp_syscall_resolve_name.argtypes = [ctypes.c_char_p]
    lib.seccomp_rule_add_array.argtypes = [ctypes.c_void_p, ctypes.c_uint32, ctypes.c_int, ctypes.c_uint,
                                           ctypes.POINTER(_ArgCmp)]
    lib.seccomp_export_bpf.argtypes = [ctypes.c_void_p, ctypes.c_int]
    lib.seccomp_release.argtypes = [ctypes.c_void_p]
    ctx = lib.seccomp_init(_ACT_ALLOW)
    if not ctx:
        raise OSError("seccomp_init failed")
    try:
        newuser = (_ArgCmp * 1)(_ArgCmp(0, _CMP_MASKED_EQ, CLONE_NEWUSER, CLONE_NEWUSER))
        rules = [("memfd_create", _errno(errno.ENOSYS), None), ("clone3", _errno(errno.ENOSYS), None),
                 ("unshare", _errno(errno.EPERM), newuser), ("clone", _errno(errno.EPERM), newuser),
                 ("add_key", _errno(errno.EPERM), None), ("keyctl", _errno(errno.EPERM), None),
                 ("request_key", _errno(errno.EPERM), None)]
        for syscall, action, args in rules:
            number = lib.seccomp_syscall_resolve_name(syscall.encode())
            if number < 0:
                continue  # not a system call of this architecture
            done = lib.seccomp_rule_add_array(ctx, action, number, 1 if args is not None else 0, args)
            if done != 0:
                raise OSError(-done, f"seccomp_rule_add_array({syscall}) failed")
        with tempfile.TemporaryFile() as out:
            done = lib.seccomp_export_bpf(ctx, out.fileno())
            if done != 0:
                raise OSError(-done, "seccomp_export_bpf failed")
            out.seek(0)
            return out.read()
    finally:
        lib.seccomp_release(ctx)


def filter_fd(program: bytes) -> int:
    """A readable fd holding `program` (for bwrap --seccomp; the caller closes it after the start)."""
    read_fd, write_fd = os.pipe()
    try:
        os.write(write_fd, program)  # a few hundred bytes: far below a pipe's buffer
    finally:
        os.close(write_fd)
    return read_fd
