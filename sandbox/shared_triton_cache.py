"""Runs inside the sandbox: Triton's file cache, looking first in the shared read-only cache.

The shared cache is mounted read-only at $KERNELGRADE_SHARED_TRITON_CACHE (GPU mode only). Only
the trusted side fills it, from programs it chose to compile (see sandbox/compile_cache.py), so a
common fill finds its kernels and launchers there and does not compile at all. Everything this
sandbox compiles goes to its own private cache ($TRITON_CACHE_DIR on the private /tmp), which
disappears with it: no student can write into what another student's sandbox reads. A trusted
compile run reads the shared cache the same way (mounted elsewhere) and writes its staging folder.

Selected with TRITON_CACHE_MANAGER=shared_triton_cache:SharedFirstCacheManager (the job folder is
on sys.path). Subclasses Triton's own FileCacheManager so writes keep its atomic-rename protocol.
"""
from __future__ import annotations

import os

from triton.runtime.cache import FileCacheManager

SHARED_ENV = "KERNELGRADE_SHARED_TRITON_CACHE"

# Kernels found in the shared cache, and kernels this sandbox compiled (a group is written once
# per compiled kernel). The harness reports both at the end; informational only.
counts = {"shared_hits": 0, "compiled": 0}


class SharedFirstCacheManager(FileCacheManager):
    def __init__(self, key, override=False, dump=False):
        super().__init__(key, override=override, dump=dump)
        root = os.environ.get(SHARED_ENV)
        # The override and dump folders are debugging aids: never redirected.
        self.shared_dir = os.path.join(root, key) if root and not (override or dump) else None

    def get_file(self, filename):
        if self.shared_dir is not None:
            path = os.path.join(self.shared_dir, filename)
            if os.path.isfile(path):
                return path
        return super().get_file(filename)

    def get_group(self, filename):
        if self.shared_dir is not None and os.path.isdir(self.shared_dir):
            # The group file lists absolute child paths; the trusted side compiled them with the
            # shared folder mounted at this same path, so they resolve here as they are.
            private, self.cache_dir = self.cache_dir, self.shared_dir
            try:
                group = super().get_group(filename)
            finally:
                self.cache_dir = private
            # Complete only if the file asked for resolves: a trusted compile run reads the shared
            # cache elsewhere (/triton-shared-read), where those absolute paths do not lead.
            if group is not None and filename in group:
                counts["shared_hits"] += 1
                return group
        return super().get_group(filename)

    def put_group(self, filename, group):
        counts["compiled"] += 1
        return super().put_group(filename, group)
