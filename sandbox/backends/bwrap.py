"""bubblewrap backend: new user/pid/net/ipc/uts/cgroup namespaces, read-only system, private /tmp.

The sandbox sees: /usr (and the merged-/usr symlinks), the dynamic linker cache, the Python
environment read-only, the job folder read-only at /job, a fresh /proc and a minimal /dev (plus
the NVIDIA device nodes of exactly one GPU in GPU mode), and a size-capped tmpfs at /tmp. Nothing
else: not the repository, the exercises' solutions, the database or the service's environment
(`--clearenv`). Paths that must stay hidden but lie inside a bound folder (a data directory under
a virtualenv, say) are covered with an empty tmpfs.
"""
from __future__ import annotations

import logging
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

from sandbox.backends.base import TRITON_CACHE_MOUNT_POINT, LaunchSpec, SandboxUnavailable, TritonCacheMount
from sandbox.contract import DeviceMode, Limits
from sandbox.cgroups import PIDS_CGROUP, SandboxCgroup, host_pids_cgroups

SANDBOX_UID = 65534
log = logging.getLogger("kernelgrade.sandbox.bwrap")
_host_uid_lock = threading.Lock()
_host_uid: dict[tuple[str, str, int], int | None] = {}  # per (python, mode, GPU): the probe's answer
NVIDIA_SHARED_NODES = ("/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools", "/dev/nvidia-caps")
MERGED_USR_LINKS = ("/bin", "/sbin", "/lib", "/lib64", "/lib32", "/libx32")


def python_roots(python: str) -> list[Path]:
    """Folders that hold the Python environment `python` runs in (venv and its base install)."""
    if Path(python).resolve() == Path(sys.executable).resolve():
        prefixes = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}
    else:  # another interpreter: its prefix is the folder above bin/
        prefixes = {str(Path(python).parent.parent), str(Path(python).resolve().parent.parent)}
    roots: set[Path] = set()
    for prefix in prefixes:
        roots.add(Path(prefix))
        roots.add(Path(prefix).resolve())
    # Drop roots already covered by /usr or by another root.
    kept = sorted(r for r in roots if not _is_within(r, Path("/usr")))
    return [r for r in kept if not any(r != o and _is_within(r, o) for o in kept)]


def _is_within(path: Path, folder: Path) -> bool:
    try:
        path.relative_to(folder)
        return True
    except ValueError:
        return False


class BwrapBackend:
    name = "bwrap"
    supports_warm = True

    def __init__(self, *, python: str, hidden_paths: list[Path], triton_cache: TritonCacheMount | None = None) -> None:
        self.python = python
        self.hidden_paths = [p.resolve() for p in hidden_paths]
        self.triton_cache = triton_cache

    def with_triton_cache(self, mount: TritonCacheMount | None) -> "BwrapBackend":
        """The same backend with another view of the shared compile cache."""
        return BwrapBackend(python=self.python, hidden_paths=self.hidden_paths, triton_cache=mount)

    def _triton_cache_args(self, mode: DeviceMode) -> tuple[list[str], list[str]]:
        """(mounts, environment) for the compile cache. The interpreter compiles nothing, so
        only GPU sandboxes see the shared cache. Mounts go before `--remount-ro /`, and the
        environment after `--clearenv`, which drops any variable set before it."""
        mount = self.triton_cache
        if mode is not DeviceMode.gpu or mount is None or not mount.host_dir.is_dir():
            return [], ["--setenv", "TRITON_CACHE_DIR", "/tmp/triton-cache"]
        if mount.writable:  # a trusted compile run: Triton writes straight into the staging folder
            return (["--bind", str(mount.host_dir), TRITON_CACHE_MOUNT_POINT],
                    ["--setenv", "TRITON_CACHE_DIR", TRITON_CACHE_MOUNT_POINT])
        return (["--ro-bind", str(mount.host_dir), TRITON_CACHE_MOUNT_POINT],
                ["--setenv", "TRITON_CACHE_DIR", "/tmp/triton-cache",
                 "--setenv", "KERNELGRADE_SHARED_TRITON_CACHE", TRITON_CACHE_MOUNT_POINT,
                 "--setenv", "TRITON_CACHE_MANAGER", "shared_triton_cache:SharedFirstCacheManager"])

    def check(self) -> None:
        if shutil.which("bwrap") is None:
            raise SandboxUnavailable("bubblewrap (bwrap) is not installed: apt-get install bubblewrap")
        if shutil.which("prlimit") is None:
            raise SandboxUnavailable("prlimit (util-linux) is not installed")

    def new_cgroup(self, limits: Limits) -> SandboxCgroup | None:
        """A pids cgroup for one sandbox (start_sandbox starts it inside), where one is writable;
        None elsewhere, where RLIMIT_NPROC (set in every launch) is the only cap on processes."""
        cgroups = host_pids_cgroups()
        return cgroups.create(limits.processes) if cgroups is not None else None

    def process_limit(self, mode: DeviceMode, device_index: int = 0) -> str:
        """What caps the sandbox's processes in `mode` (the report's environment.process_limit)."""
        if host_pids_cgroups() is not None:
            return PIDS_CGROUP
        uid = self.host_uid(mode, device_index)
        return f"RLIMIT_NPROC (host uid {uid})" if uid is not None else "RLIMIT_NPROC"

    def host_uid(self, mode: DeviceMode = DeviceMode.interpreter, device_index: int = 0) -> int | None:
        """Root without a pids cgroup: the unprivileged host uid (SANDBOX_UID) that every sandbox
        runs as, so that RLIMIT_NPROC binds (the kernel exempts uid 0, to which the sandbox's uid
        would otherwise map). None when not root, where a pids cgroup holds the limit, or where an
        unprivileged bwrap cannot run here (probed once per mode and GPU, with the real mounts;
        then the sandbox stays root-mapped, as before, and a warning says so)."""
        if os.geteuid() != 0 or host_pids_cgroups() is not None:
            return None
        key = (self.python, mode.value, device_index)
        with _host_uid_lock:
            if key not in _host_uid:
                _host_uid[key] = self._probe_unprivileged(mode, device_index)
            return _host_uid[key]

    def _probe_unprivileged(self, mode: DeviceMode, device_index: int) -> int | None:
        """Start the interpreter in an unprivileged sandbox with the real mounts: user namespaces
        must be allowed to unprivileged users, and every bound folder must be reachable by them;
        on a GPU, the driver must initialise for them too (the device nodes' permissions)."""
        if shutil.which("setpriv") is None:
            log.warning("setpriv (util-linux) is not installed: sandboxes stay root-mapped")
            return None
        check = "pass" if mode is DeviceMode.interpreter else \
            "import ctypes, sys; sys.exit(ctypes.CDLL('libcuda.so.1').cuInit(0))"
        with tempfile.TemporaryDirectory(prefix="kernelgrade-probe-") as job:
            os.chmod(job, 0o755)
            spec = self._spec(job_dir=Path(job), verdict_fd=1, mode=mode, device_index=device_index,
                              limits=Limits(), control_fd=None, host_uid=SANDBOX_UID,
                              command=[self.python, "-I", "-c", check])
            try:
                done = subprocess.run(spec.argv, env=spec.env, stdin=subprocess.DEVNULL, capture_output=True,
                                      timeout=60, start_new_session=True)
            except (OSError, subprocess.TimeoutExpired) as exc:
                log.warning("an unprivileged sandbox could not start (%s): sandboxes stay root-mapped", exc)
                return None
        if done.returncode != 0:
            log.warning("an unprivileged sandbox could not start (exit %s: %s): sandboxes stay root-mapped",
                        done.returncode, done.stderr.decode(errors="replace")[-500:])
            return None
        log.info("root without a pids cgroup: sandboxes run as host uid %d, where RLIMIT_NPROC binds", SANDBOX_UID)
        return SANDBOX_UID

    def launch_spec(self, *, job_dir: Path, verdict_fd: int, mode: DeviceMode, device_index: int, limits: Limits,
                    control_fd: int | None = None) -> LaunchSpec:
        return self._spec(job_dir=job_dir, verdict_fd=verdict_fd, mode=mode, device_index=device_index, limits=limits,
                          control_fd=control_fd, host_uid=self.host_uid(mode, device_index), command=None)

    def _spec(self, *, job_dir: Path, verdict_fd: int, mode: DeviceMode, device_index: int, limits: Limits,
              control_fd: int | None, host_uid: int | None, command: list[str] | None) -> LaunchSpec:
        """`command` replaces the harness (the probe); `host_uid` drops to that uid before anything."""
        args = [
            "bwrap",
            "--unshare-all",  # user, pid, net, ipc, uts, cgroup: no network at all
            "--die-with-parent",
            "--new-session",  # no TIOCSTI into the caller's terminal
            "--uid", str(SANDBOX_UID), "--gid", str(SANDBOX_UID),
            "--hostname", "sandbox",
            "--ro-bind", "/usr", "/usr",
        ]
        for link in MERGED_USR_LINKS:
            if os.path.islink(link):
                args += ["--symlink", os.readlink(link), link]
            elif os.path.isdir(link):
                args += ["--ro-bind", link, link]
        for etc_file in ("/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/nsswitch.conf"):
            if os.path.exists(etc_file):
                args += ["--ro-bind", etc_file, etc_file]
        if os.path.isdir("/etc/ld.so.conf.d"):
            args += ["--ro-bind", "/etc/ld.so.conf.d", "/etc/ld.so.conf.d"]
        args += ["--proc", "/proc", "--dev", "/dev"]
        # Kernel settings stay read-only, as in Docker: when the service runs as root, the
        # sandbox's uid maps to host root and /proc/sys would accept global sysctl writes
        # (kernel.core_pattern runs a program as root on the next crash).
        for proc_path in ("/proc/sys", "/proc/sysrq-trigger", "/proc/fs"):
            if os.path.exists(proc_path):
                args += ["--ro-bind", proc_path, proc_path]
        if mode is DeviceMode.gpu:
            for node in (*NVIDIA_SHARED_NODES, f"/dev/nvidia{device_index}"):
                if os.path.exists(node):
                    args += ["--dev-bind", node, node]
        # The private scratch space first: the Python environment may live under /tmp on the
        # host (a CI checkout), and a later tmpfs would cover its bind.
        args += [
            "--size", str(limits.tmpfs_bytes), "--tmpfs", "/tmp",
            "--size", str(limits.tmpfs_bytes), "--tmpfs", "/dev/shm",
        ]
        roots = python_roots(self.python)
        cache_mounts, cache_env = self._triton_cache_args(mode)
        for root in roots:
            args += ["--ro-bind", str(root), str(root)]
        for hidden in self.hidden_paths:
            if any(_is_within(hidden, r) for r in [*roots, Path("/usr")]):
                args += ["--tmpfs", str(hidden)]
        args += [
            "--ro-bind", str(job_dir), "/job",
            *cache_mounts,
            # bwrap's own root and /dev are uncapped tmpfs mounts: make them read-only so the
            # only writable space is the two capped ones above.
            "--remount-ro", "/dev",
            "--remount-ro", "/",
            "--chdir", "/tmp",
            "--clearenv",
            "--setenv", "PATH", "/usr/bin:/bin",
            "--setenv", "HOME", "/tmp",
            "--setenv", "PYTHONDONTWRITEBYTECODE", "1",
            *cache_env,
        ]
        if mode is DeviceMode.interpreter:
            args += ["--setenv", "TRITON_INTERPRET", "1"]
        if command is not None:
            args += ["--", *command]
        else:
            args += ["--", self.python, "-I", "-B", "/job/harness.py", "/job", str(verdict_fd)]
            if control_fd is not None:
                args += ["--warm", mode.value, str(control_fd)]

        rlimits = [
            f"--cpu={limits.cpu_time_s}",
            f"--fsize={limits.file_size_bytes}",
            f"--nofile={limits.open_files}",
            f"--nproc={limits.processes}",  # per host uid, not for root: see new_cgroup
            "--core=0",
        ]
        if mode is DeviceMode.interpreter:
            rlimits.append(f"--as={limits.memory_bytes}")
        argv = ["prlimit", *rlimits, "--", *args]
        if host_uid is not None:  # util-linux setpriv: real, effective and saved ids, no supplementary groups
            argv = ["setpriv", f"--reuid={host_uid}", f"--regid={host_uid}", "--clear-groups", "--", *argv]
        return LaunchSpec(argv=argv, env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")})
