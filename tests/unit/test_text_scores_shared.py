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
    for index, entry in enumerate(entries[::4]):  # every fourth: each question and kind, in a few seconds
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
    """pipeline._answers_ahead scores, while the sandbox runs, the answers whose score cannot depend on
    the run (rubric.score_answers_ahead); score_items then reuses them. They must be exactly what
    score_items gives without them, with the run's fills and with the reference's (a passing run)."""
    exercise = CATALOG.get(exercise_id)
    submissions = _calibration_submissions(exercise_id) + _submissions(exercise_id)
    ahead_items = 0
    for submission in submissions:
        fills = extract(exercise.template, submission.code).fill_sources
        ahead: dict = {}
        rubric.score_answers_ahead(exercise, submission, ahead)
        ahead_items = max(ahead_items, len(ahead))
        assert rubric.EXPLANATION_QUESTION not in {i.question for i in exercise.spec.rubric if i.id in ahead}
        for reference in (None, rubric.expression_fills(exercise.template, exercise.solution)):
            for item in exercise.spec.rubric:
                if item.id not in ahead:
                    continue
                question = exercise.question(item.question)
                after = score_answer(question, submission.answer(item.question), item.points, fills=fills,
                                     reference_fills=reference, course_text=exercise.spec.course_text)
                assert ahead[item.id] == after, (item.id, submission.answer(item.question)[:80])
        with_ahead = rubric.score_items(exercise, submission, [], not_run_reason=None, diagnoses=[], fills=fills,
                                        language="zh", text_scores=dict(ahead))
        without = rubric.score_items(exercise, submission, [], not_run_reason=None, diagnoses=[], fills=fills,
                                     language="zh")
        assert [i.model_dump() for i in with_ahead] == [i.model_dump() for i in without]
    assert ahead_items >= 1, "every exercise has a written answer whose score does not depend on the run"
