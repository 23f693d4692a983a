"""TA decisions: override an item's points, confirm or dismiss a veto. A decision never edits a
report in place: it produces the next report (history kept), with the decision in its evidence."""
from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, model_validator

from service.grading import passrule
from service.messages import Language, render
from service.report import (
    CarriedDecision,
    Item,
    Report,
    ReportTexts,
    Requirement,
    RequirementTexts,
    Score,
    Veto,
    points_total,
)
from service.submission import storable


class DecisionRequest(BaseModel):
    """What a TA decides. Exactly one target: an item (with new points) or a veto (confirm/dismiss)."""

    model_config = ConfigDict(extra="forbid")

    item: str | None = Field(None, max_length=100, description="rubric item id, e.g. q2")
    points: float | None = Field(None, ge=0, description="the item's new points")
    veto: Literal["modified_outside_blank", "boundary_check_removed", "unverified_claim",
                  "coincidental_pass"] | None = None
    action: Literal["confirm", "dismiss"] | None = None
    reason: Annotated[str, AfterValidator(storable)] = Field(min_length=3, max_length=4000,
                                                             description="why; shown to the student and kept in the "
                                                                         "audit")
    report_seq: int | None = Field(None, ge=1, le=2**31 - 1,
                                   description="the report the TA decided on (its `seq` in `history`): refused "
                                               "with 409 when what the decision is about has changed since (a "
                                               "regrade landed meanwhile); unset: the current report, whatever it is")

    @model_validator(mode="after")
    def _one_target(self) -> DecisionRequest:
        if (self.item is None) == (self.veto is None):
            raise ValueError("decide on exactly one of `item` (with `points`) or `veto` (with `action`)")
        if self.item is not None and (self.points is None or self.action is not None):
            raise ValueError("an item decision needs `points` (and no `action`)")
        if self.veto is not None and (self.action is None or self.points is not None):
            raise ValueError("a veto decision needs `action`: confirm or dismiss (and no `points`)")
        return self

    @property
    def target(self) -> str:
        return f"item:{self.item}" if self.item is not None else f"veto:{self.veto}"


class DecisionError(ValueError):
    pass


def apply_decision(report: Report, decision: DecisionRequest, *, actor: str) -> tuple[Report, dict, dict]:
    """The next report, and the decided thing before and after (for the audit)."""
    stamp = {"by": actor, "at": datetime.now(UTC).isoformat(), "reason": decision.reason}
    items, vetoes = list(report.items), list(report.vetoes)
    before: dict[str, Any]
    after: dict[str, Any]
    if decision.item is not None:
        index = next((i for i, it in enumerate(items) if it.id == decision.item), None)
        if index is None:
            raise DecisionError(f"no rubric item {decision.item!r} in this report ({', '.join(i.id for i in items)})")
        old = items[index]
        points = decision.points
        if points is None:  # the request's validator already refuses this
            raise DecisionError("an item decision needs `points`")
        if points > old.max_points:
            raise DecisionError(f"{old.id} is worth at most {old.max_points:g} points")
        status = "pass" if points == old.max_points else "fail" if points == 0 else "partial"

        def ta_line(lang: str) -> str:
            return "\n" + render("review.ta_decision", lang, points=f"{points:g}", max=f"{old.max_points:g}",
                                  reason=decision.reason)

        new = old.model_copy(update={
            "points": points, "status": status, "feedback": old.feedback + ta_line(report.language),
            "evidence": {**old.evidence, "ta_decision": {**stamp, "points_before": old.points}},
        })
        items[index] = new
        report = report.model_copy(update={"translations": {  # the TA's line in the other language too
            lang: _with_item_feedback(texts, old.id, ta_line(lang)) for lang, texts in report.translations.items()}})
        before, after = {"points": old.points, "status": old.status}, {"points": new.points, "status": new.status}
    else:
        index = next((i for i, v in enumerate(vetoes) if v.rule == decision.veto), None)
        if index is None:
            raise DecisionError(f"this report raises no {decision.veto!r} veto")
        old_veto = vetoes[index]
        status = "confirmed" if decision.action == "confirm" else "dismissed"
        new_veto = old_veto.model_copy(update={
            "status": status, "needs_review": False,
            "evidence": {**old_veto.evidence, "ta_decision": {**stamp, "status_before": old_veto.status}}})
        vetoes[index] = new_veto
        before, after = {"status": old_veto.status}, {"status": new_veto.status}
    carried = [c.model_copy(update={"outcome": "superseded"}) if c.target == decision.target and c.outcome == "returned"
               else c for c in report.carried_decisions]
    return rescored(report, items=items, vetoes=vetoes, carried=carried), before, after


def rescored(report: Report, *, items: list[Item], vetoes: list[Veto], carried: list[CarriedDecision]) -> Report:
    """The next report with these items, vetoes and carried decisions, its score recomputed."""
    total = points_total(items)
    blocking = any(v.status in ("confirmed", "suspected") for v in vetoes)
    provisional = (any(i.status == "needs_review" for i in items) or any(v.status == "suspected" for v in vetoes)
                   or any(c.outcome == "returned" for c in carried))
    # The total, the vetoes and the chains of the items a TA decided are recomputed; the given
    # check, the run output and the named boundary and trade-off stand as graded.
    requirements = passrule.rescore(report.score.requirements, items=items, vetoes=vetoes,
                                    threshold=report.score.pass_threshold, language=report.language)
    translations = {lang: _requirements_in(texts, report, items=items, vetoes=vetoes, own=requirements, language=lang)
                    for lang, texts in report.translations.items()}
    unmet = any(not r.met for r in requirements)
    score = Score(total=total, max=report.score.max, pass_threshold=report.score.pass_threshold,
                  passed=total >= report.score.pass_threshold and not blocking and not unmet, provisional=provisional,
                  requirements=requirements)
    return report.model_copy(update={"items": items, "vetoes": vetoes, "score": score, "carried_decisions": carried,
                                     "translations": translations, "created_at": datetime.now(UTC)})


def _with_item_feedback(texts: ReportTexts, item_id: str, line: str) -> ReportTexts:
    """`texts` with `line` added to item `item_id`'s feedback (where it has the item)."""
    said = texts.items.get(item_id)
    if said is None:
        return texts
    return texts.model_copy(update={"items": {**texts.items, item_id: said.model_copy(
        update={"feedback": said.feedback + line})}})


def _requirements_in(texts: ReportTexts, report: Report, *, items: list[Item], vetoes: list[Veto],
                     own: list[Requirement], language: Language) -> ReportTexts:
    """`texts` (the report's other language) with the requirements a decision recomputes said again in
    it; `own`: the recomputed requirements in the report's language (evidence kept once where equal)."""
    previous = [r.model_copy(update={**texts.requirements[r.id].model_dump(),
                                     "evidence": texts.requirements[r.id].evidence or r.evidence})
                if r.id in texts.requirements else r for r in report.score.requirements]
    again = passrule.rescore(previous, items=items, vetoes=vetoes, threshold=report.score.pass_threshold,
                             language=language)
    evidence = {r.id: r.evidence for r in own}
    return texts.model_copy(update={"requirements": {
        r.id: RequirementTexts(title=r.title, message=r.message, evidence=r.evidence if r.evidence != evidence.get(r.id)
                               else {}) for r in again}})
