"""The explanation is scored against the fill that was submitted, and a right kernel explained with a
wrong causal chain is a suspected coincidental pass (issue 15, item 3): real gradings of lesson 6
in the bwrap sandbox, on the Triton interpreter (or the GPU where present)."""
from __future__ import annotations

import json

import pytest

from sandbox.contract import DeviceMode
from service.config import REPO_ROOT
from service.submission import Submission
from tests.support.backends import warm_grader

pytestmark = [pytest.mark.sandbox]

SEED = 151515
MASK_EXPLANATION = ("这里要填 mask。因为 padding lane 在减 mean 之后变成 -mean，平方以后是 mean^2，不 re-mask 的话第二次 "
                    "tl.sum 会多加 (BLOCK-N)*mean^2，variance 偏大。")
GOOD_ANSWERS = {
    "q1": "输入：mask = cols < N，load 时 other=0.0 把 padding 填成 0，所以 sum 不受影响；状态：mean = sum / N，"
          "减去均值后 padding 变成 −mean，平方后是 mean²，所以用 tl.where 重新 mask 清零，再求和除以 N 得到方差；"
          "输出：tl.store 写回 mean 和 var。",
    "q2": "other=0.0 只对第一次求和是单位元。中心化后 padding lane 变成 0 − μ = −μ，平方后为 μ²，所以第二次求和多加 "
          "(BLOCK − N)μ²，方差偏大，因此要用 tl.where 重新施加掩码。",
    "q3": "单遍公式 E[x²] − E[x]² 在大均值小方差时两个大数相减，发生灾难性抵消；两遍算法先减均值再平方就避开了，"
          "还可以把累加提升到 float64，或用 Welford 并按 Chan 公式合并 (n, μ, M2)。",
}


@pytest.fixture(scope="module")
def grader():
    with warm_grader("bwrap") as grader:
        yield grader


@pytest.fixture(scope="module")
def exercise(grader):
    return grader.catalog.get("lesson06_mean_var")


def _submit(grader, exercise, fill: str, *, explanation: str, answers: dict[str, str] | None = None):
    submission = Submission(exercise=exercise.id, code=exercise.template.replace("______", fill, 1),
                            explanation=explanation, answers=answers or GOOD_ANSWERS, claimed_output="仅静态审查")
    report = grader.grade(submission, secret_seed=SEED)
    assert report.status == "graded"
    return report, {i.id: i for i in report.items}


def test_explaining_mask_over_a_true_fill_earns_nothing_and_quotes_both(grader, exercise):
    report, items = _submit(grader, exercise, "True", explanation=MASK_EXPLANATION)
    item = items["code.explanation"]
    assert item.points == 0 and item.status == "needs_review"
    assert "explanation_not_fill" in item.evidence["flags"]
    mismatch = item.evidence["not_the_fill"][0]
    assert mismatch["fill"] == "True" and "mask" in mismatch["quote"]
    # In the report's language only (the answers are Chinese): an English one says it in English (test_report_language)
    assert "你的解释与你提交的代码不符" in item.feedback and "Your explanation does not describe" not in item.feedback
    assert "`True`" in item.feedback and mismatch["quote"] in item.feedback
    assert report.program.fills == ["True"] and report.score.provisional


def test_the_same_explanation_over_the_mask_fill_earns_the_point(grader, exercise):
    report, items = _submit(grader, exercise, "cols < N", explanation=MASK_EXPLANATION)
    item = items["code.explanation"]
    assert item.points == 1 and item.evidence["not_the_fill"] == [] and "explanation_not_fill" not in item.evidence["flags"]
    assert all(c.passed for c in report.cases)


@pytest.mark.parametrize("fill", ["~(cols >= N)", "tl.arange(0, BLOCK) < N"])
def test_explaining_the_mask_over_a_fill_that_behaves_as_it_earns_the_point(grader, exercise, fill):
    """Written otherwise, the same mask by position: every case passes, so the explanation of the
    reference's `mask` describes this code (only an expression blank is judged by what it does)."""
    report, items = _submit(grader, exercise, fill, explanation=MASK_EXPLANATION)
    assert all(c.passed for c in report.cases) and report.diagnoses == []
    item = items["code.explanation"]
    assert item.points == 1 and item.evidence["not_the_fill"] == [], item.feedback


def test_explaining_the_mask_over_a_near_miss_fill_is_still_a_mismatch(grader, exercise):
    report, items = _submit(grader, exercise, "cols <= N", explanation=MASK_EXPLANATION)
    assert not all(c.passed for c in report.cases)
    item = items["code.explanation"]
    assert item.points == 0 and item.evidence["not_the_fill"][0]["fill"] == "cols <= N"


# The fill the explanation says it wrote (freetext._stated_not_the_fill): another fill than the one
# submitted earns nothing, flagged, the explanation's words and the fill side by side.
CHAIN = "padding lane 减去 mean 后变成 −mean，平方后是 mean²，所以第二次求和前要用 tl.where 重新清零，否则方差偏大。"


def test_an_explanation_giving_another_fill_than_the_submitted_one_earns_nothing(grader, exercise):
    report, items = _submit(grader, exercise, "mask", explanation="我填的是 `cols < BLOCK`。" + CHAIN)
    assert all(c.passed for c in report.cases)  # the code is right; its explanation is of other code
    item = items["code.explanation"]
    assert item.points == 0 and item.status == "needs_review" and "explanation_not_fill" in item.evidence["flags"]
    (mismatch,) = item.evidence["not_the_fill"]
    assert mismatch["claim"] == "stated_fill" and mismatch["fill"] == "mask" and mismatch["stated"] == "cols < BLOCK"
    assert "cols < BLOCK" in mismatch["quote"]
    assert "你的解释与你提交的代码不符" in item.feedback and mismatch["quote"] in item.feedback and "`mask`" in item.feedback
    assert report.score.provisional


def test_an_english_explanation_giving_another_fill_is_told_in_english(grader, exercise):
    answers = {k: "See the lesson." for k in GOOD_ANSWERS}
    report, items = _submit(grader, exercise, "cols < N", answers=answers,
                            explanation="The fill is `offs < N`: after centring the padding lanes hold -mean, squared "
                                        "mean^2, so they are zeroed again before the second sum.")
    assert report.language == "en"
    item = items["code.explanation"]
    assert item.points == 0 and "explanation_not_fill" in item.evidence["flags"]
    assert "Your explanation does not describe your code" in item.feedback
    assert "offs < N" in item.feedback and "`cols < N`" in item.feedback


@pytest.mark.parametrize("explanation", ["我填的是 `cols < N`。" + CHAIN,  # the template's `mask = cols < N`
                                         "一开始填的是 `cols < BLOCK`，后来改成 mask。" + CHAIN])
def test_an_honest_explanation_of_the_submitted_fill_stays_unflagged(grader, exercise, explanation):
    _, items = _submit(grader, exercise, "mask", explanation=explanation)
    item = items["code.explanation"]
    assert item.points == 1 and item.evidence["not_the_fill"] == [] and item.evidence["flags"] == [], item.feedback


def test_an_honest_explanation_of_a_true_fill_is_not_a_mismatch(grader, exercise):
    _, items = _submit(grader, exercise, "True", explanation="填 True：load 时 other=0.0 就够了，padding 已经是 0，不需要第二次 mask。")
    item = items["code.explanation"]
    assert item.points == 0 and item.evidence["not_the_fill"] == []
    assert "misconception" in item.evidence["flags"]


def test_a_right_kernel_whose_q2_blames_dividing_by_block_is_a_suspected_coincidental_pass(grader, exercise):
    answers = {**GOOD_ANSWERS, "q2": "The variance comes out wrong because the kernel divides by BLOCK instead of N, "
                                     "so the padded lanes are counted in the denominator."}
    report, items = _submit(grader, exercise, "mask",
                            explanation="mask：padding lane 减 mean 后是 −mean，平方 mean²，所以第二次求和前要用 tl.where 清零。",
                            answers=answers)
    assert all(c.passed for c in report.cases) and report.given_check.status == "passed"
    veto = next(v for v in report.vetoes if v.rule == "coincidental_pass")
    assert veto.status == "suspected" and veto.needs_review
    stated = veto.evidence["misconceptions"]
    assert [(m["item"], m["misconception"]) for m in stated] == [("q2", "divide_by_block")]
    assert "divides by BLOCK" in stated[0]["quote"]  # the student's own spelling (issue 21)
    assert items["q2"].points == 0 and not report.score.passed and report.score.provisional


# A refused fill (docs/grading.md, "The explanation against the fill"): the explanation point is one of
# the code's ("解释实现"), scored against the fill actually submitted; a fill refused before it ran is
# no implementation, so its explanation earns nothing, with the refusal said, and no TA is asked.
CHAIN_EXPLANATION = "centered_sq 之前 padding lane 减去 mean 之后变成 -mean，平方后是 mean^2，所以第二次求和前要把 padding lane 清零，否则方差偏大。"


def _refused(item) -> None:
    assert item.points == 0 and item.status == "fail", (item.points, item.status, item.feedback)
    assert "fill_refused" in item.evidence["flags"] and "explanation_not_fill" not in item.evidence["flags"]


def test_an_explanation_over_a_spilled_fill_earns_nothing_and_says_the_fill_was_refused(grader, exercise):
    """`mask, 0.0` in `tl.where(______, …)`: refused (spilled); the explanation describes the re-masking
    and claims no fill, and earned its point before, though nothing it explains ran."""
    report, items = _submit(grader, exercise, "mask, 0.0", explanation=CHAIN_EXPLANATION)
    assert not report.program.ran and "`mask, 0.0`" in report.program.not_run_reason
    item = items["code.explanation"]
    _refused(item)
    assert item.feedback.startswith("本项不得分：你的填空没有被接受，代码没有运行")
    assert report.program.not_run_reason in item.feedback  # why, in the refusal's own words
    assert item.evidence["fill_refused"]["fills"] == ["mask, 0.0"] and item.evidence["fill_refused"]["points_as_written"] == 1
    assert not report.score.provisional, "nothing for a TA: no item waits on one"


def test_an_explanation_of_the_mask_over_a_spilled_mask_is_no_mismatch_for_a_ta(grader, exercise):
    """It says `mask`, the fill as written is `mask, 0.0`: compared (the mismatch is in the evidence)
    but not flagged, since 0 it earns either way; the student reads why, not 'does not describe'."""
    report, items = _submit(grader, exercise, "mask, 0.0", explanation=MASK_EXPLANATION)
    item = items["code.explanation"]
    _refused(item)
    assert item.evidence["not_the_fill"][0]["fill"] == "mask, 0.0"
    assert "你的解释与你提交的代码不符" not in item.feedback and "待助教复核" not in item.feedback


def test_an_english_explanation_over_a_refused_fill_is_told_in_english(grader, exercise):
    answers = {k: "See the lesson." for k in GOOD_ANSWERS}
    report, items = _submit(grader, exercise, "x.mean()", answers=answers,
                            explanation="After centring, the padding lanes hold -mean, squared mean^2, so they are "
                                        "zeroed again before the second sum.")
    assert report.language == "en" and not report.program.ran
    item = items["code.explanation"]
    _refused(item)
    assert item.feedback.startswith("No points for this item: your fill was refused and the code did not run")
    assert "你的" not in item.feedback


@pytest.mark.parametrize("exercise_id", ["fused_mean_var_atomic", "lesson05_row_sum", "lesson06_mean_var",
                                         "lesson07_softmax", "puzzle_long_softmax", "puzzle_long_sum",
                                         "puzzle_outer_add", "weighted_sum_fwd_bwd", "welford_merge"])
def test_every_exercise_gives_its_example_explanation_nothing_over_the_unfilled_template(grader, exercise_id):
    """The example submission's own explanation and answers, with the template submitted as it is: its
    blanks are refused as unfilled, in every exercise, whatever its fill policy."""
    ex = grader.catalog.get(exercise_id)
    if ex.spec.requires_gpu and grader.mode is DeviceMode.interpreter:
        pytest.skip("needs a GPU: graded here it is not_gradable before any fill is looked at")
    example = json.loads((REPO_ROOT / "exercises" / exercise_id / "example_submission.json").read_text(encoding="utf-8"))
    submission = Submission(exercise=ex.id, code=ex.template, explanation=example["explanation"],
                            answers=example.get("answers", {}), claimed_output="仅静态审查")
    report = grader.grade(submission, secret_seed=SEED)
    assert report.status == "graded" and not report.program.ran and report.program.not_run_reason
    item = next(i for i in report.items if i.id == "code.explanation")
    _refused(item)
    assert report.program.not_run_reason in item.feedback
