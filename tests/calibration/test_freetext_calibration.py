"""Calibration of the free-text grader on lesson 6: answers written in students' voices, each with
the score band a careful TA would give and whether a TA must see it (tests/calibration/*.yaml,
written without looking at the grader). The bar: at least 90% in their band; every stuffed or
misconception answer flagged; no empty or off-topic answer flagged."""
from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from service.config import REPO_ROOT
from service.exercises import ExerciseCatalog
from service.grading.freetext import score_answer

ANSWERS = yaml.safe_load((Path(__file__).parent / "lesson06_answers.yaml").read_text(encoding="utf-8"))
EXERCISE = ExerciseCatalog(REPO_ROOT / "exercises").get("lesson06_mean_var")
POINTS = {item.question: item.points for item in EXERCISE.spec.rubric if item.source == "text"}


def grade(entry: dict):
    return score_answer(EXERCISE.question(entry["question"]), entry["answer"] or "", POINTS[entry["question"]])


def test_the_set_is_big_and_varied_enough():
    assert len(ANSWERS) >= 40
    assert {e["kind"] for e in ANSWERS} >= {"full", "partial", "wrong", "misconception", "stuffed", "empty", "off_topic"}
    assert {e["lang"] for e in ANSWERS} >= {"zh", "en"}


def test_at_least_90_percent_land_in_their_band():
    misses = []
    for entry in ANSWERS:
        result = grade(entry)
        low, high = entry["band"]
        if not low <= result.points <= high:
            misses.append(f"{entry['id']}: {result.points} not in {entry['band']} ({entry['why']})")
    share = 1 - len(misses) / len(ANSWERS)
    assert share >= 0.9, f"{share:.0%} in band; misses:\n" + "\n".join(misses)


@pytest.mark.parametrize("entry", [e for e in ANSWERS if e["kind"] in ("stuffed", "misconception")], ids=lambda e: e["id"])
def test_stuffed_and_misconception_answers_are_flagged(entry):
    result = grade(entry)
    assert result.flags, f"{entry['id']} not flagged: {entry['why']}"
    assert result.confidence < 0.7, "a flagged answer goes to a TA"


@pytest.mark.parametrize("entry", [e for e in ANSWERS if e["kind"] in ("empty", "off_topic")], ids=lambda e: e["id"])
def test_empty_and_off_topic_score_zero_without_a_flag(entry):
    result = grade(entry)
    assert result.points == 0 and not result.flags
