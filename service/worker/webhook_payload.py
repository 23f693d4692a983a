"""What a webhook delivery sends: a Standard Webhooks message (https://www.standardwebhooks.com:
`webhook-id`, `webhook-timestamp`, `webhook-signature: v1,<base64 HMAC-SHA256>`), signed with the
course's secret through the `standardwebhooks` library, plus, while courses migrate, the legacy
`Kernelgrade-Signature` header and body fields (docs/api.md, "Webhooks")."""
from __future__ import annotations

import base64
import hashlib
import hmac
import json
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from standardwebhooks import Webhook

# A regrade that failed on our side (not_gradable) while an earlier grade stays current: the message's
# report and grade are that earlier one (unchanged), `data.failed_regrade` says what failed.
REGRADE_FAILED = "submission.regrade_failed"
EVENTS = ("submission.graded", "submission.regraded", "submission.decision_recorded", REGRADE_FAILED,
          "submission.speed_measured")
LEGACY_SIGNATURE_HEADER = "Kernelgrade-Signature"


def signing_secret(course_secret: str) -> str:
    """The course's webhook secret in the Standard Webhooks form (`whsec_` + base64 of the key bytes).
    The key bytes are the secret's text, as the legacy HMAC used them: one secret serves both."""
    return "whsec_" + base64.b64encode(course_secret.encode()).decode()


def legacy_signature(secret: str, body: bytes, timestamp: int) -> str:
    digest = hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256).hexdigest()
    return f"t={timestamp},v1={digest}"


@dataclass(frozen=True)
class Message:
    body: bytes
    headers: dict[str, str]


def message(*, course_secret: str, delivery_id: int, event: str, submission: dict[str, Any], report_seq: int,
            report_reason: str, report: dict[str, Any], grade: dict[str, Any] | None,
            decision: dict[str, Any] | None, legacy: bool, now: datetime | None = None,
            failed_regrade: dict[str, Any] | None = None) -> Message:
    """The signed message for one delivery. Its id is stable across retries (receivers deduplicate on it)."""
    now = now or datetime.now(UTC)
    data = {"submission_id": submission["id"], "status": report["status"], "report_seq": report_seq,
            "reason": report_reason, "identity": submission["identity"], "grade": grade, "decision": decision,
            "failed_regrade": failed_regrade}
    # `event`, `submission_id`, `status`, `report_seq` and `report` at the top level are the v1 body:
    # receivers written for it keep working; `type`, `timestamp` and `data` are Standard Webhooks'.
    payload = {"type": event, "timestamp": now.isoformat().replace("+00:00", "Z"), "data": data,
               "event": event, "submission_id": submission["id"], "status": report["status"],
               "report_seq": report_seq, "report": report}
    body = json.dumps(payload, ensure_ascii=False).encode()
    msg_id = f"msg_{submission['id']}_{delivery_id}"
    headers = {"Content-Type": "application/json", "webhook-id": msg_id,
               "webhook-timestamp": str(int(now.timestamp())),
               "webhook-signature": Webhook(signing_secret(course_secret)).sign(msg_id, now, body.decode()),
               "Kernelgrade-Event": event, "Kernelgrade-Delivery": str(delivery_id)}
    if legacy:
        headers[LEGACY_SIGNATURE_HEADER] = legacy_signature(course_secret, body, int(now.timestamp()))
    return Message(body, headers)
