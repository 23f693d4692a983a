"""The kernelgrade command line, run as a real process."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from service.config import REPO_ROOT

pytestmark = [pytest.mark.sandbox, pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs bubblewrap")]
EXAMPLE = REPO_ROOT / "exercises/lesson06_mean_var/example_submission.json"


def kernelgrade(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", "from service.cli import main; main()", *args],
                          capture_output=True, text=True, cwd=REPO_ROOT, timeout=900)


def test_grade_json_prints_exactly_the_report():
    proc = kernelgrade("grade", str(EXAMPLE), "--format", "json", "--secret-seed", "5")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["schema"] == "kernelgrade.report/v1" and report["status"] == "graded"
    assert report["seeds"]["secret"] == 5 and report["score"]["total"] >= 4


def test_grade_bare_python_file(tmp_path):
    code = (REPO_ROOT / "exercises/lesson06_mean_var/template.py").read_text().replace("______", "cols <= N", 1)
    path = tmp_path / "answer.py"
    path.write_text(code)
    proc = kernelgrade("grade", str(path), "--exercise", "lesson06_mean_var", "--format", "text")
    assert proc.returncode == 0, proc.stderr
    assert "code.boundary" in proc.stdout and "cols <= N" in proc.stdout


@pytest.mark.parametrize(("content", "suffix", "words"), [
    ("{not json", ".json", "not valid JSON"),
    (json.dumps({"exercise": "lesson06_mean_var", "code": "x", "grade": 10}), ".json", "grade"),
    (json.dumps({"exercise": "lesson99", "code": "x"}), ".json", "unknown exercise"),
    (json.dumps({"code": "x"}), ".json", "exercise"),
])
def test_bad_input_is_refused_with_a_reason(tmp_path, content, suffix, words):
    path = tmp_path / f"bad{suffix}"
    path.write_text(content)
    proc = kernelgrade("grade", str(path), "--format", "json")
    assert proc.returncode == 2 and proc.stdout == ""
    assert words in proc.stderr


def test_validate_fails_loudly_when_a_mutant_escapes(tmp_path):
    broken = tmp_path / "exercises"
    shutil.copytree(REPO_ROOT / "exercises", broken)
    mutants = broken / "lesson06_mean_var/mutants.yaml"
    # Claim that the missing re-mask earns full marks: validation must refuse that expectation.
    mutants.write_text("- id: wrong.claimed_correct\n  description: x\n  fill: 'True'\n  expect: {code_points: 3}\n")
    proc = subprocess.run([sys.executable, "-c", "from service.cli import main; main()", "exercises", "validate",
                           "lesson06_mean_var"], capture_output=True, text=True, cwd=REPO_ROOT, timeout=900,
                          env={**os.environ, "KERNELGRADE_EXERCISES_DIR": str(broken)})
    assert proc.returncode == 1
    assert "wrong.claimed_correct" in proc.stderr and "code points 1.5, expected 3" in proc.stderr


def test_review_queue_and_decide_from_the_command_line(tmp_path):
    """A graded submission waiting for a TA (a partial Q2 answer), decided with the CLI."""
    from service.bootstrap import build_grader
    from service.config import Settings
    from service.db import store
    from service.db.migrate import upgrade
    from service.db.session import make_engine, make_sessionmaker
    from service.submission import Submission

    settings = Settings(data_dir=tmp_path)
    upgrade(settings.db_url())
    sessions = make_sessionmaker(make_engine(settings.db_url()))
    body = Submission(exercise="lesson06_mean_var", code="x = 1\n",  # not the template: graded without the sandbox
                      answers={"q2": "减掉均值以后 padding 变成 -mean。"})
    with sessions() as session:
        store.create_course(session, "c1", "c1")
        row, _ = store.create_submission(session, course_id="c1", body=body, callback_url=None, idempotency_key=None)
        claim = store.claim(session, lease_s=60)
        assert store.finish(session, claim, build_grader(settings).grade(body, submission_id=row.id)) is not None

    env = {**os.environ, "KERNELGRADE_DATA_DIR": str(tmp_path)}
    run = lambda *a: subprocess.run([sys.executable, "-c", "from service.cli import main; main()", *a],  # noqa: E731
                                    capture_output=True, text=True, cwd=REPO_ROOT, timeout=120, env=env)
    queue = run("review", "queue", "--course", "c1")
    assert queue.returncode == 0 and row.id in queue.stdout and "item:q2" in queue.stdout
    bad = run("review", "decide", row.id, "--item", "q2", "--points", "9", "--reason", "x" * 5, "--by", "ta@example.org")
    assert bad.returncode == 2 and "at most 2" in bad.stderr
    done = run("review", "decide", row.id, "--item", "q2", "--points", "1.5", "--reason", "链条基本完整", "--by", "ta@example.org")
    assert done.returncode == 0, done.stderr
    assert "item:q2" in done.stdout and "'points': 1.5" in done.stdout
    assert row.id not in run("review", "queue", "--course", "c1").stdout
