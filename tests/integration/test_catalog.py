"""The shipped catalog: every exercise the interpreter can grade is validated here (its solution earns
every code point with margin, every mutant gets its expected verdict), and every exercise that needs
a GPU is refused on the interpreter with its reason. `kernelgrade exercises validate ID` as a process."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest
import yaml

from service.config import REPO_ROOT
from service.exercises import ExerciseCatalog

pytestmark = [pytest.mark.sandbox, pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs bubblewrap")]
CATALOG = ExerciseCatalog(REPO_ROOT / "exercises")


def test_the_catalog_has_the_course_exercises():
    ids = set(CATALOG.ids())
    assert {"lesson06_mean_var"} <= ids
    for exercise_id in ids:
        exercise = CATALOG.get(exercise_id)
        assert len(exercise.mutants) >= 5, f"{exercise_id} has {len(exercise.mutants)} mutants (< 5)"
        assert exercise.spec.max_points == 10
        assert {c.kind for c in exercise.spec.cases} == {"regular", "boundary", "probe"}, exercise_id


@pytest.mark.parametrize("exercise_id", CATALOG.ids())
def test_every_exercise_validates_on_the_interpreter(exercise_id):
    proc = subprocess.run([sys.executable, "-c", "from service.cli import main; main()", "exercises", "validate",
                           exercise_id, "--device", "interpreter", "--secret-seed", "99", "--no-details", "--jobs", "2"],
                          capture_output=True, text=True, cwd=REPO_ROOT, timeout=1200, env={**os.environ, "COLUMNS": "200"})
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]
    if CATALOG.get(exercise_id).spec.requires_gpu:
        assert "refused (needs GPU)" in proc.stdout
    else:
        assert "answers got their expected verdicts" in proc.stderr
        line = next(row for row in proc.stdout.splitlines() if exercise_id in row)
        assert "ok" in line


# The GPU host's Triton (3.6) still has block pointers, which 3.9's interpreter removed: an exercise
# that is GPU-only for that reason alone is validated here through a sandbox Python with Triton 3.6
# (scripts/setup --test makes it), from a copy without `requires_gpu`. Each kernel is also compiled
# for an sm_90 target in the sandbox first (the one-verdict check), so compile errors are the GPU's.
TRITON36 = REPO_ROOT / ".venv-triton36" / "bin" / "python"
BLOCK_POINTER_ONLY = [e for e in CATALOG.ids() if CATALOG.get(e).spec.requires_gpu
                      and "make_block_ptr" in CATALOG.get(e).template]


@pytest.mark.parametrize("exercise_id", BLOCK_POINTER_ONLY)
def test_a_block_pointer_exercise_validates_under_the_gpu_host_s_triton(exercise_id, tmp_path):
    if not TRITON36.exists():
        pytest.fail(f"{TRITON36} is missing: scripts/setup --test makes it")
    root = tmp_path / "exercises"
    shutil.copytree(REPO_ROOT / "exercises" / exercise_id, root / exercise_id)
    spec_file = root / exercise_id / "exercise.yaml"
    spec = yaml.safe_load(spec_file.read_text(encoding="utf-8"))
    del spec["requires_gpu"]
    spec_file.write_text(yaml.safe_dump(spec, allow_unicode=True, sort_keys=False), encoding="utf-8")
    proc = subprocess.run([sys.executable, "-c", "from service.cli import main; main()", "exercises", "validate",
                           exercise_id, "--device", "interpreter", "--secret-seed", "99", "--no-details", "--jobs", "2"],
                          capture_output=True, text=True, cwd=REPO_ROOT, timeout=1200,
                          env={**os.environ, "COLUMNS": "200", "KERNELGRADE_EXERCISES_DIR": str(root),
                               "KERNELGRADE_SANDBOX_PYTHON": str(TRITON36)})
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]
    assert "answers got their expected verdicts" in proc.stderr
    line = next(row for row in proc.stdout.splitlines() if exercise_id in row)
    assert "ok" in line and "refused" not in line, line
