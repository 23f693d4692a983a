"""The course text an exercise draws on (exercises/<id>/course_text.yaml): the passages of its seed,
loaded and checked with the rest of the folder (the written-answer scorer flags copies of them:
tests/unit/test_freetext_copies.py)."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml
from pydantic import ValidationError

from service.config import REPO_ROOT
from service.exercises import Exercise, ExerciseCatalog
from service.exercises.spec import COURSE_MAX_CHARS
from service.grading import folding, freetext

CATALOG = ExerciseCatalog(REPO_ROOT / "exercises")
LESSON = CATALOG.get("lesson06_mean_var")


@pytest.mark.parametrize("exercise_id", CATALOG.ids())
def test_every_exercise_loads_the_course_passages_it_draws_on(exercise_id):
    spec = CATALOG.get(exercise_id).spec
    assert spec.course_text, "course_text.yaml: the passages of the seed the exercise draws on"
    assert sum(len(p.text) for p in spec.course_text) <= COURSE_MAX_CHARS
    for passage in spec.course_text:
        assert passage.source and passage.source.startswith("shared/seeds/"), passage.id
        assert passage.title.zh and passage.title.en, passage.id


def _seed(source: str) -> Path | None:
    """The seed where this checkout has it (shared/ beside the repository or above a worktree)."""
    return next((root / source for root in (REPO_ROOT, *REPO_ROOT.parents) if (root / source).is_file()), None)


@pytest.mark.parametrize("exercise_id", CATALOG.ids())
def test_the_passages_are_quoted_from_their_seed(exercise_id):
    """The passages are the seed's words (formulas rendered, code left out, a code cell's comments joined):
    most grams of each are in its seed (0.75 to 1.0 measured). Skipped where the seeds are not beside this
    checkout (they are outside the repository)."""
    for passage in CATALOG.get(exercise_id).spec.course_text:
        assert passage.source is not None
        seed = _seed(passage.source)
        if seed is None:
            pytest.skip(f"{passage.source} is not beside this checkout")
        mine = freetext._grams(folding._fold_answer(passage.text))
        theirs = freetext._grams(folding._fold_answer(seed.read_text(encoding="utf-8")))
        assert len(mine & theirs) >= 0.7 * len(mine), passage.id


def _folder(tmp_path: Path, course: object) -> Path:
    root = tmp_path / "lesson06_mean_var"
    shutil.copytree(LESSON.root, root)
    (root / "course_text.yaml").write_text(yaml.safe_dump(course, allow_unicode=True), encoding="utf-8")
    return root


PASSAGE = {"id": "p", "title": {"zh": "第 6 课 · 某节", "en": "Lesson 6 · a section"}, "text": "在 Triton 内核中，" * 4}


@pytest.mark.parametrize(("course", "says"), [
    ({"passages": [PASSAGE, PASSAGE]}, "unique"),
    ({"passages": [{**PASSAGE, "text": "太短"}]}, "at least 20 characters"),
    ({"passages": [{**PASSAGE, "title": "only one language", "extra": 1}]}, "extra"),
    ({"passages": [{**PASSAGE, "id": f"p{i}", "text": "长" * 30_000} for i in range(3)]}, "not the whole seed"),
])
def test_the_loader_refuses_a_course_file_that_breaks_the_schema(tmp_path, course, says):
    with pytest.raises(ValidationError, match=says):
        Exercise(_folder(tmp_path, course))


def test_a_passage_without_a_source_is_quoted_from_the_exercises_seed(tmp_path):
    exercise = Exercise(_folder(tmp_path, {"passages": [PASSAGE, {**PASSAGE, "id": "q", "source": "elsewhere.txt"}]}))
    assert [p.source for p in exercise.spec.course_text] == [exercise.spec.source, "elsewhere.txt"]
