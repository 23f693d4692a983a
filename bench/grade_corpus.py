"""Grade an exercise's solution and every mutant, and write what it cost and the margins.

    python bench/grade_corpus.py lesson06_mean_var --device gpu --out results.json

For each answer: grading wall time (and its parts: sandbox start-up, given check, cases), the
verdict check that `kernelgrade exercises validate` applies, and the error/tolerance margins
(correct answers: largest error_ratio; wrong answers: error_ratio on the probes they must fail).
With --baseline, also times the lesson's own cell in a fresh `python3` process, which is what a
TA would otherwise run by hand.
"""
from __future__ import annotations

import argparse
import json
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from service.bootstrap import build_grader  # noqa: E402
from service.config import Settings  # noqa: E402
from service.grading.validate import check_mutant, check_solution, code_points  # noqa: E402
from service.submission import Submission  # noqa: E402


def baseline_seconds(cell: str, repeats: int) -> list[float]:
    """Wall time of the lesson's cell in a fresh interpreter (import torch, compile, run)."""
    times = []
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "cell.py"
        path.write_text(cell, encoding="utf-8")
        for _ in range(repeats):
            t0 = time.perf_counter()
            subprocess.run([sys.executable, str(path)], check=True, capture_output=True)
            times.append(time.perf_counter() - t0)
    return times


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("exercise")
    parser.add_argument("--device", choices=["auto", "gpu", "interpreter"], default="auto")
    parser.add_argument("--secret-seed", type=int, default=20261129)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--baseline", type=int, default=0, help="time the lesson cell N times in fresh processes")
    args = parser.parse_args()

    grader = build_grader(Settings(device=args.device))
    exercise = grader.catalog.get(args.exercise)
    answers = [("solution", exercise.solution, None)] + [(m.id, exercise.mutant_code(m), m) for m in exercise.mutants]
    rows = []
    for name, code, mutant in answers:
        t0 = time.perf_counter()
        report = grader.grade(Submission(exercise=exercise.id, code=code), secret_seed=args.secret_seed)
        wall = time.perf_counter() - t0
        problems = check_solution(exercise, report) if mutant is None else check_mutant(exercise, mutant, report)
        ratios = {c.id: c.error_ratio for c in report.cases if c.error_ratio is not None}
        must_fail = set(mutant.expect.failing_cases) if mutant else set()
        rows.append({
            "answer": name, "ok": not problems, "problems": problems, "status": report.status,
            "code_points": code_points(report, exercise), "vetoes": [v.rule for v in report.vetoes],
            "diagnoses": [d.id for d in report.diagnoses], "wall_s": wall, "timing": report.timing,
            "max_error_ratio_passing": max((r for c, r in ratios.items()
                                            if next(x for x in report.cases if x.id == c).passed), default=None),
            "probe_error_ratios": {c: r for c, r in ratios.items() if c in must_fail},
            "environment": report.environment.model_dump(),
        })
        print(f"{name:40s} {'ok' if not problems else 'FAIL ' + '; '.join(problems)}  {wall:.2f}s", flush=True)

    ran = [r for r in rows if r["timing"].get("sandbox_s")]
    summary = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "host": platform.node(), "python": platform.python_version(),
        "exercise": exercise.id, "device": args.device, "secret_seed": args.secret_seed,
        "answers": len(rows), "all_ok": all(r["ok"] for r in rows),
        "median_wall_s_ran": statistics.median(r["wall_s"] for r in ran) if ran else None,
        "median_startup_s": statistics.median(r["timing"]["startup_s"] for r in ran if "startup_s" in r["timing"]) if ran else None,
        "median_cases_s": statistics.median(r["timing"].get("cases_s", 0) for r in ran) if ran else None,
        "median_given_check_s": statistics.median(r["timing"].get("given_check_s", 0) for r in ran) if ran else None,
        "rows": rows,
    }
    if args.baseline:
        summary["baseline_fresh_process_s"] = baseline_seconds(exercise.solution, args.baseline)
    args.out.write_text(json.dumps(summary, indent=2, ensure_ascii=False), encoding="utf-8")
    print(json.dumps({k: v for k, v in summary.items() if k != "rows"}, indent=2))
    sys.exit(0 if summary["all_ok"] else 1)


if __name__ == "__main__":
    main()
