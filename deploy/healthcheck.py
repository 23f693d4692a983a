"""Container health check: `healthcheck.py api` (GET /healthz) or `healthcheck.py worker`.

Standard library for the API check; the worker check asks this host's Celery worker to answer a
ping over the broker (so a worker that lost Redis is unhealthy) and checks its sandbox backend (so
a worker whose Docker engine is down is unhealthy, and says so; not for a `--lane fast` worker,
which runs none). Exit 0 healthy, 1 not.
"""
from __future__ import annotations

import os
import socket
import sys
import urllib.request


def api() -> int:
    url = os.environ.get("KERNELGRADE_HEALTHCHECK_URL", "http://127.0.0.1:8000/healthz")
    try:
        with urllib.request.urlopen(url, timeout=5) as response:  # noqa: S310 - fixed local URL
            return 0 if response.status == 200 else 1
    except OSError as exc:
        print(f"unhealthy: {url}: {exc}", file=sys.stderr)
        return 1


def worker() -> int:
    from sandbox.backends import SandboxUnavailable, make_backend
    from service.config import Settings
    from service.worker.celery_app import celery_app

    settings = Settings()
    if settings.worker_lane != "fast":  # a fast worker runs no sandbox (docker-compose.yml: no engine socket)
        try:
            make_backend(settings.sandbox, python=settings.sandbox_python, hidden_paths=settings.hidden_paths(),
                         allow_unsafe_local=True).check()
        except SandboxUnavailable as exc:
            print(f"unhealthy: the {settings.sandbox} sandbox cannot run: {exc}", file=sys.stderr)
            return 1

    me = f"celery@{socket.gethostname()}"
    replies = celery_app().control.ping(destination=[me], timeout=5.0)
    if any(me in reply for reply in replies):
        return 0
    print(f"unhealthy: {me} did not answer a ping", file=sys.stderr)
    return 1


if __name__ == "__main__":
    role = sys.argv[1] if len(sys.argv) > 1 else "api"
    sys.exit({"api": api, "worker": worker}[role]())
