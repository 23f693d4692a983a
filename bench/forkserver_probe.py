"""Feasibility probe for a fork-server sandbox start (issue #20.4, step 3; NOT used by the service).

    python bench/forkserver_probe.py --jobs 3

Starts one "template" in a bwrap sandbox shaped like a grading sandbox (the same read-only /usr
and Python environment, private /tmp and /dev/shm, no network, `--clearenv`, the seccomp filter
of sandbox/seccomp.py), but with `--cap-add ALL`: capabilities inside its own user namespace
only. The template imports numpy, torch and triton and runs the interpreter canary (the
interpreter needs no CUDA; on a GPU the template must not touch CUDA, which does not survive a
fork). Then, per job, it forks a child that:
  unshare(mount, pid, ipc, net, uts) (no user namespace: seccomp refuses it) -> fork again, to be
  pid 1 of the new pid namespace -> a fresh /proc (and /proc/sys, /proc/sysrq-trigger, /proc/fs
  bound read-only again), /tmp, /dev/shm, and /job as a tmpfs holding only this job's files (here
  written by the child; in a real design sent through the job's channel), remounted read-only ->
  every capability dropped (ambient, bounding set, then capset to zero) -> the canary again.
Each child reports what it sees (its pid, the processes in /proc, its capabilities, whether it can
write /job, unmount anything, or unshare again) and the time from fork to that report.

Run as root, the template is started as a leased unprivileged host uid (`setpriv`), as the bwrap
backend does without a pids cgroup: bwrap run by root with `--uid 65534` puts the sandbox in a
nested user namespace whose mounts are locked, and the kernel then refuses a fresh /proc
(`mount_too_revealing`). `--uid0` (timing only) runs it as root-mapped uid 0 without
`--disable-userns` instead. Prints one JSON line per child and a summary.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sandbox.backends.bwrap import MERGED_USR_LINKS, python_roots  # noqa: E402
from sandbox.host_uids import lease_host_uid  # noqa: E402
from sandbox.seccomp import filter_fd, filter_program  # noqa: E402

TEMPLATE = r'''
import ctypes, json, os, sys, time
t0 = time.perf_counter()
import numpy, torch, triton, triton.language as tl
imported = time.perf_counter() - t0

@triton.jit
def _canary(out, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out + offs, offs * 2 + 1, mask=offs < n)

def canary():
    out = torch.zeros(16, dtype=torch.int32)
    _canary[(1,)](out, 13, BLOCK=16)
    return out.tolist() == [2 * i + 1 for i in range(13)] + [0, 0, 0]

t0 = time.perf_counter()
assert canary()
template_canary = time.perf_counter() - t0
threads = len(os.listdir("/proc/self/task"))  # fork copies one thread: the template must have one
print(json.dumps({"template": {"import_s": imported, "canary_s": template_canary, "threads": threads}}), flush=True)

libc = ctypes.CDLL(None, use_errno=True)
libc.mount.argtypes = [ctypes.c_char_p] * 3 + [ctypes.c_ulong, ctypes.c_char_p]
NEWNS, NEWPID, NEWIPC, NEWNET, NEWUTS = 0x20000, 0x20000000, 0x08000000, 0x40000000, 0x04000000
RDONLY, NOSUID, NODEV, NOEXEC, REMOUNT, BIND, REC, PRIVATE = 1, 2, 4, 8, 32, 4096, 16384, 1 << 18

def check(result, what):
    if result != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")

def mount(source, target, fstype, flags, data=None):
    check(libc.mount(source and source.encode(), target.encode(), fstype and fstype.encode(), flags,
                     data and data.encode()), f"mount {target}")

class CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]

class CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]

def drop_capabilities():
    check(libc.prctl(47, 4, 0, 0, 0), "PR_CAP_AMBIENT_CLEAR_ALL")
    for cap in range(64):
        libc.prctl(24, cap, 0, 0, 0)  # PR_CAPBSET_DROP (EINVAL past the last one)
    check(libc.prctl(38, 1, 0, 0, 0), "PR_SET_NO_NEW_PRIVS")
    check(libc.capset(ctypes.byref(CapHeader(0x20080522, 0)), (CapData * 2)()), "capset")

def status(field):
    return open("/proc/self/status").read().split(field + ":")[1].split()[0]

def child(job, w):
    check(libc.unshare(NEWNS | NEWPID | NEWIPC | NEWNET | NEWUTS), "unshare")
    mount(None, "/", None, REC | PRIVATE)
    pid = os.fork()  # the first child of the new pid namespace is its pid 1
    if pid:
        os._exit(os.waitpid(pid, 0)[1] >> 8)
    mount("proc", "/proc", "proc", NOSUID | NODEV | NOEXEC)
    for sub in [p for p in ("/proc/sys", "/proc/sysrq-trigger", "/proc/fs") if os.path.exists(p)]:
        mount(sub, sub, None, BIND | REC)
        mount(None, sub, None, BIND | REMOUNT | RDONLY | NOSUID | NODEV)
    mount("tmpfs", "/tmp", "tmpfs", NOSUID | NODEV, "size=64m")
    mount("tmpfs", "/dev/shm", "tmpfs", NOSUID | NODEV, "size=64m")
    mount("tmpfs", "/job", "tmpfs", NOSUID | NODEV, "size=64m,mode=755")
    with open("/job/job.json", "w") as fh:
        fh.write(json.dumps({"job": job}))
    mount(None, "/job", None, REMOUNT | RDONLY | NOSUID | NODEV | NOEXEC)
    drop_capabilities()
    # From here on: what student code would be able to do.
    ok = canary()
    facts = {
        "job": job, "canary": ok, "pid": os.getpid(), "uid": os.getuid(),
        "processes": sorted(int(p) for p in os.listdir("/proc") if p.isdigit()),
        "job_seen": json.load(open("/job/job.json"))["job"],
        "cap_eff": status("CapEff"), "cap_prm": status("CapPrm"), "cap_bnd": status("CapBnd"),
        "cap_amb": status("CapAmb"), "no_new_privs": status("NoNewPrivs"), "seccomp": status("Seccomp"),
        "write_job": libc.open(b"/job/x", 0o101, 0o644) >= 0,
        "umount_job": libc.umount2(b"/job", 2) == 0, "umount_proc_sys": libc.umount2(b"/proc/sys", 2) == 0,
        "unshare_mount_ns": libc.unshare(NEWNS) == 0,
        "sysctl_write": os.access("/proc/sys/kernel/core_pattern", os.W_OK),
    }
    os.write(w, json.dumps(facts).encode())

for job in range(int(sys.argv[1])):
    t0 = time.perf_counter()
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        try:
            child(job, w)
        except BaseException as exc:
            os.write(w, json.dumps({"job": job, "error": repr(exc)}).encode())
        os._exit(0)
    os.close(w)
    data = b""
    while chunk := os.read(r, 65536):
        data += chunk
    os.close(r)
    os.waitpid(pid, 0)
    print(json.dumps({**json.loads(data), "fork_to_report_s": time.perf_counter() - t0}), flush=True)
'''


def argv(python: str, template: Path, seccomp_fd: int | None, *, uid0: bool) -> list[str]:
    ids = ["--uid", "0", "--gid", "0"] if uid0 else ["--disable-userns", "--uid", "65534", "--gid", "65534"]
    args = ["bwrap", "--unshare-all", "--unshare-user", *ids, "--die-with-parent", "--new-session",
            "--cap-add", "ALL", "--hostname", "sandbox", "--ro-bind", "/usr", "/usr"]
    for link in MERGED_USR_LINKS:
        if os.path.islink(link):
            args += ["--symlink", os.readlink(link), link]
        elif os.path.isdir(link):
            args += ["--ro-bind", link, link]
    for etc_file in ("/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/nsswitch.conf"):
        if os.path.exists(etc_file):
            args += ["--ro-bind", etc_file, etc_file]
    # No read-only binds over /proc/sys here: each child binds them over its own fresh /proc (a
    # proc that is not fully visible may not be mounted again); the template holds the
    # capabilities meanwhile but never runs student code.
    args += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp", "--tmpfs", "/dev/shm", "--dir", "/job"]
    for root in python_roots(python):
        args += ["--ro-bind", str(root), str(root)]
    args += ["--ro-bind", str(template), "/template.py", "--remount-ro", "/", "--chdir", "/tmp", "--clearenv",
             "--setenv", "PATH", "/usr/bin:/bin", "--setenv", "HOME", "/tmp", "--setenv", "TRITON_INTERPRET", "1",
             "--setenv", "OMP_NUM_THREADS", "1", "--setenv", "TRITON_CACHE_DIR", "/tmp/triton-cache"]
    if seccomp_fd is not None:
        args += ["--seccomp", str(seccomp_fd)]
    return args + ["--", python, "-I", "-B", "/template.py"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=3)
    parser.add_argument("--python", default=sys.executable)
    parser.add_argument("--uid0", action="store_true",
                        help="for timing only, where no unprivileged uid can reach the Python environment: run as "
                             "root with uid 0 inside and no --disable-userns (NOT the isolation a grading sandbox has)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="kg-forkserver-probe-") as folder:
        os.chmod(folder, 0o755)
        template = Path(folder) / "template.py"
        template.write_text(TEMPLATE, encoding="utf-8")
        os.chmod(template, 0o644)
        program = filter_program()
        fd = filter_fd(program) if program is not None else None
        command = argv(args.python, template, fd, uid0=args.uid0) + [str(args.jobs)]
        lease = lease_host_uid() if os.geteuid() == 0 and not args.uid0 else None
        if lease is not None:
            command = ["setpriv", f"--reuid={lease.uid}", f"--regid={lease.uid}", "--clear-groups", "--", *command]
        try:
            started = time.perf_counter()
            done = subprocess.run(command, capture_output=True, timeout=600, pass_fds=(fd,) if fd is not None else ())
            wall = time.perf_counter() - started
        finally:
            if fd is not None:
                os.close(fd)
            if lease is not None:
                lease.release()
    print(done.stdout.decode(errors="replace"))
    if done.returncode != 0:
        print(done.stderr.decode(errors="replace")[-3000:], file=sys.stderr)
        return 1
    lines = [json.loads(line) for line in done.stdout.decode().splitlines() if line.startswith("{")]
    children = [line for line in lines if "job" in line]
    forks = sorted(c["fork_to_report_s"] for c in children)
    print(f"template: {lines[0]['template']}; {len(children)} children, fork to report "
          f"{forks[0]:.3f}-{forks[-1]:.3f} s; whole run {wall:.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
