"""What the GPU-target compile before each interpreter launch costs (sandbox/gpu_compile.py).

Grades each exercise's reference solution on the interpreter, as production does (one bwrap
sandbox per submission), and reads from its report how many kernel specializations the sandbox
compiled for cuda sm_90 before launching them (`timing.kernels_gpu_compile_checks`, the harness's
canary included: it pays the compiler's cold start during sandbox start-up) and the seconds they
took (`timing.gpu_compile_check_s`), next to the whole grading time.

    python bench/gpu_compile_cost.py [exercise ...] [--out FILE.json]
"""
from __future__ import annotations

import argparse
import json
import time

from service.config import Settings
from service.grading.pipeline import build_grader
from service.submission import Submission


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("exercises", nargs="*")
    parser.add_argument("--out")
    args = parser.parse_args()
    grader = build_grader(Settings(device="interpreter"))
    ids = args.exercises or grader.catalog.ids()
    rows = []
    for exercise_id in ids:
        exercise = grader.catalog.get(exercise_id)
        started = time.perf_counter()
        report = grader.grade(Submission(exercise=exercise_id, code=exercise.solution), secret_seed=1)
        wall = time.perf_counter() - started
        checks = report.timing.get("kernels_gpu_compile_checks", 0.0)
        seconds = report.timing.get("gpu_compile_check_s", 0.0)
        rows.append({"exercise": exercise_id, "wall_s": round(wall, 2), "checks": int(checks),
                     "check_s": round(seconds, 3), "per_check_ms": round(1000 * seconds / checks, 1) if checks else None,
                     "startup_s": round(report.timing.get("startup_s", 0.0), 2),
                     "cases_passed": sum(c.passed for c in report.cases), "cases": len(report.cases)})
        print(json.dumps(rows[-1]), flush=True)
    if args.out:
        with open(args.out, "w", encoding="utf-8") as fh:
            json.dump(rows, fh, indent=1)


if __name__ == "__main__":
    main()
