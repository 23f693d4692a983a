"""Attacks from inside the Triton kernel: out-of-bounds loads and stores, and (interpreter only)
plain Python in the kernel body, which the Triton interpreter runs as Python, in the sandbox."""
from __future__ import annotations

import pytest

from tests.adversarial.kit import (
    DENIED,
    GOOD_WRAPPER_HEAD,
    REGULAR_CASES,
    assert_failed,
    assert_graded_normally,
    case,
    grade,
    submission,
)

pytestmark = [pytest.mark.sandbox, pytest.mark.adversarial]


def assert_every_case_broke(report) -> None:
    """Crashed (interpreter: SIGSEGV) or failed with an error (GPU: illegal address), never a pass."""
    assert_failed(report)
    assert report.status == "graded" and report.program.ran
    assert report.given_check.status in ("crashed", "failed"), report.given_check
    for case_id in REGULAR_CASES:
        c = case(report, case_id)
        assert not c.passed and c.error, c


def test_far_out_of_bounds_load(host):
    # The right answer is stored only if the load 4 TiB past x returned at all.
    report = grade(submission(kernel='''
row = tl.program_id(0)
cols = tl.arange(0, BLOCK)
mask = cols < N
far = tl.load(x + (1 << 40) + cols, mask=mask, other=0.0)
values = tl.load(x + row * N + cols, mask=mask, other=0.0)
tl.store(y + row * N + cols, values * 2 + far * 0, mask=mask)
'''))
    assert_every_case_broke(report)
    host.assert_untouched()
    assert_graded_normally()


def test_far_out_of_bounds_store(host):
    report = grade(submission(kernel='''
row = tl.program_id(0)
cols = tl.arange(0, BLOCK)
mask = cols < N
values = tl.load(x + row * N + cols, mask=mask, other=0.0)
tl.store(y - (1 << 40) + cols, values, mask=mask)
tl.store(y + row * N + cols, values * 2, mask=mask)
'''))
    assert_every_case_broke(report)
    host.assert_untouched()
    assert_graded_normally()


def test_off_by_one_mask_reads_and_writes_past_the_buffers(host):
    """`cols < N + 1` reads one element past x and writes one past y on the last row (on the
    others, the next row's first element, with the value it gets anyway). The harness's guard
    regions catch the write: the case is an error with the evidence and the misconception."""
    report = grade(submission(kernel='''
row = tl.program_id(0)
cols = tl.arange(0, BLOCK)
mask = cols < N + 1
values = tl.load(x + row * N + cols, mask=mask, other=0.0)
tl.store(y + row * N + cols, values * 2, mask=mask)
'''))
    host.assert_untouched()
    assert_graded_normally()
    assert_failed(report)
    assert case(report, "regular.n32").passed  # N = BLOCK = 32: no lane past N, nothing out of bounds
    ragged = case(report, "regular.n17")
    assert not ragged.passed and ragged.first_mismatch is None
    [breach] = ragged.out_of_bounds
    assert (breach.buffer, breach.kind, breach.output, breach.side, breach.changed, breach.distance, breach.index,
            breach.shape, breach.dtype) == ("a tensor allocated in double", "allocated", "y", "after", 1, 0, 3 * 17,
                                            [3, 17], "float32")
    assert breach.value == "nan"  # what it wrote was x's guard, read one past its end
    assert ragged.error.startswith("越界写入：") and "输出 y" in ragged.error and "cols < N + 1" in ragged.error
    feedback = next(i.feedback for i in report.items if i.id == "code.regular")
    assert ragged.error in feedback


def test_a_wrong_row_stride_far_past_the_output_is_still_evidence(host):
    """Each row is stored where it belongs and once more at row (row + 4) of stride 4N, as a wrong
    row stride does: 12N to 25N elements past y (384 to 799 on regular.n32, 1.5 to 3.2 KB), far
    beyond the least guard of 64 elements. The guard is as wide as the data (at least 16 KiB), so
    every such write lands in it and comes back as evidence. With 64-element guards they landed in
    the interpreter's heap past the buffer: no evidence of them, and where they broke the
    allocator's records the process aborted (SIGABRT) during this case or a later one."""
    report = grade(submission(kernel='''
row = tl.program_id(0)
cols = tl.arange(0, BLOCK)
mask = cols < N
values = tl.load(x + row * N + cols, mask=mask, other=0.0)
tl.store(y + row * N + cols, values * 2, mask=mask)
tl.store(y + (row + 4) * 4 * N + cols, values * 2, mask=mask)
'''))
    host.assert_untouched()
    assert_graded_normally()
    assert_failed(report)
    assert report.given_check.status == "passed"  # its outputs are right; nobody compares its padding
    for case_id in REGULAR_CASES:
        c = case(report, case_id)
        rows, cols = c.shape
        [breach] = c.out_of_bounds
        assert (breach.output, breach.side, breach.changed, breach.distance, breach.index) == \
            ("y", "after", rows * cols, (16 - rows) * cols, 16 * cols), (case_id, breach)
        assert breach.guard >= (16 << 10) // 4 and not c.passed and c.first_mismatch is None, c


def test_a_read_one_past_the_input_brings_nan_into_the_output(host):
    """Each row also loads its next element (one past x on the last row) and adds it times zero:
    the guard after x holds NaN, so the last row's last output is NaN and both cases fail."""
    report = grade(submission(kernel='''
row = tl.program_id(0)
cols = tl.arange(0, BLOCK)
mask = cols < N
values = tl.load(x + row * N + cols, mask=mask, other=0.0)
following = tl.load(x + row * N + cols + 1, mask=mask, other=0.0)
tl.store(y + row * N + cols, values * 2 + following * 0, mask=mask)
'''))
    host.assert_untouched()
    assert_failed(report)
    for case_id in REGULAR_CASES:
        c = case(report, case_id)
        assert not c.passed and not c.out_of_bounds and c.error is None, c
        shape = c.shape
        assert c.first_mismatch.observed is None and c.first_mismatch.index == [shape[0] - 1, shape[1] - 1], c
    assert_graded_normally()


def test_python_in_the_kernel_body_never_runs(host):
    """The interpreter would run a kernel body as Python (the same escapes as from the wrapper, from
    the kernel). Now every launch is compiled for a GPU target first (sandbox/gpu_compile.py), as a
    GPU does: the body is refused by Triton's compiler and none of it runs, on either device. (It
    would store 2x only if an escape worked, else DENIED + the number refused; the same escapes
    from the wrapper, which is plain Python, are tested in test_escape_*.)"""
    report = grade(submission(kernel=f'''
import os
import socket
denied = 0
for target in ({str(host.repo_marker)!r}, {str(host.tmp_marker)!r}, "/job/escaped", "/usr/escaped"):
    try:
        with open(target, "w") as fh:
            fh.write("escaped")
        if not target.startswith("/tmp/"):
            denied -= 100
    except OSError:
        denied += 1
for port in (5432, 6379):
    try:
        socket.create_connection(("127.0.0.1", port), timeout=3).close()
        denied -= 100
    except OSError:
        denied += 1
if {host.secret[::-1]!r}[::-1] in str(os.environ):
    denied -= 100
row = tl.program_id(0)
cols = tl.arange(0, BLOCK)
mask = cols < N
values = tl.load(x + row * N + cols, mask=mask, other=0.0)
if denied < 0:
    tl.store(y + row * N + cols, values * 2, mask=mask)
else:
    tl.store(y + row * N + cols, values * 0 + {DENIED} + denied, mask=mask)
'''))
    assert_failed(report)
    assert report.given_check.status == "failed"
    assert "unsupported AST node type: Import" in report.given_check.output
    for case_id in REGULAR_CASES:
        c = case(report, case_id)
        assert not c.passed and "unsupported AST node type: Import" in (c.error or ""), c
    host.assert_untouched()
    assert_graded_normally()


OFF_BY_ONE_KERNEL = '''
row = tl.program_id(0)
cols = tl.arange(0, BLOCK)
mask = cols < N + 1
values = tl.load(x + row * N + cols, mask=mask, other=0.0)
tl.store(y + row * N + cols, values * 2, mask=mask)
'''

# The harness's guard class, looked up where it lives (the harness runs as __main__), with every
# method that could decide or report a breach replaced by one that finds nothing.
SWITCH_OFF_GUARDS = '''
import sys
guards = getattr(sys.modules["__main__"], "_Guards", None)
if guards is not None and not getattr(guards, "switched_off", False):
    guards.check = lambda self, outputs: None
    guards.evidence = lambda self, outputs: ([], {})
    guards.switched_off = True
'''


def test_the_guard_check_cannot_be_switched_off_from_the_submission(host):
    """The off-by-one mask of the test above, with the harness's guard check replaced from the
    wrapper (it ran in the student's process and was looked up on the class at call time): the
    ragged case must still fail. Now the guards' bytes are compared on the trusted side, and a
    harness that sends none for the case's inputs fails the case."""
    wrapper = SWITCH_OFF_GUARDS + "\n" + GOOD_WRAPPER_HEAD + "return y\n"
    report = grade(submission(kernel=OFF_BY_ONE_KERNEL, wrapper=wrapper))
    host.assert_untouched()
    assert_graded_normally()
    assert_failed(report)
    ragged = case(report, "regular.n17")
    assert not ragged.passed and "证据缺失" in (ragged.error or "") and "evidence missing" in ragged.error, ragged
