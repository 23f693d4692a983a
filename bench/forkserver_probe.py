"""Feasibility probe for a fork-server sandbox start (issue #20.4, step 3; NOT used by the service).

    python bench/forkserver_probe.py --jobs 3 [--device gpu]

Starts one "template" in a bwrap sandbox shaped like a grading sandbox (the same read-only /usr
and Python environment, private /tmp and /dev/shm, no network, `--clearenv`), but uid 0 inside
with `--cap-add ALL`: capabilities inside its own user namespace only, and neither bwrap's
`--seccomp` nor `--disable-userns` (the child needs one user namespace more, below). The template
imports numpy, torch and triton and runs the interpreter canary (the interpreter needs no CUDA;
on a GPU the template must not touch CUDA, which does not survive a fork). Then, per job, it
forks a child that:
  unshare(mount, pid, ipc, net, uts) -> fork again, to be pid 1 of the new pid namespace -> a
  fresh /proc (with /proc/sys, /proc/sysrq-trigger, /proc/fs bound read-only again), /tmp,
  /dev/shm, and /job as a tmpfs holding only this job's files (here written by the child; in a
  real design sent through the job's channel), remounted read-only -> a user namespace of its
  own in which it is uid 65534 (mapped to the template's uid) -> every capability dropped
  (ambient, bounding set, capset to zero), no_new_privs -> sandbox/seccomp.py's filter installed
  (no further user namespace, no memfd) -> the canary again.
Each child reports what it sees (its pid and uid, the processes in /proc, its capabilities,
whether it can write /job, unmount anything, unshare again, create a memfd or write a sysctl)
and the time from fork to that report. Works whoever starts it (root included: bwrap run by root
with `--uid 65534` or `--disable-userns` nests a user namespace that locks every mount, and the
kernel then refuses the child's fresh /proc, which is why the template is uid 0 and the child
makes the uid-65534 namespace itself). Prints one JSON line per child and a summary.
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

from sandbox.backends.bwrap import MERGED_USR_LINKS, NVIDIA_SHARED_NODES, python_roots  # noqa: E402
from sandbox.seccomp import filter_program  # noqa: E402

TEMPLATE = r'''
import ctypes, json, os, sys, time
t0 = time.perf_counter()
import numpy, torch, triton, triton.language as tl
imported = time.perf_counter() - t0

@triton.jit
def _canary(out, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out + offs, offs * 2 + 1, mask=offs < n)

GPU = sys.argv[2] == "gpu"

def canary():
    out = torch.zeros(16, dtype=torch.int32, device="cuda" if GPU else "cpu")
    _canary[(1,)](out, 13, BLOCK=16)
    return out.cpu().tolist() == [2 * i + 1 for i in range(13)] + [0, 0, 0]

t0 = time.perf_counter()
if not GPU:  # on a GPU the canary starts CUDA, which a fork does not carry over: the children run it
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

class SockFilter(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint16), ("jt", ctypes.c_uint8), ("jf", ctypes.c_uint8), ("k", ctypes.c_uint32)]

class SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_uint16), ("filter", ctypes.POINTER(SockFilter))]

FILTER = open("/filter.bpf", "rb").read() if os.path.exists("/filter.bpf") else b""

def own_user_namespace():
    """A user namespace of the child's own in which uid 65534 is the template's uid (0 in its
    namespace): the child runs as nobody, as a grading sandbox does, whoever started bwrap."""
    check(libc.unshare(0x10000000), "unshare(CLONE_NEWUSER)")
    for name, text in (("setgroups", "deny"), ("uid_map", "65534 0 1"), ("gid_map", "65534 0 1")):
        with open(f"/proc/self/{name}", "w") as fh:
            fh.write(text)
    os.setresgid(65534, 65534, 65534)
    os.setresuid(65534, 65534, 65534)

def drop_capabilities():
    check(libc.prctl(47, 4, 0, 0, 0), "PR_CAP_AMBIENT_CLEAR_ALL")
    for cap in range(64):
        libc.prctl(24, cap, 0, 0, 0)  # PR_CAPBSET_DROP (EINVAL past the last one)
    check(libc.prctl(38, 1, 0, 0, 0), "PR_SET_NO_NEW_PRIVS")
    check(libc.capset(ctypes.byref(CapHeader(0x20080522, 0)), (CapData * 2)()), "capset")
    if FILTER:  # sandbox/seccomp.py's program: from here no user namespace, no memfd
        program = (SockFilter * (len(FILTER) // 8)).from_buffer_copy(FILTER)
        check(libc.prctl(22, 2, ctypes.byref(SockFprog(len(program), program)), 0, 0), "PR_SET_SECCOMP")

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
    own_user_namespace()
    drop_capabilities()
    # From here on: what student code would be able to do.
    t0 = time.perf_counter()
    if GPU:
        torch.cuda.init()
        torch.cuda.get_device_name(0)
    cuda_s = time.perf_counter() - t0
    ok = canary()
    canary_s = time.perf_counter() - t0 - cuda_s
    facts = {
        "job": job, "canary": ok, "cuda_init_s": cuda_s, "canary_s": canary_s, "pid": os.getpid(), "uid": os.getuid(),
        "processes": sorted(int(p) for p in os.listdir("/proc") if p.isdigit()),
        "job_seen": json.load(open("/job/job.json"))["job"],
        "cap_eff": status("CapEff"), "cap_prm": status("CapPrm"), "cap_bnd": status("CapBnd"),
        "cap_amb": status("CapAmb"), "no_new_privs": status("NoNewPrivs"), "seccomp": status("Seccomp"),
        "write_job": libc.open(b"/job/x", 0o101, 0o644) >= 0,
        "umount_job": libc.umount2(b"/job", 2) == 0, "umount_proc_sys": libc.umount2(b"/proc/sys", 2) == 0,
        "unshare_mount_ns": libc.unshare(NEWNS) == 0, "unshare_user_ns": libc.unshare(0x10000000) == 0,
        "memfd": libc.syscall(319, b"x", 0) >= 0 if os.uname().machine == "x86_64" else None,
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


def argv(python: str, folder: Path, gpu: bool) -> list[str]:
    args = ["bwrap", "--unshare-all", "--unshare-user", "--uid", "0", "--gid", "0", "--die-with-parent",
            "--new-session", "--cap-add", "ALL", "--hostname", "sandbox", "--ro-bind", "/usr", "/usr"]
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
    if gpu:  # the nodes of one GPU, as the bwrap backend binds them
        for node in (*NVIDIA_SHARED_NODES, "/dev/nvidia0"):
            if os.path.exists(node):
                args += ["--dev-bind", node, node]
    for root in python_roots(python):
        args += ["--ro-bind", str(root), str(root)]
    args += ["--ro-bind", str(folder / "template.py"), "/template.py"]
    if (folder / "filter.bpf").exists():
        args += ["--ro-bind", str(folder / "filter.bpf"), "/filter.bpf"]
    args += ["--remount-ro", "/", "--chdir", "/tmp", "--clearenv",
             "--setenv", "PATH", "/usr/bin:/bin", "--setenv", "HOME", "/tmp",
             *([] if gpu else ["--setenv", "TRITON_INTERPRET", "1"]),
             "--setenv", "OMP_NUM_THREADS", "1", "--setenv", "TRITON_CACHE_DIR", "/tmp/triton-cache"]
    return args + ["--", python, "-I", "-B", "/template.py"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=3)
    parser.add_argument("--python", default=sys.executable)
    parser.add_argument("--device", choices=["interpreter", "gpu"], default="interpreter",
                        help="gpu: the template imports only (no CUDA); each child starts CUDA (timed apart) and "
                             "runs the canary on /dev/nvidia0")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="kg-forkserver-probe-") as folder:
        os.chmod(folder, 0o755)
        template = Path(folder) / "template.py"
        template.write_text(TEMPLATE, encoding="utf-8")
        os.chmod(template, 0o644)
        program = filter_program()
        if program is not None:
            (Path(folder) / "filter.bpf").write_bytes(program)
            os.chmod(Path(folder) / "filter.bpf", 0o644)
        started = time.perf_counter()
        done = subprocess.run(argv(args.python, Path(folder), args.device == "gpu") + [str(args.jobs), args.device],
                              capture_output=True, timeout=600)
        wall = time.perf_counter() - started
    print(done.stdout.decode(errors="replace"))
    if done.returncode != 0:
        print(done.stderr.decode(errors="replace")[-3000:], file=sys.stderr)
        return 1
    lines = [json.loads(line) for line in done.stdout.decode().splitlines() if line.startswith("{")]
    children = [line for line in lines if "job" in line]
    forks = sorted(c["fork_to_report_s"] for c in children)
    cuda = sorted(c.get("cuda_init_s", 0.0) for c in children)
    canaries = sorted(c.get("canary_s", 0.0) for c in children)
    print(f"template: {lines[0]['template']}; {len(children)} children, fork to report "
          f"{forks[0]:.3f}-{forks[-1]:.3f} s (of which CUDA start {cuda[0]:.3f}-{cuda[-1]:.3f} s, canary "
          f"{canaries[0]:.3f}-{canaries[-1]:.3f} s); whole run {wall:.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
