"""Calibration of the written-answer scorer on the nine exercises (tests/calibration/answers/, README
there): 304 answers in students' voices, each with the band of two blind readings. The scorer is
tuned on the tuning part only; the held-out part (first byte of sha256(id) < 86) measures it.
The floors below are the rates measured on 2026-12-01 (docs/grading.md), not targets: a change
that lowers one fails here."""
from __future__ import annotations

import pytest

from service.config import REPO_ROOT
from tests.calibration.calibration import CATALOG, Entry, by_style, grade, in_band, load

ENTRIES = load()
TUNING = [e for e in ENTRIES if not e.held_out]
HELD_OUT = [e for e in ENTRIES if e.held_out]

# Measured 2026-12-01 with the scorer of this commit (before the work of issue 15: 69/104 and 122/200).
HELD_OUT_IN_BAND = 72 / 104
TUNING_IN_BAND = 160 / 200
# 18 before the generic signals of the second pass (docs/grading.md, "Calibration"); the scorer is
# deterministic, so the floor is the measured figure.
HELD_OUT_MISCONCEPTION_FLAGGED = 19  # of the held-out part's 33 misconception and keyword-stuffed answers


def _misconception_or_stuffed(entries: list[Entry]) -> list[Entry]:
    return [e for e in entries if e.data["kind"] in ("misconception", "stuffed")]


def test_the_set_is_big_and_varied_enough():
    assert len(ENTRIES) >= 150 and len({e.exercise for e in ENTRIES}) == 9
    assert len({e.id for e in ENTRIES}) == len(ENTRIES)
    assert {e.data["kind"] for e in ENTRIES} >= {"full", "partial", "wrong", "misconception", "stuffed", "empty", "off_topic"}
    assert {e.data["lang"] for e in ENTRIES} >= {"zh", "en"}
    assert {e.data["style"] for e in ENTRIES} >= {"terse", "arrow", "numeric", "verbose", "copied"}
    assert 0.25 <= len(HELD_OUT) / len(ENTRIES) <= 0.42  # the README's rule holds out about a third


def _rate(entries: list[Entry]) -> tuple[float, list[str]]:
    misses = []
    for entry in entries:
        result = grade(entry)
        if not in_band(entry, result):
            misses.append(f"{entry.id}: {result.points} not in {list(entry.band)}")
    return 1 - len(misses) / len(entries), misses


def test_held_out_in_band_rate_does_not_fall():
    share, misses = _rate(HELD_OUT)
    assert share >= HELD_OUT_IN_BAND - 1e-9, f"held-out {share:.1%} in band; misses:\n" + "\n".join(misses)


def test_tuning_in_band_rate_does_not_fall():
    share, misses = _rate(TUNING)
    assert share >= TUNING_IN_BAND - 1e-9, f"tuning {share:.1%} in band; misses:\n" + "\n".join(misses)


@pytest.mark.parametrize("entry", _misconception_or_stuffed(TUNING), ids=lambda e: e.id)
def test_tuning_misconception_and_stuffed_answers_are_flagged(entry):
    result = grade(entry)
    assert result.flags, f"{entry.id} not flagged: {entry.data['reading_1']['why']}"
    assert result.confidence < 0.7, "a flagged answer goes to a TA"


def test_held_out_misconception_and_stuffed_answers_flagged_does_not_fall():
    flagged = [e.id for e in _misconception_or_stuffed(HELD_OUT) if grade(e).flags]
    assert len(flagged) >= HELD_OUT_MISCONCEPTION_FLAGGED, flagged


@pytest.mark.parametrize("entry", [e for e in ENTRIES if e.data["kind"] in ("empty", "off_topic")], ids=lambda e: e.id)
def test_empty_and_off_topic_score_zero_without_a_flag(entry):
    result = grade(entry)
    assert result.points == 0 and not result.flags


@pytest.mark.parametrize("entry", [e for e in ENTRIES if "does not describe your code" in e.data["reading_1"].get("why", "")],
                         ids=lambda e: e.id)
def test_an_explanation_of_another_fill_earns_nothing_and_is_flagged(entry):
    result = grade(entry)
    assert result.points == 0 and "explanation_not_fill" in result.flags
    assert result.not_the_fill[0]["quote"] and result.not_the_fill[0]["fill"]


@pytest.mark.parametrize("answer", ["pad 0 → x−μ = −μ → μ² ≠ 0 → re-mask",
                                    "other=0 只对第一次 sum 安全 → 减 μ 后 pad = −μ → 平方 μ² → 第二次 sum 多 (BLOCK−N)μ² → tl.where 重新 mask"])
def test_terse_correct_arrow_answers_earn_their_points(answer):
    entry = Entry("lesson06_mean_var", {"id": "terse", "question": "q2", "answer": answer, "band": [1.5, 2.0]})
    result = grade(entry)
    assert result.points >= 1.5 and "keyword_stuffing" not in result.flags


def test_arrows_between_bare_names_are_still_keyword_stuffing():
    answer = "catastrophic cancellation -> two-pass -> float64 -> Welford -> Chan merge -> ulp limit"
    result = grade(Entry("lesson06_mean_var", {"id": "names", "question": "q3", "answer": answer, "band": [0, 1]}))
    assert "keyword_stuffing" in result.flags


@pytest.mark.parametrize("answer", ["other=0 已经把 padding 处理了，反正第二次求和前可以不加 tl.where",
                                    "The load uses other=0.0, so it is safe to skip the tl.where "
                                    "before the second sum: cleaner code."])
def test_a_step_called_skippable_is_flagged_for_a_ta(answer):
    result = grade(Entry("lesson06_mean_var", {"id": "skip", "question": "q2", "answer": answer, "band": [0, 2]}))
    assert result.flags and result.confidence < 0.7


def test_a_clause_close_to_a_misconception_label_is_flagged_without_its_patterns():
    """The label's own words, none of its patterns: flagged for a TA (no points taken), with a
    feedback line naming the misconception."""
    from service.exercises import Concept, Misconception, Question
    from service.grading.freetext import score_answer, score_text
    question = Question(id="q3", prompt="p", reference_answer="先减均值再平方。",
                        concepts=[Concept(id="mean", label="均值", patterns=["均值"])],
                        misconceptions=[Misconception(id="eps", label="以为加 eps 能解决抵消问题", patterns=["(?!)"])])
    said = "均值很大时，加一个 eps 就能解决抵消的问题。"
    result = score_answer(question, said, 2.0)
    assert result.flags == ["suspected_misconception"] and result.suspected[0]["label"] == "以为加 eps 能解决抵消问题"
    item = score_text(item_id="q3", title="Q3", max_points=2.0, question=question, answer=said)
    assert item.status == "needs_review" and "接近一个已知误区" in item.feedback
    denied = score_answer(question, "均值很大时，加 eps 不能解决抵消的问题。", 2.0)  # the clause is negated
    assert "suspected_misconception" not in denied.flags


def test_per_style_figures_cover_every_answer():
    table = by_style(ENTRIES)
    for prefix in ("style:", "kind:", "lang:"):
        rows = [row for key, row in table.items() if key.startswith(prefix)]
        assert sum(r["held_out"][1] for r in rows if "held_out" in r) == len(HELD_OUT)


@pytest.mark.parametrize("exercise_id", sorted(p.name for p in (REPO_ROOT / "exercises").iterdir() if p.is_dir()))
def test_every_exercise_example_answer_is_scored_without_a_flag(exercise_id):
    """The example submissions' answers are right: no generic signal may send them to a TA."""
    import json

    from service.grading.freetext import score_answer
    exercise = CATALOG.get(exercise_id)
    path = REPO_ROOT / "exercises" / exercise_id / "example_submission.json"
    example = json.loads(path.read_text(encoding="utf-8"))
    answers = {**example["answers"], "explanation": example["explanation"]}
    for item in (i for i in exercise.spec.rubric if i.source == "text"):
        result = score_answer(exercise.question(item.question), answers.get(item.question) or "", item.points)
        assert not result.flags, (item.question, result.flags, result.suspected)
