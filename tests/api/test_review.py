"""TA review hooks over real HTTP: the queue, decisions on items and vetoes, the audit trail, the
re-issued report (history kept) and the webhook it fires."""
from __future__ import annotations

import json

import pytest

from tests.api.support import Receiver, cheap_body, template_body, wait_final, wait_for

PARTIAL_Q2 = "减掉均值以后 padding 变成 -mean。"


@pytest.fixture(scope="module")
def flagged(service):
    """One real grading: `values != 0` passes the lesson's check but fails the zeros probe
    (suspected coincidental_pass), and a partial Q2 answer waits for a TA."""
    course = service.new_course()
    client = course.client("submit", "read", "review")
    receiver = Receiver(fail_first=0).__enter__()
    body = {**template_body("values != 0"), "answers": {"q2": PARTIAL_Q2}, "callback_url": receiver.url}
    submission = wait_final(client, client.post("/v1/submissions", json=body).json()["id"])
    yield course, client, submission, receiver
    receiver.__exit__(None, None, None)


def test_flagged_submission_is_in_the_course_queue(service, flagged):
    course, client, submission, _ = flagged
    report = submission["report"]
    assert {v["rule"]: v["status"] for v in report["vetoes"]} == {"coincidental_pass": "suspected"}
    assert report["score"]["provisional"]
    entry = next(e for e in client.get("/v1/review/queue").json() if e["id"] == submission["id"])
    assert "veto:coincidental_pass" in entry["reasons"] and "item:q2" in entry["reasons"]
    assert service.new_course().client("review").get("/v1/review/queue").json() == [], "another course sees nothing"


def test_decisions_reissue_the_report_and_are_audited(flagged):
    course, client, submission, receiver = flagged
    sid = submission["id"]
    response = client.post(f"/v1/submissions/{sid}/decisions",
                           json={"item": "q2", "points": 1.5, "reason": "因果链基本完整，缺少第一次求和为何安全"})
    assert response.status_code == 201, response.text
    result = response.json()
    assert result["decision"]["target"] == "item:q2" and result["decision"]["after"]["points"] == 1.5
    assert result["decision"]["actor"].startswith("key:")
    view = result["submission"]
    q2 = next(i for i in view["report"]["items"] if i["id"] == "q2")
    assert q2["points"] == 1.5 and q2["evidence"]["ta_decision"]["reason"].startswith("因果链")
    assert [(h["seq"], h["reason"], h["current"]) for h in view["history"]] == [(1, "initial", False), (2, "review", True)]
    assert view["report"]["score"]["provisional"], "the suspected veto still waits"

    response = client.post(f"/v1/submissions/{sid}/decisions",
                           json={"veto": "coincidental_pass", "action": "confirm", "reason": "values != 0 的掩码按数值定义"})
    assert response.status_code == 201, response.text
    final = response.json()["submission"]["report"]
    assert final["vetoes"][0]["status"] == "confirmed" and not final["score"]["passed"]
    assert not final["score"]["provisional"]
    assert sid not in {e["id"] for e in client.get("/v1/review/queue").json()}

    audit = client.get(f"/v1/submissions/{sid}/decisions").json()
    assert [d["target"] for d in audit] == ["item:q2", "veto:coincidental_pass"]
    assert audit[1]["before"] == {"status": "suspected"} and audit[1]["after"] == {"status": "confirmed"}
    report = client.get(f"/v1/submissions/{sid}/report").json()
    assert report["vetoes"][0]["status"] == "confirmed"
    # Each re-issued report reaches the platform's webhook.
    sequences = wait_for(lambda: [json.loads(r.body)["report_seq"] for r in receiver.snapshot()
                                  if json.loads(r.body)["submission_id"] == sid] if len(receiver.snapshot()) >= 3 else None,
                         timeout=30, what="three webhook deliveries")
    assert sequences == [1, 2, 3]


@pytest.mark.parametrize(("body", "status"), [
    ({"item": "q9", "points": 1, "reason": "no such item"}, 422),
    ({"item": "q2", "points": 5, "reason": "more than the max"}, 422),
    ({"veto": "unverified_claim", "action": "confirm", "reason": "not raised"}, 422),
    ({"item": "q2", "reason": "points missing"}, 422),
    ({"item": "q2", "points": 1, "veto": "coincidental_pass", "action": "dismiss", "reason": "two targets"}, 422),
    ({"item": "q2", "points": 1}, 422),
])
def test_bad_decisions_are_refused(flagged, body, status):
    _, client, submission, _ = flagged
    assert client.post(f"/v1/submissions/{submission['id']}/decisions", json=body).status_code == status


def test_decisions_need_the_review_scope_and_the_course(service, flagged):
    course, _, submission, _ = flagged
    body = {"item": "q2", "points": 1, "reason": "no scope"}
    assert course.client("read").post(f"/v1/submissions/{submission['id']}/decisions", json=body).status_code == 403
    other = service.new_course().client("review")
    assert other.post(f"/v1/submissions/{submission['id']}/decisions", json=body).status_code == 404


def test_no_decision_before_grading(service, course):
    client = course.client("submit", "read", "review")
    held = service.block_queue(course, body=cheap_body())
    response = client.post(f"/v1/submissions/{held.id}/decisions", json={"item": "q2", "points": 1, "reason": "too early"})
    assert response.status_code == 409
