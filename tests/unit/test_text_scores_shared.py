"""A grading scores each written answer once and says it in both languages (rubric.score_items'
`text_scores`): the report in the other language must read exactly as if it had been scored
afresh in that language, on every exercise, for answers right, wrong and mixed-script; and the
answer's ASCII fast path quotes the student's own words as the per-character fold does."""
from __future__ import annotations

import json
import re

import pytest

from service.config import REPO_ROOT
from service.exercises import ExerciseCatalog
from service.grading import rubric
from service.grading.extract import extract
from service.grading.freetext import _Text, score_answer
from service.submission import Submission

CATALOG = ExerciseCatalog(REPO_ROOT / "exercises")


def _submissions(exercise_id: str) -> list[Submission]:
    exercise = CATALOG.get(exercise_id)
    example = json.loads((exercise.root / "example_submission.json").read_text(encoding="utf-8"))
    good = Submission(exercise=exercise_id, code=exercise.solution, answers=example["answers"],
                      explanation=example["explanation"], claimed_output=example.get("claimed_output", ""))
    terse = {q: "  Mask → 0 → mean OK; 否则 padding 会算进去 ->  WRONG  " for q in example["answers"]}
    odd = good.model_copy(update={"answers": terse, "explanation": "BLOCK is just a convention, any value works"})
    return [good, odd]


@pytest.mark.parametrize("exercise_id", CATALOG.ids())
def test_a_shared_score_says_the_same_as_scoring_again(exercise_id):
    exercise = CATALOG.get(exercise_id)
    for submission in _submissions(exercise_id):
        fills = extract(exercise.template, submission.code).fill_sources
        shared: dict = {}
        first = rubric.score_items(exercise, submission, [], not_run_reason=None, diagnoses=[], fills=fills,
                                   language="zh", text_scores=shared)
        assert shared, "the text items' scores were kept for the other language"
        reused = rubric.score_items(exercise, submission, [], not_run_reason=None, diagnoses=[], fills=fills,
                                    language="en", text_scores=shared)
        afresh = rubric.score_items(exercise, submission, [], not_run_reason=None, diagnoses=[], fills=fills,
                                    language="en")
        assert [i.model_dump() for i in reused] == [i.model_dump() for i in afresh]
        assert [i.points for i in first] == [i.points for i in afresh]


@pytest.mark.parametrize("answer", ["  Padding lanes: x - mean = -mean, so (x-mean)^2 != 0 -> mask again.  ",
                                    "MASK\tkeeps\nthe  tail", "a \t b\n\n \n c", "", "   ", "x"])
def test_ascii_answers_fold_and_quote_like_every_other_answer(answer):
    text = _Text.of(answer)
    # the per-character fold, as for non-ASCII text: character i of the answer stays character i,
    # except that a run of white space is read as one space, or as one blank line (folding._SPACE_RUN)
    runs = re.sub(r"[^\S\n]{2,}", " ", re.sub(r"\n(?:[^\S\n]*\n)+", "\n\n", answer.lower()))
    assert str(text) == runs.strip()
    assert text.offsets is not None and len(text.offsets) == len(text) + 1
    assert all(answer[o].lower() == c or (c.isspace() and answer[o].isspace()) for o, c in zip(text.offsets, str(text)))


def test_a_shared_score_is_not_changed_by_the_report_that_used_it():
    exercise = CATALOG.get("lesson06_mean_var")
    question = exercise.question("explanation")
    result = score_answer(question, question.reference_answer, 2.0, fills=["mask"])
    flags = list(result.flags)
    items = rubric.score_items(exercise, _submissions("lesson06_mean_var")[0], [], not_run_reason=None,
                               diagnoses=[], fills=["mask"], language="zh",
                               text_scores={i.id: result for i in exercise.spec.rubric if i.question == "explanation"})
    for item in items:
        item.evidence.get("flags", []).append("written-by-a-later-step")
    assert result.flags == flags


def _calibration_submissions(exercise_id: str) -> list[Submission]:
    """Submissions built from the calibration answers of the exercise's questions (tuning part: a
    third of the held-out rule's ids), each once with the reference solution's code and once with
    the first wrong mutant's: whatever the answers say, scoring them ahead must not change a point."""
    from tests.calibration.calibration import load

    exercise = CATALOG.get(exercise_id)
    example = json.loads((exercise.root / "example_submission.json").read_text(encoding="utf-8"))
    wrong = next((m for m in exercise.mutants if m.id.startswith("wrong.")), None)
    codes = [exercise.solution] + ([exercise.mutant_code(wrong)] if wrong is not None else [])
    entries = [e for e in load() if e.exercise == exercise_id and not e.held_out and e.data.get("answer")]
    submissions = []
    for index, entry in enumerate(entries[::8]):  # every eighth: each question and kind, in a few seconds
        answers = {**example["answers"]}
        explanation = example["explanation"]
        if entry.data["question"] == rubric.EXPLANATION_QUESTION:
            explanation = entry.data["answer"]
        else:
            answers[entry.data["question"]] = entry.data["answer"]
        submissions.append(Submission(exercise=exercise_id, code=codes[index % len(codes)], answers=answers,
                                      explanation=explanation, claimed_output=""))
    return submissions


@pytest.mark.parametrize("exercise_id", CATALOG.ids())
def test_answers_scored_ahead_of_the_run_score_as_after_it(exercise_id):
    """pipeline._answers_ahead scores the written answers while the sandbox runs
    (rubric.score_answers_ahead); score_items reuses each where it is what it would score now. The
    reused items must be exactly what score_items gives without them, whether the run passed (the
    reference's fills) or not, for the reference's code and a wrong mutant's."""
    from service.grading.stated_fill import fill_scope

    exercise = CATALOG.get(exercise_id)
    reference = rubric.expression_fills(exercise.template, exercise.solution)
    reused = {"no run can change it": 0, "the run's reference as guessed": 0}
    for submission in _calibration_submissions(exercise_id) + _submissions(exercise_id):
        fills = extract(exercise.template, submission.code).fill_sources
        ahead = rubric.AnswersAhead()
        rubric.score_answers_ahead(exercise, submission, fills, ahead)
        for run_reference in (None, reference):
            for item in exercise.spec.rubric:
                if item.question is None or item.source == "cases":
                    continue
                question = exercise.question(item.question)
                scope = fill_scope(exercise.template) if item.question == rubric.EXPLANATION_QUESTION else None
                after = score_answer(question, submission.answer(item.question), item.points, fills=fills,
                                     reference_fills=run_reference, course_text=exercise.spec.course_text,
                                     scope=scope)
                if item.id in ahead.scores:
                    assert ahead.scores[item.id] == after, (item.id, submission.answer(item.question)[:80])
                    reused["no run can change it"] += 1
                elif ahead.guessed[item.id][0] == run_reference:
                    assert ahead.guessed[item.id][1] == after, (item.id, submission.answer(item.question)[:80])
                    reused["the run's reference as guessed"] += 1
        with_ahead = rubric.score_items(exercise, submission, [], not_run_reason=None, diagnoses=[], fills=fills,
                                        language="zh", ahead=ahead)
        without = rubric.score_items(exercise, submission, [], not_run_reason=None, diagnoses=[], fills=fills,
                                     language="zh")
        assert [i.model_dump() for i in with_ahead] == [i.model_dump() for i in without]
    assert all(reused.values()), reused
