"""Signed webhook delivery with retries, every attempt recorded.

Signature (documented in docs/api.md): Standard Webhooks headers (service/worker/webhook_payload.py),
and, while courses migrate, the legacy `Kernelgrade-Signature: t=<unix seconds>,v1=<hex>` where
hex = HMAC-SHA256(course webhook secret, f"{t}.{body}"). Receivers reject old timestamps. Callback
URLs must be https and reach only globally routable addresses, unless their host is in
`webhook_allowed_hosts`: the service can't be aimed at the internal network. The host is resolved
once, every address it resolves to is checked, and the request goes to a checked address (TLS
still verified for the host's name): no second lookup that DNS rebinding or another IDNA mapping
could answer differently. Each attempt ends at `webhook_timeout_s` whatever the receiver does
(`Deadline`): only the status is read, never the body, so a receiver that streams an endless body
or trickles its answer a byte at a time cannot hold the one thread that delivers every course's
webhooks, nor its memory.
"""
from __future__ import annotations

import hmac
import logging
import time
from datetime import timedelta

import httpx
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from service.db.base import utcnow
from service.db.models import Course, Decision, ReportRow, Submission, WebhookDelivery
from service.db.session import one_snapshot
from service.grades.gradebook import counted_with_hints, counting_attempt
from service.grades.policy import CoursePolicy
from service.outbound import CallbackRefused, Deadline, pin_callback
from service.worker.webhook_payload import LEGACY_SIGNATURE_HEADER as SIGNATURE_HEADER  # noqa: F401 (tests import it here)
from service.worker.webhook_payload import REGRADE_FAILED, message
from service.worker.webhook_payload import legacy_signature as sign

log = logging.getLogger("kernelgrade.webhooks")


def verify(secret: str, body: bytes, header: str, *, max_age_s: int = 300, now: float | None = None) -> bool:
    """What a receiver does (and what the tests do)."""
    try:
        fields = dict(part.split("=", 1) for part in header.split(","))
        timestamp = int(fields["t"])
    except (ValueError, KeyError):
        return False
    if abs((now or time.time()) - timestamp) > max_age_s:
        return False
    return hmac.compare_digest(sign(secret, body, timestamp), header)


def post_callback(client: httpx.Client, url: str, *, body: bytes, headers: dict[str, str],
                  allowed_hosts: list[str], deadline_s: float | None = None) -> httpx.Response:
    """POST to the pinned address; the Host header and TLS's server name stay the URL's host.
    Returns the answer's status and headers; its body is never read (the response is closed).
    The whole exchange ends after `deadline_s` (default: the client's read timeout), raising
    httpx.TimeoutException; the connection is never kept for another delivery."""
    pinned = pin_callback(url, allowed_hosts=allowed_hosts)
    headers = {**headers, "Connection": "close"}
    extensions: dict = {}
    target = url
    if pinned.host is not None:
        port = httpx.URL(url).port
        target = pinned.url
        headers["Host"] = pinned.host + (f":{port}" if port else "")
        extensions["sni_hostname"] = pinned.host
    seconds = deadline_s if deadline_s is not None else (client.timeout.read or DEFAULT_DEADLINE_S)
    with Deadline(seconds) as deadline:
        try:
            with client.stream("POST", target, content=body, headers=headers,
                               extensions={**extensions, "trace": deadline.trace}) as response:
                pass  # the status and headers are all a delivery needs
        except httpx.HTTPError:
            if deadline.fired:
                raise httpx.TimeoutException(f"no complete answer within {seconds:g} s") from None
            raise
    return response


DEFAULT_DEADLINE_S = 10.0


def deliver_due(sessions: sessionmaker[Session], *, allowed_hosts: list[str], timeout_s: float,
                backoff_s: list[float], client: httpx.Client | None = None, on_attempt=None,
                legacy_signature: bool = True) -> int:
    """Try every delivery that is due once. Returns how many were attempted."""
    with sessions() as session:
        due = list(session.scalars(select(WebhookDelivery.id).where(
            WebhookDelivery.delivered.is_(False), WebhookDelivery.next_attempt_at.is_not(None),
            WebhookDelivery.next_attempt_at <= utcnow()).order_by(WebhookDelivery.next_attempt_at).limit(50)))
    own_client = client is None
    client = client or httpx.Client(timeout=timeout_s, follow_redirects=False,
                                    limits=httpx.Limits(max_keepalive_connections=0))
    try:
        for delivery_id in due:
            _attempt(sessions, delivery_id, client=client, allowed_hosts=allowed_hosts, backoff_s=backoff_s,
                     on_attempt=on_attempt, legacy_signature=legacy_signature, deadline_s=timeout_s)
    finally:
        if own_client:
            client.close()
    return len(due)


def _payload_parts(session: Session, delivery: WebhookDelivery) -> dict:
    """What the message says besides the report: identity, the grade that counts, the decision."""
    # get_one: foreign keys name these rows, and submissions, reports and courses are never deleted.
    submission = session.get_one(Submission, delivery.submission_id)
    report = session.get_one(ReportRow, delivery.report_id)
    failed_regrade = None
    if delivery.event == REGRADE_FAILED and submission.current_report_id is not None:
        # The delivery's report is the failed regrade; the message describes the report that counts (the
        # earlier grade it kept), so a receiver that reads only `status`/`report` keeps that grade.
        failed_regrade = {"report_seq": report.seq, "status": report.status, "message": report.report.get("message")}
        report = session.get_one(ReportRow, submission.current_report_id)
    course = session.get_one(Course, submission.course_id)
    policy = CoursePolicy(grade_policy=course.grade_policy, veto_policy=course.veto_policy)
    counted = counted_with_hints(session, submission, report.report, policy)
    # `counts`: whether this grade is the student's grade now (last or best): a receiver that keeps
    # one grade per student must not take a worse later attempt's points under `best`, nor the points
    # of a report that is no longer current (a delivery retried after a decision or a regrade made a
    # newer report current: that one's message carries the grade).
    counting = (counting_attempt(session, submission, policy)
                if counted is not None and report.id == submission.current_report_id else None)
    grade = None if counted is None else {"points": counted.points, "max": counted.max, "total": counted.total,
                                          "rule": counted.rule, "passed": counted.passed,
                                          "provisional": counted.provisional, "blocking": counted.blocking,
                                          "hint_cost": counted.hint_cost, "hints": list(counted.hints),
                                          "counts": counting is not None and counting.id == submission.id}
    decision = session.get(Decision, delivery.decision_id) if delivery.decision_id is not None else None
    student = ({"id": submission.student_id, "name": submission.student_name, "email": submission.student_email}
               if submission.student_id else None)
    return dict(course_secret=course.webhook_secret, delivery_id=delivery.id, event=delivery.event,
                submission={"id": submission.id, "identity": {
                    "assignment": submission.assignment, "student": student, "attempt": submission.attempt,
                    "external_ref": submission.external_ref, "language": submission.language}},
                report_seq=report.seq, report_reason=report.reason, report=report.report, grade=grade,
                failed_regrade=failed_regrade,
                decision=None if decision is None else {
                    "id": decision.id, "target": decision.target, "before": decision.before, "after": decision.after,
                    "reason": decision.reason, "actor": decision.actor, "created_at": decision.created_at.isoformat()})


def _attempt(sessions: sessionmaker[Session], delivery_id: int, *, client: httpx.Client, allowed_hosts: list[str],
             backoff_s: list[float], on_attempt, legacy_signature: bool = True,
             deadline_s: float | None = None) -> None:
    with sessions() as session:
        # The message's grade is the gradebook's at one moment: the policy, the hint levels and the
        # attempts are separate reads, and an admin's policy change and a student's hint level that
        # commit between them would otherwise mix into a grade the gradebook never had.
        one_snapshot(session)
        delivery = session.get(WebhookDelivery, delivery_id)
        if delivery is None or delivery.delivered:
            return
        parts = _payload_parts(session, delivery)
        url = delivery.url
    status_code, error = None, None
    try:
        signed = message(**parts, legacy=legacy_signature)
        response = post_callback(client, url, body=signed.body, headers=signed.headers, allowed_hosts=allowed_hosts,
                                 deadline_s=deadline_s)
        status_code = response.status_code
        ok = 200 <= status_code < 300
        if not ok:
            error = f"HTTP {status_code}"
    except (httpx.HTTPError, CallbackRefused) as exc:
        ok, error = False, f"{type(exc).__name__}: {exc}"[:500]
    with sessions() as session:
        delivery = session.get_one(WebhookDelivery, delivery_id)  # read above; deliveries are never deleted
        delivery.attempt += 1
        delivery.last_status_code = status_code
        delivery.last_error = error
        delivery.delivered = ok
        if ok or delivery.attempt > len(backoff_s):
            delivery.next_attempt_at = None  # done, or given up (visible on the submission)
        else:
            delivery.next_attempt_at = utcnow() + timedelta(seconds=backoff_s[delivery.attempt - 1])
        session.commit()
    if on_attempt is not None:
        on_attempt(ok)
    log.info("webhook %s attempt -> %s", delivery_id, "delivered" if ok else error)
