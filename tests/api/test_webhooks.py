"""Signed webhooks to a real HTTP receiver on 127.0.0.1 that fails the first delivery: the
retry, the signature (Standard Webhooks, verified with the `standardwebhooks` library as a
receiver would; and the legacy header), the events, the body, and the attempts recorded."""
from __future__ import annotations

import json

import httpx
import pytest
from standardwebhooks import Webhook, WebhookVerificationError

from service.report import SCHEMA
from service.worker.webhook_payload import signing_secret
from service.worker.webhooks import SIGNATURE_HEADER, post_callback, verify
from tests.api.support import Receiver, Stalling, cheap_body, wait_final, wait_for, webhook_secret


def standard_verify(secret: str, request) -> dict:
    """What a receiver does with the standardwebhooks library: raises unless the signature holds."""
    return Webhook(signing_secret(secret)).verify(request.body, request.headers)

pytestmark = pytest.mark.sandbox


def delivered(client, submission_id: str, count: int = 1):
    def check():
        view = client.get(f"/v1/submissions/{submission_id}").json()
        hooks = view["webhooks"]
        return view if len(hooks) >= count and all(h["delivered"] or h["next_attempt_at"] is None for h in hooks) else None

    return wait_for(check, timeout=60, interval=0.2, what=f"webhook deliveries of {submission_id}")


def test_webhook_is_retried_signed_and_recorded(service, course, receiver):
    client = course.client("submit", "read", "review")
    response = client.post("/v1/submissions", json={**cheap_body(), "callback_url": receiver.url})
    assert response.status_code == 202, response.text
    submission_id = response.json()["id"]

    view = delivered(client, submission_id)
    received = receiver.snapshot()
    assert [r.answered for r in received] == [500, 200], "one failure, then one retry that succeeded"
    secret = webhook_secret(service, course.id)
    assert secret == course.webhook_secret
    for request in received:
        assert request.path == "/hooks/kernelgrade"
        assert request.headers["content-type"] == "application/json"
        assert request.headers["kernelgrade-event"] == "submission.graded"
        assert verify(secret, request.body, request.headers[SIGNATURE_HEADER.lower()])
        # Any other secret, or a tampered body, does not verify.
        assert not verify(service.new_course().webhook_secret, request.body, request.headers[SIGNATURE_HEADER.lower()])
        assert not verify(secret, request.body + b" ", request.headers[SIGNATURE_HEADER.lower()])
    assert received[0].headers["kernelgrade-delivery"] == received[1].headers["kernelgrade-delivery"]
    for request in received:
        assert standard_verify(secret, request)["type"] == "submission.graded"
        with pytest.raises(WebhookVerificationError):
            Webhook(signing_secret(service.new_course().webhook_secret)).verify(request.body, request.headers)
        with pytest.raises(WebhookVerificationError):
            standard_verify(secret, type(request)(request.path, request.headers, request.body + b" ", request.answered))
    assert received[0].headers["webhook-id"] == received[1].headers["webhook-id"], "one message id across retries"

    payload = json.loads(received[-1].body)
    assert payload["type"] == payload["event"] == "submission.graded"
    assert payload["data"]["submission_id"] == submission_id and payload["data"]["reason"] == "initial"
    assert payload["data"]["grade"]["points"] == 0 and payload["data"]["decision"] is None
    assert payload["submission_id"] == submission_id
    assert payload["status"] == "graded" and payload["report_seq"] == 1
    assert payload["report"]["schema"] == SCHEMA
    assert payload["report"]["submission_id"] == submission_id
    assert payload["report"] == view["report"]

    hooks = view["webhooks"]
    assert len(hooks) == 1
    assert hooks[0]["url"] == receiver.url
    assert hooks[0]["attempts"] == 2
    assert hooks[0]["delivered"] is True
    assert hooks[0]["last_status_code"] == 200 and hooks[0]["last_error"] is None
    assert hooks[0]["next_attempt_at"] is None


def test_regrade_sends_the_new_report(service, course, receiver):
    client = course.client("submit", "read", "review")
    submission_id = client.post("/v1/submissions", json={**cheap_body(), "callback_url": receiver.url}).json()["id"]
    delivered(client, submission_id)
    wait_final(client, submission_id)
    assert client.post(f"/v1/submissions/{submission_id}/regrade").status_code == 202
    wait_final(client, submission_id)
    view = delivered(client, submission_id, count=2)
    assert [(h["attempts"], h["delivered"]) for h in view["webhooks"]] == [(2, True), (1, True)]
    last = json.loads(receiver.snapshot()[-1].body)
    assert last["report_seq"] == 2 and last["report"] == view["report"]
    assert last["type"] == "submission.regraded" and last["data"]["reason"] == "regrade"
    assert receiver.snapshot()[-1].headers["kernelgrade-event"] == "submission.regraded"


def test_a_receiver_that_never_accepts_is_given_up_after_the_backoff(service, course):
    with Receiver(fail_first=10**6) as failing:
        client = course.client("submit", "read")
        submission_id = client.post("/v1/submissions", json={**cheap_body(), "callback_url": failing.url}).json()["id"]
        view = delivered(client, submission_id)
        attempts = 1 + len(service.settings.webhook_backoff_s)
        assert [r.answered for r in failing.snapshot()] == [500] * attempts
    hook = view["webhooks"][0]
    assert hook["attempts"] == attempts and hook["delivered"] is False
    assert hook["last_status_code"] == 500 and "500" in hook["last_error"]
    assert hook["next_attempt_at"] is None, "given up: no further attempt is scheduled"
    assert view["status"] == "graded", "a failing webhook does not change the submission"


def test_a_decision_sends_decision_recorded_with_the_decision_and_identity(service, course):
    with Receiver(fail_first=0) as receiver:
        client = course.client("submit", "read", "review")
        body = {**cheap_body(), "callback_url": receiver.url, "assignment": "hw6", "student": {"id": "u7"}}
        submission_id = client.post("/v1/submissions", json=body).json()["id"]
        delivered(client, submission_id)
        response = client.post(f"/v1/submissions/{submission_id}/decisions",
                               json={"item": "q1", "points": 2, "reason": "clear causal chain"})
        assert response.status_code == 201
        delivered(client, submission_id, count=2)
        request = receiver.snapshot()[-1]
    payload = standard_verify(course.webhook_secret, request)
    assert payload["type"] == "submission.decision_recorded" and payload["report_seq"] == 2
    assert payload["data"]["decision"]["target"] == "item:q1" and payload["data"]["decision"]["reason"] == "clear causal chain"
    assert payload["data"]["identity"]["assignment"] == "hw6" and payload["data"]["identity"]["student"]["id"] == "u7"
    assert payload["data"]["grade"]["total"] == 2


def test_the_grade_says_whether_the_attempt_counts_for_the_student(service, course):
    """Under `best`, a worse later attempt's message says its own points and `counts: false`: a
    receiver keeping one grade per student keeps the better one. The better attempt's says true."""
    course.client("admin").put("/v1/course/policy", json={"grade_policy": "best"}).raise_for_status()
    with Receiver(fail_first=0) as receiver:
        client = course.client("submit", "read", "review")
        identity = {"callback_url": receiver.url, "assignment": "hw-best", "student": {"id": "b1"}}
        better = client.post("/v1/submissions", json={**cheap_body(), **identity, "attempt": 1}).json()["id"]
        delivered(client, better)
        assert client.post(f"/v1/submissions/{better}/decisions",
                           json={"item": "q1", "points": 2, "reason": "clear causal chain"}).status_code == 201
        delivered(client, better, count=2)
        worse = client.post("/v1/submissions", json={**cheap_body(), **identity, "attempt": 2}).json()["id"]
        delivered(client, worse)
        by_submission = {}
        for request in receiver.snapshot():
            payload = standard_verify(course.webhook_secret, request)
            by_submission[payload["data"]["submission_id"]] = payload["data"]["grade"]
    assert (by_submission[better]["points"], by_submission[better]["counts"]) == (2, True)
    assert (by_submission[worse]["points"], by_submission[worse]["counts"]) == (0, False)
    (row,) = client.get("/v1/grades", params={"assignment": "hw-best"}).json()["rows"]
    assert (row["submission_id"], row["points"]) == (better, 2)


@pytest.mark.timeout(60)
def test_a_receiver_streaming_an_endless_body_gets_its_status_read_and_nothing_more():
    """The delivery read the whole answer into memory: a 200 followed by a body without end held
    the webhook thread (and grew its memory) until the process died. Only the status counts."""
    with Stalling("endless") as stalling, httpx.Client(timeout=2.0) as client:
        response = post_callback(client, stalling.url, body=b"{}", headers={}, allowed_hosts=["127.0.0.1"])
    assert response.status_code == 200


@pytest.mark.timeout(60)
def test_a_receiver_trickling_its_answer_is_cut_at_the_deadline():
    """httpx's timeout bounds each read, not the exchange: a status line sent a byte every 0.3 s
    never timed out (100 000 bytes: 8 hours). The attempt now ends at its deadline."""
    with Stalling("trickle") as stalling, httpx.Client(timeout=2.0) as client:
        with pytest.raises(httpx.TimeoutException, match="within 1 s"):
            post_callback(client, stalling.url, body=b"{}", headers={}, allowed_hosts=["127.0.0.1"], deadline_s=1.0)
    assert stalling.connections == 1


@pytest.mark.parametrize("mode", ["endless", "trickle"])
def test_a_stalling_receiver_of_one_course_does_not_hold_another_courses_webhooks(start_service, mode):
    """One thread delivers every course's webhooks, one delivery after another: a course whose
    receiver never finished answering held every other course's deliveries for good. Course A's
    receiver stalls (its delivery is under way before course B submits); B's webhook still arrives,
    and A's attempt is recorded as failed (trickle) or delivered (endless: the status was 200)."""
    service = start_service(webhook_timeout_s=2.0, webhook_backoff_s=[600.0])
    a, b = service.new_course(), service.new_course()
    with Stalling(mode) as stalling, Receiver(fail_first=0) as receiver:
        client_a = a.client("submit", "read")
        first = client_a.post("/v1/submissions", json={**cheap_body("a"), "callback_url": stalling.url})
        assert first.status_code == 202, first.text
        wait_for(lambda: stalling.connections >= 1, timeout=120, what="course A's delivery to its stalling receiver")
        client_b = b.client("submit", "read")
        second = client_b.post("/v1/submissions", json={**cheap_body("b"), "callback_url": receiver.url})
        assert second.status_code == 202, second.text
        view = delivered(client_b, second.json()["id"])
        assert view["webhooks"][0]["delivered"] is True and [r.answered for r in receiver.snapshot()] == [200]
        def attempted():
            hooks = client_a.get(f"/v1/submissions/{first.json()['id']}").json()["webhooks"]
            return hooks[0] if hooks and hooks[0]["attempts"] >= 1 else None

        hook = wait_for(attempted, timeout=30, what="course A's attempt recorded")
    if mode == "trickle":
        assert hook["attempts"] >= 1 and hook["delivered"] is False and "TimeoutException" in hook["last_error"], hook
    else:
        assert hook["delivered"] is True and hook["last_status_code"] == 200, hook
