"""The exercise format beyond lesson 6, through the real pipeline and sandbox: named inputs from
an exercise's make_inputs(), keyword arguments, repeated calls on the same buffers, backward
grading, and exercises the Triton interpreter must refuse."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from service.bootstrap import build_grader
from service.config import Settings
from service.grading.validate import summarize, validate_exercise
from service.submission import Submission

REPO_ROOT = Path(__file__).resolve().parents[2]
FORMAT_EXERCISES = Path(__file__).parent / "exercises"


@pytest.fixture(scope="module")
def grader():
    return build_grader(Settings(exercises_dir=FORMAT_EXERCISES, device="interpreter"))


def test_forward_backward_and_repeated_calls_are_graded(grader):
    exercise = grader.catalog.get("fmt_scale_grad")
    outcomes = validate_exercise(grader, exercise, secret_seed=3)
    assert [o.problems for o in outcomes] == [[], []]
    solution, no_zero = (o.report for o in outcomes)
    # The gradients came back from the sandbox and were compared, not only the forward output.
    assert set(solution.cases[1].tolerance) == {"y", "dx", "dw"}
    assert solution.cases[1].shape == [4, 24]
    # The unzeroed accumulator passes one call and fails the second, by far more than the tolerance.
    twice = next(c for c in no_zero.cases if c.id == "probe.twice")
    assert not twice.passed and twice.first_mismatch.output == "y" and twice.error_ratio > 100
    summary = summarize(exercise, outcomes)
    assert (summary.caught, summary.mutants) == (1, 1) and summary.worst_correct_ratio < 0.1


def test_an_exercise_that_needs_a_gpu_is_refused_on_the_interpreter(tmp_path):
    root = tmp_path / "exercises"
    shutil.copytree(FORMAT_EXERCISES / "fmt_scale_grad", root / "fmt_scale_grad")
    spec = root / "fmt_scale_grad/exercise.yaml"
    spec.write_text(spec.read_text() + "requires_gpu: 解释器逐个程序顺序执行，原子操作的竞争不会出现\n")
    proc = subprocess.run([sys.executable, "-c", "from service.cli import main; main()", "exercises", "validate",
                           "--device", "interpreter"], capture_output=True, text=True, cwd=REPO_ROOT, timeout=600,
                          env={**os.environ, "KERNELGRADE_EXERCISES_DIR": str(root), "COLUMNS": "200"})
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "refused (needs GPU)" in proc.stdout
    grader = build_grader(Settings(exercises_dir=root, device="interpreter"))
    report = grader.grade(Submission(exercise="fmt_scale_grad", code=grader.catalog.get("fmt_scale_grad").solution))
    assert report.status == "not_gradable" and "原子操作的竞争不会出现" in report.message
