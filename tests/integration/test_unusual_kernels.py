"""Kernels written in ways no earlier mutant had, graded through the real bwrap sandbox on the
Triton interpreter (or the GPU): verdicts, diagnoses and messages must be true for them too.

- An entry point that returns without launching the cell's kernel (a fallback to PyTorch for
  small shapes, or no kernel at all) used to earn full marks: its outputs were right. Each such
  call now fails its case, and the given check, with a message that says so; a truthful claim
  that the check passed is for a TA (suspected), not a confirmed fabrication. fused_mean_var_atomic
  now refuses such host code before it runs (its `host_code`, service/grading/host_fills.py), so
  the launch count is proven on a copy of it without that declaration (`runs_grader`), as for an
  exercise that declares none.
- A libdevice function and a float tl.atomic_xchg are right on an H200 and raise inside the 3.9
  interpreter: not gradable there (no cost to the student), where they used to score 0; so is a
  result moved to the CPU, which only a GPU's device check shows.
"""
from __future__ import annotations

import pytest

from sandbox.contract import DeviceMode
from service.grading.validate import code_points
from service.report import Report
from service.submission import Submission
from tests.support.backends import warm_grader
from tests.support.catalogs import without_host_rule

pytestmark = [pytest.mark.sandbox]

SEED = 20261203
FUSED = "fused_mean_var_atomic"
ZEROING = "    sums.zero_()\n    sumsqs.zero_()\n"
FALLBACK = "    if N <= 64:\n        return x.mean(1), x.var(1, unbiased=False)\n" + ZEROING


@pytest.fixture(scope="module")
def grader():
    with warm_grader("bwrap") as grader:
        yield grader


@pytest.fixture(scope="module")
def runs_grader(tmp_path_factory):
    """fused_mean_var_atomic without its host_code: the runs alone decide (tests/support/catalogs.py)."""
    with warm_grader("bwrap", exercises_dir=without_host_rule(tmp_path_factory.mktemp("catalog"))) as grader:
        yield grader


def _edit(grader, exercise_id: str, *replacements: tuple[str, str]) -> str:
    code = grader.catalog.get(exercise_id).solution
    for old, new in replacements:
        assert code.count(old) == 1, old
        code = code.replace(old, new)
    return code


def _grade(grader, exercise_id: str, code: str, **fields) -> Report:
    report = grader.grade(Submission(exercise=exercise_id, code=code, **fields), secret_seed=SEED)
    assert report.status == "graded", report.message
    assert report.program.ran, report.program.not_run_reason
    return report


def test_torch_fallback_for_small_shapes_fails_those_cases(runs_grader):
    grader = runs_grader
    exercise = grader.catalog.get(FUSED)
    report = _grade(grader, FUSED, _edit(grader, FUSED, (ZEROING, FALLBACK)),
                    claimed_output="（无输出：两个 assert_close 都通过）", language="en")
    cases = {c.id: c for c in report.cases}
    small = [c for c in exercise.spec.cases_for(SEED) if c.cols is not None and c.cols <= 64]
    assert small, "the exercise grades no width the fallback takes"
    for case in small:
        assert not cases[case.id].passed
        assert "without launching any kernel of the cell (sum_sumsq_kernel)" in cases[case.id].error
    assert cases["regular.n1000"].passed  # the kernel itself is right where it runs
    assert report.given_check.status == "failed" and "without launching" in report.given_check.output
    # the other language says it in its own words (the sandbox's mark said again, not the report's text)
    chinese = report.translations["zh"].cases
    assert "没有启动这个 cell 里的任何 kernel" in (chinese["given"].error or "")
    assert "没有启动这个 cell 里的任何 kernel" in (chinese[small[0].id].error or "")
    assert code_points(report, exercise) < 3
    assert not report.score.passed
    # the check's asserts did pass on the student's machine: not a fabricated output
    claim = next(v for v in report.vetoes if v.rule == "unverified_claim")
    assert claim.status == "suspected" and claim.needs_review


def test_entry_point_that_never_launches_earns_no_code_points(runs_grader):
    grader = runs_grader
    report = _grade(grader, FUSED, _edit(grader, FUSED, (ZEROING, "    return x.mean(1), x.var(1, unbiased=False)\n")))
    assert not any(c.passed for c in report.cases)
    assert code_points(report, grader.catalog.get(FUSED)) == 0


def test_a_launch_with_an_empty_grid_is_no_launch(runs_grader):
    grader = runs_grader
    empty = ("    sum_sumsq_kernel[(0, 1)](x, sums, sumsqs, N, x.stride(0), BLOCK=block)\n"
             "    return x.mean(1), x.var(1, unbiased=False)\n")
    report = _grade(grader, FUSED, _edit(grader, FUSED, (ZEROING, empty)))
    assert not any(c.passed for c in report.cases)


LIBDEVICE = ("z = tl.exp2(log2_e * (xv - m[:, None])) / s[:, None]",
             "z = tl.extra.cuda.libdevice.exp(xv - m[:, None]) / s[:, None]")
XCHG = ("tl.store(z_ptr + rows, acc, mask=row_mask)", "tl.atomic_xchg(z_ptr + rows, acc, mask=row_mask, sem='relaxed')")


@pytest.mark.parametrize(("exercise_id", "edit", "construct"), [
    ("puzzle_long_softmax", LIBDEVICE, "libdevice"),
    ("puzzle_long_sum", XCHG, "tl.atomic_xchg on floating-point values"),
])
def test_what_only_the_interpreter_cannot_run_is_not_the_students_fail(grader, exercise_id, edit, construct):
    # Both kernels are right: an H200 (Triton 3.6) gives the reference's answer; the 3.9
    # interpreter raises inside them ('_semantic argument must be provided', 'Unsupported data type').
    code = _edit(grader, exercise_id, edit)
    report = grader.grade(Submission(exercise=exercise_id, code=code, language="en"), secret_seed=SEED)
    if grader.mode is DeviceMode.interpreter:
        assert report.status == "not_gradable", [c.error for c in report.cases][:1]
        assert construct in report.message and "not your mistake" in report.message
    else:
        assert report.status == "graded" and all(c.passed for c in report.cases)


def test_a_libdevice_call_the_blank_refuses_is_refused_not_a_gap(grader):
    # An expression blank admits tl.* functions only: a GPU refuses this fill as well, so the interpreter's
    # libdevice gap must not call it "not your mistake, submit where a GPU grades" (sixth probe batch).
    code = _edit(grader, "welford_merge", ("m2 = m2 + m2_b + delta * delta * n * n_b / n_new",
                                           "m2 = m2 + m2_b + tl.extra.cuda.libdevice.pow(delta, 2.0) * n * n_b / n_new"))
    report = grader.grade(Submission(exercise="welford_merge", code=code, language="en"), secret_seed=SEED)
    assert report.status == "graded", report.message
    assert not report.program.ran
    assert "`tl.extra.cuda.libdevice.pow` is not allowed" in report.program.not_run_reason


def test_an_integer_atomic_xchg_still_runs_on_the_interpreter(grader):
    # the runtime gap needs the interpreter's own error: the name alone refuses nothing
    code = _edit(grader, "puzzle_long_sum", ("    tl.store(z_ptr + rows, acc, mask=row_mask)",
                                             "    tl.store(z_ptr + rows, acc, mask=row_mask)\n"
                                             "    tl.atomic_xchg(z_ptr.to(tl.pointer_type(tl.int32)) + N0 + B0, 0, mask=pid < 0)"))
    report = _grade(grader, "puzzle_long_sum", code)
    assert all(c.passed for c in report.cases)


def test_a_tail_mask_one_column_short_is_not_first_block_only(grader):
    # used to read "only the first block was processed, from column 127 on": one column was missing
    code = _edit(grader, "puzzle_long_softmax", ("mask2 = row_mask[:, None] & (cols2[None, :] < T)",
                                                 "mask2 = row_mask[:, None] & (cols2[None, :] < T - 1)"))
    report = _grade(grader, "puzzle_long_softmax", code, language="en")
    found = {d.id: d for d in report.diagnoses}
    assert "first_block_only" not in found
    assert "probe.long_row" in {c["case"] for c in found["tail_columns_unwritten"].evidence["cases"]}
    assert "the last 1 column(s) of every row" in found["tail_columns_unwritten"].message


def test_an_inverted_rescale_is_not_a_missing_max(grader):
    # NaN everywhere (exp(m_new - m) with m = -inf is inf): on large logits that looked like
    # "subtract the row max first", which this kernel does; the small-logit cases say otherwise
    code = _edit(grader, "puzzle_long_softmax", ("s = s * tl.exp2(log2_e * (m - m_new)) + ",
                                                 "s = s * tl.exp2(log2_e * (m_new - m)) + "))
    report = _grade(grader, "puzzle_long_softmax", code)
    found = {d.id for d in report.diagnoses}
    assert "overflow_no_max" not in found and "nonfinite_output" in found


def test_a_result_moved_to_the_cpu_is_not_graded_where_everything_is_on_the_cpu(grader):
    # on a GPU the lesson's assert_close meets a CPU var and a GPU expectation and fails; the
    # interpreter keeps every tensor on the CPU and passed it with full marks
    code = _edit(grader, FUSED, ("var = sumsqs / N - mean * mean", "var = (sumsqs / N - mean * mean).cpu()"))
    report = grader.grade(Submission(exercise=FUSED, code=code, language="en"), secret_seed=SEED)
    if grader.mode is DeviceMode.interpreter:
        assert report.status == "not_gradable" and "moving tensors to the CPU" in report.message
    else:
        assert report.status == "graded" and report.given_check.status == "failed" and not report.score.passed


def test_a_result_moved_to_the_cpu_that_fails_anyway_is_graded(grader):
    # only a pass is the interpreter's to doubt: a wrong combine moved to the CPU fails on a GPU as here
    code = _edit(grader, FUSED, ("var = sumsqs / N - mean * mean", "var = (sumsqs / N + mean * mean).cpu()"))
    report = grader.grade(Submission(exercise=FUSED, code=code, language="en"), secret_seed=SEED)
    assert report.status == "graded" and not report.score.passed and report.given_check.status == "failed"
