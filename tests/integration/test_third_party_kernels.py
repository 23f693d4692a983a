"""Kernels as third-party code writes them (the Triton tutorials, Liger, FlagGems), graded through the
real bwrap sandbox on the Triton interpreter: the verdict and the diagnosis must be those of a GPU.

- A persistent loop over row blocks, `for rb in tl.range(pid, n, tl.num_programs(0), num_stages=2)`,
  with `rb.to(tl.int64)` (the tutorials' and Liger's int64 offsets): on a GPU the induction variable of
  a `range`/`tl.range` loop is a tensor; the interpreter iterated a Python range and every case failed
  with "'int' object has no attribute 'to'" (0 of 5 code points for a right kernel).
- An fp16 accumulator (Long Sum): its rounding (about 0.1 on a row sum of 400) lay within the slack
  of the "padding filled with v" signature, so the report said the padding lanes were added as
  -0.00135 each, of a kernel that loads with other=0.0. It is now named for what it is: the row sums
  match a simulation of a float16 (or bfloat16) accumulator, rounded at every block's addition.
- Python's `min`/`max` of a block (a CUDA port's clamp): element-wise on a GPU (the compiler's builtin_min),
  one of the arguments as it was on the interpreter (Python's own): a right kernel failed every case.
- Python's `and`/`or`/`not` of blocks (masks as Python conditions): element-wise on a GPU, one operand as it
  was (or False) on the interpreter.
- A scalar condition splat into a block mask (`(cols < T) & (row < N0)`): boolean on a GPU, int32 on Triton 3.9's
  interpreter, whose masked load refused it.
- tl.make_tensor_descriptor in a kernel: a GPU launch needs an allocator (triton.set_allocator) for its global
  scratch memory and fails without one; the interpreter needs none.
"""
from __future__ import annotations

import pytest

from service.config import REPO_ROOT

from service.grading.validate import code_points
from service.report import Report
from service.submission import Submission
from tests.support.backends import warm_grader

pytestmark = [pytest.mark.sandbox]

SEED = 99
LONG_SUM = "puzzle_long_sum"


@pytest.fixture(scope="module")
def grader():
    with warm_grader("bwrap") as grader:
        yield grader


def _body(grader, exercise_id: str, body: str) -> str:
    template = grader.catalog.get(exercise_id).template
    indented = "\n".join("    " + line if line else line for line in body.strip("\n").splitlines())
    assert template.count("    ______\n") == 1
    return template.replace("    ______\n", indented + "\n")


def _grade(grader, exercise_id: str, code: str) -> Report:
    report = grader.grade(Submission(exercise=exercise_id, code=code, language="en"), secret_seed=SEED)
    assert report.status == "graded", report.message
    assert report.program.ran, report.program.not_run_reason
    return report


PERSISTENT = """
pid = tl.program_id(0)
for rb in tl.range(pid, tl.cdiv(N0, B0), tl.num_programs(0), num_stages=2):
    rows = rb.to(tl.int64) * B0 + tl.arange(0, B0)
    row_mask = rows < N0
    acc = tl.zeros((B0,), dtype=tl.float32)
    for start in range(0, T, B1):
        cols = start.to(tl.int64) + tl.arange(0, B1)
        mask = row_mask[:, None] & (cols[None, :] < T)
        acc += tl.sum(tl.load(x_ptr + rows[:, None] * T + cols[None, :], mask=mask, other=0.0), axis=-1)
    for r in tl.static_range(B0):  # unrolled: r stays a constexpr, as on a GPU
        tl.static_assert(r < B0)
    tl.store(z_ptr + rows, acc, mask=row_mask)
"""


def test_a_range_loops_induction_variable_is_a_tensor(grader):
    exercise = grader.catalog.get(LONG_SUM)
    report = _grade(grader, LONG_SUM, _body(grader, LONG_SUM, PERSISTENT))
    failed = [(c.id, c.error) for c in report.cases if not c.passed]
    assert not failed, failed
    assert report.given_check.status == "passed", report.given_check.output
    assert code_points(report, exercise) == 5
    assert not report.diagnoses


FP16_ACCUMULATOR = """
pid = tl.program_id(0)
rows = pid * B0 + tl.arange(0, B0)
row_mask = rows < N0
acc = tl.zeros((B0,), dtype=tl.float16)
for start in range(0, T, B1):
    cols = start + tl.arange(0, B1)
    mask = row_mask[:, None] & (cols[None, :] < T)
    x = tl.load(x_ptr + rows[:, None] * T + cols[None, :], mask=mask, other=0.0)
    acc += tl.sum(x, axis=1).to(tl.float16)
tl.store(z_ptr + rows, acc, mask=row_mask)
"""


def test_fp16_rounding_is_not_a_padding_value(grader):
    report = _grade(grader, LONG_SUM, _body(grader, LONG_SUM, FP16_ACCUMULATOR))
    assert code_points(report, grader.catalog.get(LONG_SUM)) == 0
    ids = [d.id for d in report.diagnoses]
    assert "padding_not_zero" not in ids, [d.message for d in report.diagnoses]
    assert ids == ["half_precision_accumulator"], [d.message for d in report.diagnoses]
    message = report.diagnoses[0].message
    assert "float16" in message and "float32" in message, message


# Python's min/max in a kernel (a CUDA port's `min(i, n - 1)` clamp): Triton's compiler maps them to
# tl.core.builtin_min/builtin_max, element-wise on tensors; the interpreter ran Python's own, which compares a
# whole block with `<` (a block's truth is always True there) and returned one argument as it was: every lane
# of `min(cols, T - 1)` was T - 1, and a kernel right on a GPU failed every case (docs/benchmarks.md, round 3).
BUILTIN_MIN_MAX = """
pid = tl.program_id(0)
rows = pid * B0 + tl.arange(0, B0)
rows_c = min(rows, N0 - 1)
acc = tl.zeros((B0,), dtype=tl.float32)
for b in range(tl.cdiv(max(T, 1), B1)):
    cols = b * B1 + tl.arange(0, B1)
    x = tl.load(x_ptr + rows_c[:, None] * T + min(cols, T - 1)[None, :])
    acc += tl.sum(tl.where(cols[None, :] < T, max(x, -3.0e38), 0.0), axis=1)
tl.store(z_ptr + rows, acc, mask=rows < N0)
"""


def test_min_and_max_of_tensors_are_element_wise_as_on_a_gpu(grader):
    report = _grade(grader, LONG_SUM, _body(grader, LONG_SUM, BUILTIN_MIN_MAX))
    failed = [(c.id, c.error, c.first_mismatch) for c in report.cases if not c.passed]
    assert not failed, failed
    assert report.given_check.status == "passed", report.given_check.output
    assert code_points(report, grader.catalog.get(LONG_SUM)) == 5 and not report.diagnoses


# Python's and/or/not in a kernel (masks written as Python conditions): the compiler combines tensors element-wise
# (logical_and, logical_or, __not__); the interpreter asked a whole block for its truth (always True there) and
# returned an operand as it was, so `(rows < N0) and not (cols >= T)` was `not (cols >= T)`, which was False: the
# loads read nothing, and a kernel right on a GPU failed every case (docs/benchmarks.md, round 3).
PYTHON_BOOLEANS = """
pid = tl.program_id(0)
rows = pid * B0 + tl.arange(0, B0)
acc = tl.zeros((B0,), dtype=tl.float32)
for start in range(0, T, B1):
    cols = start + tl.arange(0, B1)
    inside = (rows[:, None] < N0) and not (cols[None, :] >= T)
    acc += tl.sum(tl.load(x_ptr + rows[:, None] * T + cols[None, :], mask=inside, other=0.0), axis=1)
if pid >= 0 and (B0 > 0 or N0 < 0):  # a scalar tensor and a constexpr that short-circuits (True: left out)
    tl.store(z_ptr + rows, acc, mask=(rows < 0) or (rows < N0))
"""


def test_and_or_not_of_tensors_are_element_wise_as_on_a_gpu(grader):
    report = _grade(grader, LONG_SUM, _body(grader, LONG_SUM, PYTHON_BOOLEANS))
    failed = [(c.id, c.error, c.first_mismatch) for c in report.cases if not c.passed]
    assert not failed, failed
    assert report.given_check.status == "passed", report.given_check.output
    assert code_points(report, grader.catalog.get(LONG_SUM)) == 5 and not report.diagnoses



# A scalar condition in a block mask (one row at a time in tl.static_range: `(cols < T) & (row < N0)`, the
# store's `mask=row < N0`): on a GPU the scalar i1 is splat into an i1 block. Triton 3.9's interpreter
# splat it as int32 (its comparison of scalars keeps the operands' type on the handle) and its masked load
# refused the mask, "mask has unsupported dtype", on every case: 0 of 5 code points for a right kernel
# (probe lsum4.right.tiled_row_subloop). A wrong kernel of the same form still fails where it is wrong.
SCALAR_ROW_GUARD = """
pid = tl.program_id(0)
for r in tl.static_range(0, B0, 1):
    row = pid * B0 + r
    acc = tl.zeros((B1,), dtype=tl.float32)
    for off in range(0, T, B1):
        cols = off + tl.arange(0, B1)
        acc += tl.load(x_ptr + row * T + cols, mask=(cols < T) & (row < N0), other=0.0)
    keep = tl.where(row < N0, acc, 0.0)  # a scalar condition broadcast by tl.where too
    tl.store(z_ptr + row, tl.sum(keep, axis=0), mask=row < N0)
"""


def test_a_scalar_condition_in_a_block_mask_is_boolean_as_on_a_gpu(grader):
    report = _grade(grader, LONG_SUM, _body(grader, LONG_SUM, SCALAR_ROW_GUARD))
    failed = [(c.id, c.error, c.first_mismatch) for c in report.cases if not c.passed]
    assert not failed, failed
    assert report.given_check.status == "passed", report.given_check.output
    assert code_points(report, grader.catalog.get(LONG_SUM)) == 5 and not report.diagnoses
    # the same form with the row guard inverted (rows past N0 kept, rows inside dropped) fails as wrong
    wrong = _grade(grader, LONG_SUM, _body(grader, LONG_SUM, SCALAR_ROW_GUARD.replace(
        "mask=(cols < T) & (row < N0)", "mask=(cols < T) & (row >= N0)")))
    assert code_points(wrong, grader.catalog.get(LONG_SUM)) == 0
    assert not any("unsupported dtype" in (c.error or "") for c in wrong.cases), [c.error for c in wrong.cases]


# A device-side tensor descriptor (tl.make_tensor_descriptor in the kernel, Triton >= 3.4's successor of block
# pointers): compiled for sm_90 it needs 128 bytes of global scratch a program, which Triton's GPU launcher takes
# from the allocator set with triton.set_allocator and, with none set (the lesson's host code sets none), fails
# with "no allocator was set": 0 on a GPU. The interpreter needs no such memory and passed every case it could
# (probe lsum4.gpu_check.tensor_descriptor). The gate reads the need from the compile and refuses the launch.
TENSOR_DESCRIPTOR = """
pid = tl.program_id(0)
desc = tl.make_tensor_descriptor(x_ptr, shape=[N0, T], strides=[T, 1], block_shape=[B0, B1])
acc = tl.zeros((B0,), dtype=tl.float32)
for start in range(0, T, B1):
    acc += tl.sum(desc.load([pid * B0, start]), axis=1)
rows = pid * B0 + tl.arange(0, B0)
tl.store(z_ptr + rows, acc, mask=rows < N0)
"""


def test_a_kernel_that_needs_a_launch_allocator_fails_as_on_a_gpu(grader):
    report = _grade(grader, LONG_SUM, _body(grader, LONG_SUM, TENSOR_DESCRIPTOR))
    assert code_points(report, grader.catalog.get(LONG_SUM)) == 0
    assert report.given_check.status == "failed"
    assert "triton.set_allocator" in report.given_check.output, report.given_check.output
    for case in report.cases:
        assert not case.passed, case.id
        # T = 1 (a 4-byte row stride) fails to compile first, as on a GPU: descriptor strides are 16-byte aligned
        said = "16-byte aligned" if case.shape and case.shape[-1] == 1 else "triton.set_allocator"
        assert said in (case.error or "") and "«kg:" not in case.error, (case.id, case.error)
    # the same loads through pointers and masks need no scratch memory: right, every case passes
    pointers = TENSOR_DESCRIPTOR.replace(
        "desc = tl.make_tensor_descriptor(x_ptr, shape=[N0, T], strides=[T, 1], block_shape=[B0, B1])\n", "").replace(
        "desc.load([pid * B0, start])",
        "tl.load(x_ptr + (pid * B0 + tl.arange(0, B0))[:, None] * T + (start + tl.arange(0, B1))[None, :], "
        "mask=((pid * B0 + tl.arange(0, B0))[:, None] < N0) & ((start + tl.arange(0, B1))[None, :] < T), other=0.0)")
    right = _grade(grader, LONG_SUM, _body(grader, LONG_SUM, pointers))
    assert code_points(right, grader.catalog.get(LONG_SUM)) == 5, [(c.id, c.error) for c in right.cases]

# Integer tl.clamp (clamped offsets, a FlagGems-like guard): Triton 3.6 compiles only floating-point
# clamp ("Only floating point clamp is supported"), 3.9 takes integers. The one-verdict check compiles
# with the sandbox Python's Triton, so a service whose interpreter sandbox has the GPU hosts' Triton
# (KERNELGRADE_SANDBOX_PYTHON; scripts/setup --test makes .venv-triton36, the H200's 3.6) gives the
# GPU's verdict: the compile error, on every case, in the compiler's words.
TRITON36 = REPO_ROOT / ".venv-triton36" / "bin" / "python"
CLAMPED = """
i = tl.program_id(0) * B0 + tl.arange(0, B0)
j = tl.program_id(1) * B1 + tl.arange(0, B1)
xi = tl.load(x_ptr + tl.clamp(i, 0, N0 - 1))
yj = tl.load(y_ptr + tl.clamp(j, 0, N1 - 1))
tl.store(z_ptr + j[:, None] * N0 + i[None, :], xi[None, :] + yj[:, None], mask=(j[:, None] < N1) & (i[None, :] < N0))
"""


def test_integer_clamp_fails_as_on_the_gpu_hosts_triton_when_the_sandbox_has_it():
    if not TRITON36.exists():
        pytest.fail(f"{TRITON36} is missing: scripts/setup --test makes it")
    with warm_grader("bwrap", ahead=0, sandbox_python=str(TRITON36)) as grader:
        report = _grade(grader, "puzzle_outer_add", _body(grader, "puzzle_outer_add", CLAMPED))
        exercise = grader.catalog.get("puzzle_outer_add")
    assert report.environment.triton.startswith("3.6"), report.environment
    assert code_points(report, exercise) == 0 and report.given_check.status == "failed"
    assert "floating point clamp" in report.given_check.output
    assert all("floating point clamp" in (case.error or "") for case in report.cases), report.cases
