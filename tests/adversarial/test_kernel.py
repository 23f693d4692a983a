"""Attacks from inside the Triton kernel: out-of-bounds loads and stores, and (interpreter only)
plain Python in the kernel body, which the Triton interpreter runs as Python, in the sandbox."""
from __future__ import annotations

import pytest

from tests.adversarial.kit import (
    DENIED, REGULAR_CASES, assert_failed, assert_graded_normally, case, denied_details, grade, interpreter_only,
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


OFF_BY_ONE_WEAKNESS = (
    "WEAKNESS: out-of-bounds accesses that do not change the compared values go unnoticed: with the "
    "mask off by one (cols < N + 1) the kernel reads one element past x and writes one element past "
    "y on the last row (and the next row's first element, with the same value, on the others) and "
    "gets 10/10. Neither the harness nor the runner puts guard regions around the buffers or checks "
    "them (only exercises whose cases carry NaN-padded strides see stray reads, and nothing sees "
    "stray writes). Fix: give the inputs NaN guard regions (allocate them inside larger buffers, as "
    "inputs.storage does for strided cases) and, where the exercise's wrapper allocates the output, "
    "check a canary past its end; on the GPU, compute-sanitizer in a validation run")


@pytest.mark.xfail(strict=True, reason=OFF_BY_ONE_WEAKNESS)
def test_off_by_one_mask_reads_and_writes_past_the_buffers(host):
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


@interpreter_only("the kernel body runs as Python only under the Triton interpreter")
def test_python_in_the_kernel_body_is_still_sandboxed(host):
    """The interpreter runs a kernel body as Python: the same escapes as from the wrapper, from the
    kernel. It stores 2x only if one of them worked, else DENIED + the number refused."""
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
    # All six refused (the host tmp marker's folder does not exist in the private /tmp: ENOENT).
    # A checkout under /tmp (CI) has its venv's parent folders in the private /tmp, so writing the
    # repository marker there lands in the sandbox's own tmpfs: five refusals, and the host check decides.
    expected = {5.0, 6.0} if str(host.repo_marker).startswith("/tmp/") else {6.0}
    details = denied_details(report)
    assert len(details) == 2 and set(details) <= expected, details
    host.assert_untouched()
    assert_graded_normally()
