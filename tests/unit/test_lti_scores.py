"""Which reports become LTI scores, on a real (SQLite) database: the latest graded attempt counts,
a not_gradable report posts nothing, a newer score supersedes one still waiting; and the score
body's progress fields. Also the `kernelgrade lti` commands."""
from __future__ import annotations

import json
from datetime import timedelta

import pytest
from sqlalchemy import select
from typer.testing import CliRunner

from service.cli import app
from service.db import store
from service.db.base import utcnow
from service.db.lti_models import LtiContext, LtiDeployment, LtiLink, LtiPlatform, LtiScorePost, LtiSubmission
from service.db.migrate import upgrade
from service.db.models import ReportRow, Submission
from service.db.session import make_engine, make_sessionmaker
from service.lti import scores


@pytest.fixture
def db(tmp_path):
    url = f"sqlite:///{tmp_path / 'kg.db'}"
    upgrade(url)
    sessions = make_sessionmaker(make_engine(url))
    with sessions() as session:
        store.create_course(session, "c1", "C1")
        session.add(LtiPlatform(id="p1", course_id="c1", issuer="https://lms.example.edu", client_id="k",
                                auth_login_url="https://lms.example.edu/auth", auth_token_url="https://lms.example.edu/token",
                                key_set_url="https://lms.example.edu/jwks", frame_origins=[]))
        session.flush()
        session.add(LtiDeployment(id=1, platform_id="p1", deployment_id="d"))
        session.add(LtiContext(id=1, platform_id="p1", context_id="ctx"))
        session.flush()
        session.add(LtiLink(id=1, deployment_id=1, context_id=1, resource_link_id="rl", exercise_id="lesson06_mean_var",
                            ags_scopes=[scores.SCORE_SCOPE]))
        session.commit()
    return sessions


def report(total: float, *, provisional: bool = False, status: str = "graded") -> dict:
    return {"status": status, "language": "en",
            "score": {"total": total, "max": 10, "pass_threshold": 8, "passed": total >= 8, "provisional": provisional}}


def submitted(session, sub: str, *, minutes_ago: int, status: str = "graded") -> Submission:
    row = Submission(id=f"s{minutes_ago}{sub}", course_id="c1", exercise_id="lesson06_mean_var", body={}, body_sha256="x",
                     feedback_token=f"t{minutes_ago}{sub}", secret_seed=1, status=status,
                     created_at=utcnow() - timedelta(minutes=minutes_ago))
    session.add(row)
    session.flush()
    session.add(LtiSubmission(submission_id=row.id, link_id=1, sub=sub))
    session.flush()
    return row


def issue(session, row: Submission, body: dict, seq: int = 1) -> LtiScorePost | None:
    report_row = ReportRow(submission_id=row.id, seq=seq, reason="initial", status=body["status"], report=body)
    session.add(report_row)
    session.flush()
    post = scores.enqueue(session, row, report_row)
    session.commit()
    return post


def test_progress_follows_the_ta_review(db):
    with db() as session:
        row = submitted(session, "alice", minutes_ago=5)
        pending = issue(session, row, report(9, provisional=True))
        assert (pending.score["gradingProgress"], pending.score["activityProgress"]) == ("PendingManual", "Submitted")
        assert pending.score["userId"] == "alice" and pending.score["scoreGiven"] == 9
        final = issue(session, row, report(7), seq=2)
        assert (final.score["gradingProgress"], final.score["activityProgress"]) == ("FullyGraded", "Completed")
        assert "7/10" in final.score["comment"]
        assert session.get(LtiScorePost, pending.id).state == "superseded", "the waiting older score is dropped"


def test_not_gradable_posts_nothing(db):
    with db() as session:
        row = submitted(session, "alice", minutes_ago=5, status="not_gradable")
        assert issue(session, row, report(0, status="not_gradable")) is None
        assert session.scalars(select(LtiScorePost)).all() == []


def test_an_older_attempt_does_not_overwrite_a_newer_grade(db):
    with db() as session:
        older = submitted(session, "alice", minutes_ago=30)
        newer = submitted(session, "alice", minutes_ago=5)
        issue(session, newer, report(6))
        assert issue(session, older, report(9), seq=2) is None, "a TA decision on the older attempt"
        other = submitted(session, "bob", minutes_ago=40)
        assert issue(session, other, report(9)) is not None, "another student's attempts do not count"


def test_non_lti_submissions_are_left_alone(db):
    with db() as session:
        row = Submission(id="plain", course_id="c1", exercise_id="lesson06_mean_var", body={}, body_sha256="x",
                         feedback_token="tp", secret_seed=1, status="graded")
        session.add(row)
        session.flush()
        assert issue(session, row, report(10)) is None


def test_lti_commands(tmp_path, monkeypatch):
    monkeypatch.setenv("KERNELGRADE_DATA_DIR", str(tmp_path))
    cli = CliRunner()
    assert cli.invoke(app, ["courses", "create", "c1"]).exit_code == 0
    added = cli.invoke(app, ["lti", "platforms", "add", "--course", "c1", "--issuer", "https://lms.example.edu",
                             "--client-id", "k1", "--login-url", "https://lms.example.edu/auth",
                             "--token-url", "https://lms.example.edu/token", "--jwks-url", "https://lms.example.edu/jwks",
                             "--deployment", "d1"])
    assert added.exit_code == 0, added.output
    platform_id = added.output.split("\t")[0]
    internal = cli.invoke(app, ["lti", "platforms", "add", "--course", "c1", "--issuer", "x", "--client-id", "k2",
                                "--login-url", "http://10.0.0.1/auth", "--token-url", "https://lms.example.edu/token",
                                "--jwks-url", "https://lms.example.edu/jwks"])
    assert internal.exit_code != 0 and "auth_login_url" in internal.output
    assert cli.invoke(app, ["lti", "deployments", "add", platform_id, "d2"]).exit_code == 0
    listed = cli.invoke(app, ["lti", "platforms", "list"]).output
    assert "deployments: d1, d2" in listed and "active" in listed
    assert cli.invoke(app, ["lti", "deployments", "revoke", platform_id, "d2"]).exit_code == 0
    assert cli.invoke(app, ["lti", "platforms", "revoke", platform_id]).exit_code == 0
    assert "revoked" in cli.invoke(app, ["lti", "platforms", "list"]).output
    first = cli.invoke(app, ["lti", "keys", "list"]).output.split("\t")[0]
    rotated = cli.invoke(app, ["lti", "keys", "rotate"]).output.split()[-1]
    states = dict(line.split("\t")[::2] for line in cli.invoke(app, ["lti", "keys", "list"]).output.splitlines())
    assert states[rotated] == "active" and states[first].startswith("retired")
    assert cli.invoke(app, ["lti", "keys", "remove", rotated]).exit_code != 0, "the active key stays"
    assert cli.invoke(app, ["lti", "keys", "remove", first]).exit_code == 0
    values = json.loads(cli.invoke(app, ["lti", "tool", "--url", "https://kg.example.edu"]).output)
    assert values["jwks_url"] == "https://kg.example.edu/lti/jwks"
