"""The speed phase's input is drawn from the exercise's fixed public seed, so run_program draws it once
per process and keeps it read-only (service/grading/run.speed_arrays): the same arrays as a fresh draw,
never changed by a run, and drawn anew for an edited exercise."""
from __future__ import annotations

import numpy as np
import pytest

from service.config import REPO_ROOT
from service.exercises import ExerciseCatalog
from service.grading import run

CATALOG = ExerciseCatalog(REPO_ROOT / "exercises")
TIMED = [eid for eid in CATALOG.ids() if CATALOG.get(eid).spec.speed is not None]


@pytest.mark.parametrize("exercise_id", TIMED)
def test_the_speed_input_is_drawn_once_and_is_the_fresh_draw(exercise_id):
    exercise = CATALOG.get(exercise_id)
    speed = exercise.spec.speed
    kept = run.speed_arrays(exercise)
    assert run.speed_arrays(exercise) is kept  # drawn once
    fresh = exercise.make_inputs(speed.case(), speed.seed)
    assert sorted(kept) == sorted(fresh)
    for name, array in fresh.items():
        np.testing.assert_array_equal(kept[name], array)
        assert not kept[name].flags.writeable
        with pytest.raises(ValueError):
            kept[name][...] = 0  # shared by every run: read-only


def test_an_edited_exercise_draws_its_speed_input_anew():
    exercise = CATALOG.get(TIMED[0])
    kept = run.speed_arrays(exercise)
    speed = exercise.spec.speed
    edited_spec = exercise.spec.model_copy(update={"speed": speed.model_copy(update={"seed": speed.seed + 1})})
    edited = type(exercise).__new__(type(exercise))
    edited.__dict__.update(exercise.__dict__)
    edited.__dict__["spec"] = edited_spec
    other = run.speed_arrays(edited)
    assert other is not kept
    assert not all(np.array_equal(other[k], kept[k]) for k in kept)
