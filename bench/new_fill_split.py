"""Where a new lesson-6 fill's grading time goes (issue #20's "new fill ≤ 0.3 s"), one at a time.

    python bench/new_fill_split.py --device gpu [--out FILE.json]

One grader as the service builds it (warm pool of 2, no memo, the shared compile cache prewarmed
with lesson 6's reference and mutants, as at the service's start). Each grading waits for the
previous one's background compile (its runs take the pool's sandboxes), then for the pool's refill,
then prints its wall times beside the report's `timing` (sandbox, cases, given check, start-up,
kernels compiled here / found in the shared cache / compiled ahead). As the service does, the
speed card follows the grade (`on_speed`): `report_s` is the time until the final report (its speed card
`pending`), `card_s` until the card came, `wall_s` the later of the two; `--profile FILE` writes a cProfile
of the grading calls (the calling thread: the trusted side's own work, and its waits):
- prewarmed programs under the prewarm's own seed (compile_parallel.COMPILE_SEED): nothing left to
  compile, so this is the floor of everything but the compiler;
- the same programs under fresh secret seeds (what a student's grading is today: the drawn widths
  compile, since lesson 6 passes `N` as a constexpr);
- programs never seen (`cols < N + k - k`): every specialization compiles.

Each row also carries the run's time split (`timing.phase_*_s`: the trusted side's clock from one frame to
the next, sandbox/runner.py; `timing.harness_*_s`: the harness's own split of its work, told in its `done`
frame), and the end prints their p50 by kind of grading, in ms (`--skip-first N` leaves out the first N
gradings). On the interpreter (`--device interpreter`) "prewarmed" means nothing: no shared compile cache.
Each row's `trusted_s` is `report_s − sandbox_s` (the trusted side's own time around the run); the end also
prints, on a GPU, the compile-ahead's calls, the launches' waits for its compiles and its last compile's end
(`harness_compile_ahead_s`, `harness_compile_wait_s`, `harness_compile_ahead_done_s`: its compiles run beside
the given check and the cases, sandbox/harness.py `_AheadCompiles`), and what the process's first grading paid
(`--cold-first` stops the grader's first-use warm-up at its start, service/grading/warm.py, as before it).
"""
from __future__ import annotations

import argparse
import cProfile
import json
import pstats
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from service.bootstrap import build_grader  # noqa: E402
from service.config import Settings  # noqa: E402
from service.grading.compile_parallel import COMPILE_SEED  # noqa: E402
from service.submission import Submission  # noqa: E402

EXERCISE = "lesson06_mean_var"
KEYS = ("sandbox_s", "startup_s", "cases_s", "given_check_s", "kernels_compiled", "kernels_shared_hits",
        "kernels_compiled_ahead", "gpu_compile_check_s")


SPLIT_PREFIXES = ("phase_", "harness_")


WARM_HANDOVER_S = 0.01  # a grading whose sandbox was handed over within this found a warm one


def median(values: list[float]) -> float | None:
    """The p50 as the tables here take it (the upper middle), None for no values."""
    ordered = sorted(values)
    return ordered[len(ordered) // 2] if ordered else None


def split_table(rows: list[dict], *, skip_first: int = 0) -> str:
    """Markdown: the p50 of each phase (`timing.phase_*_s`, the trusted side's clock) and of the harness's
    own split (`timing.harness_*_s`) by kind of grading, in ms, the first `skip_first` gradings left out."""
    kept = rows[skip_first:]
    kinds = list(dict.fromkeys(r["kind"] for r in kept))
    keys = ["sandbox_s", "cases_s", "given_check_s",
            *sorted({k for r in kept for k in r if k.startswith("phase_")}),
            *sorted({k for r in kept for k in r if k.startswith("harness_")})]

    def p50(kind: str, key: str) -> str:
        value = median([r[key] for r in kept if r["kind"] == kind and key in r])
        return "–" if value is None else f"{1000 * value:.0f}"

    lines = ["| ms, p50 | " + " | ".join(kinds) + " |", "| --- |" + " --- |" * len(kinds)]
    lines += [f"| {key} | " + " | ".join(p50(kind, key) for kind in kinds) + " |" for key in keys]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", choices=["auto", "gpu", "interpreter"], default="auto")
    parser.add_argument("--repeat", type=int, default=3, help="gradings of each kind")
    parser.add_argument("--out", type=Path)
    parser.add_argument("--profile", type=Path,
                        help="cProfile the grading calls (the calling thread: the trusted side) into this text file")
    parser.add_argument("--skip-first", type=int, default=1,
                        help="leave the first N gradings out of the split table (the first run's cold caches)")
    parser.add_argument("--cold-first", action="store_true",
                        help="stop the start's first-use warm-up (service/grading/warm.py) at once: the first "
                             "grading pays what a process pays once, as before it")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings(device=args.device, warm_pool=2, data_dir=Path(tmp), compile_cache=True,
                            compile_cache_prewarm=False)
        grader = build_grader(settings)
        grader.memo = None  # every grading runs
        grader.start()
        if args.cold_first:
            grader._stop_warming.set()  # (stops between its steps: the first grading pays the rest, as before)
        pool = grader.runner.pools.get((grader.mode, grader.device_index))  # (made by start: before it, None)
        if pool is not None:
            pool.wait_ready(2, 180)
        if grader.compile_cache is not None:
            t0 = time.perf_counter()
            grader.compile_cache.start()
            queued = grader.compile_cache.submit_catalog(grader.catalog, only=[EXERCISE])
            grader.compile_cache.wait_idle(600)
            print(f"prewarmed {queued} programs in {time.perf_counter() - t0:.1f} s", flush=True)
        exercise = grader.catalog.get(EXERCISE)
        example = json.loads((exercise.root / "example_submission.json").read_text(encoding="utf-8"))

        def body(fill: str) -> Submission:
            return Submission(exercise=EXERCISE, code=exercise.template.replace("______", fill, 1),
                              answers=example["answers"], explanation=example["explanation"],
                              claimed_output=example.get("claimed_output", ""))

        runs = [("prewarmed, prewarm seed", fill, COMPILE_SEED) for fill in ("mask", "cols < N")] * args.repeat
        runs += [("prewarmed, fresh seed", "mask", 1000 + i) for i in range(args.repeat)]
        runs += [("never seen", f"cols < N + {k} - {k}", 2000 + k) for k in range(1, args.repeat + 1)]
        rows: list[dict] = []
        profiler = cProfile.Profile() if args.profile else None
        for kind, fill, seed in runs:
            if grader.compile_cache is not None:
                # the previous grading's background compile first: its runs take the pool's sandboxes
                grader.compile_cache.wait_idle(120)
            if pool is not None:
                pool.wait_ready(2, 180)
            if grader.compile_cache is not None and grader.compile_cache.parallel:
                grader.compile_cache.wait_parallel_ready(180)  # the compile-ahead's own sandboxes
            card_came = threading.Event()
            card_at: list[float] = []

            def on_speed(_card: object, _others: object) -> None:
                card_at.append(time.perf_counter())
                card_came.set()

            t0 = time.perf_counter()
            profiled = profiler if len(rows) >= args.skip_first else None  # (not the first: cold caches)
            if profiled is not None:
                profiled.enable()
            report = grader.grade(body(fill), secret_seed=seed, on_speed=on_speed)
            if profiled is not None:
                profiled.disable()
            report_s = time.perf_counter() - t0
            pending = report.performance is not None and report.performance.status == "pending"
            if pending and not card_came.wait(120):
                print("  the speed card did not come in 120 s", flush=True)
            card_s = card_at[0] - t0 if card_at else None
            wall = max(report_s, card_s or 0.0)
            row = {"kind": kind, "fill": fill, "seed": seed, "wall_s": round(wall, 3),
                   "report_s": round(report_s, 3), "card_s": None if card_s is None else round(card_s, 3),
                   "speed": None if report.performance is None else report.performance.status,
                   "total": report.score.total,
                   # the trusted side's own time around the run (the first grading: what a process pays once)
                   "trusted_s": (round(report_s - report.timing["sandbox_s"], 4)
                                 if "sandbox_s" in report.timing else None),
                   **{k: report.timing[k] for k in KEYS if k in report.timing},
                   **{k: round(v, 4) for k, v in report.timing.items() if k.startswith(SPLIT_PREFIXES)}}
            rows.append(row)
            print(json.dumps(row), flush=True)
        for kind in dict.fromkeys(r["kind"] for r in rows):
            kept = [r for r in rows[args.skip_first:] if r["kind"] == kind] or [r for r in rows if r["kind"] == kind]

            warm = [r for r in kept if r.get("phase_handover_s", 1.0) < WARM_HANDOVER_S]

            def p50(key: str, among: list[dict] = kept) -> str:
                value = median([r[key] for r in among if r.get(key) is not None])
                return "–" if value is None else f"{value:.3f} s"

            print(f"{kind}: final report p50 {p50('report_s')}, speed card p50 {p50('card_s')}, "
                  f"wall p50 {p50('wall_s')} over {len(kept)}; with a warm sandbox: final report p50 "
                  f"{p50('report_s', warm)} over {len(warm)}; trusted side (report_s - sandbox_s) p50 "
                  f"{p50('trusted_s')}", flush=True)
            if any("harness_compile_ahead_done_s" in r for r in kept):
                # GPU: the compile-ahead's compiles beside the given check and the cases (sandbox/harness.py
                # _AheadCompiles): its calls, the launches' waits for them, and its last compile's end
                print(f"  compile-ahead: calls p50 {p50('harness_compile_ahead_s')}, launches waited p50 "
                      f"{p50('harness_compile_wait_s')}, last compile ended p50 {p50('harness_compile_ahead_done_s')} "
                      f"after the phase's start", flush=True)
        first = rows[0] if rows else None
        if first is not None:  # what the first grading of the process paid (service/grading/warm.py warms it)
            print(f"first grading: final report {first['report_s']:.3f} s, trusted side {first['trusted_s']} s, "
                  f"its run's phase_meanwhile_s {first.get('phase_meanwhile_s')}", flush=True)
        print(split_table(rows, skip_first=args.skip_first), flush=True)
        if profiler is not None:  # the grading thread only: the trusted side's own work, and its waits
            with args.profile.open("w", encoding="utf-8") as out:
                for order in ("tottime", "cumulative"):
                    pstats.Stats(profiler, stream=out).sort_stats(order).print_stats(45)
        grader.close()
        if args.out:
            args.out.write_text(json.dumps(rows, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
