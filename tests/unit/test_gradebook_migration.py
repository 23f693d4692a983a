"""Migration 0006 on a database that already has submissions: the identity columns are filled
from the stored bodies and the grade columns from the current reports (SQLite and PostgreSQL)."""
from __future__ import annotations

import sqlalchemy as sa
from alembic import command
from sqlalchemy import insert, update

from service.db.base import Base, utcnow
from service.db.migrate import alembic_config
from service.db.models import Course, Submission
from service.db.session import make_engine, make_sessionmaker
from tests.unit.test_review_flags import url  # noqa: F401  (the database fixture, both kinds)

BODY = {"exercise": "e", "code": "x", "assignment": "hw6", "student": {"id": "u1", "name": "Ann", "email": "a@example.org"},
        "attempt": 3, "external_ref": "lms:9", "language": "en"}
REPORT = {"status": "graded", "exercise": {"id": "e", "version": 2},
          "score": {"total": 9, "max": 10, "pass_threshold": 8, "passed": False, "provisional": True},
          "vetoes": [{"rule": "coincidental_pass", "status": "suspected"}], "items": []}


def test_0006_backfills_identity_and_grades(url):  # noqa: F811
    config = alembic_config(url)
    command.upgrade(config, "0005")
    engine = make_engine(url)
    try:
        old = {"courses": ("id", "name", "webhook_secret", "created_at"),
               "submissions": ("id", "course_id", "exercise_id", "body", "body_sha256", "feedback_token", "secret_seed",
                               "status", "attempts", "current_report_id", "needs_review", "created_at", "updated_at"),
               "reports": ("id", "submission_id", "seq", "reason", "status", "report", "created_at")}
        t = {name: sa.table(name, *(Base.metadata.tables[name].c[c]._copy() for c in cols)) for name, cols in old.items()}
        now = utcnow()
        with engine.begin() as conn:
            conn.execute(insert(t["courses"]), [{"id": "c1", "name": "c", "webhook_secret": "s", "created_at": now}])
            for sid, body in (("with", BODY), ("bare", {"exercise": "e", "code": "x"})):
                conn.execute(insert(t["submissions"]), [{
                    "id": sid, "course_id": "c1", "exercise_id": "e", "body": body, "body_sha256": "x",
                    "feedback_token": f"t-{sid}", "secret_seed": 1, "status": "graded", "attempts": 1,
                    "current_report_id": None, "needs_review": True, "created_at": now, "updated_at": now}])
            conn.execute(insert(t["reports"]), [{"id": 1, "submission_id": "with", "seq": 1, "reason": "initial",
                                                 "status": "graded", "report": REPORT, "created_at": now}])
            conn.execute(update(t["submissions"]).where(t["submissions"].c.id == "with").values(current_report_id=1))
        command.upgrade(config, "head")
        with make_sessionmaker(engine)() as session:
            row = session.get(Submission, "with")
            assert (row.assignment, row.student_id, row.student_name, row.student_email, row.attempt, row.external_ref,
                    row.language) == ("hw6", "u1", "Ann", "a@example.org", 3, "lms:9", "en")
            assert (row.exercise_version, row.score_total, row.passed, row.provisional, row.blocking) == (
                2, 9, False, True, "veto:coincidental_pass:suspected")
            bare = session.get(Submission, "bare")
            assert bare.assignment is None and bare.score_total is None
            course = session.get(Course, "c1")
            assert (course.grade_policy, course.veto_policy) == ("last", "capped")
        command.downgrade(config, "0005")
        command.upgrade(config, "head")
    finally:
        engine.dispose()
