"""A webhook's grade, and a row of the gradebook export, is the gradebook at one moment, on a real
database (SQLite and PostgreSQL): each reads the course's policy, the hint levels taken and the
student's attempts in separate statements, and an admin's policy change and a student's hint level
can both commit between them. Delivered to a real HTTP receiver on 127.0.0.1 by the webhook
thread's own step (deliver_due); the export as `GET /v1/grades` and `kernelgrade grades export`
read it (current_gradebook). The two changes go through the service's own functions
(store.set_course_policy, hints.take_next), committed in other sessions at the moment the reader
first reads the hints."""
from __future__ import annotations

import json

import pytest
from sqlalchemy import event

from service.db import store
from service.db.base import utcnow
from service.db.models import Submission
from service.grades.gradebook import current_gradebook, gradebook
from service.grades.policy import PolicyUpdate
from service.hints import HintFile, Level, take_next
from service.report import Environment, ExerciseRef, Report, Score, Veto
from service.submission import Student
from service.submission import Submission as SubmissionBody
from service.worker.webhooks import deliver_due
from tests.api.support import Receiver
from tests.support.servers import migrated_sessions

HINTS = HintFile(general=[Level(zh=f"第{n}级", en=f"level {n}") for n in range(1, 5)])


@pytest.fixture(params=[pytest.param("sqlite", id="sqlite"),
                        pytest.param("postgresql", id="postgresql", marks=pytest.mark.postgres)])
def sessions(request, tmp_path):
    with migrated_sessions(request.param, tmp_path) as maker:
        with maker() as session:
            store.create_course(session, "c1", "course one")
            store.set_course_policy(session, "c1", PolicyUpdate(veto_policy="capped", hint_cost=1))
        yield maker


def graded_with_confirmed_veto(sessions, callback_url: str) -> str:
    """Alice's attempt, 9 of 10 (pass line 8) with a confirmed veto: 7.5 under `capped`, 0 under
    `zero`; written as a worker writes it (claim, finish), which queues its webhook."""
    body = SubmissionBody(exercise="lesson06_mean_var", assignment="hw6", student=Student(id="alice"),
                          language="en", code="def kernel(): pass\n")
    with sessions() as session:
        row, _ = store.create_submission(session, course_id="c1", body=body, callback_url=callback_url,
                                         idempotency_key=None)
        claim = store.claim(session, lease_s=60, submission_id=row.id)
        assert claim is not None
        report = Report(submission_id=row.id, exercise=ExerciseRef(id="lesson06_mean_var", version=1),
                        status="graded", language="en",
                        score=Score(total=9, max=10, pass_threshold=8, passed=False, provisional=False),
                        vetoes=[Veto(rule="coincidental_pass", status="confirmed", needs_review=False)],
                        environment=Environment(backend="interpreter", sandbox="bwrap"), created_at=utcnow())
        assert store.finish(session, claim, report) is not None
    return row.id


def book_row(sessions) -> tuple[float | None, float, list[str]]:
    with sessions() as session:
        (row,) = gradebook(session, "c1", store.course_policy(session, "c1"), assignment="hw6").rows
    return row.points, row.hint_cost, row.hints


def land_both_at_the_first_hints_read(sessions, submission_id: str):
    """A listener that commits the policy change, then the hint level, just before the first
    statement that reads `hints_taken` (in other sessions); `landed` says whether it ran."""
    landed: list[str] = []

    def changes_land(_conn, _cursor, statement, *_args) -> None:  # noqa: ANN001
        if landed or "hints_taken" not in statement:
            return
        landed.append(statement)  # first, so that the changes' own statements pass through
        with sessions() as admin:
            store.set_course_policy(admin, "c1", PolicyUpdate(veto_policy="zero"))
        with sessions() as student:
            take_next(student, student.get_one(Submission, submission_id), HINTS, ["general"], None, "en")

    return changes_land, landed


def test_a_policy_change_and_a_hint_during_a_delivery_do_not_mix_in_its_grade(sessions):
    """The admin sets `zero` (7.5 -> 0), then alice takes a hint level costing 1 point (0 stays 0):
    the gradebook went 7.5, 0, 0. A delivery that read the policy before both and the hints after
    both sent 6.5 (`capped` less the hint), a grade the gradebook never had at any moment."""
    with Receiver(fail_first=0) as receiver:
        submission_id = graded_with_confirmed_veto(sessions, receiver.url)
        before = book_row(sessions)
        assert before == (7.5, 0.0, [])
        engine = sessions.kw["bind"]
        changes_land, landed = land_both_at_the_first_hints_read(sessions, submission_id)
        event.listen(engine, "before_cursor_execute", changes_land)
        try:
            assert deliver_due(sessions, allowed_hosts=["127.0.0.1"], timeout_s=10, backoff_s=[]) == 1
        finally:
            event.remove(engine, "before_cursor_execute", changes_land)
        assert landed, "the delivery read the hints taken, and both changes landed then"
        after = book_row(sessions)
        assert after == (0.0, 1.0, ["general:1"])
        (received,) = receiver.snapshot()
    grade = json.loads(received.body)["data"]["grade"]
    sent = (grade["points"], grade["hint_cost"], grade["hints"])
    assert sent in (before, after), (
        f"the webhook sent {sent[0]:g} points (hint cost {sent[1]:g}): the gradebook had {before[0]:g} before "
        f"the policy change and the hint, {after[0]:g} after, never {sent[0]:g}")
    assert grade["counts"] is True


def test_a_delivery_sends_the_gradebook_as_it_is_when_nothing_lands_meanwhile(sessions):
    """The same grade, the policy and the hint committed before the delivery: it carries both."""
    with Receiver(fail_first=0) as receiver:
        submission_id = graded_with_confirmed_veto(sessions, receiver.url)
        with sessions() as session:
            store.set_course_policy(session, "c1", PolicyUpdate(veto_policy="zero"))
            take_next(session, session.get_one(Submission, submission_id), HINTS, ["general"], None, "en")
        assert deliver_due(sessions, allowed_hosts=["127.0.0.1"], timeout_s=10, backoff_s=[]) == 1
        (received,) = receiver.snapshot()
    grade = json.loads(received.body)["data"]["grade"]
    assert (grade["points"], grade["hint_cost"], grade["hints"]) == book_row(sessions) == (0.0, 1.0, ["general:1"])


def test_a_policy_change_and_a_hint_during_the_export_do_not_mix_in_its_row(sessions):
    """The same two changes while the gradebook export reads: its row is 7.5 (before both) or 0
    (after both), never 6.5."""
    with Receiver(fail_first=0) as receiver:  # (the graded attempt's webhook is never delivered here)
        submission_id = graded_with_confirmed_veto(sessions, receiver.url)
    before = book_row(sessions)
    engine = sessions.kw["bind"]
    changes_land, landed = land_both_at_the_first_hints_read(sessions, submission_id)
    event.listen(engine, "before_cursor_execute", changes_land)
    try:
        with sessions() as session:
            (row,) = current_gradebook(session, "c1", assignment="hw6").rows
    finally:
        event.remove(engine, "before_cursor_execute", changes_land)
    assert landed, "the export read the hints taken, and both changes landed then"
    after = book_row(sessions)
    assert (before, after) == ((7.5, 0.0, []), (0.0, 1.0, ["general:1"]))
    read = (row.points, row.hint_cost, row.hints)
    assert read in (before, after), (
        f"the export's row said {read[0]:g} points (hint cost {read[1]:g}): the gradebook had {before[0]:g} "
        f"before the policy change and the hint, {after[0]:g} after, never {read[0]:g}")
