"""The named correctness boundary and performance trade-off of the pass rule, graded for real: lesson 6
and outer add submissions through the bwrap sandbox on the interpreter, the report's requirements
asserted (issue 15.1; the sentence rules: service/grading/named.py, tests/unit/test_named_ideas.py)."""
from __future__ import annotations

import json
import shutil

import pytest

from service.config import REPO_ROOT
from service.submission import Submission
from tests.support.backends import warm_grader

pytestmark = [pytest.mark.sandbox, pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs bubblewrap")]

SEED = 151515


def example(exercise_id: str) -> dict:
    return json.loads((REPO_ROOT / "exercises" / exercise_id / "example_submission.json").read_text("utf-8"))


@pytest.fixture(scope="module")
def grader():
    with warm_grader("bwrap") as grader:
        yield grader


def requirements(report) -> dict:
    return {r.id: r for r in report.score.requirements}


def test_lesson6_example_names_a_boundary_and_a_two_sided_tradeoff(grader):
    report = grader.grade(Submission.model_validate(example("lesson06_mean_var")), secret_seed=SEED)
    found = requirements(report)
    assert report.score.passed and found["correctness_boundary"].met and found["performance_tradeoff"].met
    sides = found["performance_tradeoff"].evidence["sides"]
    assert sides["gain"] == "只读一次" and sides["cost"].startswith("代价是整行要放进"), sides
    assert "换来" in found["performance_tradeoff"].message and "代价" in found["performance_tradeoff"].message


def test_lesson6_a_misconception_and_a_one_sided_tradeoff_name_neither(grader):
    """The right kernel, but the only boundary sentence states a misconception (tl.sum skips masked
    lanes) and the only trade-off sentence names its gain alone."""
    data = {**example("lesson06_mean_var"), "explanation": "填空处填 mask，也就是 cols < N。",
            "answers": {"q1": "每行一个 program，先求均值再求方差，最后写回 means 和 variances。",
                        "q2": "tl.sum 会自动跳过被 mask 的 lane，所以 N < BLOCK 时不会出错。",
                        "q3": "两个 pass 都在片上寄存器里完成，只读一次矩阵。"}}
    report = grader.grade(Submission.model_validate(data), secret_seed=SEED)
    found = requirements(report)
    assert report.given_check.status == "passed" and report.score.passed is False
    boundary, tradeoff = found["correctness_boundary"], found["performance_tradeoff"]
    assert boundary.met is False and "误区" in boundary.message and "跳过被 mask 的 lane" in boundary.message
    assert [r["why"] for r in boundary.evidence["rejected"]] == ["misconception"]
    assert tradeoff.met is False and "只说了好处" in tradeoff.message and "只读一次矩阵" in tradeoff.message
    assert [r["why"] for r in tradeoff.evidence["rejected"]] == ["no_cost"]
    # said again in English in the report's translation
    english = report.translations["en"].requirements
    assert "misconception" in english["correctness_boundary"].message
    assert "names the gain only" in english["performance_tradeoff"].message


def test_outer_add_example_passes_with_its_tradeoff(grader):
    report = grader.grade(Submission.model_validate(example("puzzle_outer_add")), secret_seed=SEED)
    found = requirements(report)
    assert report.score.passed, [(r.id, r.message) for r in report.score.requirements if not r.met]
    assert found["performance_tradeoff"].evidence["sides"]["gain"] == "只加载 B0 + B1"


def test_outer_add_the_2d_grid_described_is_no_tradeoff(grader):
    """The audit's case: the explanation and Q1 describe the 2-D grid (and the example's trade-off
    sentence is gone): the trade-off is not met, the rest of the example still is."""
    data = example("puzzle_outer_add")
    data["explanation"] = data["explanation"][:data["explanation"].index("二维 grid 的好处")]
    report = grader.grade(Submission.model_validate(data), secret_seed=SEED)
    found = requirements(report)
    tradeoff = found["performance_tradeoff"]
    assert tradeoff.met is False and report.score.passed is False
    assert {r.id for r in report.score.requirements if not r.met} == {"performance_tradeoff"}
    assert {r["why"] for r in tradeoff.evidence["rejected"]} <= {"one_sided", "no_cost", "no_gain"}
    assert "二维 grid" in " ".join(r["quote"] for r in tradeoff.evidence["rejected"])
    assert "性能取舍" in tradeoff.message and found["correctness_boundary"].met
