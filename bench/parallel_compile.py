"""A new fill's compile: serial in its grading sandbox (today) against parallel compile runs first
(issue #20 item 3; GPU: the shared compile cache is GPU only).

    python bench/parallel_compile.py --device gpu --out bench-out/parcompile --runs 4 --fills 12 --burst 16

Settings, each on a fresh grader with a fresh, empty shared compile cache into which lesson 6's
reference solution is compiled first (as the service's prewarm does; what Triton needs besides
the kernels is then there), with a warm grading pool of `--pool` and no verdict memo:
- serial: today. The grading sandbox compiles every specialisation the cache lacks, one after
  the other; the trusted side compiles the program into the cache after the grading.
- before K: `KERNELGRADE_COMPILE_CACHE_PARALLEL=K` warm compile sandboxes compile the program's
  cases split K ways, and the grading run starts once they are published (waiting at most
  `--wait-s`).
- while K: the same compile runs, but the grading run starts at once
  (`KERNELGRADE_COMPILE_CACHE_PARALLEL_WAIT_S=0`) and finds whatever they published in time.

Fills are new programs, none in the cache (not the reference, not a mutant): `cols < N + k - k`
for k = 1, 2, ... (all correct, each its own program and so its own kernels). One at a time,
`--fills` of them, the pools refilled between submissions (students do not submit back to back);
then a burst of `--burst` further new fills queued at once to `--workers` grading threads (the
compile sandboxes run dry there: a new program finding fewer than 2 ready is graded as today).
Per grading: grade() wall time, the kernels its sandbox compiled and found in the cache (the
report's timing), and in the parallel settings the compile runs' wall time and the grading's wait.
The speed card follows the grade as in the service (issue #20 item 1: the wall time is the grade's,
and the card's arrival is printed apart); `--speed-inline` waits for it inside grade() (the figures
of this bench before 2026-12-03, whose "new fill" times hold the speed phase, about 0.45 s on an H200).
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
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sandbox.compile_cache import SharedCompileCache  # noqa: E402
from sandbox.contract import DeviceMode  # noqa: E402
from service.bootstrap import build_grader  # noqa: E402
from service.config import Settings  # noqa: E402
from service.grading.assemble import assemble  # noqa: E402
from service.grading.compile_warm import CompileWarmer  # noqa: E402
from service.grading.extract import extract  # noqa: E402
from service.submission import Submission  # noqa: E402

EXERCISE = "lesson06_mean_var"


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)


def percentile(values: list[float], q: float) -> float | None:
    values = sorted(v for v in values if v is not None)
    return values[min(len(values) - 1, int(round(q * (len(values) - 1))))] if values else None


def fmt(value, unit: str = "") -> str:
    return "–" if value is None else f"{value:.3g}{unit}"


def submissions(exercise, first: int, count: int) -> list[tuple[str, Submission]]:
    example = json.loads((exercise.root / "example_submission.json").read_text(encoding="utf-8"))
    out = []
    for k in range(first, first + count):
        fill = f"cols < N + {k} - {k}"
        out.append((fill, Submission(exercise=exercise.id, code=exercise.template.replace("______", fill, 1),
                                     answers=example["answers"], explanation=example["explanation"],
                                     claimed_output=example.get("claimed_output", ""))))
    return out


def settings_for(name: str, args, tmp: Path) -> Settings:
    runs = 0 if name == "serial" else int(name.split()[1])
    wait = 0.0 if name.startswith("while") else args.wait_s
    return Settings(device=args.device, warm_pool=args.pool, data_dir=tmp, compile_cache=True,
                    compile_cache_prewarm=False, compile_cache_threads=2, verdict_memo=False,
                    compile_cache_parallel=runs, compile_cache_parallel_wait_s=wait)


def wait_ready(grader, args) -> None:
    pool = grader.runner.pools.get((grader.mode, grader.device_index))
    if pool is not None and not pool.wait_ready(args.pool, args.ready_timeout_s):
        log("  grading pool NOT ready")
    warmer = grader.compile_cache
    if warmer is not None and warmer.parallel and not warmer.wait_parallel_ready(args.ready_timeout_s):
        log("  compile sandboxes NOT ready")


SPEED_INLINE = False  # --speed-inline


def grade_one(grader, fill: str, body: Submission, seed: int, *, wait_card: bool = True) -> dict:
    card: dict = {}
    arrived = threading.Event()
    t0 = time.perf_counter()

    def on_speed(performance, translations) -> None:  # the speed card's revision, after the grade
        card.update(status=performance.status, after_s=time.perf_counter() - t0)
        arrived.set()

    report = grader.grade(body, secret_seed=seed, on_speed=None if SPEED_INLINE else on_speed)
    wall = time.perf_counter() - t0
    if wait_card and report.performance is not None and report.performance.status == "pending":
        arrived.wait(grader.runner.limits.speed_timeout_s + 30)  # before the next fill: one sandbox at a time
    t = report.timing
    return {"fill": fill, "wall_s": wall, "speed_card_after_s": card.get("after_s"), "status": report.status,
            "passed": sum(c.passed for c in report.cases), "cases": len(report.cases),
            "sandbox_s": t.get("sandbox_s"), "compiled": t.get("kernels_compiled"),
            "shared_hits": t.get("kernels_shared_hits"), "parallel_runs": t.get("parallel_compile_runs"),
            "parallel_compile_s": t.get("parallel_compile_s"), "parallel_wait_s": t.get("parallel_compile_wait_s"),
            "device": report.environment.device, "triton": report.environment.triton,
            "torch": report.environment.torch}


def summary(rows: list[dict], wall_s: float | None = None) -> dict:
    walls = [r["wall_s"] for r in rows]
    parallel = [r for r in rows if r.get("parallel_runs")]
    return {"n": len(rows), "p50_s": percentile(walls, 0.5), "p95_s": percentile(walls, 0.95),
            "mean_s": statistics.fmean(walls) if walls else None, "per_s": len(rows) / wall_s if wall_s else None,
            "compiled_p50": percentile([r["compiled"] for r in rows], 0.5),
            "shared_hits_p50": percentile([r["shared_hits"] for r in rows], 0.5),
            "sandbox_p50_s": percentile([r["sandbox_s"] for r in rows], 0.5),
            "speed_card_p50_s": percentile([r["speed_card_after_s"] for r in rows
                                            if r.get("speed_card_after_s") is not None], 0.5),
            "with_parallel": len(parallel),
            "parallel_compile_p50_s": percentile([r["parallel_compile_s"] for r in parallel], 0.5),
            "parallel_wait_p50_s": percentile([r["parallel_wait_s"] for r in parallel], 0.5),
            "all_passed": all(r["status"] == "graded" and r["passed"] == r["cases"] for r in rows)}


def measure(name: str, args, exercise) -> dict:
    with tempfile.TemporaryDirectory(prefix="kg-parcompile-") as tmp:
        os.chmod(tmp, 0o755)  # the sandboxes' uids reach this mode's own compile cache (else all modes share one fallback)
        settings = settings_for(name, args, Path(tmp))
        grader = build_grader(settings)
        if grader.compile_cache is None and grader.mode is DeviceMode.interpreter:
            # A dry run of the orchestration on a CPU: compile runs that publish nothing (tests do the same).
            grader.compile_cache = CompileWarmer(
                cache=SharedCompileCache(Path(tmp) / "triton-shared"), backend=grader.runner.backend,
                limits=settings.limits, mode=DeviceMode.interpreter, parallel=settings.compile_cache_parallel,
                parallel_wait_s=settings.compile_cache_parallel_wait_s)
        warmer = grader.compile_cache
        if warmer is None:
            raise SystemExit("no shared compile cache here (GPU mode with bwrap or docker only)")
        grader.start()
        try:
            t0 = time.perf_counter()
            extraction = extract(exercise.template, exercise.solution)
            warmer.submit(exercise, assemble(exercise.template, extraction.fill_sources))
            warmer.wait_idle(args.ready_timeout_s)
            log(f"  reference compiled into the cache in {time.perf_counter() - t0:.1f} s "
                f"({warmer.cache.entries()} entries)")
            single = []
            for i, (fill, body) in enumerate(submissions(exercise, 1, args.fills)):
                wait_ready(grader, args)
                row = grade_one(grader, fill, body, 1000 + i)
                single.append(row)
                log(f"    {fill!r}: {row['wall_s']:.3f} s, sandbox compiled {row['compiled']}, "
                    f"cache hits {row['shared_hits']}, compile runs {row['parallel_runs']} "
                    f"({fmt(row['parallel_compile_s'], ' s')}, waited {fmt(row['parallel_wait_s'], ' s')})")
            burst, burst_wall = [], None
            if args.burst:
                wait_ready(grader, args)
                mix = submissions(exercise, 1 + args.fills, args.burst)
                started = time.perf_counter()
                with ThreadPoolExecutor(args.workers) as pool:
                    burst = list(pool.map(lambda item: grade_one(grader, item[1][0], item[1][1], 5000 + item[0],
                                                                    wait_card=False),
                                          enumerate(mix)))
                burst_wall = time.perf_counter() - started
                log(f"  burst of {args.burst}: {burst_wall:.1f} s")
            # The compile runs queued behind the gradings (serial; a drained burst) end here, not in the next setting.
            warmer.wait_idle(args.ready_timeout_s)
            stats = vars(warmer.stats).copy()
        finally:
            grader.close()
    return {"single": summary(single), "burst": summary(burst, burst_wall) if burst else None,
            "rows": single + burst, "warmer": stats}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", choices=["auto", "gpu", "interpreter"], default="gpu",
                        help="interpreter: a dry run of the orchestration (nothing compiles into a cache)")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--runs", default="4", help="compile runs per new program, comma-separated (e.g. 2,4,6)")
    parser.add_argument("--no-while", action="store_true", help="only the 'before' setting for each K")
    parser.add_argument("--fills", type=int, default=12, help="new fills graded one at a time per setting")
    parser.add_argument("--burst", type=int, default=0, help="then this many further new fills at once")
    parser.add_argument("--workers", type=int, default=4, help="grading threads in the burst")
    parser.add_argument("--pool", type=int, default=4, help="warm grading sandboxes")
    parser.add_argument("--wait-s", type=float, default=5.0, help="'before': the most a grading waits for its compile")
    parser.add_argument("--ready-timeout-s", type=float, default=300)
    parser.add_argument("--speed-inline", action="store_true",
                        help="wait for the speed card inside grade() (before #20.1) instead of after the grade")
    args = parser.parse_args()
    global SPEED_INLINE
    SPEED_INLINE = args.speed_inline

    if Settings(device=args.device).device_mode() is not DeviceMode.gpu:
        log("note: not a GPU: the interpreter compiles nothing into the cache (the orchestration still runs)")
    names = ["serial"]
    for k in (int(k) for k in args.runs.split(",") if k.strip()):
        names += [f"before {k}"] + ([] if args.no_while else [f"while {k}"])
    exercise = build_grader(Settings(device=args.device)).catalog.get(EXERCISE)
    args.out.mkdir(parents=True, exist_ok=True)
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                                cwd=Path(__file__).parent).stdout.strip()
    except OSError:
        commit = ""
    results: dict = {"date": datetime.now(UTC).isoformat(timespec="seconds"), "commit": commit,
                     "machine": f"{platform.node()}, {platform.machine()}, {os.cpu_count()} CPUs",
                     "command": " ".join([Path(sys.executable).name, *sys.argv]),
                     "speed_card": "inline" if args.speed_inline else "after the grade", "settings": {}}
    for name in names:
        log(f"{name}")
        results["settings"][name] = measure(name, args, exercise)
    env = next((r for s in results["settings"].values() for r in s["rows"] if r.get("device")), {})
    results["environment"] = {k: env.get(k) for k in ("device", "triton", "torch")}
    (args.out / "parallel_compile.json").write_text(json.dumps(results, indent=2, ensure_ascii=False), encoding="utf-8")

    print(f"\n{results['date']}  commit {commit}  {results['machine']}  {results['environment']}")
    print(f"speed card: {results['speed_card']}")
    print("| setting | new fill p50 / p95 | sandbox p50 | speed card after p50 | kernels compiled in the sandbox p50 "
          "| cache hits p50 | compile runs' wall p50 | grading waited p50 | burst n | burst p50 / p95 | burst per s "
          "| burst with parallel |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for name, r in results["settings"].items():
        s, b = r["single"], r["burst"] or {}
        print(f"| {name} | {fmt(s['p50_s'])} / {fmt(s['p95_s'])} s | {fmt(s['sandbox_p50_s'])} s | "
              f"{fmt(s['speed_card_p50_s'])} s | "
              f"{fmt(s['compiled_p50'])} | {fmt(s['shared_hits_p50'])} | {fmt(s['parallel_compile_p50_s'])} s | "
              f"{fmt(s['parallel_wait_p50_s'])} s | {b.get('n', 0)} | "
              f"{fmt(b.get('p50_s'))} / {fmt(b.get('p95_s'))} s | "
              f"{fmt(b.get('per_s'))} | {b.get('with_parallel', '–')} |")
    bad = [name for name, r in results["settings"].items()
           if not r["single"]["all_passed"] or (r["burst"] and not r["burst"]["all_passed"])]
    if bad:
        print(f"\nWARNING: some correct fills did not pass every case in: {', '.join(bad)}")
    print(f"\nwritten: {args.out / 'parallel_compile.json'}")


if __name__ == "__main__":
    main()
