# syntax=docker/dockerfile:1
# kernelgrade: one image for the API (`kernelgrade serve`), the Celery workers (`kernelgrade worker`)
# and, with the docker sandbox backend, the sandbox containers themselves.
#
# torch 2.11.0 + triton 3.6.0 on Python 3.12 (Ubuntu 24.04): the pair tested on the GPU host
# (deploy/constraints-gpu.txt). The torch wheel from PyPI carries its own CUDA user-space
# libraries (nvidia-* wheels), so the base is the small `base` flavour of the CUDA image
# (cudart and the driver-compat glue), not the much larger `runtime` one. The host needs an
# NVIDIA driver new enough for the CUDA version of that torch wheel and the NVIDIA Container Toolkit.
# Size (an estimate: this image was never built where it was written): ~5-6 GB unpacked,
# ~2.5-3.5 GB to pull, nearly all of it torch and its CUDA libraries, which sit in one layer
# that changes only with the pins; an upgrade of kernelgrade itself pulls a few MB.

ARG BASE_IMAGE=nvidia/cuda:12.8.1-base-ubuntu24.04

FROM ${BASE_IMAGE} AS build
ENV DEBIAN_FRONTEND=noninteractive PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
# hadolint ignore=DL3008
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3.12 python3.12-venv python3.12-dev gcc libc6-dev \
 && rm -rf /var/lib/apt/lists/*
RUN python3.12 -m venv /opt/venv
ENV PATH=/opt/venv/bin:$PATH
WORKDIR /opt/kernelgrade
# Dependencies first (the big layer), from the metadata alone: stub packages stand in for the
# source so that this layer is rebuilt only when pyproject.toml or the pins change.
COPY pyproject.toml README.md ./
COPY deploy/constraints-gpu.txt deploy/constraints-gpu.txt
RUN mkdir service sandbox && touch service/__init__.py sandbox/__init__.py \
 && pip install -c deploy/constraints-gpu.txt torch==2.11.0 triton==3.6.0 \
 && pip install -c deploy/constraints-gpu.txt -e '.[docker]' \
 && rm -rf service sandbox
# Editable install on purpose: the source tree /opt/kernelgrade is the package root (so the
# Alembic migrations and the exercises resolve as in a checkout), and it lies outside the
# folders the sandboxes see (/usr, /opt/venv and the job folder).
COPY service service
COPY sandbox sandbox
COPY exercises exercises
COPY deploy/healthcheck.py deploy/healthcheck.py

FROM ${BASE_IMAGE} AS runtime
ENV DEBIAN_FRONTEND=noninteractive
# python3.12-dev and gcc: Triton compiles its small CUDA launcher with the system C compiler
# against Python.h on first use. bubblewrap + util-linux (prlimit): the bwrap sandbox backend.
# hadolint ignore=DL3008
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3.12 python3.12-dev gcc libc6-dev bubblewrap util-linux ca-certificates \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --uid 10001 --user-group --create-home --home-dir /home/kernelgrade --shell /usr/sbin/nologin kernelgrade \
 && install -d -o 10001 -g 10001 -m 0750 /var/lib/kernelgrade
COPY --from=build /opt/venv /opt/venv
COPY --from=build /opt/kernelgrade /opt/kernelgrade
ENV PATH=/opt/venv/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    KERNELGRADE_EXERCISES_DIR=/opt/kernelgrade/exercises \
    KERNELGRADE_DATA_DIR=/var/lib/kernelgrade \
    KERNELGRADE_SANDBOX_PYTHON=/opt/venv/bin/python \
    KERNELGRADE_DOCKER_PYTHON=/opt/venv/bin/python
USER 10001:10001
WORKDIR /var/lib/kernelgrade
EXPOSE 8000
# The API's liveness; the compose file gives workers their own check (`healthcheck.py worker`).
HEALTHCHECK --interval=30s --timeout=10s --start-period=60s --retries=3 \
  CMD ["python", "/opt/kernelgrade/deploy/healthcheck.py", "api"]
CMD ["kernelgrade", "serve", "--host", "0.0.0.0", "--port", "8000"]
