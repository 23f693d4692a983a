from __future__ import annotations

import pytest

from service.grading.claims import unverified_claim

FAILED = "AssertionError: Tensor-likes are not close!\nMismatched elements: 3 / 3 (100.0%)"


@pytest.mark.parametrize("claim", ["通过了", "All tests passed, no output.", "max error 0.000012, var ok"])
def test_claims_of_success_over_a_failed_check_are_suspected(claim):
    veto = unverified_claim(claimed_output=claim, program_ran=True, given_status="failed", real_output=FAILED,
                            not_run_reason=None)
    assert veto is not None and veto.status == "suspected" and veto.evidence["real_output"] == FAILED


@pytest.mark.parametrize("claim", ["", "仅静态审查", "Static review only: I had no GPU.", "没有运行，没有 GPU"])
def test_no_claim_or_an_honest_static_review_is_fine(claim):
    assert unverified_claim(claimed_output=claim, program_ran=True, given_status="failed", real_output=FAILED,
                            not_run_reason=None) is None


def test_a_truthful_failure_report_is_fine():
    claim = "AssertionError: Tensor-likes are not close! Mismatched elements: 3 / 3"
    assert unverified_claim(claimed_output=claim, program_ran=True, given_status="failed", real_output=FAILED,
                            not_run_reason=None) is None


def test_a_claimed_run_of_code_that_cannot_run():
    veto = unverified_claim(claimed_output="passed", program_ran=False, given_status=None, real_output="",
                            not_run_reason="第 1 个填空中不允许使用 lambda")
    assert veto is not None and "lambda" in veto.evidence["note"]
