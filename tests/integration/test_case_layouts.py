"""Real kernels in the real sandbox (the interpreter here) on two kinds of case the guards and the case
format used to miss: an input given as a non-contiguous view (a case's `layout`: column stride,
transposed, offset), and a write far past an output (three output lengths past its end).

The exercise is the adversarial suite's adv_double (y = 2x) with its kernel given x's strides (the
kernel body is the only blank) and three cases added here: a 64 x 256 input (an output of 16384 float32, 64 KiB, whose
guards were once as long as the data: a write 3N past it landed past the guard, in the heap) and a
(6, 40) input laid out as every other column of a wider tensor, and a transposed (5, 24) one."""
from __future__ import annotations

import shutil

import pytest
import yaml

from sandbox.contract import Limits
from service.bootstrap import build_grader
from service.config import Settings
from service.submission import Submission
from tests.adversarial.kit import ADV_EXERCISES, ADV_ID, QUICK, case

pytestmark = [pytest.mark.sandbox, pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs bubblewrap")]
EXERCISE = "adv_strided"

WIDE = {"id": "regular.wide", "kind": "regular", "rows": 64, "cols": 256, "seed": 21,
        "data": {"loc": [-5.0, 5.0], "scale": [0.5, 2.0]}, "description": "64 × 256"}
COL_STRIDED = {"id": "regular.col_strided", "kind": "regular", "rows": 6, "cols": 40, "seed": 22,
               "layout": {"x": {"col_stride": 2, "offset": 3}},
               "data": {"loc": [-5.0, 5.0], "scale": [0.5, 2.0]},
               "description": "x = wide[:, ::2] from element 3: x.stride() == (80, 2)"}
TRANSPOSED = {"id": "regular.transposed", "kind": "regular", "rows": 5, "cols": 24, "seed": 23,
              "layout": {"x": {"transposed": True}},
              "data": {"loc": [-5.0, 5.0], "scale": [0.5, 2.0]},
              "description": "x = s.t() for a contiguous (24, 5) s: x.stride() == (1, 5)"}

TEMPLATE_HEAD = """import torch
import triton
import triton.language as tl

@triton.jit
def double_kernel(x, y, N, SR, SC, BLOCK: tl.constexpr):
"""
TEMPLATE_TAIL = """
def double(x):
    y = torch.empty(x.shape, device=x.device, dtype=x.dtype)
    M, N = x.shape
    double_kernel[(M,)](x, y, N, x.stride(0), x.stride(1), BLOCK=triton.next_power_of_2(N))
    return y

for shape in ((3, 17), (2, 64)):
    x = torch.randn(shape, device="cuda")
    torch.testing.assert_close(double(x), 2 * x)
"""
GOOD = """
row = tl.program_id(0)
cols = tl.arange(0, BLOCK)
mask = cols < N
values = tl.load(x + row * SR + cols * SC, mask=mask, other=0.0)
tl.store(y + row * N + cols, values * 2, mask=mask)
"""


def program(kernel: str) -> str:
    """The test exercise's cell with `kernel` as the kernel's body (its only blank)."""
    body = "".join(f"    {line}\n" if line else "\n" for line in kernel.strip("\n").splitlines())
    return TEMPLATE_HEAD + body + TEMPLATE_TAIL


@pytest.fixture(scope="module")
def grader(tmp_path_factory):
    """adv_double's folder, its kernel given x's strides and its wrapper fixed (the kernel is the only blank)."""
    root = tmp_path_factory.mktemp("exercises")
    folder = root / EXERCISE
    shutil.copytree(ADV_EXERCISES / ADV_ID, folder)
    spec = yaml.safe_load((folder / "exercise.yaml").read_text(encoding="utf-8"))
    spec["id"] = EXERCISE
    spec["cases"] += [WIDE, COL_STRIDED, TRANSPOSED]
    (folder / "exercise.yaml").write_text(yaml.safe_dump(spec, allow_unicode=True, sort_keys=False), encoding="utf-8")
    (folder / "template.py").write_text(TEMPLATE_HEAD + "    ______\n" + TEMPLATE_TAIL, encoding="utf-8")
    (folder / "solution.py").write_text(program(GOOD), encoding="utf-8")
    built = build_grader(Settings(exercises_dir=root, limits=Limits(**QUICK)))
    yield built
    built.close()


def grade(grader, code: str):
    return grader.grade(Submission(exercise=EXERCISE, code=code), secret_seed=7)


def strided(load_offsets: str) -> str:
    """A kernel that loads x at `load_offsets` (of row, cols and x's strides SR, SC)."""
    return program(GOOD.replace("row * SR + cols * SC", load_offsets))


def test_a_kernel_that_honours_the_strides_passes_every_layout(grader):
    report = grade(grader, program(GOOD))
    for c in report.cases:
        assert c.passed, c
    laid = case(report, "regular.col_strided")
    assert laid.layout == {"x": {"shape": [6, 40], "strides": [80, 2], "offset": 3}}
    assert case(report, "regular.transposed").layout == {"x": {"shape": [5, 24], "strides": [1, 5], "offset": 0}}
    assert not report.diagnoses, report.diagnoses  # nothing overwritten, nothing past a guard


def test_a_kernel_that_ignores_the_column_stride_fails_only_the_laid_out_cases(grader):
    """x addressed as if contiguous (row * SR + cols): right wherever x.stride(1) == 1, wrong where the
    case's layout gives x another column stride (the elements between hold NaN) or transposes it."""
    report = grade(grader, strided("row * SR + cols"))
    assert report.given_check.status == "passed"
    failed = {c.id for c in report.cases if not c.passed}
    assert failed == {"regular.col_strided", "regular.transposed"}, report.cases
    assert case(report, "regular.col_strided").first_mismatch is not None


def test_a_write_three_output_lengths_past_the_output_is_an_out_of_bounds_store(grader):
    """Program 0 also stores its row at y + 4 * M * N: 3N past the end of an output of N = M * N
    elements. On regular.wide (N = 16384, 64 KiB) the guard after y used to be as long as the data
    (16384 elements), so the write landed past it in the interpreter's heap: unseen, or a crash.
    Each guard now reaches GUARD_REACH_FACTOR (4) times the case's largest buffer."""
    report = grade(grader, program(GOOD + """
if row == 0:
    tl.store(y + 4 * tl.num_programs(0) * N + cols, values * 2, mask=mask)
"""))
    wide = case(report, "regular.wide")
    assert not wide.passed and wide.first_mismatch is None
    [breach] = wide.out_of_bounds
    n = 64 * 256
    assert (breach.output, breach.side, breach.changed, breach.distance, breach.index) == \
        ("y", "after", 256, 3 * n, 4 * n), breach
    assert breach.guard >= 3 * n + 256
    assert "越界写入" in wide.error and "输出 y" in wide.error
