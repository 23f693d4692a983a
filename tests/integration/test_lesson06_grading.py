"""Lesson 6 graded end to end in the real sandbox, once per backend (bwrap, docker), on the Triton
interpreter on CI and on the GPU where present."""
from __future__ import annotations

import json

import pytest
import yaml

from service.config import REPO_ROOT
from service.grading.validate import check_mutant, check_solution, code_points, validate_exercise
from service.report import Report
from service.submission import Submission
from tests.support.backends import sandbox_name, warm_grader

pytestmark = [pytest.mark.sandbox]

EXAMPLE = REPO_ROOT / "exercises/lesson06_mean_var/example_submission.json"
SEED = 424242


@pytest.fixture(scope="module")
def grader(sandbox_backend_name):
    with warm_grader(sandbox_backend_name, ahead=2) as grader:  # the corpus grades two at a time
        yield grader


@pytest.fixture(scope="module")
def exercise(grader):
    return grader.catalog.get("lesson06_mean_var")


@pytest.fixture(scope="module")
def corpus(grader, exercise):
    """The solution and every mutant, graded once for this module."""
    return {o.name: o for o in validate_exercise(grader, exercise, secret_seed=SEED, jobs=2)}


def test_example_submission_earns_every_code_point_without_veto(grader, sandbox_backend_name):
    report = grader.grade(Submission.model_validate_json(EXAMPLE.read_text(encoding="utf-8")), secret_seed=SEED)
    assert report.status == "graded"
    items = {i.id: i for i in report.items}
    assert sum(items[k].points for k in ("code.regular", "code.boundary", "code.explanation")) == 4
    assert items["code.regular"].status == items["code.boundary"].status == "pass"
    assert report.vetoes == [] and report.diagnoses == []
    assert report.given_check.status == "passed"
    assert all(c.passed for c in report.cases) and len(report.cases) == 1 + len(grader.catalog.get("lesson06_mean_var").spec.cases)
    assert all(items[q].status == "pass" and items[q].evidence["confidence"] >= 0.7 for q in ("q1", "q2", "q3"))
    assert report.score.total == 10 and report.score.passed and not report.score.provisional
    assert report.environment.sandbox == sandbox_name(sandbox_backend_name) and report.environment.triton


def test_solution_has_margin(corpus, exercise):
    outcome = corpus["solution"]
    assert check_solution(exercise, outcome.report) == []
    assert max(c.error_ratio for c in outcome.report.cases if c.error_ratio is not None) <= 0.1


MUTANT_IDS = [m["id"] for m in yaml.safe_load((REPO_ROOT / "exercises/lesson06_mean_var/mutants.yaml").read_text())]


@pytest.mark.parametrize("mutant_id", MUTANT_IDS)
def test_mutant_gets_its_expected_verdict(corpus, exercise, mutant_id):
    outcome = corpus[mutant_id]
    mutant = next(m for m in exercise.mutants if m.id == mutant_id)
    assert check_mutant(exercise, mutant, outcome.report) == [], outcome.report.to_json()


def test_missing_remask_is_explained_to_the_student_with_numbers(corpus):
    report = corpus["wrong.remask_missing_true"].report
    diagnosis = next(d for d in report.diagnoses if d.id == "missing_remask")
    assert "(BLOCK−N)·mean²/N" in diagnosis.message and "tl.where" in diagnosis.message
    probe = next(c for c in report.cases if c.id == "probe.large_mean")
    assert not probe.passed and probe.error_ratio > 1e6 and probe.first_mismatch.output == "var"
    boundary = next(i for i in report.items if i.id == "code.boundary")
    assert boundary.points == 0 and "missing_remask" in boundary.evidence["diagnoses"]
    assert "probe.large_mean" in boundary.feedback


def test_edit_outside_blank_is_reported_not_run(corpus):
    report = corpus["edit.divide_mean_by_block"].report
    (veto,) = report.vetoes
    assert veto.rule == "modified_outside_blank" and veto.status == "confirmed"
    assert "N/BLOCK" in veto.evidence["edits"][0]["hint"]
    assert report.program.fills == ["mask"] and all(c.passed for c in report.cases), "the canonical program ran"
    assert not report.score.passed


def test_refused_fill_runs_nothing(corpus):
    report = corpus["cheat.import"].report
    assert not report.program.ran and "tl.*" in report.program.not_run_reason
    assert report.environment.torch == "" and "sandbox_s" not in report.timing


def test_same_secret_seed_replays_the_same_run(grader, corpus, exercise):
    first = corpus["wrong.remask_missing_true"].report
    again = grader.grade(Submission(exercise=exercise.id, code=exercise.mutant_code(
        next(m for m in exercise.mutants if m.id == "wrong.remask_missing_true"))), secret_seed=SEED)
    assert again.seeds == first.seeds
    assert [(c.id, c.passed, c.max_abs_err) for c in again.cases] == [(c.id, c.passed, c.max_abs_err) for c in first.cases]


def test_secret_seed_changes_the_hidden_data(grader, exercise, corpus):
    other = grader.grade(Submission(exercise=exercise.id, code=exercise.solution), secret_seed=SEED + 1)
    first = corpus["solution"].report
    assert other.seeds.secret != first.seeds.secret
    changed = [k for k, v in other.seeds.cases.items() if v != first.seeds.cases[k]]
    assert changed == list(first.seeds.cases), "every case mixes in the secret seed"
    assert code_points(other, exercise) == 3


def test_report_round_trips_through_its_schema(corpus):
    report = corpus["wrong.value_mask_nonzero"].report
    data = json.loads(report.to_json())
    assert data["schema"] == "kernelgrade.report/v1"
    assert Report.model_validate(data) == report
    assert {v["rule"]: v["status"] for v in data["vetoes"]} == {"coincidental_pass": "suspected"}
    assert data["score"]["provisional"] is True and data["score"]["passed"] is False


def _answer(exercise, fill: str, **fields) -> Submission:
    return Submission(exercise=exercise.id, code=exercise.template.replace("______", fill, 1), **fields)


def test_claimed_pass_over_a_failing_check_is_a_confirmed_unverified_claim(grader, exercise):
    report = grader.grade(_answer(exercise, "True", claimed_output="两个 assert_close 都通过了，没有输出。"), secret_seed=SEED)
    veto = next(v for v in report.vetoes if v.rule == "unverified_claim")
    assert veto.status == "confirmed" and not veto.needs_review, "we ran this program: the contradiction is a fact"
    assert report.given_check.status == "failed" and "AssertionError" in veto.evidence["real_output"]
    assert not report.score.passed


def test_honest_static_review_is_not_a_veto(grader, exercise):
    report = grader.grade(_answer(exercise, "True", claimed_output="没有 GPU，仅静态审查。"), secret_seed=SEED)
    assert "unverified_claim" not in {v.rule for v in report.vetoes}


def test_right_code_with_a_wrong_causal_chain_is_a_suspected_coincidental_pass(grader, exercise):
    answers = {"q2": "其实不会污染：load 时 other=0.0，padding 全是 0，0 的平方还是 0，对方差没有贡献。"}
    report = grader.grade(_answer(exercise, "mask", answers=answers), secret_seed=SEED)
    assert all(c.passed for c in report.cases)
    veto = next(v for v in report.vetoes if v.rule == "coincidental_pass")
    assert veto.status == "suspected" and veto.evidence["misconceptions"][0]["item"] == "q2"
    q2 = next(i for i in report.items if i.id == "q2")
    assert q2.points == 0 and q2.status == "needs_review" and "误区" in q2.feedback


def test_a_fill_written_as_several_arguments_is_refused_without_a_veto(grader, exercise):
    # The whole argument list pasted into the blank, tl.where(mask, x, 0.0, x, 0.0): the student's text
    # for the blank spans commas. Before, `mask` was the fill and the rest an edit outside the blank
    # (veto modified_outside_blank, a tampering suspicion sent to a TA), and tl.where(mask, x, 0.0) ran.
    fill = "mask, (values - mean) * (values - mean), 0.0"
    report = grader.grade(_answer(exercise, fill, language="en"), secret_seed=SEED)
    assert report.status == "graded" and report.vetoes == [] and report.program.edits == []
    assert not report.program.ran and report.program.fills == [fill]
    assert report.program.not_run_reason.startswith(f"Blank 1 takes one expression; you wrote 3 arguments there: `{fill}`")
    assert code_points(report, exercise) == 0
    assert all(not c.passed for c in report.cases) and report.given_check.status == "not_run"
