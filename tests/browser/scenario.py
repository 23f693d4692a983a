"""The submissions the browser tests (and scripts/screenshots) grade for real: three flagged
cases of one course, each waiting for a TA for a different reason, and one whose written
answers, explanation and code comment carry HTML and script."""
from __future__ import annotations

from typing import Any

from tests.api.support import example_body, template_body

# Half a causal chain (no square, no effect on the variance): the scorer is not sure, a TA looks.
PARTIAL_Q2 = "减掉均值以后 padding 变成 -mean。"
XSS = '<script>window.__xss = 1</script><img src=x onerror="window.__xss = 2"><b>bold?</b>'


def _with_answers(body: dict[str, Any], **answers: str) -> dict[str, Any]:
    example = example_body()
    return {**body, "answers": {**example["answers"], **answers}, "explanation": example["explanation"]}


def coincidental_pass() -> dict[str, Any]:
    """`values != 0`: the lesson's check passes, the zeros probe fails (suspected veto); a partial Q2."""
    return _with_answers(template_body("values != 0"), q2=PARTIAL_Q2)


CLAIMED_FAILURE = "Traceback (most recent call last):\nAssertionError: Tensor-likes are not close!"


def unverified_claim() -> dict[str, Any]:
    """Right code (`mask`), but the claimed output is a failure our run does not reproduce: a
    suspected unverified_claim that waits for a TA (the output may be from an earlier version)."""
    return {**_with_answers(template_body("mask")), "claimed_output": CLAIMED_FAILURE}


def false_claim() -> dict[str, Any]:
    """The re-mask is missing (`cols < BLOCK`): the given check fails, yet the claim says it passed.
    We ran it, so the veto is confirmed at once (no TA queue)."""
    return {**_with_answers(template_body("cols < BLOCK")), "claimed_output": example_body()["claimed_output"]}


def low_confidence() -> dict[str, Any]:
    """Correct code; a Q2 answer the rubric scores with low confidence (needs_review)."""
    return {**example_body(), "answers": {**example_body()["answers"], "q2": PARTIAL_Q2}}


def hostile_text() -> dict[str, Any]:
    body = example_body()
    code = body["code"].replace("    mask = cols < N\n", f"    mask = cols < N  # {XSS}\n")
    q2 = f"减掉均值以后 padding 变成 -mean{XSS}，平方以后是 mean^2，所以方差偏大。"
    return {**body, "code": code, "answers": {**body["answers"], "q2": q2}, "explanation": XSS + body["explanation"],
            "claimed_output": XSS}


def vetoed_full_marks() -> dict[str, Any]:
    """The right fill, every answer right, but the given check's tolerance loosened outside the
    blank: every point, and a confirmed boundary_check_removed veto (issue 21's "10 / 10 · 未通过")."""
    body = example_body()
    assert "atol=2e-4, rtol=2e-4)" in body["code"]
    return {**body, "code": body["code"].replace("atol=2e-4, rtol=2e-4)", "atol=2e-1, rtol=2e-4)")}


FLAGGED = {"coincidental_pass": coincidental_pass, "unverified_claim": unverified_claim, "low_confidence": low_confidence}
SETTLED = {"false_claim": false_claim}  # graded in a course of its own (tests/browser/conftest.py)
