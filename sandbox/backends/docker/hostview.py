"""What of this machine a sandbox container is given: its system folders (host-system images) and,
on a GPU, the NVIDIA device nodes and driver libraries (no NVIDIA container toolkit needed).

Paths are the worker's view. The engine resolves them on its own host, so a worker that runs in a
container itself must see them at the same paths (docs/deploy.md).
"""
from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

from sandbox.backends.bwrap import MERGED_USR_LINKS, NVIDIA_SHARED_NODES, python_roots

# The driver's compute and management libraries (the set the NVIDIA toolkit mounts for the
# `compute,utility` capabilities), as file name prefixes in the folder of libcuda.so.1.
DRIVER_LIBRARIES = ("libcuda.so", "libcudadebugger.so", "libnvidia-ptxjitcompiler.so", "libnvidia-nvvm.so",
                    "libnvidia-gpucomp.so", "libnvidia-ml.so", "libnvidia-allocator.so", "libnvidia-pkcs11")
SYSTEM_FILES = ("/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/nsswitch.conf")
# Where libcuda.so.1 usually lies when the linker cache does not say (driver containers, images).
DRIVER_DIR_GUESSES = ("/usr/local/nvidia/lib64", "/usr/lib/x86_64-linux-gnu", "/usr/lib64",
                      "/usr/lib/aarch64-linux-gnu")


@dataclass(frozen=True)
class GpuView:
    """One GPU as a container sees it: device nodes (`--device`), driver files bound read-only at
    their own paths, and the driver folder (LD_LIBRARY_PATH, TRITON_LIBCUDA_PATH)."""

    devices: tuple[str, ...]
    driver_dir: str | None
    driver_files: tuple[str, ...]


def gpu_view(device_index: int, *, driver_dir: str | None = None) -> GpuView:
    nodes = [*NVIDIA_SHARED_NODES, f"/dev/nvidia{device_index}"]
    devices = tuple(n for n in nodes if os.path.exists(n))
    folder = driver_dir or find_driver_dir()
    files: tuple[str, ...] = ()
    if folder is not None and os.path.isdir(folder):
        files = tuple(sorted(str(p) for p in Path(folder).iterdir()
                             if p.name.startswith(DRIVER_LIBRARIES) and p.exists()))
    return GpuView(devices=devices, driver_dir=folder, driver_files=files)


def find_driver_dir() -> str | None:
    """The folder of libcuda.so.1: from `ldconfig -p` (what Triton itself asks), else the usual places."""
    for ldconfig in ("/sbin/ldconfig", "/usr/sbin/ldconfig"):
        if not os.path.exists(ldconfig):
            continue
        try:
            listing = subprocess.run([ldconfig, "-p"], capture_output=True, text=True, timeout=10).stdout
        except (OSError, subprocess.TimeoutExpired):
            break
        for line in listing.splitlines():
            if line.strip().startswith("libcuda.so.1 ") and "=>" in line:
                return os.path.dirname(line.split("=>", 1)[1].strip())
        break
    return next((d for d in DRIVER_DIR_GUESSES if os.path.exists(os.path.join(d, "libcuda.so.1"))), None)


def system_binds(python: str) -> tuple[str, ...]:
    """Host-system images: the folders bwrap binds (the system under /usr, the merged-/usr folders
    that are real folders here, the linker's cache and the Python environment), read-only."""
    binds = ["/usr"]
    binds += [link for link in MERGED_USR_LINKS if os.path.isdir(link) and not os.path.islink(link)]
    binds += [f for f in SYSTEM_FILES if os.path.exists(f)]
    if os.path.isdir("/etc/ld.so.conf.d"):
        binds.append("/etc/ld.so.conf.d")
    binds += [str(root) for root in python_roots(python)]
    return tuple(binds)
