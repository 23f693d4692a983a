"""The calibration harness passes the scorer what rubric.score_items passes it (tests/calibration/calibration.py):
the submitted fills in the template's blank order, and the reference's expression fills where the submitted
fills are ones the exercise's data knows to be correct (the pipeline: where every case passes)."""
from __future__ import annotations

from service.grading import rubric
from service.grading.extract import extract
from tests.calibration import calibration
from tests.calibration.calibration import CATALOG, Entry, correct_fills, reference_fills, submitted_fills

# fused_mean_var_atomic.yaml lists [atomic_add operand, pre-launch statements, host variance]
FMV_FILLS = ["tl.sum(values * values, axis=0)", "sums.zero_(); sumsqs.zero_()", "sumsqs / N - mean * mean"]


def _entry(exercise: str, fill: list[str] | None, question: str = "explanation") -> Entry:
    data = {"id": "probe", "question": question, "answer": "x", "band": [0, 1], "kind": "partial"}
    return Entry(exercise, {**data, "fill": fill} if fill is not None else data)


def test_fills_in_the_template_blank_order() -> None:
    fills = submitted_fills(_entry("fused_mean_var_atomic", FMV_FILLS))
    assert fills == ["tl.sum(values * values, axis=0)", "sumsqs / N - mean * mean", "sums.zero_()\nsumsqs.zero_()"]
    ex = CATALOG.get("fused_mean_var_atomic")
    assert tuple(fills) == tuple(extract(ex.template, ex.solution).fill_sources)
    # files whose order is the template's are left as they are (canonical only)
    assert submitted_fills(_entry("lesson05_row_sum", ["stride_m", "cols<N", "0.0"])) == ["stride_m", "cols < N", "0.0"]
    assert submitted_fills(_entry("lesson05_row_sum", None)) is None


def test_an_entry_already_in_the_template_order_keeps_it() -> None:
    # a few entries list the host variance second: reordered, the statements would land in its blank
    in_order = ["tl.sum(values * values, axis=0)", "sumsqs / N - mean * mean", "sums.zero_(); sumsqs.zero_()"]
    assert submitted_fills(_entry("fused_mean_var_atomic", in_order)) == [
        "tl.sum(values * values, axis=0)", "sumsqs / N - mean * mean", "sums.zero_()\nsumsqs.zero_()"]


def test_every_fill_order_is_a_permutation_of_the_blanks() -> None:
    for exercise, order in calibration.FILL_ORDER.items():
        ex = CATALOG.get(exercise)
        assert sorted(order) == list(range(len(extract(ex.template, ex.solution).fills)))


def test_correct_fills_are_the_solution_and_the_passing_correct_mutants() -> None:
    known = correct_fills("lesson06_mean_var")
    assert ("mask",) in known  # the solution's
    assert ("cols < N",) in known and ("mask & (cols >= 0)",) in known  # correct.cols_lt_n, correct.mask_and_true
    assert ("True",) not in known and ("cols >= 0",) not in known  # wrong.*
    # a correct.* mutant the grader diagnoses (host_split_differs) is not one whose every case passes alike
    ex = CATALOG.get("fused_mean_var_atomic")
    split = next(m for m in ex.mutants if m.id == "correct.split_divides_in_kernel")
    assert split.expect.diagnoses
    assert tuple(extract(ex.template, ex.mutant_code(split)).fill_sources) not in correct_fills(ex.id)


def test_reference_fills_only_for_a_known_correct_fill() -> None:
    ex = CATALOG.get("lesson05_row_sum")
    right = _entry("lesson05_row_sum", ["stride_m", "cols < N", "0.0"])
    assert reference_fills(right, submitted_fills(right)) == rubric.expression_fills(ex.template, ex.solution)
    wrong = _entry("lesson05_row_sum", ["N", "cols < N", "0.0"])  # the row stride taken to be N
    assert reference_fills(wrong, submitted_fills(wrong)) is None
    assert reference_fills(_entry("lesson05_row_sum", None), None) is None
    fmv = _entry("fused_mean_var_atomic", FMV_FILLS)  # right once in the template's order
    assert reference_fills(fmv, submitted_fills(fmv)) is not None


def test_grade_passes_the_fills_and_the_reference(monkeypatch) -> None:
    seen: list[dict] = []

    def spy(*args, **kwargs):
        seen.append(kwargs)
        return original(*args, **kwargs)

    original = calibration.score_answer
    monkeypatch.setattr(calibration, "score_answer", spy)
    calibration.grade(_entry("fused_mean_var_atomic", FMV_FILLS))
    calibration.grade(_entry("lesson05_row_sum", ["N", "cols < N", "0.0"]))
    calibration.grade(_entry("lesson05_row_sum", None, question="q1"))
    assert seen[0]["fills"][1] == "sumsqs / N - mean * mean"
    fmv = CATALOG.get("fused_mean_var_atomic")
    assert seen[0]["reference_fills"] == rubric.expression_fills(fmv.template, fmv.solution)
    assert seen[1]["reference_fills"] is None
    assert seen[2]["fills"] is None and seen[2]["reference_fills"] is None


def test_spilled_blanks_are_the_extractions_own() -> None:
    # `mask, 0.0` in lesson 6's `tl.where(______, …)` spills past its blank; `cols < N` does not, and
    # neither does a tuple written in parentheses, which is one argument
    assert calibration.spilled_blanks(_entry("lesson06_mean_var", ["mask, 0.0"])) == (0,)
    assert calibration.spilled_blanks(_entry("lesson06_mean_var", ["cols < N"])) == ()
    assert calibration.spilled_blanks(_entry("lesson06_mean_var", ["(mask, 0.0)"])) == ()
    assert calibration.spilled_blanks(_entry("lesson06_mean_var", None)) == ()


def test_rubric_passes_the_spilled_blanks_to_the_scorer(monkeypatch) -> None:
    from service.submission import Submission

    seen: list[dict] = []

    def spy(*args, **kwargs):
        seen.append(kwargs)
        return original(*args, **kwargs)

    original = rubric.score_answer
    monkeypatch.setattr(rubric, "score_answer", spy)
    exercise = CATALOG.get("lesson06_mean_var")
    submission = Submission(exercise="lesson06_mean_var", code=exercise.template.replace("______", "mask, 0.0"),
                            explanation="The mask keeps the padding lanes out of the second sum.")
    rubric.score_items(exercise, submission, [], not_run_reason="refused", diagnoses=[], fills=["mask, 0.0"],
                       spilled=(0,))
    assert seen and all(kwargs["spilled"] == (0,) for kwargs in seen)
