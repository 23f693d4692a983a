from __future__ import annotations

import pytest

from service.grading.claims import parse_claim, unverified_claim

FAILED = "AssertionError: Tensor-likes are not close!\nMismatched elements: 3 / 3 (100.0%)"


@pytest.mark.parametrize("claim", ["通过了", "All tests passed, no output.", "max error 0.000012, var ok",
                                   "（无输出：两个 assert_close 都通过）", "运行了，没有运行错误", "没有报错，也没有输出",
                                   "mean tensor([0.1, 0.2]) var tensor([1.0, 0.98])", "True\nTrue",
                                   "tensor(True, device='cuda:0')"])
def test_claims_of_success_over_a_failed_check_are_confirmed_with_both_texts(claim):
    veto = unverified_claim(claimed_output=claim, program_ran=True, given_status="failed", real_output=FAILED,
                            not_run_reason=None)
    assert veto is not None and veto.status == "confirmed" and not veto.needs_review
    assert veto.evidence["real_output"] == FAILED and veto.evidence["claimed_output"] == claim
    assert [s["text"] for s in veto.evidence["side_by_side"]] == [claim, FAILED]


@pytest.mark.parametrize("claim", ["", "仅静态审查", "Static review only: I had no GPU.", "没有运行，没有 GPU",
                                   "仅静态审查，预计两个 assert_close 都能通过", "static review only - no GPU here"])
def test_no_claim_or_an_honest_static_review_is_fine(claim):
    assert unverified_claim(claimed_output=claim, program_ran=True, given_status="failed", real_output=FAILED,
                            not_run_reason=None) is None


@pytest.mark.parametrize(("claim", "kind"), [
    ("", "missing"), ("   ", "missing"), ("仅静态审查", "static_review"), ("两个 assert_close 都失败了", "fail"),
    ("Traceback (most recent call last):\n  ...\nAssertionError: Tensor-likes are not close!", "fail"),
    ("(3, 17) 和 (4, 128) 两个形状都通过", "pass"), ("max abs error: 1e-6", "results"), ("I ran it on my laptop", "unclear"),
    ("True\nTrue", "results"), ("True\nFalse", "fail"), ("it is true that I ran it", "unclear"),
    ("allclose -> True", "results"), ("mean ok: False", "fail"), ("error = 0.0", "results"),
    ("mean error 0.0, var error 1.2e-07", "results"), ("Mismatched elements: 0 / 3 (0.0%)", "results"),
    ("Mismatched elements: 3 / 3 (100.0%)", "fail"), ("RuntimeError: 0 bytes", "fail"),
    ("FutureWarning: this will raise an error in a future release\n  warnings.warn(msg)\n通过", "pass"),
    ("UserWarning: TF32 is off\n  warnings.warn(msg)", "results"),
])
def test_claims_are_parsed_in_chinese_and_english(claim, kind):
    assert parse_claim(claim).kind == kind


def test_shapes_numbers_and_exceptions_are_read():
    claim = parse_claim("Traceback ... AssertionError: Greatest absolute difference: 0.52 at index (1,); shape (3, 17)")
    assert claim.traceback and claim.exceptions == ["assertionerror"]
    assert claim.numbers == ["0.52"] and claim.shapes == ["(3, 17)"]


def test_a_truthful_failure_report_is_fine():
    claim = "AssertionError: Tensor-likes are not close! Mismatched elements: 3 / 3"
    assert unverified_claim(claimed_output=claim, program_ran=True, given_status="failed", real_output=FAILED,
                            not_run_reason=None) is None


def test_a_claimed_failure_our_run_does_not_reproduce_is_suspected():
    veto = unverified_claim(claimed_output="AssertionError: Tensor-likes are not close!", program_ran=True,
                            given_status="passed", real_output="", not_run_reason=None, language="en")
    assert veto is not None and veto.status == "suspected" and veto.needs_review and "A TA decides" in veto.evidence["note"]


def test_a_claimed_run_of_code_that_cannot_run():
    veto = unverified_claim(claimed_output="passed", program_ran=False, given_status=None, real_output="",
                            not_run_reason="第 1 个填空中不允许使用 lambda")
    assert veto is not None and veto.status == "suspected" and "lambda" in veto.evidence["note"]


def test_a_claim_read_again_is_a_fresh_one():
    """parse_claim keeps the last claims it read (a grading reads its claim four times): what one
    caller does to the Claim it got never shows in the next reading of the same text."""
    from service.grading.claims import parse_claim

    said = "max abs error 1.5e-07, shape (4, 8)\nTraceback: AssertionError"
    first = parse_claim(said)
    assert first.numbers == ["1.5e-07"] and first.shapes == ["(4, 8)"] and first.exceptions == ["assertionerror"]
    first.numbers.append("9.9")
    first.shapes.clear()
    first.exceptions.append("valueerror")
    first.kind = "pass"
    again = parse_claim(said)
    assert again.kind == "fail" and again.numbers == ["1.5e-07"] and again.shapes == ["(4, 8)"]
    assert again.exceptions == ["assertionerror"]


# How students report a run in their own words (issue 15, item 2): success said without the words
# "pass" or "通过", a failure said as a mismatch, a run on the interpreter by someone with no GPU, and
# predictions and conditions that report no run at all.
@pytest.mark.parametrize(("claim", "kind"), [
    ("测试都过了", "pass"), ("跑通了，没问题", "pass"), ("结果正确", "pass"), ("输出和参考一致", "pass"),
    ("两个断言都没触发", "pass"), ("没有触发 AssertionError", "pass"), ("assert_close 没有报错", "pass"),
    ("跑了一下，没有任何输出", "pass"), ("结果对了", "pass"), ("✅ both asserts", "pass"),
    ("It works.", "pass"), ("Correct output!", "pass"), ("all good", "pass"), ("mean matches\nvar matches", "pass"),
    ("everything matched the reference", "pass"), ("no assertion fired", "pass"),
    ("no AssertionError was raised", "pass"), ("nothing was wrong", "pass"), ("allclose 返回 True", "results"),
    ("both checks returned True", "results"),
    ("结果不一致", "fail"), ("结果不对，var 偏大", "fail"), ("var doesn't match torch", "fail"),
    ("有问题：第二个 assert 失败", "fail"), ("allclose returned False", "fail"), ("❌ var", "fail"),
    ("incorrect variance", "fail"),
    ("I don't have a GPU.", "static_review"), ("没有显卡", "static_review"), ("no access to a GPU", "static_review"),
    ("代码未执行", "static_review"),
    ("没有 GPU，用 TRITON_INTERPRET=1 跑的，通过", "pass"),
    ("No GPU, so I ran it with TRITON_INTERPRET=1: AssertionError: Tensor-likes are not close!", "fail"),
    ("应该能通过", "unclear"), ("It should pass.", "unclear"), ("不确定对不对", "unclear"),
    ("如果不加 mask 会报错；加了以后通过", "pass"), ("Without the mask it would fail; otherwise it fails too. Mine passed.", "pass"),
    ("若干测试通过", "pass"), ("I ran it on my laptop", "unclear"),
])
def test_claims_in_the_students_own_words(claim, kind):
    assert parse_claim(claim).kind == kind


@pytest.mark.parametrize("claim", ["结果正确", "测试都过了", "It works, mean and var match torch.", "两个断言都没触发",
                                   "没有 GPU，用 TRITON_INTERPRET=1 跑的，通过"])
def test_success_in_other_words_over_a_failed_check_is_confirmed(claim):
    veto = unverified_claim(claimed_output=claim, program_ran=True, given_status="failed", real_output=FAILED,
                            not_run_reason=None)
    assert veto is not None and veto.status == "confirmed"


@pytest.mark.parametrize("claim", ["应该能通过", "I think it should pass", "I don't have a GPU", "结果不一致"])
def test_predictions_no_device_and_reported_failures_are_no_veto_over_a_failed_check(claim):
    assert unverified_claim(claimed_output=claim, program_ran=True, given_status="failed", real_output=FAILED,
                            not_run_reason=None) is None


@pytest.mark.parametrize(("claim", "kind"), [
    ("不加 mask 会报错，加了就通过", "pass"), ("去掉第二个 mask 会失败", "unclear"), ("It will pass on a GPU", "unclear"),
    ("Without the mask it would fail with an AssertionError; with it, it passed.", "pass"),
])
def test_a_predicted_outcome_is_not_a_reported_one(claim, kind):
    assert parse_claim(claim).kind == kind


# An honest report of a failure, said through the words of success: read as success, it was a
# confirmed `unverified_claim` (a veto) over a check that did fail, as the student said.
HONEST_FAILURES = ["结果和参考不太一致", "不完全正确", "不太对", "部分通过", "一半通过", "第一个形状通过了，第二个没有",
                   "跑崩了", "挂了", "var 有 bug", "var 偏大", "not quite right", "isn't correct",
                   "doesn't quite match", "partially passed", "(3,17) passed, (4,128) didn't",
                   "mean passed; var not equal", "var is off by a lot", "only the mean matched"]


@pytest.mark.parametrize("claim", HONEST_FAILURES)
def test_a_failure_said_in_the_words_of_success_is_a_failure_and_no_veto(claim):
    assert parse_claim(claim).kind == "fail"
    assert unverified_claim(claimed_output=claim, program_ran=True, given_status="failed", real_output=FAILED,
                            not_run_reason=None) is None


@pytest.mark.parametrize(("claim", "kind"), [
    ("输出：没有", "pass"), ("报错：无", "pass"), ("errors: none", "pass"), ("不仅正确而且快", "pass"),
    ("输出：没有通过", "fail"), ("RuntimeError: 0 bytes", "fail"), ("error = 0.0", "results"),
])
def test_none_said_after_a_label_is_an_empty_list_not_a_failure(claim, kind):
    assert parse_claim(claim).kind == kind
