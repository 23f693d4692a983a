"""A bounded burst of submissions against a running server on loopback, from a second process.

    python bench/burst.py --url http://127.0.0.1:8000 --key "$(cat data/demo-key.txt)" --count 500

Sends `count` POST /v1/submissions from `concurrency` threads (the lesson-6 solution and its
mutants, cycled, each with a distinct Idempotency-Key), then polls until every accepted
submission is graded or not_gradable. Prints and optionally writes (--out) submissions accepted
per second, POST latency p50/p99, the time until all are graded, and how many were lost (accepted
but never finished) — which must be zero.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from service.exercises import ExerciseCatalog  # noqa: E402

FINAL = {"graded", "not_gradable"}


def bodies(exercise_id: str) -> list[dict]:
    exercise = ExerciseCatalog(Path(__file__).resolve().parents[1] / "exercises").get(exercise_id)
    codes = [exercise.solution] + [exercise.mutant_code(m) for m in exercise.mutants]
    return [{"exercise": exercise_id, "code": code} for code in codes]


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", default="http://127.0.0.1:8000")
    parser.add_argument("--key", required=True)
    parser.add_argument("--count", type=int, default=500)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--exercise", default="lesson06_mean_var")
    parser.add_argument("--deadline-s", type=float, default=3600, help="stop waiting for gradings after this")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()

    pool = bodies(args.exercise)
    headers = {"Authorization": f"Bearer {args.key}"}
    client = httpx.Client(base_url=args.url, headers=headers, timeout=60)
    run = uuid.uuid4().hex[:8]

    def post(i: int) -> tuple[int, float, str | None]:
        t0 = time.perf_counter()
        response = client.post("/v1/submissions", json=pool[i % len(pool)],
                               headers={"Idempotency-Key": f"burst-{run}-{i}"})
        latency = time.perf_counter() - t0
        return response.status_code, latency, response.json().get("id") if response.status_code in (200, 202) else None

    started = time.perf_counter()
    with ThreadPoolExecutor(args.concurrency) as executor:
        results = list(executor.map(post, range(args.count)))
    post_window = time.perf_counter() - started
    accepted = [r[2] for r in results if r[2]]
    codes: dict[int, int] = {}
    for code, _, _ in results:
        codes[code] = codes.get(code, 0) + 1
    latencies = [r[1] for r in results]
    print(f"POSTed {args.count} in {post_window:.1f} s: {len(accepted)} accepted ({len(accepted) / post_window:.1f}/s), "
          f"codes {codes}, latency p50 {percentile(latencies, 0.5) * 1000:.0f} ms p99 {percentile(latencies, 0.99) * 1000:.0f} ms",
          flush=True)

    pending = set(accepted)
    statuses: dict[str, str] = {}
    last_print = 0.0
    while pending and time.perf_counter() - started < args.deadline_s:
        for submission_id in list(pending):
            status = client.get(f"/v1/submissions/{submission_id}").json()["status"]
            if status in FINAL:
                statuses[submission_id] = status
                pending.discard(submission_id)
        if time.perf_counter() - last_print > 30:
            last_print = time.perf_counter()
            print(f"  {len(statuses)}/{len(accepted)} finished after {last_print - started:.0f} s", flush=True)
        if pending:
            time.sleep(2)
    all_done = time.perf_counter() - started
    summary = {
        "count": args.count, "concurrency": args.concurrency, "accepted": len(accepted), "status_codes": codes,
        "accepted_per_s": len(accepted) / post_window, "post_p50_ms": percentile(latencies, 0.5) * 1000,
        "post_p99_ms": percentile(latencies, 0.99) * 1000, "post_mean_ms": statistics.mean(latencies) * 1000,
        "seconds_until_all_graded": all_done if not pending else None, "finished": len(statuses),
        "lost": len(pending), "outcomes": {s: list(statuses.values()).count(s) for s in FINAL},
        "graded_per_minute": 60 * len(statuses) / all_done,
    }
    print(json.dumps(summary, indent=2))
    if args.out:
        args.out.write_text(json.dumps(summary, indent=2))
    sys.exit(1 if pending else 0)


if __name__ == "__main__":
    main()
