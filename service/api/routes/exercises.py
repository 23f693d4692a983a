"""/v1/exercises: what a student may see. Never the solution, the cases' data or the mutants."""
from __future__ import annotations

from collections import Counter
from typing import Literal

from fastapi import APIRouter, HTTPException, Query, Request

from service.api.deps import ReadKey
from service.api.schemas import KEYED_ERRORS, ExerciseSummary, ExerciseView, QuestionView, RubricPoints, error
from service.exercises import Exercise, ExerciseNotFound

router = APIRouter(prefix="/v1/exercises", tags=["exercises"], responses=KEYED_ERRORS)


Lang = Literal["zh", "en"] | None
LANG_QUERY = Query(None, description="the language of the titles and prompts (default: the exercise's own)")


def summary(ex: Exercise, lang: Lang = None) -> ExerciseSummary:
    s = ex.spec
    return ExerciseSummary(id=s.id, version=s.version, title=s.title.in_(lang or s.language), language=s.language,
                           max_points=s.max_points, pass_threshold=s.pass_threshold)


@router.get("", response_model=list[ExerciseSummary])
def list_exercises(request: Request, key: ReadKey, lang: Lang = LANG_QUERY) -> list[ExerciseSummary]:
    catalog = request.app.state.grader_catalog
    return [summary(catalog.get(i), lang) for i in catalog.ids()]


@router.get("/{exercise_id}", response_model=ExerciseView, responses={404: error("no such exercise")})
def get_exercise(request: Request, exercise_id: str, key: ReadKey, lang: Lang = LANG_QUERY) -> ExerciseView:
    try:
        if len(exercise_id) > 100:  # exercise ids are short; a longer name fails the file system (ENAMETOOLONG)
            raise ExerciseNotFound(f"unknown exercise {exercise_id[:100]!r}...")
        ex = request.app.state.grader_catalog.get(exercise_id)
    except ExerciseNotFound as exc:
        raise HTTPException(404, str(exc)) from None
    s = ex.spec
    language = lang or s.language
    return ExerciseView(
        **summary(ex, lang).model_dump(), template=ex.template, entry_point=s.entry_point,
        rubric=[RubricPoints(id=i.id, title=i.title.in_(language), points=i.points) for i in s.rubric],
        questions=[QuestionView(id=q.id, prompt=q.prompt.in_(language)) for q in s.questions],
        case_kinds={"given": 1, **Counter(c.kind for c in s.cases)},
    )
