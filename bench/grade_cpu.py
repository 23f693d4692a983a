"""What a memo hit costs the trusted side in CPU, and where it goes; and the written-answer scorer's
CPU per answer over the calibration set.

    python bench/grade_cpu.py --device interpreter --hits 200 --out bench-out/

- hits: one lesson-6 submission (the reference fill, the example's written answers) is graded once
  through the real Grader (a sandbox run fills the SQLite verdict memo), then `--hits` times more,
  each a memo hit under its own secret seed. Reported: the thread's CPU per hit (p50, mean) in two
  passes, `same` (the example's answers every time, as bench/fast_path.py) and `varied` (each hit's
  answers drawn from the lesson-6 calibration answers, so that no cache keyed by a student's text
  makes the figure look better than a class's burst).
- profile: cProfile over `--profile-hits` more hits (varied), the top `--top` functions by cumulative
  time (the profiler's own overhead inflates the figures; read the shares).
- freetext: `score_answer` over all 304 calibration answers (tests/calibration/answers/), the thread's
  CPU per answer, the best of `--passes` passes (each the mean over all answers; the first pass also
  fills the per-exercise caches).

The 2-core machine is shared: interleave before/after runs, each in its own process.
"""
from __future__ import annotations

import argparse
import cProfile
import io
import json
import platform
import pstats
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import grade_speed as gs  # noqa: E402 - the same grader and submission as the burst benchmark

from service.bootstrap import build_grader  # noqa: E402
from service.config import Settings  # noqa: E402
from service.submission import Submission  # noqa: E402


def _submissions(exercise, count: int) -> tuple[Submission, list[Submission]]:
    """The example submission with the reference fill, and `count` copies whose answers are drawn in
    turn from the lesson-6 calibration answers (one per question, the example's where none is left)."""
    from tests.calibration.calibration import load

    example = json.loads((exercise.root / "example_submission.json").read_text(encoding="utf-8"))
    code = exercise.template.replace("______", "mask", 1)
    base = Submission(exercise=exercise.id, code=code, answers=example["answers"], explanation=example["explanation"],
                      claimed_output=example.get("claimed_output", ""))
    by_question: dict[str, list[str]] = {}
    for entry in load():
        if entry.exercise == exercise.id and entry.data.get("answer"):
            by_question.setdefault(entry.data["question"], []).append(entry.data["answer"])
    varied = []
    for i in range(count):
        answers = {q: (by_question[q][i % len(by_question[q])] if by_question.get(q) else a)
                   for q, a in example["answers"].items()}
        varied.append(base.model_copy(update={"answers": answers}))
    return base, varied


def _hits(grader, submissions: list[Submission], seed: int) -> list[float]:
    cpus = []
    for i, body in enumerate(submissions):
        c0 = time.thread_time()
        report = grader.grade(body, secret_seed=seed + i)
        cpus.append(time.thread_time() - c0)
        assert report.program is not None and report.program.reused, "every hit reuses the first run"
    return cpus


def _freetext(passes: int) -> dict:
    from tests.calibration.calibration import CATALOG, _points, canonical, load

    from service.grading.freetext import score_answer

    prepared = []
    for entry in load():
        exercise = CATALOG.get(entry.exercise)
        q = entry.data["question"]
        fills = [canonical(f) for f in entry.data["fill"]] if entry.data.get("fill") else None
        prepared.append((exercise.question(q), entry.data.get("answer") or "", _points(exercise, q), fills,
                         exercise.spec.course_text))
    means = []
    for _ in range(passes):
        c0 = time.thread_time()
        for question, answer, points, fills, course in prepared:
            score_answer(question, answer, points, fills=fills, course_text=course)
        means.append((time.thread_time() - c0) / len(prepared))
    return {"answers": len(prepared), "passes_ms": [round(m * 1000, 4) for m in means],
            "best_ms": round(min(means) * 1000, 4)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", choices=["auto", "gpu", "interpreter"], default="interpreter")
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--hits", type=int, default=200)
    parser.add_argument("--profile-hits", type=int, default=100)
    parser.add_argument("--top", type=int, default=30)
    parser.add_argument("--passes", type=int, default=7)
    parser.add_argument("--ready-timeout-s", type=float, default=180)
    parser.add_argument("--skip-grader", action="store_true", help="the freetext timing only")
    args = parser.parse_args()
    args.device = Settings(device=args.device).device_mode().value
    args.compile_threads, args.parallel_wait_s = 1, 0.0
    results: dict = {"date": datetime.now(UTC).isoformat(timespec="seconds"), "mode": args.device,
                     "machine": f"{platform.machine()}, python {platform.python_version()}",
                     "command": " ".join([Path(sys.executable).name, *sys.argv]), "hits": args.hits}
    if not args.skip_grader:
        exercise = build_grader(Settings(device=args.device)).catalog.get(gs.EXERCISE)
        base, varied = _submissions(exercise, args.hits + args.profile_hits)
        with tempfile.TemporaryDirectory(prefix="kg-cpu-") as tmp:
            grader, memo_kind = gs.make_grader(args, pool=1, memo=True, tmp=Path(tmp) / "grader")
            try:
                grader.grade(base, secret_seed=1)
                _hits(grader, [base] * 20 + varied[:20], 10)  # warm the per-process caches
                for name, bodies in (("same", [base] * args.hits), ("varied", varied[:args.hits])):
                    cpus = _hits(grader, bodies, 1000)
                    results[name] = {"cpu_p50_ms": round(gs.percentile(cpus, 0.5) * 1000, 3),
                                     "cpu_mean_ms": round(sum(cpus) / len(cpus) * 1000, 3)}
                    gs.log(f"memo hit, {name} answers: thread CPU p50 {results[name]['cpu_p50_ms']:.2f} ms, "
                           f"mean {results[name]['cpu_mean_ms']:.2f} ms ({memo_kind})")
                profile = cProfile.Profile()
                profile.enable()
                _hits(grader, varied[args.hits:], 50_000)
                profile.disable()
            finally:
                grader.close()
        text = io.StringIO()
        stats = pstats.Stats(profile, stream=text)
        stats.sort_stats("cumulative").print_stats(args.top)
        results["profile"] = text.getvalue()
        print(results["profile"])
    results["freetext"] = _freetext(args.passes)
    gs.log(f"freetext: {results['freetext']['answers']} calibration answers, CPU per answer best "
           f"{results['freetext']['best_ms']:.3f} ms (passes {results['freetext']['passes_ms']})")
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "grade_cpu.json").write_text(json.dumps(results, indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()
