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
import stat
import subprocess
import sys
import tempfile
import threading
from dataclasses import replace
from pathlib import Path

from sandbox.backends.base import (
    SHARED_FIRST_MANAGER,
    TRITON_CACHE_MOUNT_POINT,
    TRITON_CACHE_READS_MOUNT_POINT,
    Confinement,
    LaunchSpec,
    SandboxUnavailable,
    TritonCacheMount,
    size_words,
)
from sandbox.cgroups import PIDS_CGROUP, host_pids_cgroups, sandbox_cgroups
from sandbox.contract import OWN_PID_NAMESPACE_ENV, RUNTIME_THREAD_ENV, DeviceMode, Limits
from sandbox.host_uids import lease_host_uid
from sandbox.paths import is_within
from sandbox.seccomp import filter_fd, filter_program

SANDBOX_UID = 65534  # the uid inside every sandbox (on the host: root's, or one of sandbox.host_uids)
log = logging.getLogger("kernelgrade.sandbox.bwrap")
_probe_lock = threading.Lock()
_unprivileged: dict[tuple[str, ...], bool] = {}  # per exact launch (mounts, devices): the probe's answer
_version: list[tuple[int, ...]] = []
NVIDIA_SHARED_NODES = ("/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools", "/dev/nvidia-caps")
MERGED_USR_LINKS = ("/bin", "/sbin", "/lib", "/lib64", "/lib32", "/libx32")
# A fork-server template's tasks beyond a fresh sandbox's (its bwrap, bwrap's init, the harness):
# the template itself and a child's C1 and C2 (docs/forkserver.md). Added to its RLIMIT_NPROC, so
# a child's job has a fresh sandbox's budget where the template's host uid is its alone.
TEMPLATE_TASKS = 3


def python_roots(python: str) -> list[Path]:
    """Folders that hold the Python environment `python` runs in (venv and its base install).

    Only this process's own `sys.executable` is read from `sys`: another venv made from the same base
    Python has a `bin/python` that resolves to the same binary, but its packages are in its own prefix,
    which must be bound (comparing resolved paths bound this process's venv instead, and the sandbox
    could not even find `python`)."""
    if Path(python).absolute() == Path(sys.executable).absolute():
        prefixes = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}
    else:  # another interpreter: its prefix is the folder above bin/
        prefixes = {str(Path(python).parent.parent), str(Path(python).resolve().parent.parent)}
    roots: set[Path] = set()
    for prefix in prefixes:
        roots.add(Path(prefix))
        roots.add(Path(prefix).resolve())
    # Drop roots already covered by /usr or by another root.
    kept = sorted(r for r in roots if not is_within(r, Path("/usr")))
    return [r for r in kept if not any(r != o and is_within(r, o) for o in kept)]


def blocked_for_others(path: Path) -> Path | None:
    """The first folder on the way to `path` that a user other than its owner cannot pass
    (no search permission for others), or None: every bound folder must be reachable by the
    unprivileged host uid a sandbox may run as."""
    current = Path("/")
    for part in path.resolve().parts[1:]:
        current = current / part
        try:
            mode = os.stat(current).st_mode
        except OSError:
            return current
        if stat.S_ISDIR(mode) and not mode & stat.S_IXOTH:
            return current
    return None


def bwrap_version() -> tuple[int, ...]:
    """The installed bubblewrap's version, e.g. (0, 8, 0); (0,) if it cannot be told."""
    if not _version:
        try:
            out = subprocess.run(["bwrap", "--version"], capture_output=True, text=True, timeout=10).stdout
            _version.append(tuple(int(n) for n in out.split()[-1].split(".")))
        except (OSError, subprocess.SubprocessError, ValueError, IndexError):
            _version.append((0,))
    return _version[0]


class BwrapBackend:
    name = "bwrap"
    direct_output = True
    supports_warm = True

    def __init__(self, *, python: str, hidden_paths: list[Path], triton_cache: TritonCacheMount | None = None) -> None:
        self.python = python
        self.hidden_paths = [p.resolve() for p in hidden_paths]
        self.triton_cache = triton_cache

    def with_triton_cache(self, mount: TritonCacheMount | None) -> BwrapBackend:
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
            mounts, env = (["--bind", str(mount.host_dir), TRITON_CACHE_MOUNT_POINT],
                           ["--setenv", "TRITON_CACHE_DIR", TRITON_CACHE_MOUNT_POINT])
            if mount.reads is not None and mount.reads.is_dir():  # after reading the shared cache
                mounts += ["--ro-bind", str(mount.reads), TRITON_CACHE_READS_MOUNT_POINT]
                env += ["--setenv", "KERNELGRADE_SHARED_TRITON_CACHE", TRITON_CACHE_READS_MOUNT_POINT,
                        "--setenv", "TRITON_CACHE_MANAGER", SHARED_FIRST_MANAGER]
            return mounts, env
        return (["--ro-bind", str(mount.host_dir), TRITON_CACHE_MOUNT_POINT],
                ["--setenv", "TRITON_CACHE_DIR", "/tmp/triton-cache",
                 "--setenv", "KERNELGRADE_SHARED_TRITON_CACHE", TRITON_CACHE_MOUNT_POINT,
                 "--setenv", "TRITON_CACHE_MANAGER", SHARED_FIRST_MANAGER])

    def check(self) -> None:
        if shutil.which("bwrap") is None:
            raise SandboxUnavailable("bubblewrap (bwrap) is not installed: apt-get install bubblewrap")
        if shutil.which("prlimit") is None:
            raise SandboxUnavailable("prlimit (util-linux) is not installed")

    def process_limit(self, mode: DeviceMode, device_index: int = 0) -> str:
        """What caps the sandbox's processes in `mode` (the report's environment.process_limit)."""
        if host_pids_cgroups() is not None:
            return PIDS_CGROUP
        return "RLIMIT_NPROC (a host uid of its own)" if self.unprivileged(mode, device_index) else "RLIMIT_NPROC"

    def confine(self, *, limits: Limits, mode: DeviceMode, device_index: int, job_dir: Path,
                template_uid: int | None = None) -> Confinement:
        """The cgroups (pids, memory) of one sandbox where they are writable; as root without a
        pids cgroup, an unprivileged host uid of its own (sandbox/host_uids.py), where an
        unprivileged sandbox with these very mounts can start (else it stays root-mapped: the
        probe's warning says why). `template_uid`: a child of a fork-server template that runs
        as that host uid and forks one child at a time (sandbox/forkserver.py): no uid of its
        own is leased. Raises OSError."""
        confinement = Confinement(cgroups=sandbox_cgroups(processes=limits.process_cap(mode),
                                                          memory_bytes=limits.memory_cgroup_bytes))
        try:
            if template_uid is not None and host_pids_cgroups() is None:
                confinement.process_limit = f"RLIMIT_NPROC (host uid {template_uid}, its template's, one job at a time)"
                confinement.memory_limit = self._memory_limit(confinement, limits, mode)
                return confinement
            self._confine(confinement, limits=limits, mode=mode, device_index=device_index, job_dir=job_dir)
        except BaseException:
            confinement.close(limits.kill_grace_s)
            raise
        return confinement

    def _confine(self, confinement: Confinement, *, limits: Limits, mode: DeviceMode, device_index: int,
                 job_dir: Path) -> None:
        cgroups = confinement.cgroups
        confinement.memory_limit = self._memory_limit(confinement, limits, mode)
        if cgroups is not None and host_pids_cgroups() is not None:
            confinement.process_limit = PIDS_CGROUP
        elif os.geteuid() == 0 and self.unprivileged(mode, device_index, job_dir.parent):
            lease = lease_host_uid()
            confinement.host_uid, confinement.release = lease.uid, lease.release
            confinement.process_limit = f"RLIMIT_NPROC (host uid {lease.uid})"
            mount = self.triton_cache
            if mount is not None and mount.writable and mode is DeviceMode.gpu:
                os.chown(mount.host_dir, lease.uid, lease.uid)  # a compile run's staging folder: its own
        else:
            confinement.process_limit = "RLIMIT_NPROC"

    @staticmethod
    def _memory_limit(confinement: Confinement, limits: Limits, mode: DeviceMode) -> str:
        cgroups = confinement.cgroups
        if cgroups is not None and cgroups.memory_bytes is not None:
            return f"memory cgroup {size_words(cgroups.memory_bytes)}" + (", no swap" if cgroups.swap_limited else "")
        if mode is DeviceMode.interpreter:
            return f"RLIMIT_AS {size_words(limits.memory_bytes)}"
        return "none (no writable memory cgroup; RLIMIT_AS cannot apply to CUDA)"

    def unprivileged(self, mode: DeviceMode = DeviceMode.interpreter, device_index: int = 0,
                     job_parent: Path | None = None) -> bool:
        """Root without a pids cgroup: can a sandbox run as an unprivileged host uid, with exactly
        the mounts and devices of a real launch (its job folder in `job_parent`)? Probed once per
        distinct launch: user namespaces must be allowed to unprivileged users, every bound
        folder (the Python environment, the shared compile cache, the job folder) reachable by
        them, and on a GPU the driver must initialise for them. False when not root or when a
        pids cgroup holds the processes."""
        if os.geteuid() != 0 or host_pids_cgroups() is not None:
            return False
        parent = Path(job_parent or tempfile.gettempdir())
        command = [self.python, "-I", "-c", "pass" if mode is DeviceMode.interpreter else
                   "import ctypes, sys; sys.exit(ctypes.CDLL('libcuda.so.1').cuInit(0))"]
        mount, keyed = self.triton_cache, self
        if mount is not None and mount.writable:  # every compile run has a staging folder of its own, in one
            # folder: one answer for all of them (else a probe per compile sandbox, each kept forever)
            keyed = self.with_triton_cache(replace(mount, host_dir=mount.host_dir.parent))
        key = tuple(keyed._spec(job_dir=parent / "<job>", verdict_fd=1, mode=mode, device_index=device_index,
                               limits=Limits(), control_fd=None, host_uid=None, command=command, seccomp=False).argv)
        with _probe_lock:
            if key not in _unprivileged:
                _unprivileged[key] = self._probe_unprivileged(mode, device_index, parent, command)
            return _unprivileged[key]

    def _probe_unprivileged(self, mode: DeviceMode, device_index: int, parent: Path, command: list[str]) -> bool:
        if shutil.which("setpriv") is None:
            log.warning("setpriv (util-linux) is not installed: sandboxes stay root-mapped")
            return False
        try:
            lease = lease_host_uid()
        except OSError as exc:
            log.warning("no unprivileged host uid for sandboxes (%s): they stay root-mapped", exc)
            return False
        try:
            with tempfile.TemporaryDirectory(prefix="kernelgrade-probe-", dir=parent) as job:
                os.chmod(job, 0o755)
                spec = self._spec(job_dir=Path(job), verdict_fd=1, mode=mode, device_index=device_index,
                                  limits=Limits(), control_fd=None, host_uid=lease.uid, command=command, seccomp=False)
                done = subprocess.run(spec.argv, env=spec.env, stdin=subprocess.DEVNULL, capture_output=True,
                                      timeout=60, start_new_session=True)
        except (OSError, subprocess.TimeoutExpired) as exc:
            log.warning("an unprivileged sandbox could not start (%s): sandboxes stay root-mapped", exc)
            return False
        finally:
            lease.release()
        if done.returncode != 0:
            bound = [parent, *python_roots(self.python)] + ([self.triton_cache.host_dir] if self.triton_cache else [])
            blocked = sorted({str(b) for b in map(blocked_for_others, bound) if b is not None})
            log.warning("an unprivileged sandbox could not start (exit %s: %s)%s: sandboxes stay root-mapped, "
                        "with no process bound", done.returncode, done.stderr.decode(errors="replace")[-500:],
                        f"; not reachable by other users: {', '.join(blocked)}" if blocked else "")
            return False
        log.info("root without a pids cgroup: each sandbox runs as a host uid of its own, where RLIMIT_NPROC binds")
        return True

    def launch_spec(self, *, job_dir: Path, verdict_fd: int, mode: DeviceMode, device_index: int, limits: Limits,
                    control_fd: int | None = None, confinement: Confinement | None = None) -> LaunchSpec:
        host_uid = confinement.host_uid if confinement is not None else None
        return self._spec(job_dir=job_dir, verdict_fd=verdict_fd, mode=mode, device_index=device_index, limits=limits,
                          control_fd=control_fd, host_uid=host_uid, command=None, seccomp=True)

    def covered_paths(self, roots: list[Path] | None = None) -> list[Path]:
        """The hidden paths that lie inside a bound folder: each is covered with an empty tmpfs."""
        roots = python_roots(self.python) if roots is None else roots
        return [h for h in self.hidden_paths if any(is_within(h, r) for r in [*roots, Path("/usr")])]

    def template_spec(self, *, template_dir: Path, control_fd: int, mode: DeviceMode, device_index: int,
                      limits: Limits, host_uid: int | None = None) -> LaunchSpec:
        """The fork-server template (sandbox/forkserver.py): the grading sandbox's launch, but uid 0
        with capabilities inside its own user namespace, without the seccomp filter,
        --disable-userns and the read-only /proc/sys (each child puts all three back for itself
        before any student code: docs/forkserver.md), and sandbox/forkserver_template.py for the
        harness. `host_uid` (root without a pids cgroup): the template runs as that unprivileged
        host uid, as a fresh sandbox would, and forks one child at a time."""
        return self._spec(job_dir=template_dir, verdict_fd=control_fd, mode=mode, device_index=device_index,
                          limits=limits, control_fd=None, host_uid=host_uid, seccomp=False, template=True,
                          command=[self.python, "-I", "-B", "/forkserver/forkserver_template.py", str(control_fd),
                                   mode.value, *(["one-at-a-time"] if host_uid is not None else [])])

    def _spec(self, *, job_dir: Path, verdict_fd: int, mode: DeviceMode, device_index: int, limits: Limits,
              control_fd: int | None, host_uid: int | None, command: list[str] | None, seccomp: bool,
              template: bool = False) -> LaunchSpec:
        """`command` replaces the harness (the probe); `host_uid` drops to that uid before anything;
        `seccomp` adds the filter of sandbox/seccomp.py (its fd is in the spec's pass_fds);
        `template`: the fork-server template (template_spec)."""
        identity = (["--uid", "0", "--gid", "0", "--cap-add", "ALL"] if template else
                    # no nested user namespace (tmpfs of any size)
                    [*(["--disable-userns"] if bwrap_version() >= (0, 8) else []),
                     "--uid", str(SANDBOX_UID), "--gid", str(SANDBOX_UID)])
        args = [
            "bwrap",
            "--unshare-all",  # user, pid, net, ipc, uts, cgroup: no network at all
            "--unshare-user",  # required, not only tried: --disable-userns needs it
            *identity,
            "--die-with-parent",
            "--new-session",  # no TIOCSTI into the caller's terminal
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
            if os.path.exists(proc_path) and not template:
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
        for hidden in self.covered_paths(roots):
            if not template:  # the template's children cover them, each for itself (forkserver_template.py)
                args += ["--tmpfs", str(hidden)]
        args += [
            *(["--ro-bind", str(job_dir), "/forkserver", "--dir", "/job"] if template
              else ["--ro-bind", str(job_dir), "/job"]),
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
            *(arg for name, value in RUNTIME_THREAD_ENV.items() for arg in ("--setenv", name, value)),
            "--setenv", OWN_PID_NAMESPACE_ENV, "1",  # --unshare-all above
            *cache_env,
        ]
        if mode is DeviceMode.interpreter:
            args += ["--setenv", "TRITON_INTERPRET", "1"]
        pass_fds: tuple[int, ...] = ()
        program = filter_program() if seccomp else None
        if program is not None:
            pass_fds = (filter_fd(program),)
            args += ["--seccomp", str(pass_fds[0])]
        if command is not None:
            args += ["--", *command]
        else:
            args += ["--", self.python, "-I", "-B", "/job/harness.py", "/job", str(verdict_fd)]
            if control_fd is not None:
                args += ["--warm", mode.value, str(control_fd)]

        rlimits = [
            # the template runs as long as its pool; each child sets RLIMIT_CPU for itself
            *([] if template else [f"--cpu={limits.cpu_time_s}"]),
            f"--fsize={limits.file_size_bytes}",
            f"--nofile={limits.open_files}",
            # per host uid, not for root: see new_cgroup
            f"--nproc={limits.process_cap(mode) + (TEMPLATE_TASKS if template else 0)}",
            "--core=0",
        ]
        if mode is DeviceMode.interpreter:
            rlimits.append(f"--as={limits.memory_bytes}")
        argv = ["prlimit", *rlimits, "--", *args]
        if host_uid is not None:  # util-linux setpriv: real, effective and saved ids, no supplementary groups
            argv = ["setpriv", f"--reuid={host_uid}", f"--regid={host_uid}", "--clear-groups", "--", *argv]
        return LaunchSpec(argv=argv, env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")}, pass_fds=pass_fds)
