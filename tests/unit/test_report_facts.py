"""The dashboard's report facts: what is read from a report (defensively: old reports, empty
requirements), and migration 0008 filling them, and the first report's time, on a database that
already has graded submissions (SQLite and PostgreSQL)."""
from __future__ import annotations

from datetime import timedelta

import sqlalchemy as sa
from alembic import command
from sqlalchemy import insert, select, update

from service.dashboard.facts import report_facts
from service.db.base import Base, as_utc, utcnow
from service.db.migrate import alembic_config
from service.db.models import ReportFact, Submission
from service.db.session import make_engine, make_sessionmaker
from tests.unit.test_review_flags import url  # noqa: F401  (the database fixture, both kinds)

REPORT = {
    "status": "graded", "exercise": {"id": "e", "version": 1},
    "score": {"total": 6, "max": 10, "pass_threshold": 8, "passed": False, "provisional": True,
              "requirements": [{"id": "code_cases", "met": False}, {"id": "no_veto", "met": True}]},
    "diagnoses": [{"id": "missing_remask", "message": "第二次规约前没有重新 mask。"}],
    "vetoes": [{"rule": "boundary_check_removed", "status": "suspected"}, {"rule": "unverified_claim", "status": "dismissed"}],
    "cases": [{"id": "b1", "kind": "boundary", "passed": True}, {"id": "b2", "kind": "boundary", "passed": False},
              {"id": "r1", "kind": "regular", "passed": True}],
    "items": [{"id": "q2", "evidence": {"found": [{"concept": "remask", "label": "第二次 mask"}],
                                        "missing": [{"concept": "mean_squared", "label": "mean²"}]}},
              {"id": "code.regular", "evidence": {"passed": ["r1"], "failed": []}}],
}


def test_facts_of_a_report():
    facts = {(f["kind"], f["item"], f["key"]): (f["ok"], f["label"]) for f in report_facts(REPORT)}
    assert facts == {
        ("diagnosis", "", "missing_remask"): (False, "第二次规约前没有重新 mask。"),
        ("veto", "", "boundary_check_removed"): (False, "suspected"),
        ("veto", "", "unverified_claim"): (True, "dismissed"),
        ("requirement", "", "code_cases"): (False, ""),
        ("requirement", "", "no_veto"): (True, ""),
        ("case", "", "boundary"): (False, ""),
        ("case", "", "regular"): (True, ""),
        ("concept", "q2", "remask"): (True, "第二次 mask"),
        ("concept", "q2", "mean_squared"): (False, "mean²"),
    }


def test_facts_read_defensively():
    assert report_facts({"status": "not_gradable", "diagnoses": [{"id": "x"}]}) == []
    assert report_facts({"status": "graded"}) == []
    assert report_facts({"status": "graded", "score": {"requirements": None}, "vetoes": None, "items": [None, 3],
                         "diagnoses": ["text", {"id": ""}, {"message": "no id"}]}) == []
    long = report_facts({"status": "graded", "diagnoses": [{"id": "d", "message": "x\x00" * 600}]})[0]["label"]
    assert len(long) == 500 and "\x00" not in long and long.endswith("…")


def test_0008_backfills_facts_and_first_report_time(url):  # noqa: F811
    config = alembic_config(url)
    command.upgrade(config, "0007")
    engine = make_engine(url)
    try:
        old = {"courses": ("id", "name", "webhook_secret", "created_at"),
               "submissions": ("id", "course_id", "exercise_id", "body", "body_sha256", "feedback_token", "secret_seed",
                               "status", "attempts", "current_report_id", "needs_review", "created_at", "updated_at",
                               "assignment", "student_id"),
               "reports": ("id", "submission_id", "seq", "reason", "status", "report", "created_at")}
        t = {name: sa.table(name, *(Base.metadata.tables[name].c[c]._copy() for c in cols)) for name, cols in old.items()}
        now = utcnow()
        with engine.begin() as conn:
            conn.execute(insert(t["courses"]), [{"id": "c1", "name": "c", "webhook_secret": "s", "created_at": now}])
            for sid in ("regraded", "queued"):
                conn.execute(insert(t["submissions"]), [{
                    "id": sid, "course_id": "c1", "exercise_id": "e", "body": {}, "body_sha256": "x",
                    "feedback_token": f"t-{sid}", "secret_seed": 1, "status": "graded", "attempts": 1,
                    "current_report_id": None, "needs_review": False, "created_at": now - timedelta(minutes=5),
                    "updated_at": now, "assignment": "hw6", "student_id": "u1"}])
            conn.execute(insert(t["reports"]), [
                {"id": 1, "submission_id": "regraded", "seq": 1, "reason": "initial", "status": "graded",
                 "report": {**REPORT, "diagnoses": []}, "created_at": now - timedelta(minutes=4)},
                {"id": 2, "submission_id": "regraded", "seq": 2, "reason": "regrade", "status": "graded",
                 "report": REPORT, "created_at": now}])
            conn.execute(update(t["submissions"]).where(t["submissions"].c.id == "regraded").values(current_report_id=2))
        command.upgrade(config, "head")
        with make_sessionmaker(engine)() as session:
            facts = session.scalars(select(ReportFact).where(ReportFact.submission_id == "regraded")).all()
            assert {(f.kind, f.item, f.key, f.ok) for f in facts} == {
                (f["kind"], f["item"], f["key"], f["ok"]) for f in report_facts(REPORT)}  # the current report's
            row = session.get(Submission, "regraded")
            assert abs((as_utc(row.first_graded_at) - (now - timedelta(minutes=4))).total_seconds()) < 1  # the first
            assert session.get(Submission, "queued").first_graded_at is None
            assert not session.scalars(select(ReportFact).where(ReportFact.submission_id == "queued")).all()
        command.downgrade(config, "0007")
        command.upgrade(config, "head")
    finally:
        engine.dispose()
