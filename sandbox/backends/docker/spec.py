"""The exact sandbox container, as plain data for `client.containers.create(image, command, **kwargs)`.

A pure function (no engine needed), so that every isolation setting can be tested as it is sent.
No network, a read-only root, uid 65534, every capability dropped, no-new-privileges, the engine's
default seccomp profile, pids and memory (no swap) cgroup limits and a CPU quota, rlimits, a
size-capped /tmp as the only writable place, the job folder read-only at /job, no log driver.
The image either holds Python itself (the kernelgrade image) or is a bare host-system image that
gets the worker's /usr and Python environment read-only, as bwrap does (`system_binds`).
"""
from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sandbox.backends.base import (
    SHARED_FIRST_MANAGER,
    TRITON_CACHE_MOUNT_POINT,
    TRITON_CACHE_READS_MOUNT_POINT,
    TritonCacheMount,
)
from sandbox.backends.docker.hostview import GpuView
from sandbox.backends.docker.options import DockerOptions
from sandbox.contract import OWN_PID_NAMESPACE_ENV, RUNTIME_THREAD_ENV, DeviceMode, Limits
from sandbox.paths import is_within

SANDBOX_UID = 65534
JOB_MOUNT = "/job"
VERDICT_FD_IN_CONTAINER = 3
LABEL = "kernelgrade.sandbox"
OWNER_LABEL = "kernelgrade.owner"  # the runner process that started it (reaper.sweep)
BUDGET_LABEL = "kernelgrade.budget_s"  # after this long it is stale whoever started it
# /bin/sh -c SCRIPT PYTHON [MODE]: stdout becomes the verdict fd, the student's stdout joins stderr.
SHELL_SCRIPT = (f'exec {VERDICT_FD_IN_CONTAINER}>&1 1>&2 && '
                f'exec "$0" -I -B {JOB_MOUNT}/harness.py {JOB_MOUNT} {VERDICT_FD_IN_CONTAINER}')
# A warm start: the harness waits for `g` on stdin (fd 0), which the launcher feeds from the runner's
# control pipe through the attach stream.
WARM_SHELL_SCRIPT = SHELL_SCRIPT + ' --warm "$1" 0'
HIDDEN_TMPFS = "ro,nosuid,nodev,noexec,size=4k,mode=0555"
NEVER_HIDDEN = ("/", "/tmp", JOB_MOUNT, "/usr", "/proc", "/dev", "/sys", "/etc")


@dataclass(frozen=True)
class ContainerView:
    """What the container gets beyond its image, decided on the worker (hostview.py)."""

    python: str  # the interpreter that runs the harness, inside the container
    system_binds: tuple[str, ...] = ()  # host-system images: host folders bound read-only at the same path
    gpu: GpuView | None = None  # gpu=devices in GPU mode
    triton_cache: TritonCacheMount | None = None  # GPU mode: the shared compile cache


def _ro_bind(source: str, target: str | None = None) -> dict[str, Any]:
    return {"Type": "bind", "Source": source, "Target": target or source, "ReadOnly": True,
            "BindOptions": {"Propagation": "rprivate"}}


def _hidden(paths: list[str], view: ContainerView) -> list[str]:
    """Hidden paths the container could otherwise see: any in a self-contained image, only those
    inside a bound folder in a host-system one; never the interpreter's nor the system's."""
    kept = []
    for hidden in sorted({os.path.normpath(p) for p in paths}):
        if not os.path.isabs(hidden) or hidden in NEVER_HIDDEN or is_within(view.python, hidden):
            continue
        if any(is_within(hidden, p) for p in ("/tmp", JOB_MOUNT, "/proc", "/dev", "/sys")):
            continue
        if view.system_binds and not any(is_within(hidden, b) for b in view.system_binds):
            continue
        kept.append(hidden)
    return kept


def _environment(mode: DeviceMode, device_index: int, options: DockerOptions, view: ContainerView) -> dict[str, str]:
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": "/tmp",
        "TRITON_CACHE_DIR": "/tmp/triton-cache",
        "PYTHONDONTWRITEBYTECODE": "1",
        **RUNTIME_THREAD_ENV,
        OWN_PID_NAMESPACE_ENV: "1",  # a container's own pid namespace
        # The CUDA base image says NVIDIA_VISIBLE_DEVICES=all, which the `nvidia` runtime would
        # honour: name exactly the requested GPU, or none at all.
        "NVIDIA_VISIBLE_DEVICES": str(device_index) if mode is DeviceMode.gpu else "void",
    }
    if mode is DeviceMode.interpreter:
        env["TRITON_INTERPRET"] = "1"
        return env
    env["NVIDIA_DRIVER_CAPABILITIES"] = "compute,utility"
    if options.gpu == "devices" and view.gpu is not None and view.gpu.driver_dir:
        # Triton otherwise runs `/sbin/ldconfig -p` to find libcuda, which a bare image lacks.
        env["TRITON_LIBCUDA_PATH"] = view.gpu.driver_dir
        env["LD_LIBRARY_PATH"] = view.gpu.driver_dir
    cache = view.triton_cache
    if cache is not None and cache.writable:  # a trusted compile run: Triton writes the staging folder
        env["TRITON_CACHE_DIR"] = TRITON_CACHE_MOUNT_POINT
        if cache.reads is not None and os.path.isdir(cache.reads):  # after reading the shared cache
            env["KERNELGRADE_SHARED_TRITON_CACHE"] = TRITON_CACHE_READS_MOUNT_POINT
            env["TRITON_CACHE_MANAGER"] = SHARED_FIRST_MANAGER
    elif cache is not None:
        env["KERNELGRADE_SHARED_TRITON_CACHE"] = TRITON_CACHE_MOUNT_POINT
        env["TRITON_CACHE_MANAGER"] = SHARED_FIRST_MANAGER
    return env


def container_spec(*, job_dir: Path | str, mode: DeviceMode, device_index: int, limits: Limits,
                   options: DockerOptions, view: ContainerView, hidden_paths: Sequence[Path | str] = (),
                   owner: str = "", warm: bool = False) -> dict[str, Any]:
    """{"image", "command", "kwargs"}: the container of one sandbox start; `warm`: started before its
    job is written, waiting for `g` on stdin."""
    # Bytes and files (`nr_inodes`) both capped. /dev/shm is a tmpfs of ours too (the engine then
    # mounts no shm of its own there, and `shm_size` is not used): its shm mount takes only a size.
    scratch = f"size={limits.tmpfs_bytes},nr_inodes={limits.tmpfs_files},mode=1777"
    tmpfs = {"/tmp": f"rw,nosuid,nodev,exec,{scratch}", "/dev/shm": f"rw,nosuid,nodev,noexec,{scratch}"}
    for hidden in _hidden([*options.hidden_paths, *map(str, hidden_paths)], view):
        tmpfs[hidden] = HIDDEN_TMPFS

    mounts = [_ro_bind(path) for path in view.system_binds]
    mounts.append(_ro_bind(str(job_dir), JOB_MOUNT))
    devices: list[str] = []
    if mode is DeviceMode.gpu:
        if options.gpu == "devices" and view.gpu is not None:
            devices = [f"{node}:{node}:rwm" for node in view.gpu.devices]
            visible = [*view.system_binds, JOB_MOUNT]
            mounts += [_ro_bind(f) for f in view.gpu.driver_files if not any(is_within(f, v) for v in visible)]
        if view.triton_cache is not None and os.path.isdir(view.triton_cache.host_dir):
            cache = view.triton_cache
            mounts.append({"Type": "bind", "Source": str(cache.host_dir), "Target": TRITON_CACHE_MOUNT_POINT,
                           "ReadOnly": not cache.writable, "BindOptions": {"Propagation": "rprivate"}})
            if cache.writable and cache.reads is not None and os.path.isdir(cache.reads):
                mounts.append({"Type": "bind", "Source": str(cache.reads), "Target": TRITON_CACHE_READS_MOUNT_POINT,
                               "ReadOnly": True, "BindOptions": {"Propagation": "rprivate"}})

    ulimits = [
        {"name": "cpu", "soft": limits.cpu_time_s, "hard": limits.cpu_time_s},
        {"name": "fsize", "soft": limits.file_size_bytes, "hard": limits.file_size_bytes},
        {"name": "nofile", "soft": limits.open_files, "hard": limits.open_files},
        {"name": "core", "soft": 0, "hard": 0},
        # No RLIMIT_NPROC: it counts every process of uid 65534 on the host, across sandboxes;
        # pids_limit below is per container.
    ]
    budget_s = limits.startup_timeout_s + limits.run_timeout_s + limits.kill_grace_s
    kwargs: dict[str, Any] = {
        "user": f"{SANDBOX_UID}:{SANDBOX_UID}",
        "environment": _environment(mode, device_index, options, view),
        "working_dir": "/tmp",
        "hostname": "sandbox",
        # A warm sandbox may wait in its pool for any length of time: its owner's liveness decides.
        "labels": {LABEL: "1", "kernelgrade.job": Path(job_dir).name, OWNER_LABEL: owner,
                   BUDGET_LABEL: "warm" if warm else f"{budget_s:g}"},
        "network_mode": "none",
        "read_only": True,
        "tmpfs": tmpfs,
        "mounts": mounts,
        "devices": devices,
        "cap_drop": ["ALL"],
        "security_opt": ["no-new-privileges"],
        "privileged": False,
        "ipc_mode": "private",
        "pids_limit": limits.process_cap(mode),
        "mem_limit": limits.memory_bytes,
        "memswap_limit": limits.memory_bytes,  # equal to mem_limit: no swap
        "nano_cpus": int(options.cpus * 1e9),
        "ulimits": ulimits,
        "log_config": {"type": "none", "config": {}},
        "healthcheck": {"test": ["NONE"]},
        "stdin_open": warm,  # with the SDK's create(): StdinOnce too (EOF on the attach stream closes it)
        "tty": False,
    }
    if mode is DeviceMode.gpu and options.gpu == "nvidia":
        kwargs["device_requests"] = [{"driver": options.gpu_driver, "device_ids": [str(device_index)],
                                      "capabilities": [["gpu"]]}]
    if options.runtime:
        kwargs["runtime"] = options.runtime
    command = ["/bin/sh", "-c", WARM_SHELL_SCRIPT, view.python, mode.value] if warm else \
        ["/bin/sh", "-c", SHELL_SCRIPT, view.python]
    return {"image": options.image, "command": command, "kwargs": kwargs}
