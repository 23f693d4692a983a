"""Runs inside a template sandbox (KERNELGRADE_SANDBOX_START=fork): imports once, forks one child per job.

Usage: python -I -B forkserver_template.py CONTROL_FD MODE [one-at-a-time]

The template runs in a bwrap sandbox as uid 0 with capabilities in that sandbox's user namespace
only (sandbox/backends/bwrap.py, template_spec). It imports torch, triton, numpy and safetensors
(in interpreter mode it also runs a canary; it never starts CUDA, which does not survive a
fork), then serves the control socket: each message is a small JSON header with, by SCM_RIGHTS,
the job's verdict pipe, log pipe, job pipe, ready pipe and the cgroup.procs files of its cgroups.
It never reads a job's files and never runs student code. Per job, the child (docs/forkserver.md):
  C1: own session; joins the job's cgroups (writes 0 into each cgroup.procs); signals ready;
      unshare(mount, pid, ipc, net, uts); forks C2, waits for it, exits with its status.
  C2: pid 1 of the new pid namespace: fresh /proc (with /proc/sys, /proc/sysrq-trigger, /proc/fs
      read-only again), /tmp, /dev/shm, and /job (a tmpfs with the files read from the job pipe,
      then read-only); a user namespace of its own where it is uid 65534; every capability
      dropped, no_new_privs, the seccomp filter; forks C3 and reaps until C3 ends.
  C3: the harness, run in this interpreter (its imports are already done), as a cold start.
The template reports each C1's exit status on the control socket.
one-at-a-time (root without a pids cgroup: the template runs as a host uid of its own, whose
RLIMIT_NPROC is then one job's): the template is a child subreaper, so a C2 whose C1 was killed
first becomes its child, and it forks a child only once it has no child left at all: the last
job's pid namespace is empty once its init (C2) is reaped.
"""
from __future__ import annotations

import array
import ctypes
import json
import os
import random
import resource
import select
import signal
import socket
import struct
import sys
import time

MAX_HEADER = 1 << 16
MAX_FDS = 8
NEWNS, NEWPID, NEWIPC, NEWNET, NEWUTS, NEWUSER = 0x20000, 0x20000000, 0x08000000, 0x40000000, 0x04000000, 0x10000000
RDONLY, NOSUID, NODEV, NOEXEC, REMOUNT, BIND, REC, PRIVATE = 1, 2, 4, 8, 32, 4096, 16384, 1 << 18
SANDBOX_UID = 65534
_libc = ctypes.CDLL(None, use_errno=True)
_libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p]


def _check(result: int, what: str) -> None:
    if result != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def _mount(source, target: str, fstype, flags: int, data=None) -> None:
    _check(_libc.mount(source and source.encode(), target.encode(), fstype and fstype.encode(), flags,
                       data and data.encode()), f"mount {target}")


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]


class _SockFilter(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint16), ("jt", ctypes.c_uint8), ("jf", ctypes.c_uint8), ("k", ctypes.c_uint32)]


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_uint16), ("filter", ctypes.POINTER(_SockFilter))]


def _exit_code(status: int) -> int:
    """bwrap's convention: a child killed by signal N is exit code 128 + N."""
    if os.WIFSIGNALED(status):
        return 128 + os.WTERMSIG(status)
    return os.WEXITSTATUS(status) if os.WIFEXITED(status) else 255


def _read_exact(fd: int, n: int) -> bytes:
    data = bytearray()
    while len(data) < n:
        chunk = os.read(fd, min(n - len(data), 1 << 20))
        if not chunk:
            raise EOFError("the job pipe closed early")
        data += chunk
    return bytes(data)


def _write_job(job_fd: int, limit: int) -> None:
    """Files from the job pipe into /job: (u16 name length, u64 size, name, bytes)*, then a zero length."""
    total = 0
    while True:
        name_len, size = struct.unpack("<HQ", _read_exact(job_fd, 10))
        if name_len == 0:
            return
        name = _read_exact(job_fd, name_len).decode("utf-8")
        total += size
        if "/" in name or name in (".", "..") or total > limit:
            raise ValueError("a bad job stream")
        with open(os.path.join("/job", name), "wb") as fh:
            left = size
            while left:
                chunk = _read_exact(job_fd, min(left, 1 << 20))
                fh.write(chunk)
                left -= len(chunk)
        os.chmod(os.path.join("/job", name), 0o644)


def _receive_job(job_fd: int, harness_bytes: int) -> bool:
    """A warm child's job (C2, still privileged; the harness waits on its go pipe and has run no
    student code): a u64 size, then the files as _write_job reads them, into /job, which is then
    remounted read-only at that size. False: the pipe closed first (the pool is closing)."""
    head = b""
    while len(head) < 8:
        chunk = os.read(job_fd, 8 - len(head))
        if not chunk:
            return False
        head += chunk
    (size,) = struct.unpack("<Q", head)
    limit = harness_bytes + size + (1 << 20)
    _mount(None, "/job", None, REMOUNT | NOSUID | NODEV, f"size={limit}")
    _write_job(job_fd, limit)
    os.close(job_fd)
    _mount(None, "/job", None, REMOUNT | RDONLY | NOSUID | NODEV)
    return True


def _drop_privileges(program: bytes) -> None:
    """A user namespace of our own where we are uid 65534, no capability left, the seccomp filter."""
    _check(_libc.unshare(NEWUSER), "unshare(CLONE_NEWUSER)")
    for name, text in (("setgroups", "deny"), ("uid_map", f"{SANDBOX_UID} 0 1"), ("gid_map", f"{SANDBOX_UID} 0 1")):
        with open(f"/proc/self/{name}", "w") as fh:
            fh.write(text)
    os.setresgid(SANDBOX_UID, SANDBOX_UID, SANDBOX_UID)
    os.setresuid(SANDBOX_UID, SANDBOX_UID, SANDBOX_UID)
    _check(_libc.prctl(47, 4, 0, 0, 0), "PR_CAP_AMBIENT_CLEAR_ALL")
    for cap in range(64):
        _libc.prctl(24, cap, 0, 0, 0)  # PR_CAPBSET_DROP (EINVAL past the last capability)
    _check(_libc.prctl(38, 1, 0, 0, 0), "PR_SET_NO_NEW_PRIVS")
    _check(_libc.capset(ctypes.byref(_CapHeader(0x20080522, 0)), (_CapData * 2)()), "capset")
    if program:
        prog = (_SockFilter * (len(program) // 8)).from_buffer_copy(program)
        _check(_libc.prctl(22, 2, ctypes.byref(_SockFprog(len(prog), prog)), 0, 0), "PR_SET_SECCOMP")


def _reseed() -> None:
    """Every child would share the template's generators: seed them afresh, as a new process does."""
    random.seed()
    import numpy
    import torch

    numpy.random.seed(int.from_bytes(os.urandom(4), "little"))
    torch.seed()


def _run_harness(verdict_fd: int, warm: tuple[str, int] | None = None) -> int:
    """The harness as `python /job/harness.py /job VERDICT_FD [--warm MODE CONTROL_FD]` runs it:
    as `__main__` (what a submission finds there must be the harness, as in a fresh sandbox),
    ending in SystemExit."""
    import runpy

    sys.argv = ["/job/harness.py", "/job", str(verdict_fd)]
    if warm is not None:
        sys.argv += ["--warm", warm[0], str(warm[1])]
    runpy.run_path("/job/harness.py", run_name="__main__")
    return 0


def _child(header: dict, fds: dict[str, int], program: bytes) -> int:
    """C1 (see the module's docstring). Returns the exit code; never returns into the template's loop."""
    os.setsid()
    _libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG: ends with the template
    for name in header.get("cgroups", []):  # into the job's cgroups before anything else
        os.write(fds[name], b"0")
        os.close(fds[name])
    null = os.open("/dev/null", os.O_RDONLY)
    os.dup2(null, 0)
    os.dup2(fds["log"], 1)
    os.dup2(fds["log"], 2)
    keep = {0, 1, 2, fds["verdict"], fds["job"], fds["ready"]}
    for fd in os.listdir("/proc/self/fd"):
        if int(fd) not in keep:
            try:
                os.close(int(fd))
            except OSError:
                pass
    os.write(fds["ready"], b"r")
    os.close(fds["ready"])
    _check(_libc.unshare(NEWNS | NEWPID | NEWIPC | NEWNET | NEWUTS), "unshare")
    _mount(None, "/", None, REC | PRIVATE)
    cpu = int(header["cpu_time_s"])  # the template has none: a fork starts its own count at zero
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu))
    init = os.fork()
    if init:  # C1 only waits from here: it keeps no capability either
        os.close(fds["job"])
        os.close(fds["verdict"])
        _check(_libc.prctl(38, 1, 0, 0, 0), "PR_SET_NO_NEW_PRIVS")
        _check(_libc.capset(ctypes.byref(_CapHeader(0x20080522, 0)), (_CapData * 2)()), "capset")
        return _exit_code(os.waitpid(init, 0)[1])
    # C2: pid 1 of the job's pid namespace
    _libc.prctl(1, signal.SIGKILL, 0, 0, 0)
    # Bytes and files (inodes: a file costs about a kilobyte of kernel memory however small)
    scratch = f"size={int(header['tmpfs_bytes'])},nr_inodes={int(header['tmpfs_files'])},mode=1777"
    _mount("proc", "/proc", "proc", NOSUID | NODEV | NOEXEC)
    for sub in ("/proc/sys", "/proc/sysrq-trigger", "/proc/fs", "/proc/irq", "/proc/bus"):  # as bwrap covers them
        if os.path.exists(sub):
            _mount(sub, sub, None, BIND | REC)
            _mount(None, sub, None, BIND | REMOUNT | RDONLY | NOSUID | NODEV | NOEXEC)
    for hidden in header.get("hidden", []):  # the data folder, say, under a bound Python environment
        if os.path.isdir(hidden):
            _mount("tmpfs", hidden, "tmpfs", NOSUID | NODEV | NOEXEC, "size=4k,mode=755")
            _mount(None, hidden, None, REMOUNT | RDONLY | NOSUID | NODEV | NOEXEC)
    _mount("tmpfs", "/tmp", "tmpfs", NOSUID | NODEV, scratch)
    _mount("tmpfs", "/dev/shm", "tmpfs", NOSUID | NODEV, scratch)
    if os.path.isdir("/dev/pts"):  # ptys of its own: the template's devpts is every child's otherwise
        _mount("devpts", "/dev/pts", "devpts", NOSUID | NOEXEC, "newinstance,ptmxmode=0666,mode=620")
    _mount("tmpfs", "/job", "tmpfs", NOSUID | NODEV, f"size={int(header['job_bytes'])},mode=755")
    _write_job(fds["job"], int(header["job_bytes"]))
    socket.sethostname("sandbox")
    os.chdir("/tmp")  # C2 too: a cwd left in the template's /tmp would be one every child shares
    warm = header.get("warm")
    if warm:  # C2 stays privileged until the job is in /job; the harness (C3) drops its own now
        go_r, go_w = os.pipe()
    else:
        os.close(fds["job"])
        _mount(None, "/job", None, REMOUNT | RDONLY | NOSUID | NODEV)
        _drop_privileges(program)
    harness = os.fork()
    if harness == 0:  # C3: pid 2, the harness
        code = 1
        try:
            if warm:
                os.close(go_w)
                os.close(fds["job"])
                _drop_privileges(program)
            _reseed()
            code = _run_harness(fds["verdict"], (str(header["mode"]), go_r) if warm else None)
        except SystemExit as exc:
            code = 0 if exc.code is None else exc.code if isinstance(exc.code, int) else 1
        except BaseException:  # noqa: BLE001 - as an uncaught exception ends a fresh interpreter
            import traceback

            traceback.print_exc()
            code = 1
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(code)
    os.close(fds["verdict"])
    if warm:
        os.close(go_r)
        if _receive_job(fds["job"], int(header["job_bytes"])):
            _drop_privileges(program)
            os.write(go_w, b"g")  # only now may the harness run the job (student code)
        os.close(go_w)  # end of file instead: the pool is closing, the harness ends
    while True:  # init: reap everything; end with the harness
        try:
            pid, status = os.wait()
        except ChildProcessError:
            return 255
        if pid == harness:
            return _exit_code(status)


def _reap(control: socket.socket, children: set[int], *, block: bool) -> None:
    """Reap children (`block`: until none is left at all) and report each C1's exit. A reaped pid
    that is no C1 (one-at-a-time: a C2 whose C1 died first) is not reported."""
    while True:
        try:
            pid, status = os.waitpid(-1, 0 if block else os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        if pid in children:
            children.discard(pid)
            code = os.waitstatus_to_exitcode(status)
            control.sendall(json.dumps({"type": "exit", "pid": pid, "code": code}).encode() + b"\n")


def _serve(control: socket.socket, program: bytes, one_at_a_time: bool) -> None:
    children: set[int] = set()
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    while True:
        readable, _, _ = select.select([control.fileno(), wake_r], [], [])
        if wake_r in readable:
            os.read(wake_r, 4096)
            _reap(control, children, block=False)
        if control.fileno() in readable:
            fds_array = array.array("i")
            message, ancdata, _, _ = control.recvmsg(MAX_HEADER, socket.CMSG_SPACE(MAX_FDS * fds_array.itemsize))
            if not message:
                return  # the trusted side closed the channel: the pool is shutting down
            for level, kind, data in ancdata:
                if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                    fds_array.frombytes(data[: len(data) - (len(data) % fds_array.itemsize)])
            header = json.loads(message)
            fds = dict(zip(header["fds"], fds_array))
            if len(os.listdir("/proc/self/task")) != 1:
                raise RuntimeError("the template has more than one thread: a fork would not be safe")
            if one_at_a_time:  # every process of the last job gone first (its pid namespace empty)
                _reap(control, children, block=True)
            pid = os.fork()
            if pid == 0:
                code = 255
                try:
                    signal.set_wakeup_fd(-1)
                    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
                    control.close()
                    code = _child(header, fds, program)
                except BaseException as exc:  # noqa: BLE001 - the start failed: our failure, said on the log
                    try:
                        os.write(2, f"fork-server child failed: {exc!r}\n".encode())
                    except OSError:
                        pass
                    code = 125
                os._exit(code)
            for fd in fds.values():
                os.close(fd)
            children.add(pid)
            control.sendall(json.dumps({"type": "started", "pid": pid, "id": header["id"]}).encode() + b"\n")


def main() -> int:
    control_fd, mode = int(sys.argv[1]), sys.argv[2]
    one_at_a_time = sys.argv[3:] == ["one-at-a-time"]
    if one_at_a_time:
        _check(_libc.prctl(36, 1, 0, 0, 0), "PR_SET_CHILD_SUBREAPER")
    started = time.perf_counter()
    import numpy  # noqa: F401
    import safetensors.torch  # noqa: F401
    import torch
    import triton
    import triton.language as tl

    if mode == "interpreter":  # the interpreter needs no CUDA: warm its first launch up
        @triton.jit
        def _canary(out, n, BLOCK: tl.constexpr):
            offs = tl.arange(0, BLOCK)
            tl.store(out + offs, offs * 2 + 1, mask=offs < n)

        canary = torch.zeros(16, dtype=torch.int32)
        _canary[(1,)](canary, 13, BLOCK=16)
        # every given check calls it; its first call imports (torch 2.13: DTensor and sympy, seconds on the CPU),
        # which each child would otherwise pay in its warm-up or its check (harness._warm_up)
        torch.testing.assert_close(canary, canary)
    program = b""
    if os.path.exists("/forkserver/seccomp.bpf"):
        with open("/forkserver/seccomp.bpf", "rb") as fh:
            program = fh.read()
    control = socket.socket(fileno=control_fd)
    control.sendall(json.dumps({"type": "ready", "startup_s": time.perf_counter() - started}).encode() + b"\n")
    _serve(control, program, one_at_a_time)
    return 0


if __name__ == "__main__":
    sys.exit(main())
