"""The exercise folder format: mutants with a fill per blank."""
from __future__ import annotations

import pytest
from pydantic import ValidationError

from service.config import REPO_ROOT
from service.exercises import Exercise, Mutant


def test_fills_replace_every_blank_in_order():
    exercise = Exercise(REPO_ROOT / "exercises/lesson05_row_sum")
    blanks = exercise.template.count("______")
    assert blanks >= 2
    fills = [f"FILL{i}" for i in range(blanks)]
    code = exercise.mutant_code(Mutant(id="m", description="d", fills=fills, expect={"code_points": 0}))
    assert "______" not in code
    assert [code.index(f) for f in fills] == sorted(code.index(f) for f in fills)
    with pytest.raises(ValueError, match="fills for"):
        exercise.mutant_code(Mutant(id="m", description="d", fills=fills[:-1], expect={"code_points": 0}))


def test_a_mutant_has_exactly_one_source():
    with pytest.raises(ValidationError, match="exactly one of fill, fills, edits or file"):
        Mutant(id="m", description="d", fill="x", fills=["x"], expect={"code_points": 0})
