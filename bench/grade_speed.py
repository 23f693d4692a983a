"""Grading speed side by side: the fresh-process lesson cell, kernelgrade cold, warm pool, and
warm pool + verdict memo; one submission at a time and a class-sized burst.

    python bench/grade_speed.py --device auto --out bench-out/

The submissions are lesson 6 fills drawn from a realistic mix (seeded): 70% `mask` (the
reference fill), 10% `cols < N`, 20% spread over the mutant set's wrong fills (`wrong.*` with a
`fill`), each with the example submission's written answers (free text is scored every time).

Modes (all in this one process, one after the other):
- naive: the lesson's cell (the reference solution) in a fresh `python` process, as a TA would
  run it by hand; on the interpreter with TRITON_INTERPRET=1 and device "cpu". The burst runs
  `--workers` such processes at a time (a sample of `--naive-burst` of them).
- cold: the grader with no warm pool and no memo (every attempt starts a sandbox; Triton's cache
  is private to each sandbox, so every specialization compiles).
- warm: a warm pool of `--pool` sandboxes per device, no memo. One-at-a-time waits for the pool
  to refill between submissions (students do not submit back to back).
- warm+memo: the same pool plus the verdict memo (the service's database memo on a fresh SQLite
  file when SQLAlchemy/Alembic are importable, else the in-process memo; printed).
- warm+cache, warm+memo+cache (GPU only): the same, with the shared read-only compile cache,
  prewarmed with lesson 6's reference and mutants before timing starts (as the service does when
  it starts); fills graded during the run are compiled into it in the background. Modes without
  "cache" in their name run with the compile cache off.
- ...+par (with cache, GPU only; e.g. warm+memo+cache+par): a new program's specialisations are
  compiled in parallel in `--parallel` warm compile sandboxes before its grading run (waiting at
  most `--parallel-wait-s`; 0: the grading starts at once), instead of in its grading sandbox
  (service/grading/compile_parallel.py). bench/parallel_compile.py compares the two on new fills.

- lanes[0,0] (`--lanes 0,0`; repeat the option for several): the service's own in-process
  grading (service/worker/lanes.py) with KERNELGRADE_GPUS set to that list, one lane per entry
  (an index twice: lanes simulated on one device), warm pool `--pool` per lane, the database memo
  (SQLite), `--fast-workers` fast threads, and the compile cache on a GPU. Burst only: every
  submission stored at t=0, latency = stored to graded (queue-inclusive, from the database; a speed
  revision that follows sets no graded_at). Also
  printed: runs per lane, gradings parked (waiting for an identical program in flight without a
  thread), the most ever parked at once, and the most fast threads busy at once.

Latency is to the final grade. On a GPU the speed card (lesson 6 has `speed:`) follows the grade as
the service delivers it (a report revision, docs/grading.md): grade() returns without it, and the
card's own arrival is counted apart (`speed_cards`, `speed_card_p50_s`, from the grade's start);
`--speed-inline` waits for it inside grade() instead, as before issue #20 item 1.

`--processes P` (memo modes, with the database memo): the burst is graded by P processes on the one
device, this one and P - 1 children of this script, each with its own grader, warm pool of `--pool`
and `--workers` threads, all sharing the SQLite memo (its in-flight claims too, so an identical
program runs once across them) and the compile cache; submission i goes to process i % P. One
process's threads share one interpreter lock, so the trusted side's CPU per submission bounds the
rate of one process; this is how a host runs more than one grading process per GPU.

One-at-a-time: `--single` submissions in sequence; latency = one grade() call. Burst: all
submissions queued at t=0, `--workers` grading threads sharing one grader (the service's
in-process pool); latency = grade() duration, and also queue-inclusive completion time. cold and
warm bursts are capped at `--cold-burst` submissions (every one costs a full sandbox run, so the
rate is stationary; the sample says so in the output). Figures: p50/p95 latency, submissions per
second, and the ratio of throughput to the naive baseline; for warm+memo also p50 split by fills
seen before (results reused) and new ones, and the grader's count of the burst's sandbox runs
(identical new fills in flight run once: the others wait for that run and reuse it).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import random
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sandbox.contract import DeviceMode  # noqa: E402
from service.bootstrap import build_grader  # noqa: E402
from service.config import Settings  # noqa: E402
from service.submission import Submission  # noqa: E402

EXERCISE = "lesson06_mean_var"


LOG_TO = sys.stdout  # a --child process logs to stderr: its stdout carries the protocol with the parent


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=LOG_TO, flush=True)


def percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def draw_mix(exercise, count: int, seed: int) -> list[tuple[str, Submission]]:
    """(label, submission) pairs: 70% mask, 10% cols < N, 20% over the wrong fills."""
    example = json.loads((exercise.root / "example_submission.json").read_text(encoding="utf-8"))
    wrong = [m.fill for m in exercise.mutants if m.fill is not None and m.id.startswith("wrong.")]
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        r = rng.random()
        fill = "mask" if r < 0.7 else "cols < N" if r < 0.8 else rng.choice(wrong)
        code = exercise.template.replace("______", fill, 1)
        body = Submission(exercise=exercise.id, code=code, answers=example["answers"], explanation=example["explanation"],
                          claimed_output=example.get("claimed_output", ""))
        out.append((fill, body))
    return out


# --- naive: the lesson cell in a fresh process ------------------------------------------------

def naive_runs(cell: str, *, count: int, parallel: int, interpreter: bool) -> tuple[list[float], float]:
    """Wall time of each fresh-process run, and the wall time of all of them (`parallel` at a time)."""
    env = dict(os.environ)
    if interpreter:
        env["TRITON_INTERPRET"] = "1"
        cell = cell.replace('device="cuda"', 'device="cpu"')
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "cell.py"
        path.write_text(cell, encoding="utf-8")

        def one(_: int) -> float:
            t0 = time.perf_counter()
            subprocess.run([sys.executable, str(path)], check=True, capture_output=True, env=env, cwd=tmp)
            return time.perf_counter() - t0

        t0 = time.perf_counter()
        with ThreadPoolExecutor(parallel) as pool:
            times = list(pool.map(one, range(count)))
        return times, time.perf_counter() - t0


# --- kernelgrade ----------------------------------------------------------------------------

def sandbox_starts(grader) -> dict[str, int]:
    """Where the grader's sandbox runs so far got their sandbox: the warm pool (after waiting for a
    start-up under way, or not), or a cold start of their own (compile runs of this runner included)."""
    pool = grader.runner.pools.get((grader.mode, grader.device_index))
    return {"warm_starts": pool.handed_total if pool else 0, "warm_after_wait": pool.handed_after_wait if pool else 0,
            "cold_starts": grader.runner.cold_starts,
            "pool_forked": pool.forked_total if pool else 0}  # KERNELGRADE_SANDBOX_START=fork: pool starts forked


def warmer_counts(grader) -> dict[str, int]:
    """The compile warmer's runs so far (each is a sandbox start of its own, CPU beside the gradings)."""
    warmer = grader.compile_cache
    return {"warmer_compiled": warmer.stats.compiled if warmer else 0,
            "warmer_failed": warmer.stats.failed if warmer else 0}


def make_grader(args, *, pool: int, memo: bool, tmp: Path, cache: bool = False, parallel: int = 0):
    tmp.mkdir(parents=True, exist_ok=True)
    settings = Settings(device=args.device, warm_pool=pool, data_dir=tmp, compile_cache=cache,
                        compile_cache_prewarm=False, compile_cache_threads=args.compile_threads,
                        compile_cache_parallel=parallel, compile_cache_parallel_wait_s=args.parallel_wait_s)
    sessions, kind = None, "none"
    if memo:
        try:
            from service.db.migrate import upgrade
            from service.db.session import make_engine, make_sessionmaker

            url = f"sqlite:///{tmp / 'memo.db'}"
            upgrade(url)
            sessions, kind = make_sessionmaker(make_engine(url)), "database (SQLite)"
        except ImportError:
            kind = "in-process"
    grader = build_grader(settings, sessions=sessions)
    if memo and grader.memo is None:
        from service.grading.memo import InMemoryMemo

        grader.memo = InMemoryMemo()
    if pool:
        grader.start()
        ready = grader.runner.pools[(grader.mode, grader.device_index)].wait_ready(pool, args.ready_timeout_s)
        log(f"  warm pool: {pool} sandbox(es) {'ready' if ready else 'NOT all ready'}")
    if grader.compile_cache is not None:
        t0 = time.perf_counter()
        grader.compile_cache.start()
        queued = grader.compile_cache.submit_catalog(grader.catalog, only=[EXERCISE])
        done = grader.compile_cache.wait_idle(args.ready_timeout_s * 4)
        stats = grader.compile_cache.stats
        log(f"  compile cache prewarmed in {time.perf_counter() - t0:.1f} s: {queued} programs, {stats.compiled} compiled, "
            f"{stats.failed} failed, {grader.compile_cache.cache.entries()} entries{'' if done else ' (NOT finished)'}")
        if parallel:
            ready = grader.compile_cache.wait_parallel_ready(args.ready_timeout_s)
            log(f"  parallel compile: {parallel} warm compile sandbox(es) {'ready' if ready else 'NOT all ready'}")
    elif cache:
        log("  compile cache: not available here (GPU mode with bwrap only)")
    return grader, kind


def wait_refill(grader, size: int, timeout_s: float) -> None:
    pool = grader.runner.pools.get((grader.mode, grader.device_index))
    if pool is not None:
        pool.wait_ready(size, timeout_s)
    if grader.compile_cache is not None and grader.compile_cache.parallel:
        grader.compile_cache.wait_parallel_ready(timeout_s)


SPEED_INLINE = False  # --speed-inline
CARDS_IN_FLIGHT: list[threading.Event] = []  # speed cards still to come (waited for before a mode's summary)


def grade_one(grader, body: Submission, seed: int) -> dict:
    card: dict = {}
    arrived = threading.Event()
    t0 = time.perf_counter()

    def on_speed(performance, translations) -> None:  # the speed card's revision, after the grade
        card.update(status=performance.status, after_s=time.perf_counter() - t0)
        arrived.set()

    report = grader.grade(body, secret_seed=seed, on_speed=None if SPEED_INLINE else on_speed)
    wall = time.perf_counter() - t0
    if report.performance is not None and report.performance.status == "pending":
        CARDS_IN_FLIGHT.append(arrived)
    return {"wall_s": wall, "speed_card": card,
            "status": report.status, "reused": bool(report.program and report.program.reused),
            "compiled": report.timing.get("kernels_compiled"), "shared_hits": report.timing.get("kernels_shared_hits"),
            "waited_s": report.timing.get("memo_wait_s"), "parallel_runs": report.timing.get("parallel_compile_runs"),
            "parallel_compile_s": report.timing.get("parallel_compile_s"),
            "total": report.score.total, "startup_s": report.timing.get("startup_s"), "device": report.environment.device,
            "triton": report.environment.triton, "torch": report.environment.torch}


def single(grader, mix, *, pool: int, timeout_s: float) -> list[dict]:
    rows = []
    for i, (label, body) in enumerate(mix):
        wait_refill(grader, pool, timeout_s)
        row = grade_one(grader, body, 1000 + i)
        row["fill"] = label
        rows.append(row)
        log(f"    {i + 1}/{len(mix)} {label!r}: {row['wall_s']:.2f} s{' (reused)' if row['reused'] else ''}")
    return rows


def burst(grader, mix, *, workers: int) -> tuple[list[dict], float]:
    started = time.perf_counter()
    done = [0]
    lock = threading.Lock()

    def one(item):
        i, (label, body) = item
        row = grade_one(grader, body, 5000 + i)
        row["fill"] = label
        row["completed_s"] = time.perf_counter() - started
        with lock:
            done[0] += 1
            if done[0] % max(1, len(mix) // 10) == 0:
                log(f"    {done[0]}/{len(mix)} after {row['completed_s']:.1f} s")
        return row

    with ThreadPoolExecutor(workers) as executor:
        rows = list(executor.map(one, enumerate(mix)))
    return rows, time.perf_counter() - started


def burst_share(grader, items: list[tuple[int, tuple[str, Submission]]], *, workers: int,
                start_at: float) -> list[dict]:
    """Grade `items` ((index, (label, submission))) with `workers` threads from the epoch `start_at`
    on; completed_s is from `start_at` (wall clock: comparable across the burst's processes)."""
    time.sleep(max(0.0, start_at - time.time()))

    def one(item):
        i, (label, body) = item
        row = grade_one(grader, body, 5000 + i)
        row["fill"] = label
        row["completed_s"] = time.time() - start_at
        return row

    with ThreadPoolExecutor(workers) as executor:
        return list(executor.map(one, items))


def wait_cards(grader) -> None:
    for arrived in CARDS_IN_FLIGHT:  # the cards still to come (each bounded by the speed budget)
        arrived.wait(grader.runner.limits.speed_timeout_s + 30)
    CARDS_IN_FLIGHT.clear()


def process_burst(args, grader, mix, *, processes: int, pool: int, cache: bool, parallel: int, tmp: Path,
                  workers: int) -> tuple[list[dict], float, dict]:
    """The burst over `processes` grading processes (see the module's docstring): this one with
    `grader`, the others children of this script sharing `tmp` (the memo database, the compile
    cache). Rows, wall time from the common start, and every process's counts summed."""
    spec = {"device": args.device, "pool": pool, "cache": cache, "parallel": parallel, "tmp": str(tmp),
            "workers": workers, "count": len(mix), "seed": args.seed + 1, "processes": processes,
            "compile_threads": args.compile_threads, "parallel_wait_s": args.parallel_wait_s,
            "ready_timeout_s": args.ready_timeout_s}
    children = [subprocess.Popen([sys.executable, __file__, "--child", json.dumps({**spec, "index": k})],
                                 stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
                for k in range(1, processes)]
    try:
        for k, child in enumerate(children, 1):
            line = child.stdout.readline() if child.stdout else ""
            if line.strip() != "READY":
                raise RuntimeError(f"grading process {k} did not start (said {line!r}; status {child.poll()})")
        start_at = time.time() + 0.5
        for child in children:
            assert child.stdin is not None
            child.stdin.write(f"GO {start_at!r}\n")
            child.stdin.flush()
        starts_before = sandbox_starts(grader)
        rows = burst_share(grader, [(i, m) for i, m in enumerate(mix) if i % processes == 0], workers=workers,
                           start_at=start_at)
        wait_cards(grader)
        counts = grader.counts.snapshot() | {k: v - starts_before[k] for k, v in sandbox_starts(grader).items()}
        for k, child in enumerate(children, 1):
            out, _ = child.communicate(timeout=args.ready_timeout_s * 4)
            line = next((x for x in out.splitlines() if x.startswith("ROWS ")), None)
            if child.returncode != 0 or line is None:
                raise RuntimeError(f"grading process {k} failed (status {child.returncode})")
            share = json.loads(line[5:])
            rows += share["rows"]
            for key, value in share["counts"].items():
                if isinstance(value, (int, float)) and not key.startswith("peak"):
                    counts[key] = counts.get(key, 0) + value
                elif key.startswith("peak"):
                    counts[key] = max(counts.get(key, 0), value)
    finally:
        for child in children:
            if child.poll() is None:
                child.kill()
    counts["processes"] = processes
    return rows, max(r["completed_s"] for r in rows), counts


def child_main(spec: dict) -> None:
    """One grading process of process_burst: READY once its pool is warm, then GO <epoch> on stdin,
    then its share of the burst, then ROWS <json> on stdout."""
    global LOG_TO
    LOG_TO = sys.stderr
    args = argparse.Namespace(device=spec["device"], compile_threads=spec["compile_threads"],
                              parallel_wait_s=spec["parallel_wait_s"], ready_timeout_s=spec["ready_timeout_s"])
    grader, _ = make_grader(args, pool=spec["pool"], memo=True, tmp=Path(spec["tmp"]), cache=spec["cache"],
                            parallel=spec["parallel"])
    try:
        exercise = grader.catalog.get(EXERCISE)
        mix = draw_mix(exercise, spec["count"], spec["seed"])
        wait_refill(grader, spec["pool"], spec["ready_timeout_s"])
        print("READY", flush=True)
        start_at = float(sys.stdin.readline().split()[1])
        starts_before = sandbox_starts(grader)
        mine = [(i, m) for i, m in enumerate(mix) if i % spec["processes"] == spec["index"]]
        rows = burst_share(grader, mine, workers=spec["workers"], start_at=start_at)
        wait_cards(grader)
        counts = grader.counts.snapshot() | {k: v - starts_before[k] for k, v in sandbox_starts(grader).items()}
        print("ROWS " + json.dumps({"rows": rows, "counts": counts}), flush=True)
    finally:
        grader.close()


def lanes_burst(args, mix, devices: list[int], *, pool: int, cache: bool, tmp: Path) -> tuple[list[dict], float, dict]:
    """The burst through the service's lanes (see the module's docstring); rows, wall time, counts."""
    from sqlalchemy import select

    from service.db import store
    from service.db.migrate import upgrade
    from service.db.models import ReportRow
    from service.db.models import Submission as SubmissionRow
    from service.db.session import make_engine, make_sessionmaker
    from service.worker.lanes import Lanes

    tmp.mkdir(parents=True, exist_ok=True)
    url = f"sqlite:///{tmp / 'lanes.db'}"
    upgrade(url)
    sessions = make_sessionmaker(make_engine(url))
    with sessions() as session:
        store.create_course(session, "bench", "bench")
    # The cache is prewarmed with this exercise's programs only, as the direct modes do (make_grader):
    # the whole catalogue took about 2 min of the device's time per lanes run on the H200.
    settings = Settings(device=args.device, warm_pool=pool, data_dir=tmp, compile_cache=cache,
                        compile_cache_prewarm=False, compile_cache_threads=args.compile_threads, gpus=devices,
                        fast_workers=args.fast_workers)
    grader = build_grader(settings, sessions=sessions)
    lanes = Lanes(sessions=sessions, grader=grader, lane_devices=settings.lane_devices(),
                  lane_threads=settings.lane_threads(), fast_threads=settings.fast_workers, lease_s=settings.lease_s,
                  max_attempts=settings.max_attempts)
    lanes.start()
    peaks = {"parked": 0, "busy_fast": 0, "busy_lanes": 0}
    try:
        for lane in lanes.lanes:
            ready = lane.runner.pools[(grader.mode, lane.device_index)].wait_ready(pool, args.ready_timeout_s) \
                if pool else True
            log(f"  lane {lane.index} (device {lane.device_index}): {pool} warm sandbox(es) "
                f"{'ready' if ready else 'NOT all ready'}, {lane.threads} thread(s)")
        if grader.compile_cache is not None:
            t0 = time.perf_counter()
            queued = grader.compile_cache.submit_catalog(grader.catalog, only=[EXERCISE])
            done = grader.compile_cache.wait_idle(args.ready_timeout_s * 4)
            log(f"  compile cache prewarmed in {time.perf_counter() - t0:.1f} s: {queued} programs, "
                f"{grader.compile_cache.stats.compiled} compiled{'' if done else ' (NOT finished)'}")
        # One grading first, so the memo key knows the sandbox's device (as the pool's hello tells it).
        grader.grade(mix[0][1], secret_seed=1)
        if grader.compile_cache is not None:  # its compile run, so that none runs inside the burst
            grader.compile_cache.wait_idle(args.ready_timeout_s)
        lane0 = lanes.lanes[0]
        lane0.runner.pools[(grader.mode, lane0.device_index)].wait_ready(pool, args.ready_timeout_s)
        before = grader.counts.snapshot() | sandbox_starts(grader) | warmer_counts(grader)
        started, cpu_started = time.perf_counter(), time.process_time()
        with sessions() as session:
            ids = []
            for i, (label, body) in enumerate(mix):
                row, _ = store.create_submission(session, course_id="bench", body=body, callback_url=None,
                                                 idempotency_key=f"b{i}")
                ids.append((row.id, label))
        lanes.wake()
        pending = {submission_id for submission_id, _ in ids}
        while pending:
            counts = lanes.counts()
            for name in peaks:
                peaks[name] = max(peaks[name], counts[name])
            with sessions() as session:
                done = set(session.scalars(select(SubmissionRow.id).where(
                    SubmissionRow.status.in_(("graded", "not_gradable")))))
            pending -= done
            time.sleep(0.05)
        wall, cpu = time.perf_counter() - started, time.process_time() - cpu_started
        rows = []
        with sessions() as session:
            for submission_id, label in ids:
                row = session.get_one(SubmissionRow, submission_id)
                report = session.get_one(ReportRow, row.current_report_id).report
                completed = (row.graded_at - row.created_at).total_seconds()
                rows.append({"wall_s": completed, "completed_s": completed, "fill": label, "status": report["status"],
                             "reused": bool((report.get("program") or {}).get("reused")),
                             "waited_s": report["timing"].get("memo_wait_s"),
                             "compiled": report["timing"].get("kernels_compiled"),
                             "device": report["environment"]["device"], "triton": report["environment"]["triton"],
                             "torch": report["environment"]["torch"]})
        # the burst's own (the grading before it excluded); sandbox starts and compile runs of lane 0
        after = grader.counts.snapshot() | sandbox_starts(grader) | warmer_counts(grader)
        counts = {**lanes.counts(), **{f"peak_{k}": v for k, v in peaks.items()},
                  **{k: after[k] - before[k] for k in after}, "process_cpu_s": cpu}
    finally:
        lanes.stop()
    return rows, wall, counts


def summarise(rows: list[dict], wall_s: float, *, naive_rate: float | None, sample_of: int | None = None) -> dict:
    walls = [r["wall_s"] for r in rows]
    rate = len(rows) / wall_s if wall_s else None
    seen = [r["wall_s"] for r in rows if r.get("reused")]
    new = [r["wall_s"] for r in rows if not r.get("reused")]
    out = {"n": len(rows), "p50_s": percentile(walls, 0.5), "p95_s": percentile(walls, 0.95),
           "spread_s": [min(walls), max(walls)] if walls else None, "per_s": rate,
           "vs_naive": rate / naive_rate if rate and naive_rate else None,
           "p50_seen_before_s": percentile(seen, 0.5), "p50_new_s": percentile(new, 0.5), "reused": len(seen)}
    ran = [r for r in rows if not r.get("reused") and r.get("compiled") is not None]
    if ran:  # runs with the shared compile cache: did the sandbox compile anything?
        out["p50_ran_nothing_compiled_s"] = percentile([r["wall_s"] for r in ran if r["compiled"] == 0], 0.5)
        out["p50_ran_compiled_s"] = percentile([r["wall_s"] for r in ran if r["compiled"] > 0], 0.5)
        out["ran_nothing_compiled"] = sum(1 for r in ran if r["compiled"] == 0)
        out["ran"] = len(ran)
        # per run: what it compiled itself and what it found in the shared cache (the cache's effect)
        out["runs_compiled_shared_hits"] = [[r["compiled"], r.get("shared_hits")] for r in ran]
    parallel = [r for r in rows if r.get("parallel_runs")]
    if parallel:  # ...+par: new programs compiled in parallel before their grading run
        out["compiled_in_parallel"] = len(parallel)
        out["p50_compiled_in_parallel_s"] = percentile([r["wall_s"] for r in parallel], 0.5)
        out["p50_parallel_compile_s"] = percentile([r["parallel_compile_s"] for r in parallel
                                                    if r.get("parallel_compile_s") is not None], 0.5)
    waited = [r for r in rows if r.get("waited_s") is not None]
    if waited:  # waited for an identical program in flight (memo de-duplication), then reused it or ran it
        out["reused_after_wait"] = sum(1 for r in waited if r.get("reused"))
        out["ran_after_wait"] = len(waited) - out["reused_after_wait"]
        out["p50_wait_s"] = percentile([r["waited_s"] for r in waited], 0.5)
    cards = [r["speed_card"]["after_s"] for r in rows if r.get("speed_card")]
    if cards:  # the speed card's revision, apart from the grade's latency
        out["speed_cards"] = len(cards)
        out["speed_card_p50_s"] = percentile(cards, 0.5)
    completed = [r["completed_s"] for r in rows if "completed_s" in r]
    if completed:
        out["completion_p50_s"] = percentile(completed, 0.5)
        out["completion_p95_s"] = percentile(completed, 0.95)
    if sample_of is not None and sample_of != len(rows):
        out["note"] = f"sample of {len(rows)} of the {sample_of}-submission burst"
    return out


def fmt(value, unit: str = "") -> str:
    if value is None:
        return "–"
    return f"{value:.3g}{unit}" if value < 100 else f"{value:.0f}{unit}"


def save(out: Path, results: dict) -> None:
    (out / "grade_speed.json").write_text(json.dumps(results, indent=2, ensure_ascii=False), encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", choices=["auto", "gpu", "interpreter"], default="auto")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--burst", type=int, default=300, help="submissions in the class burst (warm+memo)")
    parser.add_argument("--cold-burst", type=int, default=40, help="cap of the cold and warm (no memo) bursts")
    parser.add_argument("--single", type=int, default=5, help="submissions graded one at a time per mode")
    parser.add_argument("--workers", type=int, default=0, help="grading threads (default: 4 on GPU, CPU cores on the interpreter)")
    parser.add_argument("--pool", type=int, default=0, help="warm sandboxes (default: = workers)")
    parser.add_argument("--naive-runs", type=int, default=3, help="fresh-process runs one at a time")
    parser.add_argument("--naive-burst", type=int, default=0, help="fresh-process runs in the burst sample (default 2 x workers)")
    parser.add_argument("--modes", default="naive,cold,warm,warm+memo,warm+cache,warm+memo+cache")
    parser.add_argument("--compile-threads", type=int, default=4, help="compile runs at a time when prewarming the cache")
    parser.add_argument("--parallel", type=int, default=4, help="+par modes: warm compile sandboxes per new program")
    parser.add_argument("--parallel-wait-s", type=float, default=5.0,
                        help="+par modes: the most a grading waits for its compile runs (0: not at all)")
    parser.add_argument("--lanes", action="append", default=[], metavar="0,1",
                        help="also run the burst through the service's lanes on these device indices (0,0: two lanes "
                             "simulated on device 0); repeat for several")
    parser.add_argument("--fast-workers", type=int, default=4, help="the lanes' fast threads")
    parser.add_argument("--processes", type=int, default=1,
                        help="memo modes: grading processes sharing the device, the memo and the compile cache")
    parser.add_argument("--child", help=argparse.SUPPRESS)  # a grading process of --processes (JSON spec)
    parser.add_argument("--seed", type=int, default=6)
    parser.add_argument("--ready-timeout-s", type=float, default=180)
    parser.add_argument("--speed-inline", action="store_true",
                        help="wait for the speed card inside grade() (before #20.1) instead of after the grade")
    if len(sys.argv) == 3 and sys.argv[1] == "--child":
        child_main(json.loads(sys.argv[2]))
        return
    args = parser.parse_args()
    global SPEED_INLINE
    SPEED_INLINE = args.speed_inline

    probe = Settings(device=args.device)
    mode = probe.device_mode()
    args.device = mode.value
    workers = args.workers or (4 if mode is DeviceMode.gpu else max(1, os.cpu_count() or 1))
    pool_size = args.pool or workers
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    args.out.mkdir(parents=True, exist_ok=True)
    exercise = build_grader(probe).catalog.get(EXERCISE)
    single_mix = draw_mix(exercise, args.single, args.seed)
    burst_mix = draw_mix(exercise, args.burst, args.seed + 1)
    log(f"device mode {mode.value}, sandbox start {os.environ.get('KERNELGRADE_SANDBOX_START') or 'fresh'}, "
        f"{workers} workers, pool {pool_size}, burst {args.burst} (cold/warm sample {min(args.burst, args.cold_burst)}), single {args.single}")

    results: dict = {"date": datetime.now(UTC).isoformat(timespec="seconds"), "host": platform.node(),
                     "machine": f"{platform.machine()}, {os.cpu_count()} CPUs", "python": platform.python_version(),
                     "mode": mode.value, "workers": workers, "pool": pool_size, "burst": args.burst,
                     "command": " ".join([Path(sys.executable).name, *sys.argv]),
                     "sandbox_start": os.environ.get("KERNELGRADE_SANDBOX_START", "fresh") or "fresh",
                     "speed_card": "inline" if args.speed_inline else "after the grade",
                     "processes": args.processes, "modes": {}}
    naive_rate_single = naive_rate_burst = None
    if "naive" in modes:
        log("naive: the lesson cell in fresh processes")
        times, wall = naive_runs(exercise.solution, count=args.naive_runs, parallel=1, interpreter=mode is DeviceMode.interpreter)
        naive_rate_single = len(times) / wall
        count = args.naive_burst or 2 * workers
        btimes, bwall = naive_runs(exercise.solution, count=count, parallel=workers, interpreter=mode is DeviceMode.interpreter)
        naive_rate_burst = count / bwall
        results["modes"]["naive"] = {
            "single": summarise([{"wall_s": t} for t in times], wall, naive_rate=naive_rate_single),
            "burst": {**summarise([{"wall_s": t} for t in btimes], bwall, naive_rate=naive_rate_burst),
                      "note": f"{count} fresh processes, {workers} at a time"}}
        log(f"  single p50 {fmt(percentile(times, 0.5), ' s')}; burst {naive_rate_burst:.2f}/s")
        save(args.out, results)

    for name in [m for m in modes if m != "naive"]:
        pool = pool_size if name.startswith("warm") else 0
        memo = "memo" in name.split("+")
        cache = "cache" in name.split("+")
        parallel = args.parallel if "par" in name.split("+") else 0
        if parallel and not cache:
            log(f"{name}: skipped (+par needs +cache: the compile runs fill the shared compile cache)")
            continue
        if cache and mode is not DeviceMode.gpu:
            log(f"{name}: skipped (the compile cache is GPU only: the interpreter compiles nothing)")
            continue
        with tempfile.TemporaryDirectory(prefix="kg-bench-") as tmp:
            os.chmod(tmp, 0o755)  # the sandboxes' uids reach this mode's own compile cache (else all modes share one fallback)
            log(f"{name}: pool {pool}, memo {'on' if memo else 'off'}, compile cache {'on' if cache else 'off'}")
            grader, memo_kind = make_grader(args, pool=pool, memo=memo, tmp=Path(tmp), cache=cache, parallel=parallel)
            try:
                log("  one at a time")
                rows_single = single(grader, single_mix, pool=pool, timeout_s=args.ready_timeout_s)
                wall_single = sum(r["wall_s"] for r in rows_single)
                if memo:  # the burst starts from an empty memo, like a class's first deadline
                    grader.close()
                    grader, memo_kind = make_grader(args, pool=pool, memo=memo, tmp=Path(tmp) / "burst", cache=cache,
                                                    parallel=parallel)
                size = args.burst if memo else min(args.burst, args.cold_burst)
                log(f"  burst of {size}")
                wait_refill(grader, pool, args.ready_timeout_s)
                if memo and args.processes > 1 and memo_kind.startswith("database"):
                    log(f"  over {args.processes} grading processes")
                    rows_burst, wall_burst, burst_counts = process_burst(
                        args, grader, burst_mix[:size], processes=args.processes, pool=pool, cache=cache,
                        parallel=parallel, tmp=Path(tmp) / "burst", workers=workers)
                else:
                    starts_before = sandbox_starts(grader)
                    rows_burst, wall_burst = burst(grader, burst_mix[:size], workers=workers)
                    burst_counts = grader.counts.snapshot() | {
                        key: value - starts_before[key] for key, value in sandbox_starts(grader).items()}
                    wait_cards(grader)
            finally:
                grader.close()
        env = next((r for r in rows_single + rows_burst if r.get("device")), {})
        results.setdefault("environment", {"device": env.get("device"), "triton": env.get("triton"), "torch": env.get("torch")})
        results["modes"][name] = {
            "memo": memo_kind,
            "single": summarise(rows_single, wall_single, naive_rate=naive_rate_single),
            "burst": summarise(rows_burst, wall_burst, naive_rate=naive_rate_burst, sample_of=args.burst),
            "statuses": sorted({r["status"] for r in rows_single + rows_burst}),
            "burst_counts": burst_counts,  # the grader's own count: sandbox runs, reused, after waiting
        }
        b, c = results["modes"][name]["burst"], burst_counts
        log(f"  burst: p50 {fmt(b['p50_s'], ' s')}, p95 {fmt(b['p95_s'], ' s')}, {fmt(b['per_s'])}/s; sandbox "
            f"starts: {c['warm_starts']} warm ({c['warm_after_wait']} waited for a start-up under way), "
            f"{c['cold_starts']} cold; pool starts forked from the template: {c['pool_forked']}")
        save(args.out, results)  # each mode as it ends: a run stopped by a time limit keeps what it measured

    for spec in args.lanes:
        devices = [int(part) for part in spec.split(",") if part.strip()]
        name = f"lanes[{','.join(map(str, devices))}]"
        cache = mode is DeviceMode.gpu
        with tempfile.TemporaryDirectory(prefix="kg-bench-") as tmp:
            os.chmod(tmp, 0o755)  # the sandboxes' uids reach this mode's own compile cache (else all modes share one fallback)
            log(f"{name}: {len(devices)} lane(s), pool {pool_size} each, memo on, compile cache {'on' if cache else 'off'}")
            rows, wall, counts = lanes_burst(args, burst_mix, devices, pool=pool_size, cache=cache, tmp=Path(tmp))
        results["modes"][name] = {"memo": "database (SQLite)", "burst": summarise(rows, wall, naive_rate=naive_rate_burst),
                                  "statuses": sorted({r["status"] for r in rows}), "burst_counts": counts}
        b = results["modes"][name]["burst"]
        log(f"  burst: completion p50 {fmt(b['p50_s'], ' s')}, p95 {fmt(b['p95_s'], ' s')}, {fmt(b['per_s'])}/s; {counts}")
        save(args.out, results)

    save(args.out, results)
    print()
    print(f"{results['date']}  {results['machine']}  mode {mode.value}  device {results.get('environment', {}).get('device')}")
    print("| mode | one at a time p50 / p95 | per s | × naive | burst n | burst p50 / p95 | seen-before p50 | new p50 | per s | × naive |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for name, r in results["modes"].items():
        s, b = r.get("single") or {"p50_s": None, "p95_s": None, "per_s": None, "vs_naive": None}, r["burst"]
        print(f"| {name} | {fmt(s['p50_s'])} / {fmt(s['p95_s'])} s | {fmt(s['per_s'])} | {fmt(s['vs_naive'])} | {b['n']} | "
              f"{fmt(b['p50_s'])} / {fmt(b['p95_s'])} s | {fmt(b['p50_seen_before_s'])} | {fmt(b['p50_new_s'])} | "
              f"{fmt(b['per_s'])} | {fmt(b['vs_naive'])} |")
    for name, r in results["modes"].items():
        b = r["burst"]
        if "ran" in b:
            print(f"{name}: of {b['ran']} burst runs, {b['ran_nothing_compiled']} compiled nothing "
                  f"(p50 {fmt(b['p50_ran_nothing_compiled_s'])} s), the rest compiled (p50 {fmt(b['p50_ran_compiled_s'])} s)")
        if "compiled_in_parallel" in b:
            print(f"{name}: {b['compiled_in_parallel']} burst runs compiled in parallel first (p50 "
                  f"{fmt(b['p50_compiled_in_parallel_s'])} s; the compile runs' wall p50 "
                  f"{fmt(b['p50_parallel_compile_s'])} s)")
    for name, r in results["modes"].items():
        b, c = r["burst"], r.get("burst_counts")
        if c and name.startswith("lanes["):
            runs = ", ".join(f"{k[:-5]} {v}" for k, v in c.items() if k.startswith("lane_") and k.endswith("_runs"))
            print(f"{name}: burst of {b['n']}: {c['sandbox_runs']} sandbox runs ({runs}), {c['reused']} reused, "
                  f"{c['parked_total']} parked without a thread (at most {c['peak_parked']} at once; "
                  f"{c['reused_after_wait']} then reused, {c['ran_after_wait']} ran it), at most {c['peak_busy_fast']} "
                  f"fast threads and {c['peak_busy_lanes']} lane threads busy at once")
        elif c and "memo" in name.split("+"):
            print(f"{name}: burst of {b['n']}: {c['sandbox_runs']} sandbox runs, {c['reused']} reused "
                  f"({c['reused_after_wait']} of them after waiting for an identical run in flight, wait p50 "
                  f"{fmt(b.get('p50_wait_s'))} s); {c['ran_after_wait']} waited and then ran it themselves")
    for name, r in results["modes"].items():
        for part in ("single", "burst"):
            if r.get(part, {}).get("speed_cards"):
                print(f"{name} {part}: {r[part]['speed_cards']} speed cards after the grade, p50 "
                      f"{fmt(r[part]['speed_card_p50_s'])} s from the grading's start (not in the latency above)")
    print(f"\nwritten: {args.out / 'grade_speed.json'}")


if __name__ == "__main__":
    main()
