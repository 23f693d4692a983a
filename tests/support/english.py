"""English for the tests of feedback in the student's language: lesson 6's example submission
(exercises/lesson06_mean_var/example_submission.json) with its written answers translated, and a
check that a report's student-facing text holds no Chinese."""
from __future__ import annotations

import re
from typing import Any

# Chinese characters (CJK unified ideographs, extension A, compatibility) and full-width CJK punctuation.
CJK = re.compile(r"[\u3000-\u303f\u3400-\u9fff\uf900-\ufaff\uff01-\uff0f\uff1a-\uff20]")

LESSON06_ENGLISH = {
    "explanation": "The blank is mask (cols < N). other=0.0 on the load only makes the padding lanes the identity of "
                   "the first sum; after subtracting the mean a padding lane becomes 0 - mean = -mean, and squared it "
                   "is mean^2. tl.where(mask, ..., 0.0) zeroes those lanes again before the second tl.sum, otherwise "
                   "the variance would gain (BLOCK - N) * mean^2 / N.",
    "answers": {
        "q1": "Input: one program per row, cols = tl.arange(0, BLOCK), mask = cols < N, and tl.load(..., mask=mask, "
              "other=0.0) fills the padding lanes with 0, the identity of addition. State changes: tl.sum divided by "
              "N gives the mean; values - mean turns a padding lane into -mean, which squares to mean^2, so "
              "tl.where(mask, diff_sq, 0.0) zeroes it again, and tl.sum divided by N gives the population variance. "
              "Output: the two scalars, mean and variance, are written back with tl.store to means + row and "
              "variances + row.",
        "q2": "other=0.0 only makes the padding lanes the identity of the first sum. After centring a padding lane is "
              "0 - mean = -mean, and squared it is mean^2, which is not 0 whenever the mean is not 0, so the second "
              "sum adds (BLOCK - N) * mean^2 too much and the variance is too large by (BLOCK - N) * mean^2 / N. "
              "That is why the mask has to be applied again with tl.where(mask, ..., 0.0) before the reduction.",
        "q3": "The one-pass formula E[x^2] - E[x]^2 suffers catastrophic cancellation when the mean is large and the "
              "variance small; the lesson's two-pass algorithm subtracts the mean before squaring and is already "
              "stable. One can also accumulate in float64, or use Welford's online algorithm and merge blocks "
              "(n, mean, M2) with Chan's formula. For performance, both passes run on chip in registers and read "
              "the matrix only once, one memory scan fewer than x.mean() plus x.var(); the cost is that the whole row "
              "must fit in one program's registers, and when it does not, a one-pass Welford over blocks is needed.",
    },
    "claimed_output": "(no output: both assert_close calls pass)",
}


def student_texts(report: dict[str, Any]) -> dict[str, str]:
    """Every student-facing text of a report (JSON form), by where it is: the items' titles and
    feedback, the cases' descriptions and targets, the diagnoses, the requirements (with the labels their
    evidence names), the vetoes' notes."""
    found: dict[str, str] = {}
    for item in report.get("items", []):
        found[f"item {item['id']} title"] = item["title"]
        found[f"item {item['id']} feedback"] = item["feedback"]
    for case in report.get("cases", []):
        found[f"case {case['id']} description"] = case["description"]
        found[f"case {case['id']} targets"] = case.get("targets") or ""
    for diagnosis in report.get("diagnoses", []):
        found[f"diagnosis {diagnosis['id']}"] = diagnosis["message"]
    for requirement in (report.get("score") or {}).get("requirements", []):
        evidence = requirement.get("evidence") or {}
        labels = [*evidence.get("missing_links", []), evidence.get("looked_for") or ""]  # the rubric's labels
        found[f"requirement {requirement['id']}"] = "\n".join([requirement["title"], requirement["message"], *labels])
    for n, veto in enumerate(report.get("vetoes", [])):
        evidence = veto.get("evidence", {})
        found[f"veto {n} {veto['rule']}"] = "\n".join(
            [str(evidence.get("note", "")), *(str(p.get("targets") or "") for p in evidence.get("failed_probes", []))])
    if report.get("message"):
        found["message"] = report["message"]
    return found


def chinese_in(report: dict[str, Any]) -> dict[str, str]:
    """The student-facing texts of `report` that hold Chinese (an English report has none)."""
    return {where: text for where, text in student_texts(report).items() if CJK.search(text)}
