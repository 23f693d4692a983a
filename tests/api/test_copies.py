"""Copied answers across a class over real HTTP (GET /v1/review/copies): submissions stored through
the real store, compared on request; only evidence is flagged, only the course's own, and no grade changes."""
from __future__ import annotations

import pytest

from service.db.models import Submission
from tests.support import copies_class


@pytest.fixture(scope="module")
def classroom(service):
    """The small class, stored through the store and held as `running`, so no worker grades it: the
    comparison reads stored bodies, graded or not."""
    course = service.new_course()
    rows = {}
    for body in copies_class.small_class():
        row = service.block_queue(course, body=body)
        rows[(body["student"]["id"], body["attempt"])] = row.id
    return course, rows


def test_copies_are_clustered_and_the_rest_is_not(service, classroom):
    course, rows = classroom
    response = course.client("review").get("/v1/review/copies", params={"assignment": copies_class.ASSIGNMENT})
    assert response.status_code == 200, response.text
    found = response.json()
    assert found["course"] == course.id and found["students"] == 5 and found["submissions_compared"] == 5
    assert found["grades_changed"] is False
    clusters = {(c["kind"], c["part"]): c for c in found["clusters"]}
    assert set(clusters) == {("text", "answers.load_mask_enough"), ("code", "blank 1")}, found["clusters"]
    latest = {rows[("alice", 1)], rows[("bob", 2)]}
    for cluster in clusters.values():
        assert cluster["exercise"] == copies_class.EXERCISE
        assert {m["student_id"] for m in cluster["members"]} == {"alice", "bob"}
        assert {m["submission_id"] for m in cluster["members"]} == latest, "the latest attempt of each student"
        assert [{p["a"], p["b"]} for p in cluster["pairs"]] == [latest]
    text = clusters[("text", "answers.load_mask_enough")]
    assert 0.8 <= text["similarity"] < 1.0, "edited, not identical: a near-duplicate"
    assert {m["text"] for m in text["members"]} == {copies_class.COPIED_ANSWER, copies_class.COPIED_ANSWER_EDITED}
    code = clusters[("code", "blank 1")]
    assert code["similarity"] == 1.0
    assert any("first = tl.program_id(0)" in m["text"] for m in code["members"]), "the fill itself, side by side"


def test_no_grade_or_status_changes(service, classroom):
    course, rows = classroom
    course.client("review").get("/v1/review/copies", params={"assignment": copies_class.ASSIGNMENT})
    with service.sessions() as session:
        for sid in rows.values():
            row = session.get(Submission, sid)
            assert (row.status, row.current_report_id, row.score_total, row.needs_review) == ("running", None, None, False)


def test_course_scoped_and_review_scope(service, classroom):
    course, _ = classroom
    other = service.new_course().client("review").get("/v1/review/copies", params={"assignment": copies_class.ASSIGNMENT})
    assert other.status_code == 200 and other.json()["clusters"] == [] and other.json()["students"] == 0
    assert course.client("read").get("/v1/review/copies", params={"assignment": copies_class.ASSIGNMENT}).status_code == 403
    assert course.client("review").get("/v1/review/copies").status_code == 422, "the assignment is required"
    assert service.client().get("/v1/review/copies", params={"assignment": "x"}).status_code == 401
    odd = course.client("review").get("/v1/review/copies", params={"assignment": "a\x00b\udcff"[:3]})
    assert odd.status_code in (200, 422), odd.text  # never a 500 (PostgreSQL text holds no NUL)
