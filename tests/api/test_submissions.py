"""Submitting, reading, exporting and regrading over real HTTP, graded in the real sandbox.

Only two submissions of this module really run Triton (the example answer and the template with
`cols <= N`, plus one regrade of the latter); they are submitted once per database by the
module-scoped `graded` fixture and reused by the tests that need a graded report.
"""
from __future__ import annotations

import math
import secrets
import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import httpx
import pytest

from service.report import SCHEMA
from service.student_view import strip_internals
from tests.api.support import (
    EXERCISE, FINAL, Course, Service, cheap_body, error_locs, example_body, template_body, wait_final,
)
from tests.support.english import LESSON06_ENGLISH, chinese_in
from tests.support.platform_specs import check_gradescope, check_prairielearn

pytestmark = pytest.mark.sandbox


@dataclass
class Graded:
    course: Course
    client: httpx.Client
    accepted: httpx.Response       # the 202 for the example answer
    stored: dict[str, Any] | None  # its row, read from the database right after the 202
    low_id: str                    # the template filled with `cols <= N` (fails some cases)
    idempotency_key: str

    @property
    def example_id(self) -> str:
        return self.accepted.json()["id"]

    def example(self) -> dict[str, Any]:
        return wait_final(self.client, self.example_id)

    def low(self) -> dict[str, Any]:
        return wait_final(self.client, self.low_id)


@pytest.fixture(scope="module")
def graded(service: Service) -> Graded:
    course = service.new_course()
    client = course.client("submit", "read", "review")
    key = f"example-{uuid.uuid4().hex}"
    accepted = client.post("/v1/submissions", json=example_body(), headers={"Idempotency-Key": key})
    assert accepted.status_code == 202, accepted.text
    row = service.row(accepted.json()["id"])  # before anything else: the 202 promised it is stored
    stored = None if row is None else {"course_id": row.course_id, "body": row.body, "status": row.status,
                                       "idempotency_key": row.idempotency_key}
    low = client.post("/v1/submissions", json=template_body("cols <= N"))
    assert low.status_code == 202, low.text
    return Graded(course, client, accepted, stored, low.json()["id"], key)


# --- POST /v1/submissions ------------------------------------------------------------------

def test_post_answers_202_with_id_status_links_and_location(service, graded):
    body = graded.accepted.json()
    assert body["id"] and body["exercise"] == EXERCISE
    assert body["status"] in ("queued", "running")
    assert body["report"] is None and body["history"] == [] and body["webhooks"] == []
    links = body["links"]
    assert links["self"] == f"{service.url}/v1/submissions/{body['id']}"
    assert links["report"] == f"{service.url}/v1/submissions/{body['id']}/report"
    assert links["feedback"].startswith(f"{service.url}/v1/feedback/")
    assert len(links["feedback"].rsplit("/", 1)[1]) >= 32, "the feedback link must be unguessable"
    assert graded.accepted.headers["Location"] == links["self"]


def test_submission_is_stored_before_it_is_acknowledged(graded):
    assert graded.stored is not None, "the row did not exist right after the 202"
    assert graded.stored["course_id"] == graded.course.id
    assert graded.stored["body"]["code"] == example_body()["code"]
    assert graded.stored["body"]["answers"] == example_body()["answers"]
    assert graded.stored["idempotency_key"] == graded.idempotency_key
    assert graded.stored["status"] in ("queued", "running", *FINAL)


def test_submission_is_eventually_graded_with_its_report(graded):
    view = graded.example()
    assert view["status"] == "graded" and view["message"] is None
    assert view["attempts"] == 1
    report = view["report"]
    assert report["schema"] == SCHEMA == "kernelgrade.report/v1"
    assert report["submission_id"] == graded.example_id
    assert report["exercise"]["id"] == EXERCISE
    assert report["status"] == "graded"
    assert report["score"]["passed"] is True and report["score"]["max"] == 10
    items = {item["id"]: item for item in report["items"]}
    for code_item in ("code.regular", "code.boundary"):
        assert items[code_item]["status"] == "pass" and items[code_item]["points"] == items[code_item]["max_points"]
    assert report["environment"]["sandbox"] == "bwrap", "graded in the real sandbox"
    assert report["given_check"]["status"] == "passed"
    assert all(case["passed"] for case in report["cases"])
    assert [(h["seq"], h["reason"], h["status"], h["current"]) for h in view["history"]] == [(1, "initial", "graded", True)]
    assert view["history"][0]["score"] == report["score"]["total"]


def test_a_failing_answer_is_graded_with_a_lower_score(graded):
    view = graded.low()
    assert view["status"] == "graded"
    score = view["report"]["score"]
    assert 0 < score["total"] < score["max"] and score["passed"] is False
    assert any(not case["passed"] for case in view["report"]["cases"])


def test_timestamps_carry_their_time_zone(graded):
    """SQLite keeps no zone: every time the API shows must still say it is UTC."""
    view = graded.example()
    stamps = [view["created_at"], view["updated_at"], *(h["created_at"] for h in view["history"])]
    for stamp in stamps:
        parsed = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
        assert parsed.utcoffset() is not None, f"naive timestamp {stamp!r} in {view['id']}"
        assert parsed.utcoffset().total_seconds() == 0


def test_wait_returns_200_with_the_report_inline(graded):
    """Replaying the example's Idempotency-Key with ?wait: the same submission, graded, inline."""
    response = graded.client.post("/v1/submissions", params={"wait": 20}, json=example_body(),
                                  headers={"Idempotency-Key": graded.idempotency_key})
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["id"] == graded.example_id
    assert body["status"] == "graded" and body["report"]["schema"] == SCHEMA
    assert response.headers["Location"] == body["links"]["self"]
    assert body == graded.client.get(body["links"]["self"]).json(), "POST ?wait shows what GET shows"


def test_wait_on_a_new_submission_returns_it_graded(service):
    course = service.new_course()
    client = course.client("submit", "read")
    response = client.post("/v1/submissions", params={"wait": 20}, json=cheap_body())
    assert response.status_code == 200, response.text
    assert response.json()["status"] == "graded" and response.json()["report"]["schema"] == SCHEMA
    assert course.submission_count() == 1


def test_wait_above_the_server_maximum_is_422_naming_wait(service, course):
    assert service.settings.max_wait_s == 25
    response = course.client().post("/v1/submissions", params={"wait": 26}, json=cheap_body())
    assert response.status_code == 422, response.text
    assert error_locs(response) == ["wait"]
    assert response.json()["detail"][0]["loc"] == ["query", "wait"]
    assert course.submission_count() == 0


def test_report_before_graded_is_409(service, course):
    row = service.block_queue(course)  # held as `running`: deterministic, no race with a worker
    client = course.client("read")
    response = client.get(f"/v1/submissions/{row.id}/report")
    assert response.status_code == 409, response.text
    assert "not graded" in response.json()["detail"]
    view = client.get(f"/v1/submissions/{row.id}").json()
    assert view["status"] == "running" and view["report"] is None


# --- Idempotency-Key ------------------------------------------------------------------------

def test_same_idempotency_key_and_body_returns_the_same_submission(course):
    client = course.client()
    body = cheap_body()
    first = client.post("/v1/submissions", json=body, headers={"Idempotency-Key": "lms-attempt-1"})
    second = client.post("/v1/submissions", json=body, headers={"Idempotency-Key": "lms-attempt-1"})
    assert first.status_code == 202, first.text
    assert second.status_code in (200, 202), second.text
    assert second.json()["id"] == first.json()["id"]
    assert course.submission_count() == 1


def test_same_idempotency_key_with_another_body_is_409(course):
    client = course.client()
    first = client.post("/v1/submissions", json=cheap_body("a"), headers={"Idempotency-Key": "k-1"})
    assert first.status_code == 202, first.text
    conflict = client.post("/v1/submissions", json=cheap_body("b"), headers={"Idempotency-Key": "k-1"})
    assert conflict.status_code == 409, conflict.text
    assert "k-1" in conflict.json()["detail"]
    # A different callback_url is a different body too.
    conflict = client.post("/v1/submissions", json={**cheap_body("a"), "callback_url": "https://example.com/hook"},
                           headers={"Idempotency-Key": "k-1"})
    assert conflict.status_code == 409, conflict.text
    assert course.submission_count() == 1


def test_idempotency_keys_belong_to_their_course(service, course):
    other = service.new_course()
    body = cheap_body()
    mine = course.client().post("/v1/submissions", json=body, headers={"Idempotency-Key": "shared"})
    theirs = other.client().post("/v1/submissions", json=cheap_body(), headers={"Idempotency-Key": "shared"})
    assert mine.status_code == theirs.status_code == 202, (mine.text, theirs.text)
    assert mine.json()["id"] != theirs.json()["id"]


# --- batch ---------------------------------------------------------------------------------

def test_batch_of_two_gives_two_ids(service, course):
    client = course.client()
    response = client.post("/v1/submissions/batch", json={"submissions": [cheap_body("one"), cheap_body("two")]})
    assert response.status_code == 202, response.text
    views = response.json()["submissions"]
    assert len(views) == 2 and len({v["id"] for v in views}) == 2
    assert all(v["links"]["self"].endswith(v["id"]) for v in views)
    assert course.submission_count() == 2
    for view in views:
        assert wait_final(client, view["id"])["status"] == "graded"


def test_batch_items_are_idempotent_one_by_one(course):
    client = course.client()
    items = [{**cheap_body("a"), "idempotency_key": "item-a"}, {**cheap_body("b"), "idempotency_key": "item-b"}]
    first = client.post("/v1/submissions/batch", json={"submissions": items})
    again = client.post("/v1/submissions/batch", json={"submissions": items})
    assert first.status_code == 202 and again.status_code == 202, (first.text, again.text)
    assert [v["id"] for v in again.json()["submissions"]] == [v["id"] for v in first.json()["submissions"]]
    assert course.submission_count() == 2


def test_batch_over_max_batch_is_422_and_stores_nothing(service, course):
    assert service.settings.max_batch == 3
    response = course.client().post("/v1/submissions/batch", json={"submissions": [cheap_body() for _ in range(4)]})
    assert response.status_code == 422, response.text
    assert error_locs(response) == ["submissions"]
    assert course.submission_count() == 0


def test_batch_item_with_unknown_exercise_is_422_naming_the_item_and_stores_nothing(course):
    items = [cheap_body("ok"), {**cheap_body("bad"), "exercise": "lesson99_nope"}, cheap_body("ok2")]
    response = course.client().post("/v1/submissions/batch", json={"submissions": items})
    assert response.status_code == 422, response.text
    assert error_locs(response) == ["submissions.1.exercise"]
    assert "lesson99_nope" in response.json()["detail"][0]["msg"]
    assert course.submission_count() == 0, "a refused batch must not store its valid items"


def test_batch_with_an_idempotency_conflict_stores_nothing(course):
    client = course.client()
    first = client.post("/v1/submissions", json=cheap_body("x"), headers={"Idempotency-Key": "taken"})
    assert first.status_code == 202
    items = [cheap_body("fresh"), {**cheap_body("other"), "idempotency_key": "taken"}]
    response = client.post("/v1/submissions/batch", json={"submissions": items})
    assert response.status_code == 409, response.text
    assert course.submission_count() == 1


def test_batch_unknown_item_field_is_422_naming_it(course):
    response = course.client().post("/v1/submissions/batch", json={"submissions": [{**cheap_body(), "grade": 10}]})
    assert response.status_code == 422, response.text
    assert error_locs(response) == ["submissions.0.grade"]


def test_empty_batch_is_422(course):
    response = course.client().post("/v1/submissions/batch", json={"submissions": []})
    assert response.status_code == 422, response.text
    assert error_locs(response) == ["submissions"]


# --- report formats --------------------------------------------------------------------------

@pytest.mark.parametrize("which", ["example", "low"])
def test_report_json_is_the_current_report(graded, which):
    view = getattr(graded, which)()
    response = graded.client.get(f"/v1/submissions/{view['id']}/report", params={"format": "json"})
    assert response.status_code == 200, response.text
    assert response.json() == view["report"]
    default = graded.client.get(f"/v1/submissions/{view['id']}/report")
    assert default.json() == view["report"]


@pytest.mark.parametrize("which", ["example", "low"])
def test_report_as_gradescope(graded, which):
    view = getattr(graded, which)()
    report = view["report"]
    response = graded.client.get(f"/v1/submissions/{view['id']}/report", params={"format": "gradescope"})
    assert response.status_code == 200, response.text
    results = response.json()
    score = check_gradescope(results)
    items = report["items"]
    scored = [t for t in results["tests"] if "score" in t]  # the others are informational (vetoes)
    assert len(scored) == len(items) > 0
    for test, item in zip(scored, items, strict=True):
        assert item["id"] in test["name"]
        assert test["score"] == item["points"] and test["max_score"] == item["max_points"]
        assert test["status"] == ("passed" if item["status"] == "pass" else "failed")
    assert math.isclose(sum(t["score"] for t in scored), report["score"]["total"])
    assert math.isclose(sum(t["max_score"] for t in scored), report["score"]["max"])
    if report["score"]["passed"] or report["score"]["total"] < report["score"]["pass_threshold"]:
        assert score == report["score"]["total"]
    else:
        assert score < report["score"]["pass_threshold"], "a report that does not pass never exports a passing score"
    assert results["extra_data"]["kernelgrade"]["submission_id"] == view["id"]


@pytest.mark.parametrize("which", ["example", "low"])
def test_report_as_prairielearn(graded, which):
    view = getattr(graded, which)()
    score = view["report"]["score"]
    response = graded.client.get(f"/v1/submissions/{view['id']}/report", params={"format": "prairielearn"})
    assert response.status_code == 200, response.text
    result = response.json()
    assert result["gradable"] is True
    assert check_prairielearn(result) is not None
    if score["passed"] or score["total"] < score["pass_threshold"]:
        assert math.isclose(result["score"], score["total"] / score["max"])
    else:
        assert result["score"] < score["pass_threshold"] / score["max"]
    scored = [t for t in result["tests"] if t["max_points"] > 0]
    assert len(scored) == len(view["report"]["items"])
    verdicts = [t for t in result["tests"] if t["max_points"] == 0]  # unmet requirements and vetoes, 0 of 0 points
    unmet = [r for r in score["requirements"] if not r["met"] and r["id"] != "no_blocking_veto"]
    vetoes = [v for v in view["report"]["vetoes"] if v["status"] != "dismissed"]
    assert len(verdicts) == len(unmet) + len(vetoes)
    assert all(any(r["id"] in t["name"] for t in verdicts) for r in unmet), "each unmet requirement is named"


def test_unknown_report_format_is_422(graded):
    view = graded.example()
    response = graded.client.get(f"/v1/submissions/{view['id']}/report", params={"format": "moodle"})
    assert response.status_code == 422, response.text
    assert error_locs(response) == ["format"]


# --- regrade ---------------------------------------------------------------------------------

def test_regrade_needs_the_review_scope(graded):
    graded.low()
    response = graded.course.client("submit", "read").post(f"/v1/submissions/{graded.low_id}/regrade")
    assert response.status_code == 403, response.text
    assert "review" in response.json()["detail"]


def test_regrade_keeps_the_history(graded):
    first = graded.low()
    client = graded.course.client("review", "read")
    response = client.post(f"/v1/submissions/{graded.low_id}/regrade")
    assert response.status_code == 202, response.text
    queued = response.json()
    assert queued["status"] in ("queued", "running")
    assert [(h["seq"], h["current"]) for h in queued["history"]] == [(1, True)], "the old report stays current meanwhile"
    # While it is being graded again: no second regrade, no report.
    again = client.post(f"/v1/submissions/{graded.low_id}/regrade")
    assert again.status_code == 409, again.text
    assert client.get(f"/v1/submissions/{graded.low_id}/report").status_code == 409

    view = wait_final(client, graded.low_id)
    history = view["history"]
    assert [(h["seq"], h["reason"]) for h in history] == [(1, "initial"), (2, "regrade")]
    assert [h["current"] for h in history] == [False, True], "exactly one current report: the regrade"
    assert all(h["status"] == "graded" for h in history)
    assert view["report"]["submission_id"] == graded.low_id
    assert view["report"]["created_at"] != first["report"]["created_at"], "the current report is the new one"
    assert view["report"]["score"] == first["report"]["score"], "same code, same secret seed: same score"
    assert view["report"]["program"]["reused"] is False, "a regrade runs the program again, never from the memo"
    assert history[1]["score"] == view["report"]["score"]["total"]


def test_regrade_of_an_unknown_submission_is_404(graded):
    response = graded.course.client("review").post(f"/v1/submissions/{uuid.uuid4().hex}/regrade")
    assert response.status_code == 404, response.text


# --- not_gradable: our failure, never the student's ------------------------------------------

def test_a_submission_whose_workers_kept_dying_is_not_gradable(service, course):
    row = service.interrupted(course, attempts=service.settings.max_attempts)
    client = course.client("read")
    view = wait_final(client, row.id)
    assert view["status"] == "not_gradable"
    assert view["message"] and "not the student's" in view["message"]
    assert view["report"]["status"] == "not_gradable" and view["report"]["schema"] == SCHEMA
    assert view["report"]["score"]["total"] == 0
    assert [(h["seq"], h["status"], h["current"]) for h in view["history"]] == [(1, "not_gradable", True)]

    prairielearn = client.get(f"/v1/submissions/{row.id}/report", params={"format": "prairielearn"}).json()
    assert prairielearn["gradable"] is False and "score" not in prairielearn, "never a zero"
    gradescope = client.get(f"/v1/submissions/{row.id}/report", params={"format": "gradescope"}).json()
    assert gradescope["extra_data"]["kernelgrade"]["status"] == "not_gradable" and "score" not in gradescope
    feedback = httpx.get(view["links"]["feedback"], timeout=30).json()
    assert feedback["status"] == "not_gradable" and feedback["report"]["status"] == "not_gradable"
    # It can be graded again once the cause is fixed.
    regrade = course.client("review").post(f"/v1/submissions/{row.id}/regrade")
    assert regrade.status_code == 202, regrade.text
    assert wait_final(client, row.id)["status"] == "graded"


# --- the student's feedback link --------------------------------------------------------------

def _as_student_reads(value: Any) -> Any:
    if isinstance(value, str):
        return strip_internals(value)
    if isinstance(value, dict):
        return {k: _as_student_reads(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_as_student_reads(v) for v in value]
    return value


def test_feedback_link_needs_no_key_and_shows_only_that_report(graded):
    example = graded.example()
    low = graded.low()
    response = httpx.get(example["links"]["feedback"], timeout=30)  # no Authorization header at all
    assert response.status_code == 200, response.text
    feedback = response.json()
    assert feedback["status"] == "graded" and feedback["exercise"] == EXERCISE
    report = feedback["report"]
    assert report["submission_id"] == example["id"]
    # the report's score as a student reads it: text through strip_internals (a warning's file named
    # without the grader's folders, which the given check's output in the evidence may carry)
    assert report["score"] == _as_student_reads(example["report"]["score"])
    assert "site-packages" not in response.text
    assert low["id"] not in response.text
    assert "seeds" not in report and all("seed" not in case for case in report["cases"])
    assert str(example["report"]["seeds"]["secret"]) not in response.text
    assert set(report) == set(example["report"]) - {"seeds", "translations"}, \
        "the report's fields, less the seeds and the other language (?lang= picks it)"
    assert [set(c) for c in report["cases"]] == [set(c) - {"seed"} for c in example["report"]["cases"]]


def test_the_feedback_response_is_declared_in_the_openapi_document(service):
    schemas = httpx.get(f"{service.url}/openapi.json", timeout=30).json()["components"]["schemas"]
    view = schemas["FeedbackView"]["properties"]
    assert {"$ref": "#/components/schemas/StudentReport"} in view["report"]["anyOf"]
    assert view["status"] == {"$ref": "#/components/schemas/SubmissionStatus"}
    assert set(schemas["SubmissionStatus"]["enum"]) == {"queued", "running", "graded", "not_gradable"}
    student = schemas["StudentReport"]["properties"]
    assert "seeds" not in student and {"score", "items", "cases", "status", "message"} <= set(student)
    assert "translations" not in student and "translations" in schemas["Report"]["properties"]
    assert "seed" not in schemas["StudentCaseReport"]["properties"]


def test_feedback_link_of_an_ungraded_submission_shows_no_report(service, course):
    row = service.block_queue(course)
    response = httpx.get(f"{service.url}/v1/feedback/{row.feedback_token}", timeout=30)
    assert response.status_code == 200, response.text
    assert response.json() == {"status": "running", "exercise": EXERCISE, "report": None, "language": "zh"}


def test_english_answers_get_english_feedback_without_declaring_a_language(service, course):
    """Lesson 6's example submission with its written answers in English and no `language`: the
    report, the student JSON and the page are English, the exercise's own words included."""
    client = course.client("submit", "read")
    body = {**example_body(), **LESSON06_ENGLISH}
    assert "language" not in body
    accepted = client.post("/v1/submissions", json=body)
    assert accepted.status_code == 202, accepted.text
    view = wait_final(client, accepted.json()["id"])
    report = view["report"]
    assert view["status"] == "graded" and report["language"] == "en" and report["score"]["passed"], report["score"]
    assert chinese_in(report) == {}
    feedback = httpx.get(view["links"]["feedback"], timeout=30).json()
    assert feedback["language"] == "en" and feedback["report"]["language"] == "en"
    assert chinese_in(feedback["report"]) == {}
    page = httpx.get(view["links"]["feedback_page"], timeout=30)
    assert page.status_code == 200 and "<h1>Lesson 6: mean and variance, and the mask" in page.text
    assert "Regular inputs (with the given check)" in page.text and "正常输入" not in page.text


# Fixed ids: the random token must not name the test (parallel runs compare their collections).
@pytest.mark.parametrize("token", [secrets.token_urlsafe(32), "x", "a" * 1000], ids=["random", "short", "long"])
def test_unknown_feedback_token_is_404(service, token):
    response = httpx.get(f"{service.url}/v1/feedback/{token}", timeout=30)
    assert response.status_code == 404, response.text


def test_the_submission_view_lists_no_webhooks_without_a_callback(graded):
    assert graded.example()["webhooks"] == []
