"""The gradebook from the command line, run as real processes on a SQLite database: the course
policy, the grades export (CSV and JSON) and bulk regrades. (Each process costs a few seconds of
imports: the checks are grouped to keep the count of processes small.)"""
from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys

import pytest

from service.bootstrap import build_grader
from service.config import REPO_ROOT, Settings
from service.db import store
from service.db.migrate import upgrade
from service.db.session import make_engine, make_sessionmaker
from service.submission import Submission


@pytest.fixture
def course_db(tmp_path):
    """Course c1 with two students' graded attempts (code that is not the template: graded without the sandbox)."""
    settings = Settings(data_dir=tmp_path)
    upgrade(settings.db_url())
    engine = make_engine(settings.db_url())
    sessions = make_sessionmaker(engine)
    grader = build_grader(settings)
    with sessions() as session:
        store.create_course(session, "c1", "c1")
        for student, attempt in (("ann", 1), ("ann", 2), ("ben", 1)):
            body = Submission(exercise="lesson06_mean_var", code=f"x = {attempt}  # {student}\n", assignment="hw6",
                              student={"id": student, "name": student.title()}, attempt=attempt)
            row, _ = store.create_submission(session, course_id="c1", body=body, callback_url=None, idempotency_key=None)
            claim = store.claim(session, lease_s=60)
            assert store.finish(session, claim, grader.grade(body, submission_id=row.id)) is not None
    engine.dispose()
    env = {**os.environ, "KERNELGRADE_DATA_DIR": str(tmp_path)}
    return lambda *args: subprocess.run([sys.executable, "-c", "from service.cli import main; main()", *args],
                                        capture_output=True, text=True, cwd=REPO_ROOT, timeout=120, env=env)


def test_policy_export_and_bulk_regrade_from_the_command_line(course_db, tmp_path):
    run = course_db
    changed = run("courses", "policy", "c1", "--grade-policy", "best", "--veto-policy", "zero")
    assert changed.returncode == 0 and "grade policy best, veto policy zero" in changed.stdout
    assert run("courses", "policy", "c1", "--veto-policy", "half").returncode == 2

    exported = run("grades", "export", "--course", "c1", "--assignment", "hw6")
    assert exported.returncode == 0, exported.stderr
    rows = list(csv.DictReader(io.StringIO(exported.stdout)))
    assert [(r["student_id"], r["student_name"], r["graded_attempts"], r["state"]) for r in rows] == [
        ("ann", "Ann", "2", "final"), ("ben", "Ben", "1", "final")]
    out = tmp_path / "grades.json"
    assert run("grades", "export", "--course", "c1", "--format", "json", "-o", str(out)).returncode == 0
    book = json.loads(out.read_text())
    assert book["policy"] == {"grade_policy": "best", "veto_policy": "zero", "hint_cost": 0.0} and len(book["rows"]) == 2

    started = run("regrade", "start", "--course", "c1", "--assignment", "hw6", "--by", "ta@example.org")
    assert started.returncode == 0, started.stderr
    job_id = started.stdout.split("\t")[0]
    assert "running" in started.stdout and "0/3 done" in started.stdout
    again = run("regrade", "start", "--course", "c1", "--assignment", "hw6")
    assert again.stdout.split("\t")[0] == job_id and "already running" in again.stderr
    status = run("regrade", "status", "--course", "c1", job_id)
    assert status.returncode == 0 and "3 pending" in status.stdout
    assert run("regrade", "start", "--course", "c1").returncode == 2, "a scope is required"
