"""GPU suites: each test's shared compile cache is its own."""
from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest


@pytest.fixture
def compile_cache_dir():
    """A fresh shared compile cache that the sandboxes' unprivileged uids can reach. pytest's
    tmp_path lies under a 0700 folder when run as root, where the service falls back to one
    host-wide folder that every test (and any parallel suite) would share: a kernel compiled by
    another test would then look like a hit here."""
    root = Path(tempfile.mkdtemp(prefix="kg-gpu-cache-"))
    os.chmod(root, 0o755)
    try:
        yield root / "triton-shared"
    finally:
        shutil.rmtree(root, ignore_errors=True)
