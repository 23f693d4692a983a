"""GET /feedback/{token}: the student's report as a page (the same report /v1/feedback/{token}
returns as JSON), in the lesson's language, readable on a phone. The token is the only key:
it names one submission, and the page shows nothing of any other."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from fastapi import APIRouter, Request
from sqlalchemy import select
from starlette.responses import Response

from service.api.deps import SessionDep
from service.db import store
from service.db.models import Submission
from service.exercises import Exercise, ExerciseNotFound
from service.report import CaseReport, Report
from service.web.i18n import texts
from service.web.pages import render
from service.web.svg import PaddingRow, padding_row, score_bar

router = APIRouter(include_in_schema=False)

FINAL = ("graded", "not_gradable")


def find_by_token(session, token: str) -> Submission | None:
    if len(token) > 64 or "\x00" in token:
        return None
    return session.scalar(select(Submission).where(Submission.feedback_token == token))


def exercise_of(request: Request, exercise_id: str) -> Exercise | None:
    try:
        return request.app.state.grader_catalog.get(exercise_id)
    except ExerciseNotFound:
        return None


@dataclass
class Picture:
    """A padding probe's row: the SVG and the words that go with it."""
    svg: Any  # Markup
    title: str
    valid_sum: str
    padding_sum: str
    note: str


@dataclass
class CaseView:
    case: CaseReport
    kind_label: str
    picture: Picture | None = None


def _lanes_counted(report: Report) -> dict[str, int]:
    """case id -> lanes the second sum counted, from the diagnoses that read it off the numbers."""
    counted = {}
    for diagnosis in report.diagnoses:
        for where in diagnosis.evidence.get("cases", []):
            if isinstance(where, dict) and "lanes_counted" in where and "case" in where:
                counted[where["case"]] = int(where["lanes_counted"])
    return counted


def padding_picture(case: CaseReport, *, n: int, block: int, counted: int | None, t: dict[str, str]) -> Picture:
    """The picture of one row of a padding probe, with the sums read from its first mismatch."""
    if case.passed:
        counted = n
    row = PaddingRow(n=n, block=block, counted=counted, padding_sum=0.0 if case.passed else None)
    note = t["padding_ok"] if case.passed else ""
    mismatch = case.first_mismatch
    if not case.passed and counted is not None and mismatch is not None and mismatch.output == "var" \
            and mismatch.observed is not None:
        observed_sum, true_sum = mismatch.observed * n, mismatch.expected * n
        pad = max(0, min(counted, block) - n)
        padding_sum = max(0.0, observed_sum - true_sum) if pad else 0.0
        row = PaddingRow(n=n, block=block, counted=counted, valid_sum=observed_sum - padding_sum, padding_sum=padding_sum)
        if pad:
            note = t["padding_bad"].format(each=f"{padding_sum / pad:.4g}", total=f"{padding_sum:.4g}")
    title = t["padding_title"].format(n=n, pad=block - n)
    shown = lambda value: "N · var" if value is None else f"{value:.4g}"  # noqa: E731
    return Picture(svg=padding_row(row, title), title=title, note=note,
                   valid_sum=f"{t['padding_valid_sum']}: {shown(row.valid_sum)}",
                   padding_sum=f"{t['padding_padding_sum']}: {shown(row.padding_sum)}")


def case_views(report: Report, exercise: Exercise | None, t: dict[str, str]) -> list[CaseView]:
    widths = {c.id: (c.cols, c.block) for c in exercise.spec.cases} if exercise is not None else {}
    counted = _lanes_counted(report)
    views = []
    for case in report.cases:
        view = CaseView(case=case, kind_label=t.get(f"kind_{case.kind}", case.kind))
        n, block = widths.get(case.id, (0, 0))
        if case.kind == "probe" and block > n:
            view.picture = padding_picture(case, n=n, block=block, counted=counted.get(case.id), t=t)
        views.append(view)
    return views


def pending(report: Report) -> list[str]:
    """What still waits for a TA, in the report's words."""
    t = texts(report.language)
    waiting = [f"{i.title}" for i in report.items if i.status == "needs_review"]
    waiting += [t.get(f"veto_{v.rule}", v.rule) for v in report.vetoes if v.status == "suspected"]
    return waiting


@router.get("/feedback/{token}")
def feedback_page(request: Request, token: str, session: SessionDep) -> Response:
    row = find_by_token(session, token)
    if row is None:
        t = texts("zh")
        return render(request, "not_found.html", {"t": t, "title": t["not_found_title"], "message": t["not_found"]},
                      status_code=404)
    exercise = exercise_of(request, row.exercise_id)
    current = store.current_report(session, row)
    report = Report.model_validate(current.report) if current is not None and row.status in FINAL else None
    language = report.language if report is not None else (exercise.spec.language if exercise is not None else "zh")
    t = texts(language)
    context: dict[str, Any] = {"t": t, "row": row, "report": report, "title": t["feedback_title"],
                               "exercise_title": exercise.spec.title if exercise is not None else row.exercise_id}
    if report is not None:
        score = report.score
        context.update(
            score_svg=score_bar(total=score.total, maximum=score.max, pass_threshold=score.pass_threshold,
                                label=f"{t['score']} {score.total:g} / {score.max:g}",
                                pass_label=f"{t['pass_line']} {score.pass_threshold:g}"),
            cases=case_views(report, exercise, t), pending=pending(report))
    return render(request, "feedback.html", context)
