"""How a new program's cases are split over parallel compile runs (service/grading/compile_parallel.py):
one case per compile-relevant shape, the given check as a unit of its calls, balanced groups."""
from __future__ import annotations

from service.config import REPO_ROOT
from service.exercises import ExerciseCatalog
from service.exercises.spec import CaseSpec
from service.grading.compile_parallel import compile_key, split_cases


def _case(case_id: str, cols: int, *, rows: int = 4, stride: int | None = None, seed: int = 1) -> CaseSpec:
    return CaseSpec(id=case_id, kind="regular", rows=rows, cols=cols, stride=stride, seed=seed,
                    description=case_id)


def test_cases_that_differ_only_in_their_values_compile_once():
    same = [_case("a", 33, seed=1), _case("b", 33, seed=2)]
    assert compile_key(same[0]) == compile_key(same[1])
    assert compile_key(_case("c", 33, stride=40)) != compile_key(same[0])
    assert compile_key(_case("d", 33, rows=5)) != compile_key(same[0])  # an int argument may be specialised on
    groups = split_cases([*same, _case("c", 33, stride=40)], groups=4)
    assert sorted(c.id for g in groups for c in g.cases) == ["a", "c"]
    assert len(groups) == 2, "no more groups than distinct shapes"


def test_the_given_check_and_the_cases_are_spread_evenly():
    cases = [_case(f"c{n}", n) for n in (1, 2, 17, 32, 33, 128, 256, 1024, 2049)]
    groups = split_cases(cases, groups=3, given_weight=2)
    assert sum(g.given for g in groups) == 1
    assert sorted(c.id for g in groups for c in g.cases) == sorted(c.id for c in cases)
    weights = [g.weight for g in groups]
    assert sum(weights) == 9 + 2 and max(weights) - min(weights) <= 1, weights
    assert [g.given for g in split_cases(cases, groups=1, given_weight=2)] == [True]


def test_lesson6_drawn_cases_split_over_four_runs():
    exercise = ExerciseCatalog(REPO_ROOT / "exercises").get("lesson06_mean_var")
    cases = exercise.spec.cases_for(12345)
    groups = split_cases(cases, groups=4, given_weight=exercise.spec.given_check.calls)
    covered = {compile_key(c) for g in groups for c in g.cases}
    assert covered == {compile_key(c) for c in cases}, "every shape the grading runs compiles in some run"
    assert len(groups) == 4 and sum(g.given for g in groups) == 1
    assert max(g.weight for g in groups) <= -(-(len(covered) + 2) // 4) + 1
