"""Red team, round 4: one course filled the whole grading queue and every other course got 503.

`max_queue` counts the submissions in progress of every course together, and a course key may send
600 requests a minute of up to `max_batch` (100) submissions each: one course (a script, or a
platform gone wrong) reached the cap in seconds, and from then on every other course's POST, and
every LTI student's, was "the grading queue is full" until that course's submissions were graded.
Now one course holds at most `max_queue_per_course` of the places.
"""
from __future__ import annotations

import pytest

from tests.api.support import cheap_body


@pytest.fixture(scope="module")
def small_queue(start_service):
    return start_service(max_queue=6, max_queue_per_course=3, max_batch=10)


def test_one_course_cannot_fill_the_queue_for_every_other(small_queue):
    service = small_queue
    flooder, other = service.new_course(), service.new_course()
    for _ in range(3):
        service.block_queue(flooder)  # `running` for an hour: they stay in the queue
    refused = flooder.client("submit").post("/v1/submissions", json=cheap_body("one more"))
    assert refused.status_code == 503, refused.text
    assert "max_queue_per_course" in refused.json()["detail"] and refused.headers["Retry-After"]
    batch = flooder.client("submit").post("/v1/submissions/batch", json={"submissions": [cheap_body("b")]})
    assert batch.status_code == 503, batch.text
    assert flooder.submission_count() == 3

    accepted = other.client("submit").post("/v1/submissions", json=cheap_body("another course"))
    assert accepted.status_code == 202, accepted.text


def test_the_whole_queue_cap_still_holds(small_queue):
    service = small_queue
    courses = [service.new_course() for _ in range(3)]
    for course in courses[:2]:
        for _ in range(3):
            service.block_queue(course)
    refused = courses[2].client("submit").post("/v1/submissions", json=cheap_body("full"))
    assert refused.status_code == 503 and "grading queue is full" in refused.json()["detail"], refused.text
