"""The compile warmer's run covers every specialisation class a drawn case can take
(compile_warm.covering_cases): whatever secret seed a grading draws, each of its cases has the
same Triton specialisation (widths' next power of two, divisibility by 16, == 1) as a case the
warmer compiled, so a prewarmed fill compiles nothing in its grading sandbox (bench run D)."""
from __future__ import annotations

import pytest

from service.config import REPO_ROOT
from service.exercises import ExerciseCatalog
from service.grading.compile_warm import MAX_VARIANTS_PER_CASE, _shape_class, covering_cases

CATALOG = ExerciseCatalog(REPO_ROOT / "exercises")


def _key(case):
    return case.id.split("-class")[0], _shape_class(case.cols), _shape_class(case.rows), case.stride


@pytest.mark.parametrize("exercise_id", CATALOG.ids())
def test_every_seeds_shapes_are_in_the_warmers_run(exercise_id):
    spec = CATALOG.get(exercise_id).spec
    covered = {_key(c) for c in covering_cases(spec, 0)}
    for seed in range(300):
        for case in spec.cases_for(seed):
            assert _key(case) in covered, f"seed {seed}: {case.id} at {case.rows}x{case.cols} is not compiled ahead"


@pytest.mark.parametrize("exercise_id", CATALOG.ids())
def test_the_variants_are_the_drawn_cases_at_shapes_their_draw_allows(exercise_id):
    spec = CATALOG.get(exercise_id).spec
    by_id = {c.id: c for c in spec.cases}
    extra = covering_cases(spec, 7)[len(spec.cases):]
    assert len({c.id for c in covering_cases(spec, 7)}) == len(spec.cases) + len(extra), "ids stay unique"
    for variant in extra:
        origin = by_id[variant.id.split("-class")[0]]
        assert origin.draw is not None
        lo, hi = origin.draw.cols
        assert lo <= variant.cols <= hi and variant.cols not in spec.fixed_widths
        for name, source in origin.draw.params.items():
            assert variant.params[name] == (variant.cols if source == "cols" else variant.rows)
        assert str(variant.cols) in variant.description.in_("en")
    per_case = [sum(v.id.startswith(c.id + "-class") for v in extra) for c in spec.cases]
    assert max(per_case, default=0) <= MAX_VARIANTS_PER_CASE
