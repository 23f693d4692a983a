"""Shapes drawn from the secret seed (issue 16.2): the families, their bounds, and exact replay.
The sandbox runs of drawn cases are in tests/integration/test_drawn_shapes_and_diagnoses.py."""
from __future__ import annotations

import copy

import pytest
import yaml
from pydantic import ValidationError

from service.config import REPO_ROOT
from service.exercises import ExerciseSpec, ShapeDraw, resolve_case, shape_candidates
from service.grading.inputs import case_seed

LESSON6 = REPO_ROOT / "exercises/lesson06_mean_var"


def _spec_data() -> dict:
    data = yaml.safe_load((LESSON6 / "exercise.yaml").read_text(encoding="utf-8"))
    data["questions"] = yaml.safe_load((LESSON6 / "questions.yaml").read_text(encoding="utf-8"))["questions"]
    return data


def test_families():
    fixed = frozenset({17, 33})
    assert shape_candidates(ShapeDraw(family="prime", cols=(10, 40)), fixed) == [11, 13, 19, 23, 29, 31, 37]
    # 2^k + d with d <= 2^k / 8: 65..72 past 64, 129..144 past 128 (cut at 140 by the range)
    assert shape_candidates(ShapeDraw(family="past_pow2", cols=(60, 140)), fixed) == [*range(65, 73), *range(129, 141)]
    ragged = shape_candidates(ShapeDraw(family="ragged", cols=(16, 40)), fixed)
    assert 16 not in ragged and 32 not in ragged and 17 not in ragged and 18 in ragged


def test_replay_is_exact_and_seeds_differ():
    spec = ExerciseSpec.model_validate(_spec_data())
    first, again = spec.cases_for(123), spec.cases_for(123)
    assert [(c.id, c.rows, c.cols, c.description) for c in first] == [(c.id, c.rows, c.cols, c.description) for c in again]
    drawn = [c for c in spec.cases if c.draw is not None]
    assert {c.id for c in drawn} == {"boundary.past_pow2", "probe.ragged", "probe.wide"}
    widths = {tuple(c.cols for c in spec.cases_for(seed) if c.draw is not None) for seed in range(30)}
    assert len(widths) >= 20  # the secret seed moves the shapes, not only the data
    wide = next(c for c in spec.cases_for(7) if c.id == "probe.wide")
    assert 4096 < wide.cols <= 6144
    for description in (wide.description.zh, wide.description.en):  # filled in both languages
        assert f"N = {wide.cols}" in description and "{" not in description
    # The data seed is the same function of the secret seed as before: drawing shapes changes no data seed.
    assert case_seed(wide, 7) == case_seed(next(c for c in spec.cases if c.id == "probe.wide"), 7)


def test_params_follow_the_drawn_width():
    data = yaml.safe_load((REPO_ROOT / "exercises/puzzle_long_sum/exercise.yaml").read_text(encoding="utf-8"))
    data["questions"] = yaml.safe_load((REPO_ROOT / "exercises/puzzle_long_sum/questions.yaml").read_text(encoding="utf-8"))["questions"]
    spec = ExerciseSpec.model_validate(data)
    case = next(c for c in spec.cases_for(99) if c.id == "probe.ragged_t")
    assert case.params["T"] == case.cols and case.cols % 32 and 150 <= case.cols <= 400


def test_secret_false_draws_nothing():
    spec = ExerciseSpec.model_validate(_spec_data())
    case = next(c for c in spec.cases if c.id == "probe.ragged").model_copy(update={"secret": False})
    assert resolve_case(case, 5, spec.fixed_widths) is case


@pytest.mark.parametrize("change, message", [
    (lambda c: c.update(draw={"family": "wide", "cols": [1000, 3000]}), "must start above every fixed width"),
    (lambda c: c.update(draw={"family": "prime", "cols": [18, 30]}), "at least 8 needed"),
    (lambda c: c.update(stride=40, draw={"family": "ragged", "cols": [18, 60]}), "below the row stride"),
    (lambda c: c.update(draw={"family": "ragged", "cols": [30, 20]}), "low <= high"),
])
def test_declared_families_are_checked(change, message):
    data = copy.deepcopy(_spec_data())
    case = next(c for c in data["cases"] if c["id"] == "probe.ragged")
    change(case)
    with pytest.raises(ValidationError, match=message):
        ExerciseSpec.model_validate(data)
