"""What each sandbox backend costs: an empty sandbox, and one lesson-6 submission graded cold.

    python bench/sandbox_backends.py --device auto --backends bwrap,docker --runs 5 --out bench-out/backends

Per backend, one after the other in this process, nothing else running:
- empty start: the backend's own launch of a sandbox that runs `/bin/true` instead of the harness
  (bwrap: its argv; docker: the launcher process creating, attaching, starting, waiting for and
  removing a container of the configured image), wall clock from spawn to exit;
- cold submission: the example submission graded with no warm pool and no verdict memo, so
  every grading starts a sandbox and imports torch; the report's timing (start-up until the
  harness said hello, sandbox total, grading total), p50 over `--runs` distinct secret seeds.
- warm submission: the same from a warm pool (sandboxes started ahead, the service's default),
  waiting for the pool to refill between submissions.
The docker backend uses KERNELGRADE_DOCKER_IMAGE (default kernelgrade:latest; the host-system
image where the full one cannot be built).
Writes backends.json and prints a Markdown table.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sandbox.backends import make_backend  # noqa: E402
from sandbox.backends.docker.backend import DockerBackend  # noqa: E402
from sandbox.contract import DeviceMode, Limits  # noqa: E402
from sandbox.host_uids import lease_host_uid  # noqa: E402
from service.bootstrap import build_grader  # noqa: E402
from service.config import REPO_ROOT, Settings  # noqa: E402
from service.submission import Submission  # noqa: E402

EXAMPLE = REPO_ROOT / "exercises/lesson06_mean_var/example_submission.json"


def empty_start_s(name: str, mode: DeviceMode, settings: Settings) -> float:
    """One sandbox start that runs /bin/true, as the backend launches it."""
    backend = make_backend(name, python=settings.sandbox_python, hidden_paths=settings.hidden_paths())
    backend.check()
    with tempfile.TemporaryDirectory(prefix="kg-job-bench-") as job:
        os.chmod(job, 0o755)
        read_fd, write_fd = os.pipe()
        try:
            if isinstance(backend, DockerBackend):
                spec = backend.launch_spec(job_dir=Path(job), verdict_fd=write_fd, mode=mode, device_index=0,
                                           limits=Limits())
                argv = list(spec.argv)
                sent = json.loads(argv[argv.index("--spec") + 1])
                sent["command"] = ["/bin/true"]
                argv[argv.index("--spec") + 1] = json.dumps(sent)
                env = spec.env
                pass_fds = (write_fd,)
            else:  # bwrap: the grading sandbox's exact argv with /bin/true for the harness (a private helper)
                # as in grading: a host uid of its own where the backend's probe allows it, and seccomp
                unprivileged = backend.unprivileged(mode, 0, Path(job).parent)
                lease = lease_host_uid() if unprivileged else None
                try:
                    spec = backend._spec(job_dir=Path(job), verdict_fd=write_fd, mode=mode, device_index=0,
                                         limits=Limits(), control_fd=None, host_uid=lease.uid if lease else None,
                                         command=["/bin/true"], seccomp=True)
                finally:
                    if lease is not None:
                        lease.release()
                argv, env = spec.argv, spec.env
                pass_fds = (write_fd, *spec.pass_fds)
            started = time.perf_counter()
            done = subprocess.run(argv, env=env, pass_fds=pass_fds, capture_output=True, timeout=120)
            elapsed = time.perf_counter() - started
        finally:
            os.close(read_fd)
            os.close(write_fd)
    if done.returncode != 0:
        raise RuntimeError(f"{name}: the empty sandbox failed ({done.returncode}): {done.stdout[-500:]!r} {done.stderr[-500:]!r}")
    return elapsed


def grade_runs(settings: Settings, runs: int, *, warm: bool) -> list[dict]:
    grader = build_grader(settings)
    submission = Submission.model_validate_json(EXAMPLE.read_text(encoding="utf-8"))
    rows = []
    try:
        if warm:
            grader.start()
        for seed in range(runs):
            if warm:
                pool = next(iter(grader.runner.pools.values()), None)
                if pool is not None:
                    pool.wait_ready(1, 300)
            started = time.perf_counter()
            report = grader.grade(submission, secret_seed=1000 + seed)
            wall = time.perf_counter() - started
            if report.status != "graded" or report.score.total != 10:
                raise RuntimeError(f"{settings.sandbox}: the example did not earn 10 points: {report.status} {report.message}")
            rows.append({"wall_s": wall, **{k: report.timing.get(k) for k in ("startup_s", "sandbox_s", "total_s")},
                         "device": report.environment.device})
    finally:
        grader.close()
    return rows


def p50(rows: list[dict], key: str) -> float | None:
    values = [r[key] for r in rows if r.get(key) is not None]
    return statistics.median(values) if values else None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", choices=["auto", "gpu", "interpreter"], default="auto")
    parser.add_argument("--backends", default="bwrap,docker")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--empty-runs", type=int, default=10)
    parser.add_argument("--out", type=Path, default=Path("bench-out/backends"))
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    base = Settings(device=args.device)
    mode = base.device_mode()
    results: dict = {"date": datetime.now(UTC).isoformat(timespec="seconds"), "mode": mode.value,
                     "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "kernel": platform.release()},
                     "image": os.environ.get("KERNELGRADE_DOCKER_IMAGE", "kernelgrade:latest"), "backends": {}}
    for name in args.backends.split(","):
        settings = Settings(device=args.device, sandbox=name, warm_pool=0, verdict_memo=False, compile_cache=False)
        empty = [empty_start_s(name, mode, settings) for _ in range(args.empty_runs)]
        cold = grade_runs(settings, args.runs, warm=False)
        warm = grade_runs(Settings(device=args.device, sandbox=name, warm_pool=1, verdict_memo=False,
                                   compile_cache=False), args.runs, warm=True)
        results["backends"][name] = {"empty_start_s": empty, "cold": cold, "warm": warm}
        print(f"{name}: empty start p50 {statistics.median(empty):.3f} s; cold start-up p50 {p50(cold, 'startup_s'):.2f} s, "
              f"per submission p50 {p50(cold, 'wall_s'):.2f} s cold, {p50(warm, 'wall_s'):.2f} s warm", flush=True)
    (args.out / "backends.json").write_text(json.dumps(results, indent=2))
    print(f"\n{mode.value}, {os.cpu_count()} CPUs, {results['date']}; p50 of {args.runs} (empty: {args.empty_runs})\n")
    print("| backend | empty sandbox | start-up (torch, canary) | per submission, cold | per submission, warm pool |")
    print("| --- | --- | --- | --- | --- |")
    for name, entry in results["backends"].items():
        print(f"| {name} | {statistics.median(entry['empty_start_s']):.3f} s | {p50(entry['cold'], 'startup_s'):.2f} s | "
              f"{p50(entry['cold'], 'wall_s'):.2f} s | {p50(entry['warm'], 'wall_s'):.2f} s |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
