"""Whole-body puzzle fills that are not Triton (issue 16, item 1; issue 15, item 4).

Under the Triton interpreter a kernel body runs as Python, so a body could walk up the frames and
compute the answer with torch, write through numpy/ctypes on the raw pointers, or use constructs
that Triton's compiler rejects (`tl.static_range` with a runtime bound, a loop variable first
defined inside a `while`), and earn 10/10 on the CPU while a GPU compile refuses it. The sandbox
now compiles every launch for a GPU target first (sandbox/gpu_compile.py): each body below must
fail on every case, with the compiler's message in the case's error, and earn no code points.
The same bodies fail to compile on a GPU, so these tests run in both modes; the gate's bilingual
preamble is checked on the interpreter only (on a GPU the error is Triton's own).
"""
from __future__ import annotations

import textwrap

import pytest

from sandbox.contract import DeviceMode, Limits
from service.bootstrap import build_grader
from service.config import REPO_ROOT, Settings
from service.submission import Submission
from tests.adversarial.kit import (
    QUICK,
    SECRET_SEED,
    assert_graded_normally,
    close_started,
    device_mode,
    started,
)

pytestmark = [pytest.mark.sandbox, pytest.mark.adversarial]

PUZZLE = "puzzle_long_sum"
TEMPLATE = (REPO_ROOT / "exercises" / PUZZLE / "template.py").read_text(encoding="utf-8")
GATE_WORDS = ("无法为 GPU 编译", "does not compile for a GPU")

# The frames of long_sum (the template's wrapper) hold x and z; `buf` names that frame.
FRAME_WALK = ("import sys\nf = sys._getframe(1)\nwhile f is not None and 'buf' not in f.f_locals:\n"
              "    f = f.f_back\nf.f_locals['z'].copy_(f.f_locals['x'].sum(1))\n")

BODIES = {
    # (body, a phrase of Triton's own message)
    "static-range-runtime-bound": ('''
pid = tl.program_id(0)
rows = pid * B0 + tl.arange(0, B0)
row_mask = rows < N0
acc = tl.zeros((B0,), dtype=tl.float32)
for start in tl.static_range(0, T, B1):
    cols = start + tl.arange(0, B1)
    mask = row_mask[:, None] & (cols[None, :] < T)
    acc += tl.sum(tl.load(x_ptr + rows[:, None] * T + cols[None, :], mask=mask, other=0.0), axis=1)
tl.store(z_ptr + rows, acc, mask=row_mask)
''', "static_range end value is not a constexpr"),
    "accumulator-first-defined-in-while": ('''
pid = tl.program_id(0)
rows = pid * B0 + tl.arange(0, B0)
row_mask = rows < N0
start = 0
while start < T:
    cols = start + tl.arange(0, B1)
    mask = row_mask[:, None] & (cols[None, :] < T)
    part = tl.sum(tl.load(x_ptr + rows[:, None] * T + cols[None, :], mask=mask, other=0.0), axis=1)
    if start == 0:
        acc = part
    else:
        acc += part
    start += B1
tl.store(z_ptr + rows, acc, mask=row_mask)
''', "acc is not defined"),
    "frame-walking-torch": ('''
import sys
frame = sys._getframe(1)
while frame is not None and "buf" not in frame.f_locals:
    frame = frame.f_back
frame.f_locals["z"].copy_(frame.f_locals["x"].sum(1))
''', "unsupported AST node type: Import"),
    # The same walk run by the compiler itself (Triton calls what it does not know while it
    # compiles, on a GPU too): refused as a call of plain Python.
    "frame-walking-at-compile-time": (f'''
tl.core.builtins.exec({FRAME_WALK!r})
''', "calling the Python function `exec`"),
    # Writes through the raw pointers (the interpreter passes tensors' addresses in `.handle`). One
    # expression each: the interpreter wraps every assigned value as a tensor. Both earn full
    # marks on the interpreter without the GPU compile.
    "ctypes-pointer-write": ("""
import ctypes
[setattr(ctypes.c_float.from_address(int(z_ptr.handle.data.item()) + 4 * r), "value", sum(ctypes.c_float.from_address(int(x_ptr.handle.data.item()) + 4 * (r * int(T.handle.data.item()) + j)).value for j in range(int(T.handle.data.item())))) for r in range(int(tl.program_id(0).handle.data.item()) * B0, min(int(N0.handle.data.item()), int(tl.program_id(0).handle.data.item()) * B0 + B0))]
""", "unsupported AST node type: Import"),
    "numpy-pointer-write": ("""
import ctypes
import numpy
[numpy.copyto(numpy.frombuffer((ctypes.c_float * int(N0.handle.data.item())).from_address(int(z_ptr.handle.data.item())), numpy.float32), numpy.frombuffer((ctypes.c_float * (int(N0.handle.data.item()) * int(T.handle.data.item()))).from_address(int(x_ptr.handle.data.item())), numpy.float32).reshape(int(N0.handle.data.item()), int(T.handle.data.item())).sum(1)) for _ in range(1)]
""", "unsupported AST node type: Import"),
}


@pytest.fixture(scope="module")
def grader():
    grader = started(build_grader(Settings(limits=Limits(**QUICK))))  # KERNELGRADE_TEST_WARM_POOL (kit.py)
    yield grader
    close_started(grader)


def body_submission(body: str) -> str:
    assert TEMPLATE.count("______") == 1
    return TEMPLATE.replace("______", textwrap.indent(body.strip("\n"), "    ").lstrip(), 1)


@pytest.mark.parametrize("name", list(BODIES))
def test_a_body_that_a_gpu_compile_rejects_fails_everywhere(grader, host, name):
    body, triton_says = BODIES[name]
    report = grader.grade(Submission(exercise=PUZZLE, code=body_submission(body)), secret_seed=SECRET_SEED)
    assert report.status == "graded" and report.program.ran, report.to_json()[:2000]
    assert not report.score.passed
    code_items = [i for i in report.items if i.id.startswith("code.") and i.id != "code.explanation"]
    assert code_items and all(i.points == 0 for i in code_items), [(i.id, i.points) for i in code_items]
    assert report.given_check.status == "failed" and triton_says in report.given_check.output, report.given_check
    for c in report.cases:
        if c.kind == "given":
            continue
        if c.passed:
            # T = 1: Triton specializes an integer argument equal to 1 as a constant, so there the
            # static_range bound is a constexpr and the kernel compiles (and is right) on a GPU too.
            assert name == "static-range-runtime-bound" and c.id == "boundary.t_one", c
            continue
        assert c.error and triton_says in c.error, (c.id, c.error)
        if device_mode() is DeviceMode.interpreter:
            assert all(w in c.error for w in GATE_WORDS), c.error
    host.assert_untouched()


def test_the_reference_body_still_compiles_and_earns_full_marks(grader, host):
    solution = (REPO_ROOT / "exercises" / PUZZLE / "solution.py").read_text(encoding="utf-8")
    report = grader.grade(Submission(exercise=PUZZLE, code=solution), secret_seed=SECRET_SEED)
    code_items = [i for i in report.items if i.id.startswith("code.") and i.id != "code.explanation"]
    assert all(i.points == i.max_points for i in code_items), [(i.id, i.points, i.feedback) for i in code_items]
    assert all(c.passed for c in report.cases), [(c.id, c.error) for c in report.cases if not c.passed]
    host.assert_untouched()
    assert_graded_normally()
