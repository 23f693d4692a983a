"""The grade that reaches a course's gradebook must be the true one: attacks on the way a grade
leaves kernelgrade (LTI scores to a real LTI platform we did not write, served over HTTP by
tests/support/lti_platform.py; webhooks to a real receiver; `GET /v1/grades`), written as a
student, a misbehaving client, or the races and failures of a real deployment would mount them.
Every test runs against the live server on SQLite and on PostgreSQL (the race that needs row
locks on PostgreSQL only). Where a race is forced, it is forced with the database's own locks, not
by patching the service."""
from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest
from sqlalchemy import select, text

from service.db import decisions, store
from service.db.lti_models import LtiLink, LtiScorePost, LtiSubmission
from service.db.models import Submission
from service.grades.policy import PolicyUpdate
from service.lti import scores
from service.lti.http import BoundedSession
from service.report import Report
from service.review import DecisionRequest, rescored
from tests.api.support import EXERCISE, Course, Service, cheap_body, wait_final, wait_for
from tests.support.lti_platform import LEARNER, Browser, Link, Platform, User, forms

pytestmark = pytest.mark.sandbox


@pytest.fixture(scope="module")
def lti(start_service) -> Service:
    return start_service(lti_allowed_hosts=["127.0.0.1"], lti_score_backoff_s=[0.5, 0.5], lti_http_timeout_s=4,
                         webhook_backoff_s=[1.0] * 8)


@pytest.fixture(scope="module")
def platform(lti) -> Iterator[Platform]:
    with Platform(lti.url) as p:
        yield p


@pytest.fixture(scope="module")
def course(lti, platform) -> Course:
    """The platform registered for a course of its own (deployment dep-1)."""
    course = lti.new_course()
    response = course.client("admin").post("/v1/lti/platforms", json=platform.tool_registration())
    assert response.status_code == 201, response.text
    return course


@pytest.fixture
def link(platform) -> Link:
    """A placement of lesson 6 with its line item, for one test."""
    return platform.add_link(f"lesson 6 ({uuid.uuid4().hex[:6]})", {"exercise": EXERCISE},
                             line_item={"scoreMaximum": 10, "label": "lesson 6", "resourceId": EXERCISE,
                                        "tag": "kernelgrade"})


@pytest.fixture
def student(platform) -> Iterator[str]:
    """A learner of the platform's own, for one test."""
    sub = f"s-{uuid.uuid4().hex[:8]}"
    platform.state.users[sub] = User(sub, f"Student {sub}", f"{sub}@example.edu", [LEARNER])
    yield sub
    del platform.state.users[sub]


def lti_submit(lti: Service, platform: Platform, link: Link, sub: str, body: dict) -> Submission:
    """Launch as `sub` and submit `body` from the activity page; returns the stored submission."""
    browser = Browser()
    try:
        page = browser.launch(platform, user=sub, hint=f"link:{link.id}")
        assert page.status_code == 200, page.text[:1000]
        (form,) = [f for f in forms(page.text) if f.action == "/lti/submit"]
        answers = {f"answer_{k}": v for k, v in body.get("answers", {}).items()}
        landed = browser.submit(form, lti.url, code=body["code"], explanation=body.get("explanation", ""),
                                claimed_output=body.get("claimed_output", ""), **answers)
        assert landed.status_code == 200, landed.text[:1000]
    finally:
        browser.close()
    with lti.sessions() as session:
        return session.scalars(select(Submission).join(LtiSubmission, LtiSubmission.submission_id == Submission.id)
                               .where(LtiSubmission.sub == sub).order_by(Submission.created_at.desc())).first()


def scores_of(platform: Platform, link: Link, sub: str) -> list[dict]:
    return [s for s in platform.scores(link) if s["userId"] == sub]


def settled_posts(lti: Service, sub: str) -> list[LtiScorePost] | None:
    """The student's score posts once none is waiting (each posted, superseded or given up)."""
    with lti.sessions() as session:
        posts = list(session.scalars(select(LtiScorePost).where(LtiScorePost.sub == sub).order_by(LtiScorePost.id)))
    return posts if posts and all(p.state != "pending" for p in posts) else None


def lms_grade(lti: Service, platform: Platform, link: Link, sub: str) -> float:
    """What the LMS's gradebook holds for `sub` once kernelgrade has nothing left to send."""
    wait_for(lambda: settled_posts(lti, sub), timeout=60, what=f"{sub}'s score posts settled")
    return scores_of(platform, link, sub)[-1]["scoreGiven"]


def decide(client, submission_id: str, points: float) -> None:
    response = client.post(f"/v1/submissions/{submission_id}/decisions",
                           json={"item": "q1", "points": points, "reason": "clear causal chain"})
    assert response.status_code == 201, response.text


# --- a regrade in flight ----------------------------------------------------------------------

def test_a_regrade_in_flight_does_not_hand_the_grade_to_an_earlier_attempt(lti, platform, course, link, student):
    """Attempt 2 counts (under `last`) with 2 points. A bulk regrade has attempt 2 in the sandbox
    (running under a worker's lease) when attempt 1's regrade lands: the grade that counts is still
    attempt 2's, in the gradebook and at the LMS. When attempt 2's regrade then fails on our side
    (not_gradable: its grade stays current and nothing is re-posted), the LMS must still hold 2,
    not the earlier attempt's 0."""
    staff = course.client("submit", "read", "review")
    first = lti_submit(lti, platform, link, student, cheap_body())
    wait_final(staff, first.id)
    second = lti_submit(lti, platform, link, student, cheap_body())
    wait_final(staff, second.id)
    decide(staff, second.id, 2)
    assert lms_grade(lti, platform, link, student) == 2

    # Attempt 2's regrade is in the sandbox: claimed, running, under a lease its worker holds.
    with lti.sessions() as session:
        row = session.get(Submission, second.id)
        row.status, row.lease_token = "running", "held-by-the-test"
        row.lease_expires_at = datetime.now(UTC) + timedelta(hours=1)
        session.commit()
    assert staff.post(f"/v1/submissions/{first.id}/regrade").status_code == 202
    wait_for(lambda: (v := wait_final(staff, first.id)) and len(v["history"]) == 2, timeout=60,
             what="attempt 1 regraded")
    (row,) = staff.get("/v1/grades", params={"assignment": f"lti:{link.id}"}).json()["rows"]
    assert (row["submission_id"], row["points"]) == (second.id, 2), "attempt 2's grade still counts"
    assert lms_grade(lti, platform, link, student) == 2, "attempt 1's regrade posted its own grade"

    # Attempt 2's regrade fails on our side: its worker died once too often.
    with lti.sessions() as session:
        row = session.get(Submission, second.id)
        row.attempts = lti.settings.max_attempts
        row.lease_expires_at = datetime.now(UTC) - timedelta(seconds=5)
        session.commit()
    view = wait_for(lambda: (v := wait_final(staff, second.id)) and len(v["history"]) == 3 and v, timeout=60,
                    what="attempt 2's failed regrade")
    assert view["history"][-1]["status"] == "not_gradable" and view["report"]["score"]["total"] == 2
    assert lms_grade(lti, platform, link, student) == 2


def waiting_for_lock(lti: Service, statement: str) -> int:
    """Transactions whose `statement` waits for a lock (pg_stat_activity is read once per
    transaction: a fresh session each time)."""
    with lti.sessions() as observer:
        return observer.scalar(text("SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
                                    "AND query ILIKE :statement"), {"statement": statement + "%"}) or 0


# --- the LMS keeps the newest timestamp ---------------------------------------------------------

def test_a_score_queued_late_is_not_sent_with_an_older_timestamp(lti, platform, course, link, student):
    """AGS: the platform ignores a score older than the one it has (lti1p3platform answers 409).
    Under `best`, a TA raises attempt 2 to 2 points: its report is written, then its transaction
    is slow to queue the score (here: it waits for a row lock). Meanwhile another TA raises
    attempt 1 to 1 point, and that score is queued and posted. Attempt 2's 2 points, the true
    grade, queued last, must reach the LMS: not carry the earlier time its report was written."""
    if lti.kind != "postgresql":
        pytest.skip("a SQLite writer holds the database's write lock from its first statement: no interleaving")
    admin = course.client("admin", "read", "review", "submit")
    admin.put("/v1/course/policy", json={"grade_policy": "best"}).raise_for_status()
    try:
        first = lti_submit(lti, platform, link, student, cheap_body())
        wait_final(admin, first.id)
        second = lti_submit(lti, platform, link, student, cheap_body())
        wait_final(admin, second.id)
        assert lms_grade(lti, platform, link, student) == 0

        with lti.sessions() as holder:
            # The decision's audit row refers to attempt 2's current report: holding that row makes
            # the decision wait after it wrote its report, before it queues the score.
            current = holder.get_one(Submission, second.id).current_report_id
            holder.execute(text("SELECT id FROM reports WHERE id = :id FOR UPDATE"), {"id": current})
            slow = threading.Thread(target=decide, args=(admin, second.id, 2))
            slow.start()
            wait_for(lambda: waiting_for_lock(lti, "INSERT INTO decisions"), timeout=30,
                     what="the TA's decision on attempt 2 waiting")
            with lti.sessions() as session:
                decisions.decide(session, first.id, DecisionRequest(item="q1", points=1, reason="partly right"),
                                 actor="test")
            wait_for(lambda: scores_of(platform, link, student)[-1]["scoreGiven"] == 1, timeout=30,
                     what="attempt 1's 1 point at the LMS")
            holder.rollback()
        slow.join(timeout=60)
        (row,) = admin.get("/v1/grades", params={"assignment": f"lti:{link.id}"}).json()["rows"]
        assert (row["submission_id"], row["points"]) == (second.id, 2)
        assert lms_grade(lti, platform, link, student) == 2, "the LMS refused the true grade as older"
        stamps = [s["timestamp"] for s in scores_of(platform, link, student)]
        assert stamps == sorted(stamps)
    finally:
        admin.put("/v1/course/policy", json={"grade_policy": "last"}).raise_for_status()


# --- a webhook retried after a newer report ------------------------------------------------------

class HoldingReceiver:
    """A real receiver that answers 500 to `submission.graded` until it has taken a
    `submission.decision_recorded`, and keeps, as a platform keeping one grade per student does,
    the grade of the last message whose `grade.counts` is true."""

    def __init__(self) -> None:
        self.events: list[tuple[str, int, int]] = []  # (type, report_seq, status answered)
        self.kept: float | None = None
        self._released = False
        self._lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802
                payload = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
                with receiver._lock:
                    refused = payload["type"] == "submission.graded" and not receiver._released
                    if payload["type"] == "submission.decision_recorded":
                        receiver._released = True
                    if not refused and payload["data"]["grade"]["counts"]:
                        receiver.kept = payload["data"]["grade"]["points"]
                    receiver.events.append((payload["type"], payload["report_seq"], 500 if refused else 200))
                self.send_response(500 if refused else 200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/hooks"
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)

    def __enter__(self) -> HoldingReceiver:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._server.shutdown()
        self._server.server_close()

    def snapshot(self) -> list[tuple[str, int, int]]:
        with self._lock:
            return list(self.events)


def test_a_webhook_retried_after_a_newer_report_does_not_say_its_stale_grade_counts(lti):
    course = lti.new_course()
    client = course.client("submit", "read", "review")
    with HoldingReceiver() as receiver:
        body = {**cheap_body(), "callback_url": receiver.url, "assignment": "hw-stale", "student": {"id": "u1"}}
        submission_id = client.post("/v1/submissions", json=body).json()["id"]
        wait_for(lambda: receiver.snapshot(), timeout=60, what="the first delivery (refused)")
        decide(client, submission_id, 2)
        wait_for(lambda: [e for e in receiver.snapshot() if e == ("submission.graded", 1, 200)], timeout=60,
                 what="the graded report's retry, after the decision's")
        events = receiver.snapshot()
    assert events.index(("submission.decision_recorded", 2, 200)) < events.index(("submission.graded", 1, 200))
    (row,) = client.get("/v1/grades", params={"assignment": "hw-stale"}).json()["rows"]
    assert row["points"] == 2
    assert receiver.kept == 2, "the stale report's message said its 0 points were the student's grade"


# --- whose grade: placements and clients that name the same assignment ------------------------------

def same_placement_id(platform: Platform, resource_link_id: str) -> Link:
    """A link of `platform` whose resource link id is the one given (as two Moodle sites number their
    activities 1, 2, 3, ..., and LTI makes a resource link id unique only within a deployment)."""
    item_id = uuid.uuid4().hex[:8]
    link = Link(id=resource_link_id, title="lesson 6", custom={"exercise": EXERCISE}, line_item=item_id)
    platform.state.line_items[item_id] = {"scoreMaximum": 10, "label": "lesson 6", "resourceId": EXERCISE,
                                          "tag": "kernelgrade", "resourceLinkId": link.id,
                                          "id": f"{platform.url}/ags/course-101/lineitems/{item_id}"}
    platform.state.links[link.id] = link
    return link


def test_two_lms_with_the_same_placement_and_user_ids_keep_their_students_apart(lti, platform, course):
    """Two LMSs registered for one course, each with a placement `rl-shared-…` and a user of the
    same id (user ids are unique per issuer only: two different people). Each student's grade is
    their own: in the gradebook (a row each) and at their own LMS, whatever the other does."""
    resource_link_id, sub = f"rl-shared-{uuid.uuid4().hex[:6]}", f"u-{uuid.uuid4().hex[:6]}"
    with Platform(lti.url, client_id="second-lms") as other:
        registered = course.client("admin").post("/v1/lti/platforms", json={**other.tool_registration(),
                                                                              "client_id": "second-lms"})
        assert registered.status_code == 201, registered.text
        ours, theirs = same_placement_id(platform, resource_link_id), same_placement_id(other, resource_link_id)
        for lms, name in ((platform, "Ada at the first LMS"), (other, "Bo at the second LMS")):
            lms.state.users[sub] = User(sub, name, f"{sub}@{lms.url.split('//')[1]}", [LEARNER])
        staff = course.client("submit", "read", "review")
        ada = lti_submit(lti, platform, ours, sub, cheap_body())
        wait_final(staff, ada.id)
        decide(staff, ada.id, 2)
        assert lms_grade(lti, platform, ours, sub) == 2
        bo = lti_submit(lti, other, theirs, sub, cheap_body())
        wait_final(staff, bo.id)
        assert lms_grade(lti, other, theirs, sub) == 0
        # A TA's decision on Ada's attempt re-posts Ada's grade to Ada's LMS: 3, not Bo's 0.
        response = staff.post(f"/v1/submissions/{ada.id}/decisions",
                              json={"item": "q2", "points": 1, "reason": "names the cause"})
        assert response.status_code == 201, response.text
        assert lms_grade(lti, platform, ours, sub) == 3
        assert lms_grade(lti, other, theirs, sub) == 0
        rows = [r for r in staff.get("/v1/grades").json()["rows"] if r["student_id"] == sub]
        assert sorted((r["submission_id"], r["points"]) for r in rows) == sorted([(ada.id, 3), (bo.id, 0)])
        assignments = {r["assignment"] for r in rows}
        assert len(assignments) == 2 and f"lti:{resource_link_id}" in assignments, "the first placement keeps lti:<id>"


def test_a_client_key_cannot_file_a_submission_under_an_lti_placement(lti, platform, course, link, student):
    """A course's submit key (a Gradescope or PrairieLearn kit, a script) names `assignment` and
    `student` itself: it may not name an LTI placement's, or its submission (here with attempt
    1 000 000, so always the last) would become the grade the LMS is sent for that student."""
    staff = course.client("submit", "read", "review")
    mine = lti_submit(lti, platform, link, student, cheap_body())
    wait_final(staff, mine.id)
    decide(staff, mine.id, 2)
    assert lms_grade(lti, platform, link, student) == 2
    forged = {**cheap_body(), "assignment": f"lti:{link.id}", "student": {"id": student}, "attempt": 1_000_000}
    response = staff.post("/v1/submissions", json=forged)
    assert response.status_code == 422 and response.json()["detail"][0]["loc"] == ["body", "assignment"]
    batch = staff.post("/v1/submissions/batch", json={"submissions": [forged]})
    assert batch.status_code == 422
    assert batch.json()["detail"][0]["loc"] in (["body", "submissions.0.assignment"],
                                                ["body", "submissions", 0, "assignment"])
    response = staff.post(f"/v1/submissions/{mine.id}/decisions",
                          json={"item": "q2", "points": 1, "reason": "names the cause"})
    assert response.status_code == 201
    assert lms_grade(lti, platform, link, student) == 3
    (row,) = staff.get("/v1/grades", params={"assignment": f"lti:{link.id}"}).json()["rows"]
    assert (row["submission_id"], row["points"]) == (mine.id, 3)


# --- a TA's decision on a report that a regrade replaced ----------------------------------------------

def regrade_lands(lti: Service, submission_id: str, item: str, points: float) -> None:
    """A regrade (after a fix to the rubric) lands: written through store.finish under the lease a
    worker would hold, as the worker writes it; `item`'s evidence and points are what changed."""
    with lti.sessions() as session:
        row = session.get_one(Submission, submission_id)
        report = Report.model_validate(store.current_report(session, row).report)
        row.status, row.lease_token = "running", "regrade-worker"
        row.lease_expires_at = datetime.now(UTC) + timedelta(minutes=5)
        session.commit()
    items = [i.model_copy(update={"points": points, "status": "pass" if points == i.max_points else "partial",
                                  "evidence": {**i.evidence, "rubric": "fixed after the first grading"}})
             if i.id == item else i for i in report.items]
    regraded = rescored(report, items=items, vetoes=list(report.vetoes), carried=[])
    with lti.sessions() as session:
        assert store.finish(session, store.Claim(submission_id, "regrade-worker", 1), regraded) is not None


def test_a_decision_made_on_a_report_a_regrade_replaced_is_refused(lti):
    """A TA opens a case (report 1, q1 with 0 points) and decides while reading; meanwhile a bulk
    regrade after a rubric fix lands (report 2: q1 earns 1.5 on new evidence). The TA's override,
    made on evidence that is no longer the report's, must not become the grade: the page's form and
    an API call that say which report they decided on are refused (409), nothing recorded."""
    course = lti.new_course()
    client = course.client("submit", "read", "review")
    body = {**cheap_body(), "assignment": "hw-regraded", "student": {"id": "r1"}}
    submission_id = wait_final(client, client.post("/v1/submissions", json=body).json()["id"])["id"]

    review = lti.client()
    login = review.get("/review/login")
    csrf = forms(login.text)[0].fields["csrf"]
    assert review.post("/review/login", data={"key": course.key("review"), "csrf": csrf}).status_code in (200, 303)
    page = review.get(f"/review/cases/{submission_id}")
    assert page.status_code == 200
    (form,) = [f for f in forms(page.text) if f.fields.get("target") == "item:q1"]
    assert form.fields.get("report_seq") == "1", "the form says which report the TA is looking at"

    regrade_lands(lti, submission_id, "q1", 1.5)
    answer = review.post(f"{lti.url}{form.action}", data={**form.fields, "points": "0", "reason": "no causal chain"})
    assert answer.status_code == 409 and "changed" in answer.text
    response = client.post(f"/v1/submissions/{submission_id}/decisions",
                           json={"item": "q1", "points": 0, "reason": "no causal chain", "report_seq": 1})
    assert response.status_code == 409, response.text
    assert client.get(f"/v1/submissions/{submission_id}/decisions").json() == []
    (row,) = client.get("/v1/grades", params={"assignment": "hw-regraded"}).json()["rows"]
    assert row["points"] == 1.5

    # Decided on the report that counts now: recorded.
    response = client.post(f"/v1/submissions/{submission_id}/decisions",
                           json={"item": "q1", "points": 1, "reason": "half the chain", "report_seq": 2})
    assert response.status_code == 201, response.text
    # A decision on another target than the one the regrade changed still goes through from the old page.
    (q2,) = [f for f in forms(page.text) if f.fields.get("target") == "item:q2"]
    answer = review.post(f"{lti.url}{q2.action}", data={**q2.fields, "points": "0.5", "reason": "names the mask"})
    assert answer.status_code in (200, 303), answer.text[:500]


# --- an LMS that takes a score but answers too late ----------------------------------------------------

def test_a_score_the_lms_took_without_answering_in_time_is_not_taken_for_unsent(lti, platform, course, link, student):
    """The LMS stores the TA's 2 points but answers after the tool's timeout; the retry (same score,
    same timestamp) is refused as not newer (409), and the post is recorded as failed. The TA then
    takes the 2 points back: the LMS must be sent 0 again. kernelgrade may not read its earlier
    posted 0 as what the LMS holds: the failed post may well have landed."""
    staff = course.client("submit", "read", "review")
    mine = lti_submit(lti, platform, link, student, cheap_body())
    wait_final(staff, mine.id)
    assert lms_grade(lti, platform, link, student) == 0
    platform.state.slow_s, platform.state.slow_scores = lti.settings.lti_http_timeout_s + 2, 1
    decide(staff, mine.id, 2)
    posts = wait_for(lambda: settled_posts(lti, student) if len(settled_posts(lti, student) or []) == 2 else None,
                     timeout=60, what="the 2 points' post given up")
    assert [p.state for p in posts] == ["posted", "failed"] and posts[-1].last_status_code == 409
    assert scores_of(platform, link, student)[-1]["scoreGiven"] == 2, "the LMS took it"
    decide(staff, mine.id, 0)
    assert lms_grade(lti, platform, link, student) == 0


# --- one idempotency key, many students ------------------------------------------------------------------

def test_one_idempotency_key_sent_for_different_students_at_once_files_one_of_them(lti):
    """A client that reuses an Idempotency-Key (a kit bug: the same key for every student) sends twelve
    students' submissions at once: one is stored, every other request is told 409, none is filed
    under another student's id, and the gradebook has one row."""
    course = lti.new_course()
    key = course.key("submit", "read")
    body = cheap_body("same code")

    def submit(i: int) -> httpx.Response:
        return httpx.post(f"{lti.url}/v1/submissions", timeout=60,
                          json={**body, "assignment": "hw-key", "student": {"id": f"k{i}"}},
                          headers={"Authorization": f"Bearer {key}", "Idempotency-Key": "the-same-for-all"})

    with ThreadPoolExecutor(12) as pool:
        responses = list(pool.map(submit, range(12)))
    stored = [r for r in responses if r.status_code in (200, 202)]
    assert len(stored) == 1 and all(r.status_code == 409 for r in responses if r not in stored), \
        [(r.status_code, r.text[:100]) for r in responses]
    assert course.submission_count() == 1
    client = course.client("read")
    wait_final(client, stored[0].json()["id"])
    (row,) = client.get("/v1/grades", params={"assignment": "hw-key"}).json()["rows"]
    assert row["student_id"] == stored[0].json()["student"]["id"]


# --- two API replicas posting the first scores of a placement without a line item ----------------------

def test_two_replicas_posting_a_placements_first_scores_create_one_line_item(lti, platform, course):
    """A placement the LMS made without a line item: kernelgrade creates it at the first score. With
    two API replicas (each with its LTI thread), two students' first scores go out at once: each
    replica looks the line item up (none yet), and each created one: two gradebook columns, each
    student's grade in one of them. There must be one column with both grades."""
    if lti.kind != "postgresql":
        pytest.skip("replicas share a PostgreSQL database")
    link = platform.add_link("made by hand", {"exercise": EXERCISE})
    subs = [f"s-{uuid.uuid4().hex[:8]}" for _ in range(2)]
    for sub in subs:
        platform.state.users[sub] = User(sub, f"Student {sub}", f"{sub}@example.edu", [LEARNER])
    staff = course.client("submit", "read", "review")
    # The first look-up (the server's LTI thread, with the first student's score) answers "none"
    # late: meanwhile the second replica (this process) posts the second student's score.
    platform.state.lookup_delays, held = [lti.settings.lti_http_timeout_s - 1], platform.state.lookups_held
    try:
        first = lti_submit(lti, platform, link, subs[0], cheap_body())
        wait_final(staff, first.id)
        wait_for(lambda: platform.state.lookups_held > held, timeout=30, what="the first look-up")
        second = lti_submit(lti, platform, link, subs[1], cheap_body())
        wait_final(staff, second.id)
        with lti.sessions() as session:
            post_id = session.scalar(select(LtiScorePost.id).where(LtiScorePost.sub == subs[1]))
        with BoundedSession(timeout_s=30, allowed_hosts=["127.0.0.1"]) as http:
            scores.attempt(lti.sessions, post_id, http=http, backoff_s=[0.5])
        for sub in subs:
            wait_for(lambda sub=sub: settled_posts(lti, sub), timeout=60, what=f"{sub}'s score posted")
    finally:
        platform.state.lookup_delays = []
    items = [i for i in platform.state.line_items.values() if i.get("resourceLinkId") == link.id]
    assert len(items) == 1, f"{len(items)} line items (gradebook columns) for one placement"
    link.line_item = items[0]["id"].rsplit("/", 1)[-1]
    assert sorted(s["userId"] for s in platform.scores(link)) == sorted(subs)


# --- an instructor deletes the gradebook column ----------------------------------------------------

def column_id(item: dict) -> str:
    """The platform's key of a line item (the last part of its URL)."""
    return item["id"].rsplit("/", 1)[-1]


def test_a_deleted_column_the_tool_created_is_created_again_for_the_next_grade(lti, platform, course, student):
    """A placement the LMS made without a line item: kernelgrade created its column at the first
    score. The instructor deletes that column in the LMS; the AGS then answers 404 for it. The next
    grade (a TA's decision) must land in a column created again, not fail for good, and the
    placement must still have one column."""
    link = platform.add_link("made by hand", {"exercise": EXERCISE})
    staff = course.client("submit", "read", "review")
    mine = lti_submit(lti, platform, link, student, cheap_body())
    wait_final(staff, mine.id)
    wait_for(lambda: settled_posts(lti, student), timeout=60, what="the first score posted")
    (first,) = platform.line_items_of(link)
    link.line_item = column_id(first)
    assert [s["scoreGiven"] for s in scores_of(platform, link, student)] == [0]

    platform.delete_line_item(column_id(first))
    decide(staff, mine.id, 2)
    posts = wait_for(lambda: (p := settled_posts(lti, student)) and len(p) == 2 and p, timeout=60,
                     what="the 2 points' post settled")
    assert [p.state for p in posts] == ["posted", "posted"], [(p.state, p.last_error) for p in posts]
    (again,) = platform.line_items_of(link)
    assert again["id"] != first["id"] and again["scoreMaximum"] == 10 and again["tag"] == "kernelgrade"
    link.line_item = column_id(again)
    assert [s["scoreGiven"] for s in scores_of(platform, link, student)] == [2]
    with lti.sessions() as session:
        row = session.scalar(select(LtiLink).where(LtiLink.resource_link_id == link.id))
        assert (row.lineitem_url, row.lineitem_by_tool) == (again["id"], True)


def test_a_deleted_column_the_platform_named_is_replaced_where_the_tool_may_create_one(
        lti, platform, course, link, student):
    """The column the platform named in the launch (deep linking made it) is deleted: where the LMS
    lets the tool create line items, the next grade lands in one kernelgrade finds or creates by
    the resource link."""
    staff = course.client("submit", "read", "review")
    mine = lti_submit(lti, platform, link, student, cheap_body())
    wait_final(staff, mine.id)
    named = platform.state.line_items[link.line_item]["id"]
    assert lms_grade(lti, platform, link, student) == 0
    with lti.sessions() as session:
        row = session.scalar(select(LtiLink).where(LtiLink.resource_link_id == link.id))
        assert (row.lineitem_url, row.lineitem_by_tool) == (named, False)

    platform.delete_line_item(link.line_item)
    decide(staff, mine.id, 2)
    posts = wait_for(lambda: (p := settled_posts(lti, student)) and len(p) == 2 and p, timeout=60,
                     what="the 2 points' post settled")
    assert [p.state for p in posts] == ["posted", "posted"], [(p.state, p.last_error) for p in posts]
    (again,) = platform.line_items_of(link)
    assert again["id"] != named
    link.line_item = column_id(again)
    assert [s["scoreGiven"] for s in scores_of(platform, link, student)] == [2]


def test_a_deleted_column_the_platform_named_fails_clearly_where_the_tool_may_not_create_one(
        lti, platform, course, link, student):
    """The same deletion on an LMS that grants the tool no right to create line items: the post
    fails for good (nothing can fix it but the LMS), with an error that says the column was
    deleted, and kernelgrade creates nothing."""
    staff = course.client("submit", "read", "review")
    platform.state.allow_creating_lineitems = False
    try:
        mine = lti_submit(lti, platform, link, student, cheap_body())
        wait_final(staff, mine.id)
        assert lms_grade(lti, platform, link, student) == 0
        platform.delete_line_item(link.line_item)
        decide(staff, mine.id, 2)
        posts = wait_for(lambda: (p := settled_posts(lti, student)) and len(p) == 2 and p, timeout=60,
                         what="the 2 points' post settled")
    finally:
        platform.state.allow_creating_lineitems = True
    assert [p.state for p in posts] == ["posted", "failed"]
    assert posts[-1].attempt == 1 and "was deleted" in (posts[-1].last_error or ""), posts[-1].last_error
    assert platform.line_items_of(link) == []


@pytest.fixture
def learners(platform) -> Iterator[list[str]]:
    """Three learners of the platform's own, for one test."""
    subs = [f"s-{uuid.uuid4().hex[:8]}" for _ in range(3)]
    for sub in subs:
        platform.state.users[sub] = User(sub, f"Student {sub}", f"{sub}@example.edu", [LEARNER])
    yield subs
    for sub in subs:
        del platform.state.users[sub]


def graded_learners(lti, platform, course, link, subs: list[str], points: list[float]) -> list[Submission]:
    """Each learner submits on `link`; a TA gives each `points` on q1 (0: left as graded); every
    score is at the LMS."""
    staff = course.client("submit", "read", "review")
    attempts = [lti_submit(lti, platform, link, sub, cheap_body()) for sub in subs]
    for attempt, given in zip(attempts, points, strict=True):
        wait_final(staff, attempt.id)
        if given:
            decide(staff, attempt.id, given)
    for sub, given in zip(subs, points, strict=True):
        assert lms_grade(lti, platform, link, sub) == given
    return attempts


def column_once_settled(lti, platform, link, subs: list[str], old: str) -> dict[str, list[float]]:
    """Once no learner has a score waiting, and the placement has a column other than `old`: each
    learner's scores in that column, oldest first."""
    def settled() -> dict[str, list[float]] | None:
        if not all(settled_posts(lti, sub) for sub in subs):
            return None
        items = platform.line_items_of(link)
        if len(items) != 1 or column_id(items[0]) == old:
            return None
        link.line_item = column_id(items[0])
        return {sub: [s["scoreGiven"] for s in scores_of(platform, link, sub)] for sub in subs}
    return wait_for(settled, timeout=60, what="every score post settled, in a new column")


def test_a_recreated_column_gets_every_learners_current_grade_not_only_the_next_one(
        lti, platform, course, link, learners):
    """Three learners graded (1, 2 and 0 points) on a placement; the instructor deletes its column;
    a TA then raises the first learner to 1.5. That post finds the column gone and creates it again:
    the new column must hold all three learners' current grades (1.5, 2, 0), each sent once, with a
    timestamp after the learner's earlier scores: not only the first learner's, the others missing
    until their grade next changes."""
    staff = course.client("submit", "read", "review")
    attempts = graded_learners(lti, platform, course, link, learners, [1, 2, 0])
    old = link.line_item
    with lti.sessions() as session:
        before = {sub: len(list(session.scalars(select(LtiScorePost).where(LtiScorePost.sub == sub))))
                  for sub in learners}

    platform.delete_line_item(old)
    decide(staff, attempts[0].id, 1.5)
    column = column_once_settled(lti, platform, link, learners, old)
    assert column == {learners[0]: [1.5], learners[1]: [2], learners[2]: [0]}, column
    with lti.sessions() as session:
        for sub in learners:
            posts = list(session.scalars(select(LtiScorePost).where(LtiScorePost.sub == sub)
                                         .order_by(LtiScorePost.id)))
            assert len(posts) == before[sub] + 1 and posts[-1].state == "posted", \
                [(p.state, p.score["scoreGiven"]) for p in posts]
            stamps = [p.score["timestamp"] for p in posts]
            assert stamps == sorted(stamps) and len(set(stamps)) == len(stamps), stamps
    (row,) = [r for r in staff.get("/v1/grades", params={"assignment": f"lti:{link.id}"}).json()["rows"]
              if r["student_id"] == learners[1]]
    assert row["points"] == 2


def test_a_learner_whose_score_is_waiting_when_the_column_is_recreated_keeps_that_one(
        lti, platform, course, link, learners):
    """The column is deleted; the first learner's new grade finds it gone and creates it again, and
    while it does (the platform's look-up answers late) a TA's decision queues the second learner's
    new grade. That learner keeps the post queued for them (their newest grade, sent once to the new
    column), nothing more; the third learner's grade is queued again. On PostgreSQL the decision is
    queued while the replacing transaction holds the placement's lock and then takes the second
    learner's: neither may deadlock the other."""
    staff = course.client("submit", "read", "review")
    attempts = graded_learners(lti, platform, course, link, learners, [0, 0, 0])
    old = link.line_item
    platform.delete_line_item(old)
    platform.state.lookup_delays, held = [lti.settings.lti_http_timeout_s - 1], platform.state.lookups_held
    try:
        decide(staff, attempts[0].id, 2)
        wait_for(lambda: platform.state.lookups_held > held, timeout=30, what="the look-up of the gone column")
        decide(staff, attempts[1].id, 1)
        column = column_once_settled(lti, platform, link, learners, old)
    finally:
        platform.state.lookup_delays = []
    assert column == {learners[0]: [2], learners[1]: [1], learners[2]: [0]}, column
    with lti.sessions() as session:
        states = {sub: [(p.state, p.score["scoreGiven"]) for p in session.scalars(
            select(LtiScorePost).where(LtiScorePost.sub == sub).order_by(LtiScorePost.id))] for sub in learners}
    assert states == {learners[0]: [("posted", 0), ("posted", 2)],
                      learners[1]: [("posted", 0), ("posted", 1)],
                      learners[2]: [("posted", 0), ("posted", 0)]}, states


def test_a_score_in_flight_to_the_column_as_it_is_deleted_goes_to_the_new_one_too(
        lti, platform, course, link, learners):
    """Three learners graded 0 in the placement's column. A TA gives the second learner 1 point: the
    LMS stores that score but answers late. Meanwhile the instructor deletes the column (the stored
    score goes with it), and a TA gives the first learner 2 points: that post, sent by a second
    replica, finds the column gone and creates it again. The second learner's score was in flight
    to the old column (and is then answered 2xx): it is not in the new column, so it must be queued
    again like the third learner's, by the line item each post went to."""
    staff = course.client("submit", "read", "review")
    attempts = graded_learners(lti, platform, course, link, learners, [0, 0, 0])
    old, old_url = link.line_item, platform.state.line_items[link.line_item]["id"]
    platform.state.slow_s, platform.state.slow_scores = lti.settings.lti_http_timeout_s - 1, 1
    try:
        decide(staff, attempts[1].id, 1)
        wait_for(lambda: [s["scoreGiven"] for s in scores_of(platform, link, learners[1])] == [0, 1], timeout=30,
                 what="the second learner's 1 point stored by the LMS, its answer held")
        platform.delete_line_item(old)
        decide(staff, attempts[0].id, 2)
        with lti.sessions() as session:
            post_id = session.scalar(select(LtiScorePost.id).where(LtiScorePost.sub == learners[0],
                                                                   LtiScorePost.state == "pending"))
            in_flight = session.scalar(select(LtiScorePost).where(LtiScorePost.sub == learners[1],
                                                                  LtiScorePost.state == "pending"))
        assert in_flight is not None and in_flight.lineitem_url == old_url, "the post in flight says where it went"
        with BoundedSession(timeout_s=30, allowed_hosts=["127.0.0.1"]) as http:
            scores.attempt(lti.sessions, post_id, http=http, backoff_s=[0.5])
        column = column_once_settled(lti, platform, link, learners, old)
    finally:
        platform.state.slow_scores = 0
    assert column == {learners[0]: [2], learners[1]: [1], learners[2]: [0]}, column
    new_url = platform.line_items_of(link)[0]["id"]
    with lti.sessions() as session:
        sent = [(p.state, p.score["scoreGiven"], p.lineitem_url) for p in session.scalars(
            select(LtiScorePost).where(LtiScorePost.sub == learners[1]).order_by(LtiScorePost.id))]
    assert sent == [("posted", 0, old_url), ("superseded", 1, old_url), ("posted", 1, new_url)], sent


def test_a_column_the_lms_names_in_a_later_launch_gets_every_learners_grade_at_once(
        lti, platform, course, link, learners):
    """An LMS that grants the tool no right to create line items. Three learners graded (1, 2, 0);
    the instructor deletes the placement's column and makes a new one in the LMS. kernelgrade learns
    of it only from a launch that names it (here the instructor's, with no grade change): every
    learner's grade that counts must be queued for it then, each once, not left for their next change."""
    platform.state.allow_creating_lineitems = False
    try:
        graded_learners(lti, platform, course, link, learners, [1, 2, 0])
        old = link.line_item
        platform.delete_line_item(old)
        platform.new_column(link)
        browser = Browser()
        try:
            page = browser.launch(platform, user="teacher", hint=f"link:{link.id}")
        finally:
            browser.close()
        assert page.status_code == 200, page.text[:1000]
        column = column_once_settled(lti, platform, link, learners, old)
        page = Browser().launch(platform, user="teacher", hint=f"link:{link.id}")  # naming it again queues nothing
        assert page.status_code == 200
        assert column_once_settled(lti, platform, link, learners, old) == column
    finally:
        platform.state.allow_creating_lineitems = True
    assert column == {learners[0]: [1], learners[1]: [2], learners[2]: [0]}, column


# --- a hint taken while the admin changes the policy ----------------------------------------------

def test_a_hint_taken_as_the_policy_changes_is_scored_under_the_new_policy(lti, platform, course, link, student):
    """Each hint level costs 0.5; the course counts the last attempt. Attempt 1 has 2 points (a TA's),
    attempt 2 has 0: the LMS has 0. The student takes a hint on attempt 2 while an admin switches the
    course to `best` (`kernelgrade courses policy`, another process: store.set_course_policy), which
    holds the student's lock as it queues 2 for the LMS. The hint's score, queued once that lock is
    free, must follow the policy then in force (best: 2 − 0.5), as `GET /v1/grades` does, not the one
    its transaction read before it waited (last: 0 − 0.5, i.e. 0)."""
    if lti.kind != "postgresql":
        pytest.skip("a SQLite writer holds the database's write lock from its first statement: no interleaving")
    admin = course.client("admin", "read", "review", "submit")
    admin.put("/v1/course/policy", json={"hint_cost": 0.5}).raise_for_status()
    try:
        first = lti_submit(lti, platform, link, student, cheap_body())
        wait_final(admin, first.id)
        decide(admin, first.id, 2)
        second = lti_submit(lti, platform, link, student, cheap_body())
        wait_final(admin, second.id)
        assert lms_grade(lti, platform, link, student) == 0

        with lti.sessions() as holder:
            # The student's lock, which queueing their score takes (scores._lock_students).
            holder.execute(select(LtiSubmission.submission_id).where(LtiSubmission.sub == student).with_for_update())
            taken: list[int] = []
            slow = threading.Thread(target=lambda: taken.append(lti.client().post(
                f"/v1/feedback/{second.feedback_token}/hints", json={}).status_code))
            slow.start()
            wait_for(lambda: waiting_for_lock(lti, "SELECT lti_submissions.submission_id"), timeout=30,
                     what="the hint's score waiting for the student's lock")
            store.set_course_policy(holder, course.id, PolicyUpdate(grade_policy="best"))  # commits
        slow.join(timeout=60)
        assert taken == [201]
        (row,) = admin.get("/v1/grades", params={"assignment": f"lti:{link.id}"}).json()["rows"]
        assert (row["submission_id"], row["points"]) == (first.id, 1.5)
        assert lms_grade(lti, platform, link, student) == 1.5, "the LMS got the grade under the policy it replaced"
    finally:
        admin.put("/v1/course/policy", json={"grade_policy": "last", "hint_cost": 0}).raise_for_status()


# --- two admins changing the policy at once ------------------------------------------------------

def test_two_policy_changes_at_once_leave_the_lms_on_the_policy_the_course_ends_with(
        lti, platform, course, link, student):
    """Attempt 1 has 2 points (a TA's) and a confirmed veto, attempt 2 has 0; the course counts the
    last attempt and caps a veto: the LMS has 0. One admin switches the grade policy to `best` (`PUT
    /v1/course/policy`) while another, through `kernelgrade courses policy` (another process:
    store.set_course_policy), switches the veto policy to `zero` and holds the course's row until it
    commits. The course ends with (best, zero): attempt 1 is worth 0 and attempt 2 counts, so the
    LMS must hold 0, as `GET /v1/grades` does, not the 2 that the first admin's requeue computes
    under the veto policy it read before it waited (best, capped: a policy the course never had)."""
    if lti.kind != "postgresql":
        pytest.skip("a SQLite writer holds the database's write lock from its first statement: no interleaving")
    admin = course.client("admin", "read", "review", "submit")
    try:
        first = lti_submit(lti, platform, link, student, cheap_body())
        wait_final(admin, first.id)
        decide(admin, first.id, 2)
        assert (lti.row(first.id).blocking or "").endswith(":confirmed"), lti.row(first.id).blocking
        second = lti_submit(lti, platform, link, student, cheap_body())
        wait_final(admin, second.id)
        assert lms_grade(lti, platform, link, student) == 0

        with lti.sessions() as holder:
            holder.execute(text("SELECT id FROM courses WHERE id = :id FOR NO KEY UPDATE"), {"id": course.id})
            answers: list[int] = []
            other = threading.Thread(target=lambda: answers.append(admin.put(
                "/v1/course/policy", json={"grade_policy": "best"}).status_code))
            other.start()
            wait_for(lambda: waiting_for_lock(lti, "UPDATE courses"), timeout=30,
                     what="the other admin's change waiting for the course's row")
            store.set_course_policy(holder, course.id, PolicyUpdate(veto_policy="zero"))  # commits
        other.join(timeout=60)
        assert answers == [200]
        book = admin.get("/v1/grades", params={"assignment": f"lti:{link.id}"}).json()
        assert (book["policy"]["grade_policy"], book["policy"]["veto_policy"]) == ("best", "zero")
        (row,) = book["rows"]
        assert (row["submission_id"], row["points"]) == (second.id, 0)
        assert lms_grade(lti, platform, link, student) == 0, "the LMS got a grade under a policy the course never had"
    finally:
        admin.put("/v1/course/policy", json={"grade_policy": "last", "veto_policy": "capped"}).raise_for_status()
