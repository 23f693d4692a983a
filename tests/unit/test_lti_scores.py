"""Which grade goes to the LMS, on a real (SQLite) database: the course's gradebook decides (last or
best attempt, the veto policy's cap or zero), a not_gradable report posts nothing, an unchanged
grade is not posted again, a newer score supersedes one still waiting; the score's progress fields.
Also the `kernelgrade lti` commands."""
from __future__ import annotations

import json
import threading
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
from service.grades.gradebook import gradebook
from service.grades.policy import CoursePolicy, PolicyUpdate
from service.lti import scores
from service.report import Environment, ExerciseRef, Report, Score, Veto
from tests.support.servers import migrated_sessions


@pytest.fixture
def db(tmp_path):
    url = f"sqlite:///{tmp_path / 'kg.db'}"
    upgrade(url)
    return placement(make_sessionmaker(make_engine(url)))


def placement(sessions):
    """Course c1 with an LTI platform, a deployment, a context and one placement (link 1, lesson 6)."""
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


def report(total: float, *, provisional: bool = False, veto: str | None = None, status: str = "graded") -> dict:
    """A stored report: `veto` is the status of a coincidental_pass veto (none: no veto)."""
    vetoes = [Veto(rule="coincidental_pass", status=veto, needs_review=veto == "suspected")] if veto else []
    passed = status == "graded" and total >= 8 and veto not in ("suspected", "confirmed")
    body = Report(submission_id="x", exercise=ExerciseRef(id="lesson06_mean_var", version=1), status=status,
                  language="en", score=Score(total=total, max=10, pass_threshold=8, passed=passed, provisional=provisional),
                  vetoes=vetoes, environment=Environment(backend="interpreter", sandbox="bwrap"), created_at=utcnow())
    return json.loads(body.to_json())


def submitted(session, sub: str, *, attempt: int, status: str = "graded") -> Submission:
    row = Submission(id=f"s{attempt}{sub}", course_id="c1", exercise_id="lesson06_mean_var", body={}, body_sha256="x",
                     feedback_token=f"t{attempt}{sub}", secret_seed=1, status=status, assignment="lti:rl",
                     student_id=sub, attempt=attempt, created_at=utcnow() - timedelta(minutes=60 - attempt))
    session.add(row)
    session.flush()
    session.add(LtiSubmission(submission_id=row.id, link_id=1, sub=sub))
    session.flush()
    return row


def issue(session, row: Submission, body: dict, *, policy: CoursePolicy | None = None,
          commit: bool = True) -> LtiScorePost | None:
    """A report becomes current for `row`, as store.finish and decisions.decide do it."""
    seq = len(session.scalars(select(ReportRow).where(ReportRow.submission_id == row.id)).all()) + 1
    report_row = ReportRow(submission_id=row.id, seq=seq, reason="initial", status=body["status"], report=body)
    session.add(report_row)
    session.flush()
    row.current_report_id, row.status = report_row.id, body["status"]
    store.on_current_report(session, row, body)
    post = scores.enqueue(session, row, report_row, policy=policy or CoursePolicy())
    if commit:
        session.commit()
    return post


def test_progress_follows_the_ta_review_and_the_veto_policy(db):
    with db() as session:
        row = submitted(session, "alice", attempt=1)
        pending = issue(session, row, report(9, provisional=True, veto="suspected"))
        assert (pending.score["gradingProgress"], pending.score["activityProgress"]) == ("PendingManual", "Submitted")
        assert pending.score["userId"] == "alice" and pending.score["scoreGiven"] == 7.5, "capped while a veto waits"
        assert "7.5" in pending.score["comment"] and "TA" in pending.score["comment"]
        final = issue(session, row, report(9, veto="dismissed"))
        assert (final.score["gradingProgress"], final.score["activityProgress"]) == ("FullyGraded", "Completed")
        assert final.score["scoreGiven"] == 9 and final.score["timestamp"] > pending.score["timestamp"]
        assert session.get(LtiScorePost, pending.id).state == "superseded", "the waiting older score is dropped"
        zero = issue(session, row, report(9, veto="confirmed"), policy=CoursePolicy(veto_policy="zero"))
        assert zero.score["scoreGiven"] == 0


def test_not_gradable_posts_nothing(db):
    with db() as session:
        row = submitted(session, "alice", attempt=1, status="not_gradable")
        assert issue(session, row, report(0, status="not_gradable")) is None
        assert session.scalars(select(LtiScorePost)).all() == []


def test_the_last_attempt_counts_by_default(db):
    with db() as session:
        older, newer = submitted(session, "alice", attempt=1), submitted(session, "alice", attempt=2)
        issue(session, older, report(9))
        assert issue(session, newer, report(6)).score["scoreGiven"] == 6
        assert issue(session, older, report(10)) is None, "a decision on the older attempt changes no grade"
        assert issue(session, submitted(session, "bob", attempt=1), report(9)) is not None, "bob's attempts are his"


def test_the_best_attempt_counts_under_that_policy(db):
    best = CoursePolicy(grade_policy="best")
    with db() as session:
        older, newer = submitted(session, "alice", attempt=1), submitted(session, "alice", attempt=2)
        assert issue(session, older, report(9), policy=best).score["scoreGiven"] == 9
        assert issue(session, newer, report(6), policy=best) is None, "the LMS has the best grade already"
        lowered = issue(session, older, report(5), policy=best)
        assert lowered.score["scoreGiven"] == 6 and lowered.submission_id == newer.id


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
    # `--`: a key id is a base64url thumbprint, and one in 64 starts with "-" (read as an option without it)
    assert cli.invoke(app, ["lti", "keys", "remove", "--", rotated]).exit_code != 0, "the active key stays"
    assert cli.invoke(app, ["lti", "keys", "remove", "--", first]).exit_code == 0
    values = json.loads(cli.invoke(app, ["lti", "tool", "--url", "https://kg.example.edu"]).output)
    assert values["jwks_url"] == "https://kg.example.edu/lti/jwks"


def test_a_failed_regrade_is_a_webhook_and_posts_nothing(db):
    """Through the store's own claim and finish (a session each, as a worker does): the regrade came out
    not_gradable, so the graded report stays current; the course hears of it (`submission.regrade_failed`),
    and the LMS's score is left as it is."""
    with db() as session:
        row = submitted(session, "alice", attempt=1, status="queued")
        row.callback_url = "https://lms.example.edu/hook"
        session.commit()
        submission_id = row.id

    def grade(body: dict) -> ReportRow:
        with db() as session:
            claim = store.claim(session, lease_s=60)
        with db() as session:
            written = store.finish(session, claim, Report.model_validate(body))
            assert written is not None
            return written

    graded = grade(report(9))
    with db() as session:
        assert store.request_regrade(session, submission_id)
    failed = grade(report(0, status="not_gradable"))
    with db() as session:
        row = session.get_one(Submission, submission_id)
        assert (row.status, row.current_report_id, failed.seq) == ("graded", graded.id, 2)
        assert [(d.event, d.report_id) for d in store.deliveries(session, row.id)] == [
            ("submission.graded", graded.id), ("submission.regrade_failed", failed.id)]
        assert [post.score["scoreGiven"] for post in session.scalars(select(LtiScorePost))] == [9]


def test_through_finish_the_course_policy_decides_and_other_submissions_queue_nothing(db):
    """Through the store's own claim and finish (the policy is read only once a submission proves to
    have come through LTI): the course's veto policy `zero` makes a confirmed veto's 9 points a 0 on
    the LMS; a submission that did not come through LTI is graded and queues no score."""
    with db() as session:
        store.set_course_policy(session, "c1", PolicyUpdate(veto_policy="zero"))
        lti = submitted(session, "alice", attempt=1, status="queued")
        plain = Submission(id="plain", course_id="c1", exercise_id="lesson06_mean_var", body={}, body_sha256="x",
                           feedback_token="t-plain", secret_seed=1, status="queued", student_id="bob",
                           created_at=utcnow())
        session.add(plain)
        session.commit()
        ids = [lti.id, plain.id]
    for submission_id in ids:
        with db() as session:
            claim = store.claim(session, lease_s=60, submission_id=submission_id)
        assert claim is not None
        with db() as session:
            assert store.finish(session, claim, Report.model_validate(report(9, veto="confirmed"))) is not None
    with db() as session:
        posts = session.scalars(select(LtiScorePost)).all()
        assert [(p.submission_id, p.score["scoreGiven"]) for p in posts] == [(ids[0], 0)]
        assert session.get_one(Submission, "plain").status == "graded"


def test_a_policy_change_queues_the_grades_it_changes(db):
    """The LMS keeps what it was sent: when the course's policy changes, each LTI student's grade
    that the new policy changes is queued again (the gradebook and exports already read the new
    policy); a grade it leaves as it was is not, and a hint price changes no grade."""
    with db() as session:
        older, newer = submitted(session, "alice", attempt=1), submitted(session, "alice", attempt=2)
        issue(session, older, report(9))
        assert issue(session, newer, report(6)).score["scoreGiven"] == 6, "last (the default)"
        vetoed = submitted(session, "bob", attempt=1)
        assert issue(session, vetoed, report(9, veto="confirmed")).score["scoreGiven"] == 7.5, "capped (the default)"
        steady = submitted(session, "carol", attempt=1)
        issue(session, steady, report(10))

        def latest() -> dict[str, tuple[str, float]]:
            posts = session.scalars(select(LtiScorePost).where(LtiScorePost.state == "pending")
                                    .order_by(LtiScorePost.id)).all()
            return {p.sub: (p.submission_id, p.score["scoreGiven"]) for p in posts}

        count = len(session.scalars(select(LtiScorePost)).all())
        store.set_course_policy(session, "c1", PolicyUpdate(grade_policy="best"))
        assert latest()["alice"] == (older.id, 9), "the best attempt now counts on the LMS too"
        assert len(session.scalars(select(LtiScorePost)).all()) == count + 1, "bob's and carol's grades did not change"
        store.set_course_policy(session, "c1", PolicyUpdate(veto_policy="zero"))
        assert latest()["bob"] == (vetoed.id, 0)
        count = len(session.scalars(select(LtiScorePost)).all())
        store.set_course_policy(session, "c1", PolicyUpdate(hint_cost=1))
        assert len(session.scalars(select(LtiScorePost)).all()) == count


@pytest.mark.postgres
def test_two_attempts_finishing_at_once_leave_the_last_one_on_the_lms(tmp_path):
    """PostgreSQL, READ COMMITTED: attempt 2 becomes current (its score queued, not yet committed)
    while attempt 1 finishes in another transaction. Attempt 1's finish must wait and then see
    attempt 2 graded: one score waits for the LMS, attempt 2's. Without the lock it read attempt 2
    as not graded and queued attempt 1's score after attempt 2's, which the LMS would keep."""
    with migrated_sessions("postgresql", tmp_path) as sessions:
        placement(sessions)
        with sessions() as session:
            first, second = submitted(session, "alice", attempt=1, status="queued"), submitted(
                session, "alice", attempt=2, status="queued")
            session.commit()
            first_id, second_id = first.id, second.id
        with sessions() as session:
            claim = store.claim(session, lease_s=60, submission_id=first_id)
        assert claim is not None
        writer = sessions()
        row = writer.get_one(Submission, second_id)
        assert issue(writer, row, report(6), commit=False) is not None  # attempt 2's score, uncommitted
        finished: list[object] = []
        other = threading.Thread(target=lambda: finished.append(
            store.finish(sessions(), claim, Report.model_validate(report(9)))))
        other.start()
        other.join(timeout=1.5)  # with the lock, it waits for the writer
        writer.commit()
        writer.close()
        other.join(timeout=30)
        assert finished and finished[0] is not None
        with sessions() as session:
            waiting = session.scalars(select(LtiScorePost).where(LtiScorePost.state == "pending")).all()
            assert [(p.submission_id, p.score["scoreGiven"]) for p in waiting] == [(second_id, 6)]


def test_under_best_an_attempt_waiting_for_a_ta_keeps_the_grade_provisional(db):
    """Best attempt: alice's 9 (final) counts while her later 9.5 waits for a TA (a suspected veto
    caps it at 7.5). The TA's decision may make the 9.5 count, so the grade is not final yet: the
    gradebook says provisional and the LMS PendingManual, with why. Once the TA dismisses the veto,
    the 9.5 counts, fully graded."""
    best = CoursePolicy(grade_policy="best")
    with db() as session:
        store.set_course_policy(session, "c1", PolicyUpdate(grade_policy="best"))
        older, newer = submitted(session, "alice", attempt=1), submitted(session, "alice", attempt=2)
        issue(session, older, report(9), policy=best)
        waiting = issue(session, newer, report(9.5, provisional=True, veto="suspected"), policy=best)
        assert waiting is not None and waiting.submission_id == older.id and waiting.score["scoreGiven"] == 9
        assert waiting.score["gradingProgress"] == "PendingManual"
        assert "another of your attempts" in waiting.score["comment"]
        (row,) = gradebook(session, "c1", best).rows
        assert (row.submission_id, row.points, row.state) == (older.id, 9, "provisional")
        decided = issue(session, newer, report(9.5, veto="dismissed"), policy=best)
        assert (decided.submission_id, decided.score["scoreGiven"], decided.score["gradingProgress"]) == (
            newer.id, 9.5, "FullyGraded")
        (row,) = gradebook(session, "c1", best).rows
        assert (row.submission_id, row.state) == (newer.id, "final")
