"""The hint ladders in exercise data (issue 21): every exercise has one, four levels, zh and en;
lesson 6 has one per diagnosis its checks.py can report; the full answer comes only at level 4."""
from __future__ import annotations

import re

from service.config import REPO_ROOT
from service.exercises import ExerciseCatalog
from service.hints import LEVELS, hints_of, ladders_for

CATALOG = ExerciseCatalog(REPO_ROOT / "exercises")


def test_every_exercise_has_a_four_level_ladder_in_both_languages():
    for exercise_id in CATALOG.ids():
        hints = hints_of(CATALOG.get(exercise_id).root)
        assert hints is not None, f"{exercise_id}: no hints.yaml"
        for ladder in [hints.general, *hints.diagnoses.values()]:
            assert len(ladder) == LEVELS
            assert all(re.search(r"[\u4e00-\u9fff]", level.zh) and not re.search(r"[\u4e00-\u9fff]", level.en) for level in ladder)
            assert ladder[0].zh.startswith("概念区域") and ladder[3].zh.startswith("完整答案")
            assert ladder[0].en.startswith("Concept area") and ladder[3].en.startswith("Full answer")


def test_lesson6_has_a_ladder_per_diagnosis_and_keeps_the_answer_for_level_4():
    exercise = CATALOG.get("lesson06_mean_var")
    hints = hints_of(exercise.root)
    assert hints is not None
    reported = set(re.findall(r'findings\.setdefault\("([a-z_]+)"', (exercise.root / "checks.py").read_text()))
    assert reported and reported <= set(hints.diagnoses), reported - set(hints.diagnoses)
    for key, ladder in {"general": hints.general, **hints.diagnoses}.items():
        for level in ladder[:3]:
            assert "tl.where(mask," not in level.zh + level.en, f"{key}: the answer before level 4"
        assert "cols < N" in ladder[3].zh or "tl.where(mask" in ladder[3].zh, key
    assert ladders_for(hints, ["missing_remask", "nonfinite_output"]) == ["missing_remask", "nonfinite_output"]
    assert ladders_for(hints, ["something_else"]) == ["general"] and ladders_for(hints, []) == ["general"]
