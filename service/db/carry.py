"""TA decisions survive a regrade: each decision in force is re-applied to the regraded report when
the evidence it decided on is unchanged; otherwise the case goes back to the TA queue with the
earlier decision shown. Runs inside store.finish, in the transaction that writes the report."""
from __future__ import annotations

import hashlib
import json
from typing import Any, Literal

from sqlalchemy import select
from sqlalchemy.orm import Session

from service.db.models import Decision, ReportRow
from service.report import CarriedDecision, Report
from service.review import DecisionError, DecisionRequest, apply_decision, rescored

# Evidence keys that record decisions rather than what the grader saw.
_DECISION_KEYS = ("ta_decision", "earlier_decision")


def in_force(session: Session, submission_id: str) -> list[Decision]:
    """The latest decision on each target of the submission, oldest first."""
    latest: dict[str, Decision] = {}
    query = select(Decision).where(Decision.submission_id == submission_id).order_by(Decision.id)
    for decision in session.scalars(query):
        latest[decision.target] = decision
    return sorted(latest.values(), key=lambda d: d.id)


def _target(report: dict[str, Any], target: str) -> dict[str, Any] | None:
    kind, _, name = target.partition(":")
    if kind == "item":
        return next((i for i in report.get("items", []) if i.get("id") == name), None)
    return next((v for v in report.get("vetoes", []) if v.get("rule") == name), None)


def evidence_digest(report: dict[str, Any], target: str) -> str | None:
    """What the grader saw for this item or veto (its evidence, without decisions), as a digest; None if absent."""
    found = _target(report, target)
    if found is None:
        return None
    evidence = {k: v for k, v in (found.get("evidence") or {}).items() if k not in _DECISION_KEYS}
    seen = {"evidence": evidence, "max_points": found.get("max_points")}
    return hashlib.sha256(json.dumps(seen, sort_keys=True, ensure_ascii=False, default=str).encode()).hexdigest()


def _request(decision: Decision) -> DecisionRequest:
    kind, _, name = decision.target.partition(":")
    if kind == "item":
        return DecisionRequest(item=name, points=decision.after["points"], reason=decision.reason)
    action = "confirm" if decision.after.get("status") == "confirmed" else "dismiss"
    return DecisionRequest(veto=name, action=action, reason=decision.reason)


def carry_decisions(session: Session, submission_id: str, report: Report) -> Report:
    """The regraded report with every decision in force re-applied, returned to the queue, or lapsed."""
    decisions = in_force(session, submission_id)
    if not decisions or report.status != "graded":
        return report
    carried: list[CarriedDecision] = []
    for decision in decisions:
        decided_on = session.get(ReportRow, decision.report_id)
        before = evidence_digest(decided_on.report, decision.target) if decided_on is not None else None
        now = evidence_digest(report.to_record(), decision.target)
        if now is None:
            carried.append(_carried(decision, "lapsed"))
            continue
        if before is not None and before == now:
            try:
                report, _, _ = apply_decision(report, _request(decision), actor=decision.actor)
            except DecisionError:
                pass
            else:
                report = _mark(report, decision, {"reapplied_from": decision.id})
                carried.append(_carried(decision, "reapplied"))
                continue
        report = _mark(report, decision, None)
        carried.append(_carried(decision, "returned"))
    return rescored(report, items=list(report.items), vetoes=list(report.vetoes), carried=carried)


def _carried(decision: Decision, outcome: Literal["reapplied", "returned", "lapsed"]) -> CarriedDecision:
    return CarriedDecision(decision_id=decision.id, target=decision.target, outcome=outcome, decided_by=decision.actor,
                           decided_at=decision.created_at, decision=decision.after, reason=decision.reason)


def _mark(report: Report, decision: Decision, reapplied: dict[str, Any] | None) -> Report:
    """Stamp the target: a re-applied decision says so; a returned one shows the earlier decision and
    waits for a TA again (a needs_review item, or a suspected veto)."""
    kind, _, name = decision.target.partition(":")
    earlier = {"decision_id": decision.id, "by": decision.actor, "at": decision.created_at.isoformat(),
               "reason": decision.reason, "decided": decision.after}
    waiting = {"status": "needs_review"} if kind == "item" else {"status": "suspected", "needs_review": True}
    things: list[Any] = list(report.items if kind == "item" else report.vetoes)
    index = next(i for i, thing in enumerate(things) if (thing.id if kind == "item" else thing.rule) == name)
    thing = things[index]
    if reapplied is not None:
        things[index] = thing.model_copy(update={"evidence": {
            **thing.evidence, "ta_decision": {**thing.evidence.get("ta_decision", {}), **reapplied}}})
    else:
        things[index] = thing.model_copy(update={**waiting,
                                                 "evidence": {**thing.evidence, "earlier_decision": earlier}})
    return report.model_copy(update={"items" if kind == "item" else "vetoes": things})
