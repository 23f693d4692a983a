"""The lesson's pass rule and the claim check, graded for real: lesson 6 submissions through the
bwrap sandbox on the interpreter, the report's requirements and vetoes asserted (issue 15, 1-2)."""
from __future__ import annotations

import json
import shutil

import pytest

from service.config import REPO_ROOT
from service.submission import Submission
from tests.support.backends import warm_grader

pytestmark = [pytest.mark.sandbox, pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs bubblewrap")]

EXAMPLE = json.loads((REPO_ROOT / "exercises/lesson06_mean_var/example_submission.json").read_text(encoding="utf-8"))
SEED = 151515
LESSON6_REQUIREMENTS = ["given_check", "run_output", "causal_chain.q1", "causal_chain.q2", "causal_chain.q3",
                        "correctness_boundary", "performance_tradeoff", "total", "no_blocking_veto"]


@pytest.fixture(scope="module")
def grader():
    with warm_grader("bwrap") as grader:
        yield grader


@pytest.fixture(scope="module")
def exercise(grader):
    return grader.catalog.get("lesson06_mean_var")


def submit(grader, exercise, fill: str, **fields):
    """The example's written answers (all good) with this fill and these fields."""
    data = {**EXAMPLE, "code": exercise.template.replace("______", fill, 1), **fields}
    return grader.grade(Submission.model_validate(data), secret_seed=SEED)


def requirements(report) -> dict:
    return {r.id: r for r in report.score.requirements}


def test_the_example_passes_ten_of_ten_with_every_requirement_met(grader):
    report = grader.grade(Submission.model_validate(EXAMPLE), secret_seed=SEED)
    assert report.score.total == 10 and report.score.passed and not report.score.provisional
    assert [r.id for r in report.score.requirements] == LESSON6_REQUIREMENTS
    assert all(r.met and r.title and r.message for r in report.score.requirements), report.score.requirements
    assert report.vetoes == []
    assert requirements(report)["given_check"].evidence["status"] == "passed"


@pytest.mark.parametrize("claimed", ["仅静态审查", ""])
def test_fill_true_with_good_answers_does_not_pass_because_the_given_check_fails(grader, exercise, claimed):
    report = submit(grader, exercise, "True", claimed_output=claimed)
    assert report.given_check.status == "failed"
    assert report.score.passed is False
    given = requirements(report)["given_check"]
    assert given.met is False and given.evidence["status"] == "failed" and "AssertionError" in given.evidence["output"]
    assert "给定检查" in given.message
    assert "unverified_claim" not in {v.rule for v in report.vetoes}, "an honest static review or no claim is no veto"
    run_output = requirements(report)["run_output"]
    assert run_output.met is (claimed != "")
    # The written answers are good: their requirements hold. (The explanation of `mask` over the fill
    # `True` earns nothing (issue 15.3), so the total is 7.5 here; at 8 or more the given check alone
    # would still hold the pass back.)
    assert {r.id for r in report.score.requirements if not r.met} <= {"given_check", "run_output", "total"}
    assert all(requirements(report)[f"causal_chain.{q}"].met for q in ("q1", "q2", "q3"))


@pytest.mark.parametrize("fill", ["cols < BLOCK", "cols <= N", "cols < N - 1", "cols < 17"])
def test_other_wrong_fills_with_good_answers_do_not_pass(grader, exercise, fill):
    report = submit(grader, exercise, fill, claimed_output="仅静态审查")
    assert report.score.passed is False and report.given_check.status == "failed"
    assert requirements(report)["given_check"].met is False


def test_value_based_mask_does_not_pass(grader, exercise):
    report = submit(grader, exercise, "values != 0", claimed_output="仅静态审查")
    assert report.given_check.status == "passed", "random data has no exact zeros: the given check cannot see it"
    assert report.score.passed is False
    assert requirements(report)["no_blocking_veto"].met is False
    assert {v.rule: v.status for v in report.vetoes} == {"coincidental_pass": "suspected"}


def test_a_false_all_asserts_passed_claim_is_a_confirmed_unverified_claim_with_both_texts(grader, exercise):
    claim = "All asserts passed: both assert_close calls succeeded, no output."
    report = submit(grader, exercise, "True", claimed_output=claim)
    veto = next(v for v in report.vetoes if v.rule == "unverified_claim")
    assert veto.status == "confirmed" and veto.needs_review is False
    assert veto.evidence["claimed_output"] == claim and veto.evidence["claim"] == "pass"
    assert veto.evidence["given_check"] == "failed" and "AssertionError" in veto.evidence["real_output"]
    assert veto.evidence["real_output"] == report.given_check.output[:2000]
    assert [s["text"] for s in veto.evidence["side_by_side"]] == [claim, report.given_check.output[:2000]]
    assert report.score.passed is False and requirements(report)["no_blocking_veto"].met is False


@pytest.mark.parametrize("claim", ["测试都过了，结果和参考一致", "It works: mean and var match torch.",
                                   "没有 GPU，用 TRITON_INTERPRET=1 跑的，两个断言都没触发"])
def test_success_said_in_other_words_over_the_failed_check_is_confirmed(grader, exercise, claim):
    report = submit(grader, exercise, "True", claimed_output=claim)
    veto = next(v for v in report.vetoes if v.rule == "unverified_claim")
    assert veto.status == "confirmed" and veto.evidence["claim"] == "pass"
    assert veto.evidence["given_check"] == "failed" and report.score.passed is False


def test_a_prediction_over_the_failed_check_is_no_veto_and_no_pass(grader, exercise):
    report = submit(grader, exercise, "True", claimed_output="应该能通过")
    assert "unverified_claim" not in {v.rule for v in report.vetoes}
    assert requirements(report)["given_check"].met is False and report.score.passed is False


def test_a_missing_claim_on_a_right_kernel_is_an_unmet_requirement_not_a_veto(grader, exercise):
    report = submit(grader, exercise, "mask", claimed_output="")
    assert report.vetoes == [] and report.given_check.status == "passed"
    assert report.score.total == 10 and report.score.passed is False
    unmet = [r for r in report.score.requirements if not r.met]
    assert [r.id for r in unmet] == ["run_output"]
    assert unmet[0].evidence["claim"] == "missing" and "仅静态审查" in unmet[0].message


def test_an_honest_static_review_of_a_right_kernel_passes(grader, exercise):
    report = submit(grader, exercise, "mask", claimed_output="没有 GPU，仅静态审查。")
    assert report.vetoes == [] and report.score.passed
    assert requirements(report)["run_output"].evidence["claim"] == "static_review"


def test_answers_that_only_list_terms_leave_the_chain_unmet(grader, exercise):
    answers = {**EXAMPLE["answers"], "q2": "mask other=0.0 -mean mean^2 tl.where 方差偏大 (BLOCK-N)"}
    report = submit(grader, exercise, "mask", answers=answers)
    chain = requirements(report)["causal_chain.q2"]
    assert chain.met is False and chain.evidence["item"] == "q2"
    assert report.score.passed is False
