"""What the TA sees of one flagged case: the code against the template, the evidence of each
veto side by side, the written answers with the rubric's findings marked, and the audit."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from service.exercises import Exercise
from service.report import CaseReport, Report
from service.submission import Submission as SubmissionBody
from service.web.diff import DiffLine, code_diff
from service.web.highlight import find_spans, highlighted

VETO_TITLES = {
    "modified_outside_blank": "Code outside the blank was changed",
    "boundary_check_removed": "A boundary check was removed or loosened",
    "unverified_claim": "The claimed run output contradicts the real one",
    "coincidental_pass": "The pass may be a coincidence",
}


@dataclass
class VetoView:
    rule: str
    title: str
    status: str
    note: str
    claimed: str | None = None  # unverified_claim: the student's claimed output
    real: str | None = None  # ... and what the given check really printed
    given_status: str | None = None
    failed_probes: list[CaseReport] = field(default_factory=list)  # coincidental_pass: the probes that failed
    given_case: CaseReport | None = None  # ... next to the check that passed
    given_output: str = ""
    diagnoses: list[str] = field(default_factory=list)
    misconceptions: list[dict] = field(default_factory=list)
    edits: list[dict] = field(default_factory=list)
    decision: dict | None = None


@dataclass
class ItemView:
    id: str
    title: str
    points: float
    max_points: float
    status: str
    feedback: str
    answer: Any = None  # Markup: the written answer, highlighted
    found: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    confidence: float | None = None
    decision: dict | None = None


def veto_views(report: Report) -> list[VetoView]:
    cases = {c.id: c for c in report.cases}
    given_case = next((c for c in report.cases if c.kind == "given"), None)
    messages = {d.id: d.message for d in report.diagnoses}
    views = []
    for veto in sorted(report.vetoes, key=lambda v: v.status != "suspected"):
        ev = veto.evidence
        view = VetoView(rule=veto.rule, title=VETO_TITLES.get(veto.rule, veto.rule), status=veto.status,
                        note=str(ev.get("note", "")), decision=ev.get("ta_decision"))
        if veto.rule == "unverified_claim":
            view.claimed, view.real = str(ev.get("claimed_output", "")), str(ev.get("real_output", ""))
            view.given_status = ev.get("given_check")
        if veto.rule == "coincidental_pass":
            view.failed_probes = [cases[p["case"]] for p in ev.get("failed_probes", []) if p.get("case") in cases]
            view.given_case = given_case
            view.given_output = report.given_check.output if report.given_check else ""
            view.diagnoses = [messages[d] for d in ev.get("diagnoses", []) if d in messages]
            view.misconceptions = list(ev.get("misconceptions", []))
        view.edits = list(ev.get("edits", []))
        views.append(view)
    return views


def item_views(report: Report, exercise: Exercise | None, body: SubmissionBody | None) -> list[ItemView]:
    questions = {}
    if exercise is not None:
        questions = {i.id: i.question for i in exercise.spec.rubric if i.source == "text"}
    views = []
    for item in report.items:
        ev = item.evidence
        view = ItemView(id=item.id, title=item.title, points=item.points, max_points=item.max_points,
                        status=item.status,
                        feedback=item.feedback, decision=ev.get("ta_decision"),
                        found=[f.get("label", "") for f in ev.get("found", [])],
                        missing=[m.get("label", "") for m in ev.get("missing", [])],
                        confidence=ev.get("confidence"))
        question_id = questions.get(item.id)
        if question_id and body is not None and exercise is not None:
            answer = body.answer(question_id)
            spans = find_spans(exercise.question(question_id), answer,
                               concepts={f.get("concept") for f in ev.get("found", [])},
                               misconceptions={m.get("misconception") for m in ev.get("misconceptions", [])},
                               language=report.language)
            view.answer = highlighted(answer, spans)
        views.append(view)
    return views


def diff_lines(report: Report, exercise: Exercise | None, body: SubmissionBody | None) -> list[DiffLine]:
    if exercise is None or body is None:
        return []
    edits = [e.model_dump() for e in report.program.edits] if report.program else []
    return code_diff(exercise.template, body.code, edits)
