# syntax=docker/dockerfile:1
# kernelgrade: one image for the API (`kernelgrade serve`), the Celery workers (`kernelgrade worker`)
# and, with the docker sandbox backend, the sandbox containers themselves.
#
# Production default: torch 2.11.0 + triton 3.6.0 on Python 3.12 (Ubuntu 24.04 with CUDA), the pair
# tested on the GPU host (deploy/constraints-gpu.txt), from PyPI. The torch wheel carries its own
# CUDA user-space libraries, so the base is the small `base` flavour of the CUDA image; the host
# gives the driver (the NVIDIA container toolkit, or the docker backend's explicit devices).
#
# The same file builds where no registry can be reached (`kernelgrade image build`, CI): a Debian
# base made with debootstrap (BASE_IMAGE, PYTHON=python3.11), the CPU pins (CONSTRAINTS), and the
# wheels pip downloaded on that machine (WHEELHOUSE, PIP_NO_INDEX=1). Measured sizes: docs/deploy.md.

ARG BASE_IMAGE=nvidia/cuda:12.8.1-base-ubuntu24.04

FROM ${BASE_IMAGE} AS build
ARG PYTHON=python3.12
ARG CONSTRAINTS=deploy/constraints-gpu.txt
ARG WHEELHOUSE=deploy/wheelhouse
# Set to 1 with a complete WHEELHOUSE: install from it alone (no index at all).
ARG PIP_NO_INDEX
ENV DEBIAN_FRONTEND=noninteractive PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_FIND_LINKS=/tmp/wheels
# A base that has the packages already (the debootstrap one) needs no apt, nor a network, here.
# hadolint ignore=DL3008
RUN dpkg -s "${PYTHON}" "${PYTHON}-venv" "${PYTHON}-dev" gcc libc6-dev >/dev/null 2>&1 \
 || { apt-get update \
      && apt-get install -y --no-install-recommends "${PYTHON}" "${PYTHON}-venv" "${PYTHON}-dev" gcc libc6-dev \
      && rm -rf /var/lib/apt/lists/*; }
RUN "${PYTHON}" -m venv /opt/venv
ENV PATH=/opt/venv/bin:$PATH
WORKDIR /opt/kernelgrade
# Dependencies first (the big layer), from the metadata alone: stub packages (and a stub README,
# which pyproject.toml names) stand in for the source so that this layer is rebuilt only when
# pyproject.toml, the pins or the wheels change.
COPY pyproject.toml ./
COPY constraints/ constraints/
COPY deploy/constraints-gpu.txt deploy/constraints-gpu.txt
COPY ${WHEELHOUSE}/ /tmp/wheels/
# torch and triton first, pinned by CONSTRAINTS (GPU default: torch==2.11.0 triton==3.6.0).
RUN mkdir service sandbox && touch README.md service/__init__.py sandbox/__init__.py \
 && pip install -c "${CONSTRAINTS}" torch triton \
 && pip install -c "${CONSTRAINTS}" -e '.[docker]' \
 && rm -rf service sandbox /tmp/wheels
# Editable install on purpose: the source tree /opt/kernelgrade is the package root (so the
# Alembic migrations and the exercises resolve as in a checkout), and it lies outside the
# folders the sandboxes see (/usr, /opt/venv and the job folder).
COPY service service
COPY sandbox sandbox
COPY exercises exercises
COPY deploy/healthcheck.py deploy/healthcheck.py

FROM ${BASE_IMAGE} AS runtime
ARG PYTHON=python3.12
ENV DEBIAN_FRONTEND=noninteractive
# ${PYTHON}-dev and gcc: Triton compiles its small CUDA launcher with the system C compiler
# against Python.h on first use. bubblewrap + util-linux (prlimit): the bwrap sandbox backend.
# hadolint ignore=DL3008,SC2086
RUN packages="${PYTHON} ${PYTHON}-dev gcc libc6-dev bubblewrap util-linux ca-certificates" \
 && { dpkg -s $packages >/dev/null 2>&1 \
      || { apt-get update && apt-get install -y --no-install-recommends $packages && rm -rf /var/lib/apt/lists/*; }; } \
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
