"""A TA decision stays with its submission across a regrade, over real HTTP on SQLite and
PostgreSQL: re-applied when the evidence it decided on is unchanged, otherwise the case is back in
the queue with the earlier decision shown; bulk regrades of an assignment, idempotent, with progress."""
from __future__ import annotations

import json

import pytest
from sqlalchemy import select

from service.db.models import ReportRow
from tests.api.support import cheap_body, error_locs, wait_final, wait_for

pytestmark = pytest.mark.sandbox


def decide(client, submission_id: str, **body) -> dict:
    response = client.post(f"/v1/submissions/{submission_id}/decisions", json={"reason": "TA review", **body})
    assert response.status_code == 201, response.text
    return response.json()["submission"]


def regrade(client, submission_id: str) -> dict:
    assert client.post(f"/v1/submissions/{submission_id}/regrade").status_code == 202
    return wait_for(lambda: (v := client.get(f"/v1/submissions/{submission_id}").json())["status"] == "graded"
                    and any(h["reason"] == "regrade" and h["current"] for h in v["history"]) and v,
                    timeout=60, what="the regrade")


def queue_reasons(client, submission_id: str) -> list[str] | None:
    entry = next((e for e in client.get("/v1/review/queue").json() if e["id"] == submission_id), None)
    return None if entry is None else entry["reasons"]


def test_decisions_are_reapplied_when_the_evidence_is_unchanged(course):
    client = course.client()
    submission_id = client.post("/v1/submissions", json=cheap_body()).json()["id"]
    wait_final(client, submission_id)
    decide(client, submission_id, item="q1", points=1.5)
    decide(client, submission_id, veto="modified_outside_blank", action="dismiss")

    view = regrade(client, submission_id)
    report = view["report"]
    assert [(h["reason"], h["current"]) for h in view["history"]] == [
        ("initial", False), ("review", False), ("review", False), ("regrade", True)]
    q1 = next(i for i in report["items"] if i["id"] == "q1")
    assert q1["points"] == 1.5 and q1["evidence"]["ta_decision"]["reapplied_from"]
    veto = next(v for v in report["vetoes"] if v["rule"] == "modified_outside_blank")
    assert veto["status"] == "dismissed"
    assert [(c["target"], c["outcome"]) for c in report["carried_decisions"]] == [
        ("item:q1", "reapplied"), ("veto:modified_outside_blank", "reapplied")]
    assert report["score"]["total"] == 1.5 and not report["score"]["provisional"]
    assert queue_reasons(client, submission_id) is None, "nothing waits for a TA"


def test_changed_evidence_puts_the_case_back_in_the_queue_with_the_earlier_decision(service, course):
    client = course.client()
    submission_id = client.post("/v1/submissions", json=cheap_body()).json()["id"]
    wait_final(client, submission_id)
    decide(client, submission_id, item="q2", points=2)
    # What the TA decided on differs from what the regrade will see: as after an exercise's rubric
    # changed. The decided-on report is edited in the database; the regrade and the carry are real.
    with service.sessions() as session:
        decided_on = session.scalar(select(ReportRow).where(ReportRow.submission_id == submission_id,
                                                            ReportRow.seq == 1))
        report = json.loads(json.dumps(decided_on.report))
        next(i for i in report["items"] if i["id"] == "q2")["evidence"]["found"] = ["padding", "re-mask"]
        decided_on.report = report
        session.commit()

    view = regrade(client, submission_id)
    q2 = next(i for i in view["report"]["items"] if i["id"] == "q2")
    assert q2["status"] == "needs_review" and q2["points"] == 0, "the grader's points, waiting for a TA"
    assert q2["evidence"]["earlier_decision"]["decided"] == {"points": 2.0, "status": "pass"}
    assert [(c["target"], c["outcome"]) for c in view["report"]["carried_decisions"]] == [("item:q2", "returned")]
    assert view["report"]["score"]["provisional"]
    assert set(queue_reasons(client, submission_id)) == {"item:q2", "decision:item:q2"}

    view = decide(client, submission_id, item="q2", points=1.5)
    assert [(c["target"], c["outcome"]) for c in view["report"]["carried_decisions"]] == [("item:q2", "superseded")]
    assert not view["report"]["score"]["provisional"] and queue_reasons(client, submission_id) is None


def test_a_bulk_regrade_of_an_assignment_is_idempotent_and_reports_progress(course):
    client = course.client()
    ids = [client.post("/v1/submissions", json={**cheap_body(), "assignment": "bulk", "student": {"id": f"s{i}"}}).json()["id"]
           for i in range(3)]
    client.post("/v1/submissions", json={**cheap_body(), "assignment": "other"})
    for submission_id in ids:
        wait_final(client, submission_id)
    decide(client, ids[0], item="q3", points=1)

    started = client.post("/v1/regrades", json={"assignment": "bulk"})
    again = client.post("/v1/regrades", json={"assignment": "bulk"})
    assert started.status_code == 202 and again.status_code == 200, (started.text, again.text)
    job = started.json()
    assert again.json()["id"] == job["id"] and job["total"] == 3 and job["scope"] == "assignment"

    done = wait_for(lambda: (j := client.get(f"/v1/regrades/{job['id']}").json())["status"] == "done" and j,
                    timeout=90, what="the bulk regrade")
    assert (done["done"], done["pending"], done["queued"], done["progress"]) == (3, 0, 0, 1.0)
    for submission_id in ids:
        view = client.get(f"/v1/submissions/{submission_id}").json()
        assert [h["reason"] for h in view["history"] if h["current"]] == ["regrade"]
    q3 = next(i for i in client.get(f"/v1/submissions/{ids[0]}").json()["report"]["items"] if i["id"] == "q3")
    assert q3["points"] == 1, "the decision survived the bulk regrade"
    assert [j["id"] for j in client.get("/v1/regrades").json()] == [job["id"]]
    assert client.post("/v1/regrades", json={"assignment": "bulk"}).status_code == 202, "finished: a new job"


@pytest.mark.parametrize(("body", "status", "named"), [
    ({"assignment": "nothing-here"}, 404, None),
    ({}, 422, ""),
    ({"assignment": "a", "exercise": "lesson06_mean_var", "version": 1}, 422, ""),
    ({"exercise": "lesson06_mean_var"}, 422, ""),
    ({"assignment": "a", "colour": "red"}, 422, "colour"),
])
def test_bad_bulk_regrades_are_refused(course, body, status, named):
    response = course.client().post("/v1/regrades", json=body)
    assert response.status_code == status, response.text
    if named:
        assert named in error_locs(response)


def test_bulk_regrades_need_the_review_scope(course):
    assert course.client("read", "submit").post("/v1/regrades", json={"assignment": "a"}).status_code == 403


def test_a_bulk_regrade_of_an_exercise_version(course):
    client = course.client()
    ids = [client.post("/v1/submissions", json=cheap_body()).json()["id"] for _ in range(2)]
    for submission_id in ids:
        assert wait_final(client, submission_id)["report"]["exercise"]["version"] == 1
    assert client.post("/v1/regrades", json={"exercise": "lesson06_mean_var", "version": 2}).status_code == 404
    job = client.post("/v1/regrades", json={"exercise": "lesson06_mean_var", "version": 1}).json()
    assert job["total"] == 2 and job["scope"] == "exercise"
    wait_for(lambda: client.get(f"/v1/regrades/{job['id']}").json()["status"] == "done", timeout=90,
             what="the bulk regrade")
