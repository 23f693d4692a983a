"""What the GPU-target compile before each interpreter launch costs (sandbox/gpu_compile.py).

Grades each exercise's reference solution on the interpreter, as production does (one bwrap
sandbox per submission), and reads from its report how many kernel specializations the sandbox
compiled for cuda sm_90 before launching them (`timing.kernels_gpu_compile_checks`, the harness's
canary included: it pays the compiler's cold start during sandbox start-up) and the seconds they
took (`timing.gpu_compile_check_s`), next to the whole grading time.

    python bench/gpu_compile_cost.py [exercise ...] [--out FILE.json]
    python bench/gpu_compile_cost.py --micro     # one process, no sandbox: cold and warm compiles

--micro times the gate itself in a fresh `TRITON_INTERPRET=1` process: lesson 6's reference
kernel (copied below) launched on 8 shapes, each its own specialization (N and the stride are
constexprs), every launch compiled for sm_90 first; it prints the seconds of each compile and of
each interpreted run, and the process's import time.
"""
from __future__ import annotations

import argparse
import json
import time

from service.bootstrap import build_grader
from service.config import Settings
from service.submission import Submission

MICRO = r"""
import json, sys, time
t0 = time.perf_counter()
import torch, triton, triton.language as tl
sys.path.insert(0, "sandbox")
import gpu_compile
imported = time.perf_counter() - t0

@triton.jit
def mean_var_kernel(x, means, variances, N: tl.constexpr,
                    stride_m: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < N
    values = tl.load(x + row * stride_m + cols, mask=mask, other=0.0)
    mean = tl.sum(values, axis=0) / N
    centered_sq = tl.where(mask, (values - mean) * (values - mean), 0.0)
    var = tl.sum(centered_sq, axis=0) / N
    tl.store(means + row, mean)
    tl.store(variances + row, var)

gpu_compile.restrict_compile_time_calls()
gate = gpu_compile.CompileGate()
gate.install()
rows = []
for n in (17, 128, 20, 1000, 33, 4096, 1, 257):
    x = torch.randn(4, n)
    means, variances = torch.empty(4), torch.empty(4)
    before = gate.compile_s
    t = time.perf_counter()
    mean_var_kernel[(4,)](x, means, variances, n, x.stride(0), BLOCK=triton.next_power_of_2(n))
    total = time.perf_counter() - t
    compile_s = gate.compile_s - before
    t = time.perf_counter()
    mean_var_kernel[(4,)](x, means, variances, n, x.stride(0), BLOCK=triton.next_power_of_2(n))
    again = time.perf_counter() - t
    assert torch.allclose(means, x.mean(1), atol=1e-4)
    rows.append({"N": n, "compile_ms": round(1000 * compile_s, 1), "run_ms": round(1000 * (total - compile_s), 1),
                 "second_launch_ms": round(1000 * again, 1)})
print(json.dumps({"import_s": round(imported, 2), "launches": rows, "compiles": gate.compiles}))
"""


def micro() -> None:
    import os
    import subprocess
    import sys
    import tempfile

    env = {**os.environ, "TRITON_INTERPRET": "1", "TRITON_DEFAULT_FP_FUSION": "1"}
    with tempfile.TemporaryDirectory() as folder:  # Triton reads a kernel's source from its file
        script = os.path.join(folder, "micro.py")
        with open(script, "w", encoding="utf-8") as fh:
            fh.write(MICRO.replace('"sandbox"', repr(os.path.abspath("sandbox"))))
        done = subprocess.run([sys.executable, script], env=env, capture_output=True, text=True, check=False)
    print(done.stdout.strip() or done.stderr[-3000:])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("exercises", nargs="*")
    parser.add_argument("--out")
    parser.add_argument("--micro", action="store_true")
    args = parser.parse_args()
    if args.micro:
        micro()
        return
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
