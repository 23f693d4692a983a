"""/v1/feedback/{token}: a student's own report, through an unguessable link (no key)."""
from __future__ import annotations

from typing import Literal

from fastapi import APIRouter, HTTPException, Query, Request
from pydantic import BaseModel, Field
from sqlalchemy import select

from service import hints as hint_ladder
from service.api.deps import SessionDep
from service.api.schemas import BODY_ERRORS, DATABASE_UNAVAILABLE, UTCDateTime, ValidationErrorBody, error
from service.db import store
from service.db.models import Submission
from service.db.session import one_snapshot
from service.exercises import ExerciseNotFound
from service.status import FINAL_STATUSES, SubmissionStatus
from service.student_view import StudentReport, student_language, student_report

router = APIRouter(prefix="/v1/feedback", tags=["feedback"])


class FeedbackView(BaseModel):
    status: SubmissionStatus
    exercise: str
    report: StudentReport | None = Field(None, description="the current report once graded (or not gradable), "
                                                           "as the student sees it: no seeds, no harness frames, "
                                                           "its texts in `language` (its own `language` says which: "
                                                           "a report graded before both were kept stays in the "
                                                           "language it was graded in)")
    language: Literal["zh", "en"] = Field("zh", description="the language the student reads their feedback in: ?lang=, "
                                                             "else the submission's declared language, else the one "
                                                             "its written answers are in, else the lesson's")


def _row(session, token: str) -> Submission:
    row = (session.scalar(select(Submission).where(Submission.feedback_token == token))
           if len(token) <= 64 and "\x00" not in token else None)
    if row is None:
        raise HTTPException(404, "no such feedback link")
    return row


@router.get("/{token}", response_model=FeedbackView,
            responses={404: error("no such feedback link"), 503: DATABASE_UNAVAILABLE})
def feedback(token: str, session: SessionDep,
             lang: Literal["zh", "en"] | None = Query(None, description="the language to read it in")) -> FeedbackView:
    one_snapshot(session)  # the row and its report as they were at one moment (service.web.feedback's page too)
    row = _row(session, token)
    current = store.current_report(session, row)
    final = current is not None and row.status in FINAL_STATUSES
    lesson = str((current.report or {}).get("language") or "zh") if final and current is not None else "zh"
    language = student_language(lang, row.language, row.body, lesson)
    report = None
    if final and current is not None:  # no seeds, no harness frames, in `language` (service/student_view.py)
        report = StudentReport.model_validate(student_report(current.report, language))
    return FeedbackView(status=row.status, exercise=row.exercise_id, report=report, language=language)


# --- The hint ladder (service/hints.py) ----------------------------------------------------------

_LEVELS_ZH, _LEVELS_EN = hint_ladder.LEVEL_NAMES["zh"], hint_ladder.LEVEL_NAMES["en"]


class HintLevel(BaseModel):
    diagnosis: str = Field(description="the diagnosis id whose ladder it is, or `general`")
    level: int = Field(description=", ".join(  # the levels' names: hints.level.* in the catalogue
        f"{n} {zh} ({en})" for n, (zh, en) in enumerate(zip(_LEVELS_ZH, _LEVELS_EN), 1)))
    name: str = Field(description="the level's name in the student's language")
    text: str
    cost: float = Field(description="points the course's policy charges for it (0: none)")
    taken_at: UTCDateTime


class HintLadder(BaseModel):
    diagnosis: str
    levels: int = hint_ladder.LEVELS
    taken: int = Field(description="levels given so far")
    next_level: int | None = Field(description="the level a request gives next (none: all given)")


class HintsView(BaseModel):
    language: Literal["zh", "en"]
    cost_per_level: float | None = Field(description="the course's point cost per level (none: hints are free)")
    ladders: list[HintLadder] = Field(description="one per diagnosis of the report that has a ladder, else `general`; "
                                                  "empty until the submission is graded")
    taken: list[HintLevel] = Field(description="every level given, oldest first (never one not asked for)")


class HintRequest(BaseModel):
    model_config = {"extra": "forbid"}
    diagnosis: str | None = Field(None, max_length=100, description="which ladder (default: the first offered)")


def _exercise_root(request: Request, exercise_id: str):
    try:
        return request.app.state.grader_catalog.get(exercise_id).root
    except ExerciseNotFound:
        return None


def _hints_view(session, request: Request, row: Submission, lang: str | None) -> HintsView:
    state = hint_ladder.ladders(session, row, _exercise_root(request, row.exercise_id))
    current = store.current_report(session, row)
    lesson = str((current.report or {}).get("language") or "zh") if current is not None else "zh"
    language = student_language(lang, row.language, row.body, lesson)
    shown = hint_ladder.shown(state.rows, state.hints, language)
    return HintsView(
        language=language,
        cost_per_level=state.cost,
        ladders=[HintLadder(diagnosis=d, taken=sum(h.diagnosis == d for h in state.rows),
                            next_level=state.next_level(d))
                 for d in state.offered],
        taken=[HintLevel(diagnosis=s.diagnosis, level=s.level, name=s.name, text=s.text, cost=s.cost,
                         taken_at=r.created_at) for s, r in zip(shown, state.rows, strict=True)])


@router.get("/{token}/hints", response_model=HintsView,
            responses={404: error("no such feedback link"), 503: DATABASE_UNAVAILABLE})
def hints(token: str, request: Request, session: SessionDep,
          lang: Literal["zh", "en"] | None = Query(None, description="the language to read them in")) -> HintsView:
    """The hint ladders this submission offers and the levels already given (none is shown before
    it is asked for). The policy's cost per level and the levels taken are read from one snapshot."""
    one_snapshot(session)
    return _hints_view(session, request, _row(session, token), lang)


@router.post("/{token}/hints", response_model=HintsView, status_code=201,
             responses={404: error("no such feedback link"), 409: error("not graded yet, or every level given"),
                        **BODY_ERRORS, 422: error("no such ladder for this submission", model=ValidationErrorBody),
                        503: DATABASE_UNAVAILABLE})
def take_hint(token: str, request: Request, session: SessionDep,
              body: HintRequest | None = None,
              lang: Literal["zh", "en"] | None = Query(None, description="the language to read them in")) -> HintsView:
    """Give the next level of one ladder (概念区域 → 具体方向 → 关键局部 → 完整答案) and record it,
    with the cost the course's policy sets now. The feedback token is the key, as for the page."""
    row = _row(session, token)
    state = hint_ladder.ladders(session, row, _exercise_root(request, row.exercise_id))
    current = store.current_report(session, row)
    lesson = str((current.report or {}).get("language") or "zh") if current is not None else "zh"
    try:
        hint_ladder.take_next(session, row, state.hints, state.offered, body.diagnosis if body else None,
                              student_language(lang, row.language, row.body, lesson))
    except hint_ladder.HintError as exc:
        if exc.code == 422:
            raise HTTPException(422,
                                [{"loc": ["body", "diagnosis"], "msg": exc.message, "type": "value_error"}]) from None
        raise HTTPException(exc.code, exc.message) from None
    return _hints_view(session, request, row, lang)
