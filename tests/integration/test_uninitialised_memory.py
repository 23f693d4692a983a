"""Uninitialised memory is poisoned in the sandbox: what the entry point allocates with torch.empty
and the like is filled with a NaN of the harness's own payload before the student's code sees it,
so a kernel that reads what nothing wrote fails instead of passing on whatever the allocator left,
and the failing case is diagnosed `uninitialised_read`. Real kernels through the real bwrap sandbox
(the Triton interpreter, or the GPU where the suite runs on one).

The submission that showed it (fused_mean_var_atomic): fresh scratch buffers from torch.empty_like,
"zeroed" with mul_(0). Whatever finite bytes the allocator returned became 0 and every case passed;
NaN * 0 is NaN, so now every case fails. The same buffers zeroed with zero_() still pass.
"""
from __future__ import annotations

import numpy as np
import pytest

from sandbox.contract import DeviceMode
from sandbox.guards import poisoned
from service.grading.validate import code_points
from service.report import Report
from service.submission import Submission
from tests.adversarial.kit import REGULAR_CASES, grade, make_grader, submission
from tests.support.backends import warm_grader

pytestmark = [pytest.mark.sandbox]

SEED = 20261204
EXERCISE = "fused_mean_var_atomic"
ZEROING = "    sums.zero_()\n    sumsqs.zero_()\n"
FRESH = "    sums = torch.empty_like(sums)\n    sumsqs = torch.empty_like(sumsqs)\n"


@pytest.fixture(scope="module")
def grader():
    with warm_grader("bwrap") as grader:
        yield grader


def _grade(grader, code: str) -> Report:
    report = grader.grade(Submission(exercise=EXERCISE, code=code), secret_seed=SEED)
    assert report.status == "graded", report.message
    assert report.program.ran, report.program.not_run_reason
    return report


def _solution_with(grader, zeroing: str) -> str:
    code = grader.catalog.get(EXERCISE).solution
    assert code.count(ZEROING) == 1
    return code.replace(ZEROING, zeroing)


def test_fresh_buffers_zeroed_with_mul_fail_and_are_diagnosed(grader):
    exercise = grader.catalog.get(EXERCISE)
    report = _grade(grader, _solution_with(grader, FRESH + "    sums.mul_(0)\n    sumsqs.mul_(0)\n"))
    graded = [c for c in report.cases if c.kind != "given"]
    assert graded and not any(c.passed for c in graded), [(c.id, c.passed) for c in graded]
    assert not next(c for c in report.cases if c.kind == "given").passed  # the lesson's own check too
    assert code_points(report, exercise) == 0
    if grader.mode is DeviceMode.interpreter:  # a GPU's arithmetic returns its own NaN: no payload left
        found = {d.id: d for d in report.diagnoses}
        diagnosis = found["uninitialised_read"]
        first = diagnosis.evidence["cases"][0]
        assert first["output"] in ("mean", "var") and first["count"] > 0 and first["bits"] == "0x7FFE0000"
        assert "从未写过的内存" in diagnosis.evidence["messages"]["zh"]
        assert "Memory that nothing wrote was read" in diagnosis.evidence["messages"]["en"]
        assert "x.zero_()" in diagnosis.evidence["messages"]["en"]


def test_fresh_buffers_never_zeroed_fail(grader):
    report = _grade(grader, _solution_with(grader, FRESH))
    assert not any(c.passed for c in report.cases)


def test_fresh_buffers_zeroed_with_zero_pass(grader):
    exercise = grader.catalog.get(EXERCISE)
    report = _grade(grader, _solution_with(grader, FRESH + ZEROING))
    assert all(c.passed for c in report.cases), [(c.id, c.error or c.first_mismatch) for c in report.cases]
    assert code_points(report, exercise) == sum(i.points for i in exercise.spec.rubric if i.source == "cases")
    assert "uninitialised_read" not in {d.id for d in report.diagnoses}


ACCUMULATING_KERNEL = """
row = tl.program_id(0)
cols = tl.arange(0, BLOCK)
mask = cols < N
values = tl.load(x + row * N + cols, mask=mask, other=0.0)
earlier = tl.load(y + row * N + cols, mask=mask, other=0.0)
tl.store(y + row * N + cols, earlier + values * 2, mask=mask)
"""


@pytest.fixture(scope="module")
def adv_grader():
    return make_grader()


@pytest.mark.parametrize("allocation", ["torch.empty_like(x)", "torch.zeros_like(x)"])
def test_kernel_that_reads_its_output_before_writing_it(adv_grader, allocation):
    """y += 2x into the wrapper's fresh y: wrong on uninitialised memory, which often came back as
    zero pages (and passed) before it was poisoned. With its own zeros_like it still fails: the
    kernel fill is also run with the solution's host code (service/grading/host_blanks.py), whose
    y is a torch.empty_like, poisoned there too."""
    wrapper = (f"x = x.contiguous()\ny = {allocation}\nM, N = x.shape\n"
               "double_kernel[(M,)](x, y, N, BLOCK=triton.next_power_of_2(N))\nreturn y\n")
    report = grade(submission(kernel=ACCUMULATING_KERNEL, wrapper=wrapper), grader=adv_grader)
    assert report.status == "graded" and report.program.ran, report.message
    assert not any(c.passed for c in report.cases), [(c.id, c.passed) for c in report.cases]
    if allocation.startswith("torch.empty") and adv_grader.mode is DeviceMode.interpreter:
        cases = {d.id: d for d in report.diagnoses}["uninitialised_read"].evidence["cases"]
        assert {c["case"] for c in cases} == set(REGULAR_CASES)  # the payload survives x86 arithmetic,
        assert all(c["output"] == "y" and c["count"] == c["total"] for c in cases)  # not a GPU's


def test_unstored_output_rows_hold_the_poison(adv_grader):
    """A launch of one program too few leaves the last row of the torch.empty output unwritten: it
    comes back as the poison bit for bit (no arithmetic on it), so on every device it is diagnosed."""
    wrapper = ("x = x.contiguous()\ny = torch.empty_like(x)\nM, N = x.shape\n"
               "double_kernel[(M - 1,)](x, y, N, BLOCK=triton.next_power_of_2(N))\nreturn y\n")
    report = grade(submission(wrapper=wrapper), grader=adv_grader)
    assert report.status == "graded" and report.program.ran, report.message
    assert not any(c.passed for c in report.cases)
    cases = {d.id: d for d in report.diagnoses}["uninitialised_read"].evidence["cases"]
    assert {c["case"] for c in cases} == set(REGULAR_CASES)
    for c in cases:  # exactly the last row: rows * cols elements, cols of them unwritten
        rows, cols = c["shape"]
        assert c["output"] == "y" and c["count"] == cols and c["index"] == [rows - 1, 0], c


def test_poisoned_detects_the_payload_only():
    """The trusted side's reading of the payload, either sign, in the three float widths."""
    values = np.array([1.0, np.nan, 0.0, 0.0], dtype=np.float32)
    values.view(np.uint32)[2] = 0x7FFE0000
    values.view(np.uint32)[3] = 0xFFFE0000  # negated
    for dtype in (np.float32, np.float64, np.float16):
        mask = poisoned(values.astype(dtype))
        assert mask is not None and mask.tolist() == [False, False, True, True], dtype
    assert poisoned(np.zeros(3, dtype=np.int32)) is None
