"""The fast path alone: what a program seen before costs, with no sandbox run in the way.

    python bench/fast_path.py --device auto --hits 300 --fast-workers 1,4 --out bench-out/

One lesson-6 program (the reference fill) is graded once (a sandbox run fills the verdict memo),
then graded again `--hits` times, each a memo hit under its own secret seed with the example's
written answers scored afresh:
- grader: `Grader.grade` in this thread, one at a time (extraction, memo lookup, written answers,
  pass rule, both languages; no database but the memo's): p50 / p95 per hit, and the thread's CPU.
- lanes[N]: the same hits as stored submissions through the service's own lanes
  (service/worker/lanes.py) with N fast threads on a fresh SQLite database: claim, grading,
  report written with its facts and flags; the rate from the first stored to the last graded, and
  the process's CPU over that time per submission (storing them, the lanes, the bench's polling).

On a class burst most submissions are such hits (bench/grade_speed.py: 283 of 300), so this is the
ceiling of a burst's rate per process; the sandboxes and the GPU are not involved after the first run.
"""
from __future__ import annotations

import argparse
import json
import platform
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import grade_speed as gs  # noqa: E402 - the same mix, grader and lanes as the burst benchmark

from service.bootstrap import build_grader  # noqa: E402
from service.config import Settings  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", choices=["auto", "gpu", "interpreter"], default="auto")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--hits", type=int, default=300)
    parser.add_argument("--fast-workers", default="1,4", help="lanes runs, one per count of fast threads (empty: none)")
    parser.add_argument("--ready-timeout-s", type=float, default=180)
    args = parser.parse_args()
    args.device = Settings(device=args.device).device_mode().value
    args.compile_threads, args.parallel_wait_s = 1, 0.0
    exercise = build_grader(Settings(device=args.device)).catalog.get(gs.EXERCISE)
    mix = [m for m in gs.draw_mix(exercise, 20 * args.hits, 3) if m[0] == "mask"][:args.hits + 1]
    results: dict = {"date": datetime.now(UTC).isoformat(timespec="seconds"), "mode": args.device,
                     "machine": f"{platform.machine()}, python {platform.python_version()}",
                     "command": " ".join([Path(sys.executable).name, *sys.argv]), "hits": args.hits}
    with tempfile.TemporaryDirectory(prefix="kg-fast-") as tmp:
        grader, memo_kind = gs.make_grader(args, pool=1, memo=True, tmp=Path(tmp) / "grader")
        try:
            first = grader.grade(mix[0][1], secret_seed=1)
            walls, cpus = [], []
            for i, (_, body) in enumerate(mix[1:]):
                t0, c0 = time.perf_counter(), time.thread_time()
                report = grader.grade(body, secret_seed=100 + i)
                walls.append(time.perf_counter() - t0)
                cpus.append(time.thread_time() - c0)
                assert report.program is not None and report.program.reused, "every hit reuses the first run"
        finally:
            grader.close()
        results["grader"] = {"memo": memo_kind, "first_run_s": first.timing.get("total_s"),
                             "p50_s": gs.percentile(walls, 0.5), "p95_s": gs.percentile(walls, 0.95),
                             "cpu_p50_s": gs.percentile(cpus, 0.5)}
        one = results["grader"]
        gs.log(f"grader, one at a time: p50 {one['p50_s'] * 1000:.1f} ms, p95 {one['p95_s'] * 1000:.1f} ms, "
               f"thread CPU p50 {one['cpu_p50_s'] * 1000:.1f} ms")
        for count in [int(n) for n in args.fast_workers.split(",") if n.strip()]:
            lane_args = argparse.Namespace(**{**vars(args), "fast_workers": count})
            rows, wall, counts = gs.lanes_burst(lane_args, mix, [0], pool=1, cache=False, tmp=Path(tmp) / f"lanes{count}")
            reused = sum(r["reused"] for r in rows)
            results[f"lanes[{count}]"] = {"n": len(rows), "wall_s": wall, "per_s": len(rows) / wall, "reused": reused,
                                          "cpu_per_submission_s": counts["process_cpu_s"] / len(rows),
                                          "completion_p50_s": gs.percentile([r["completed_s"] for r in rows], 0.5)}
            gs.log(f"lanes, {count} fast thread(s): {len(rows)} in {wall:.2f} s = {len(rows) / wall:.1f}/s "
                   f"({reused} reused), process CPU {counts['process_cpu_s'] / len(rows) * 1000:.1f} ms per submission")
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "fast_path.json").write_text(json.dumps(results, indent=2), encoding="utf-8")
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
