"""The hint ladders in exercise data (issue 21): every exercise has one, four levels, zh and en;
lesson 6 has one per diagnosis its checks.py can report; the full answer comes only at level 4."""
from __future__ import annotations

import re
from pathlib import Path

from service.config import REPO_ROOT
from service.exercises import ExerciseCatalog, kit
from service.hints import LEVELS, hints_of, ladders_for
from service.messages import Catalogue

CATALOG = ExerciseCatalog(REPO_ROOT / "exercises")


def test_every_exercise_has_a_four_level_ladder_in_both_languages():
    for exercise_id in CATALOG.ids():
        hints = hints_of(CATALOG.get(exercise_id).root)
        assert hints is not None, f"{exercise_id}: no hints.yaml"
        for ladder in [hints.general, *hints.diagnoses.values()]:
            assert len(ladder) == LEVELS
            cjk = r"[\u4e00-\u9fff]"
            assert all(re.search(cjk, level.zh) and not re.search(cjk, level.en) for level in ladder)
            assert ladder[0].zh.startswith("概念区域") and ladder[3].zh.startswith("完整答案")
            assert ladder[0].en.startswith("Concept area") and ladder[3].en.startswith("Full answer")


def test_lesson6_has_a_ladder_per_diagnosis_and_keeps_the_answer_for_level_4():
    exercise = CATALOG.get("lesson06_mean_var")
    hints = hints_of(exercise.root)
    assert hints is not None
    reported = diagnosis_ids(exercise.root)
    assert reported and reported <= set(hints.diagnoses), reported - set(hints.diagnoses)
    for key, ladder in {"general": hints.general, **hints.diagnoses}.items():
        for level in ladder[:3]:
            assert "tl.where(mask," not in level.zh + level.en, f"{key}: the answer before level 4"
        assert "cols < N" in ladder[3].zh or "tl.where(mask" in ladder[3].zh, key
    assert ladders_for(hints, ["missing_remask", "nonfinite_output"]) == ["missing_remask", "nonfinite_output"]
    assert ladders_for(hints, ["something_else"]) == ["general"] and ladders_for(hints, []) == ["general"]


def diagnosis_ids(root: Path) -> set[str]:
    """The diagnosis ids an exercise can report: its messages.yaml's codes (a diagnosis's message has
    its id as code, service/exercises/kit.py `report`; dotted codes are phrases inside messages),
    and the kit's shared diagnoses its checks.py names (`kit.ROW_BLOCK_IGNORED`)."""
    ids = {code for code in Catalogue.load(root / "messages.yaml").codes if "." not in code}
    for name in re.findall(r"\bkit\.(ROW_BLOCK_IGNORED)\b", (root / "checks.py").read_text(encoding="utf-8")):
        ids.add(getattr(kit, name))
    return ids


def test_diagnosis_ids_are_the_message_codes_and_the_shared_ones_named():
    ids = diagnosis_ids(CATALOG.get("puzzle_long_sum").root)
    assert {"dropped_tail", "store_out_of_bounds", kit.ROW_BLOCK_IGNORED} <= ids
    assert not any("." in i for i in ids)


def test_every_ladder_names_a_diagnosis_its_checks_can_emit_and_every_diagnosis_has_one():
    """A ladder for an id that checks.py never reports is never offered (a typo, a renamed id); a
    diagnosis without a ladder falls back to the general one. Both are caught here, per exercise."""
    for exercise_id in CATALOG.ids():
        root = CATALOG.get(exercise_id).root
        hints = hints_of(root)
        assert hints is not None
        emitted = diagnosis_ids(root)
        assert emitted, f"{exercise_id}: no diagnosis id in messages.yaml"
        named = set(hints.diagnoses)
        assert named <= emitted, f"{exercise_id}: ladders for ids checks.py never emits: {sorted(named - emitted)}"
        assert emitted <= named, f"{exercise_id}: diagnoses without a ladder: {sorted(emitted - named)}"


def test_level_4_is_the_fix_of_one_diagnosis_not_the_whole_solution():
    """Per-diagnosis level 4 says what to change for that misconception (a line or two of it); it
    never pastes the exercise's solution file."""
    for exercise_id in CATALOG.ids():
        root = CATALOG.get(exercise_id).root
        hints = hints_of(root)
        solution = (root / "solution.py").read_text(encoding="utf-8")
        lines = [line.strip() for line in solution.splitlines() if len(line.strip()) > 30]
        for key, ladder in hints.diagnoses.items():
            for level in ladder:
                pasted = [line for line in lines if line in level.zh or line in level.en]
                assert len(pasted) <= 2, f"{exercise_id}/{key}: solution lines in a hint: {pasted}"
