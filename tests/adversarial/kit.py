"""Shared pieces of the adversarial suite: submissions built from the adv_double template, the
grader, and the host-side checks every attack ends with.

A submission is the template of `exercises/adv_double` with its two blanks (the kernel body and
the wrapper body) replaced. Most attacks use `guarded(...)`: the wrapper first computes the right
answer `y = 2x` with the correct kernel, then runs the attack, a function `attack()` that returns
`(breached, detail)`. It returns `y` (the case passes) ONLY IF the forbidden thing worked, and
otherwise a tensor filled with `DENIED + detail` (`detail` usually the errno). So a pass would
reveal a breach, and the value the trusted side observed proves that the attack ran to its end
and was refused (not, say, broken by a typo in the attack).
"""
from __future__ import annotations

import errno
import os
import re
import tempfile
import textwrap
import time
import weakref
from pathlib import Path

import pytest

from sandbox.contract import DeviceMode, Limits
from service.bootstrap import build_grader
from service.config import REPO_ROOT, Settings
from service.grading.pipeline import Grader
from service.report import Report
from service.submission import Submission

ADV_EXERCISES = REPO_ROOT / "tests" / "adversarial" / "exercises"
ADV_ID = "adv_double"
TEMPLATE = (ADV_EXERCISES / ADV_ID / "template.py").read_text(encoding="utf-8")
SOLUTION = (ADV_EXERCISES / ADV_ID / "solution.py").read_text(encoding="utf-8")
LESSON06_SOLUTION = REPO_ROOT / "exercises" / "lesson06_mean_var" / "solution.py"
BLANK = "______"
SECRET_ENV = "KERNELGRADE_TEST_SECRET"
SECRET_SEED = 7_349_126_580_112_233  # every grading of the suite uses it (report.seeds.secret)
REGULAR_CASES = ("regular.n32", "regular.n17")

# What a denied attack returns, plus its detail (an errno, a count): far from any 2x of the inputs.
DENIED = 1000.0

GOOD_KERNEL = """
row = tl.program_id(0)
cols = tl.arange(0, BLOCK)
mask = cols < N
values = tl.load(x + row * N + cols, mask=mask, other=0.0)
tl.store(y + row * N + cols, values * 2, mask=mask)
"""

GOOD_WRAPPER_HEAD = """
x = x.contiguous()
y = torch.empty_like(x)
M, N = x.shape
double_kernel[(M,)](x, y, N, BLOCK=triton.next_power_of_2(N))
"""

# Quick limits for attacks that should not hit any limit (an unexpected hang still ends soon).
QUICK = dict(startup_timeout_s=60, case_timeout_s=20, run_timeout_s=90, kill_grace_s=3)


def device_mode() -> DeviceMode:
    """The device the suite grades on: KERNELGRADE_DEVICE (auto: the GPU if there is one)."""
    return Settings().device_mode()


def interpreter_only(reason: str):
    """Skip on the GPU: the attack needs the Triton interpreter (Python inside a kernel) or an
    interpreter-only limit."""
    return pytest.mark.skipif(device_mode() is DeviceMode.gpu, reason=f"interpreter only: {reason}")


def _indent(body: str) -> str:
    return textwrap.indent(textwrap.dedent(body).strip("\n"), "    ")


def submission(*, wrapper: str | None = None, kernel: str | None = None) -> str:
    """The adv_double template with the kernel body and the wrapper body filled in."""
    kernel = GOOD_KERNEL if kernel is None else kernel
    wrapper = GOOD_WRAPPER_HEAD + "return y\n" if wrapper is None else wrapper
    code = TEMPLATE.replace(BLANK, _indent(kernel).lstrip(), 1)
    code = code.replace(BLANK, _indent(wrapper).lstrip(), 1)
    assert BLANK not in code
    return code


# Available to every guarded attack (it runs at the top of the wrapper body).
PRELUDE = """
import os
import socket
import sys
import time


def attempt(action):
    # (worked, errno): did `action()` return, and if it raised OSError, its errno (999: none)
    try:
        action()
    except OSError as exc:
        return False, abs(exc.errno) if exc.errno else 999
    return True, 0


def once(key, compute):
    # compute() once per sandbox process (the given check and the cases share it)
    store = globals()
    if key not in store:
        store[key] = compute()
    return store[key]


def in_given_check():
    # is the wrapper being called by the lesson's given check (not by the harness for a case)?
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_filename.endswith("given_check.py"):
            return True
        frame = frame.f_back
    return False
"""


def fill_in(source: str, **values) -> str:
    """`@NAME@` in `source` becomes repr(values[NAME]) (no brace escaping in attack sources)."""
    for name, value in values.items():
        source = source.replace(f"@{name}@", repr(value))
    leftover = re.findall(r"@[A-Z_]+@", source)
    assert not leftover, f"unfilled placeholders {leftover}"
    return source


def guarded(attack: str, **values) -> str:
    """A submission whose wrapper returns the right answer only if `attack()` reports a breach.

    `attack` is the source of a function `def attack(x, y): ... return breached, detail`, with
    `@NAME@` placeholders filled from `values`; PRELUDE's helpers are in scope.
    """
    wrapper = (
        textwrap.dedent(PRELUDE).strip("\n") + "\n"
        + textwrap.dedent(GOOD_WRAPPER_HEAD).strip("\n") + "\n"
        + fill_in(textwrap.dedent(attack).strip("\n"), **values) + "\n"
        + "breached, detail = attack(x, y)\n"
        + "if breached:\n"
        + "    return y\n"
        + f"return torch.full_like(y, {DENIED!r} + float(detail))\n"
    )
    return submission(wrapper=wrapper)


# KERNELGRADE_TEST_WARM_POOL=N: every grader of the suite keeps a warm pool of N (the service's
# way), and each grading waits for a warm sandbox first, so the attacks run in the pool's
# sandboxes (with KERNELGRADE_SANDBOX_START=fork: forked warm children). For fork mode: a waiting
# fresh sandbox carries the job needle that assert_no_survivors looks for.
WARM_POOL_ENV = "KERNELGRADE_TEST_WARM_POOL"
WARM_COUNTS = {"graders": 0, "warm": 0, "forked": 0, "cold": 0}  # attempts of the suite (the summary line)
_per_test: list[Grader] = []
# Every grader started with a warm pool and not closed yet, a module's fixture's among them: its
# waiting sandboxes are alive by design while it is open (assert_no_survivors spares them).
_open: dict[int, weakref.ref[Grader]] = {}


def warm_pool_size() -> int:
    return int(os.environ.get(WARM_POOL_ENV, "0") or 0)


def warm_forked() -> bool:
    """The suite's attacks run in warm children forked from the template (KERNELGRADE_TEST_WARM_POOL
    with KERNELGRADE_SANDBOX_START=fork). Their pid 1 is in a user namespace of its own (it drops
    its privileges only after the harness has dropped its own: docs/forkserver.md), so the attack
    may not look into /proc/1 at all."""
    return warm_pool_size() > 0 and os.environ.get("KERNELGRADE_SANDBOX_START", "").strip().lower() == "fork"


def started(grader: Grader) -> Grader:
    """With KERNELGRADE_TEST_WARM_POOL: the grader with its warm pool started (closed by close_started)."""
    size = warm_pool_size()
    if size > 0:
        grader.warm_pool = size
        grader.start()
        WARM_COUNTS["graders"] += 1
        _open[id(grader)] = weakref.ref(grader)
    return grader


def close_started(grader: Grader) -> None:
    pool = grader.runner.pools.get((grader.mode, grader.device_index))
    if pool is not None:
        WARM_COUNTS["warm"] += pool.handed_total
        WARM_COUNTS["forked"] += pool.forked_total
    WARM_COUNTS["cold"] += grader.runner.cold_starts
    _open.pop(id(grader), None)
    grader.close()


def close_test_graders() -> None:
    """The graders make_grader started for this test (the suite's conftest, after each test)."""
    while _per_test:
        close_started(_per_test.pop())


def make_grader(*, settings: dict | None = None, **limit_overrides) -> Grader:
    """The suite's grader: the adversarial catalog, the device of the environment, QUICK limits."""
    limits = {**QUICK, **limit_overrides}
    grader = started(build_grader(Settings(exercises_dir=ADV_EXERCISES, limits=Limits(**limits), **(settings or {}))))
    if warm_pool_size() > 0:
        _per_test.append(grader)
    return grader


def grade(code: str, *, exercise: str = ADV_ID, grader: Grader | None = None, **limit_overrides) -> Report:
    grader = grader or make_grader(**limit_overrides)
    pool = grader.runner.pools.get((grader.mode, grader.device_index))
    if pool is not None:  # KERNELGRADE_TEST_WARM_POOL: the attack runs in a warm sandbox
        pool.wait_ready(1, 120)
    return grader.grade(Submission(exercise=exercise, code=code), secret_seed=SECRET_SEED)


# ---------------------------------------------------------------------------------------------
# Verdicts


def case(report: Report, case_id: str):
    return next(c for c in report.cases if c.id == case_id)


def assert_failed(report: Report) -> None:
    """(a): never a pass: a graded fail with fewer than all code points, or a clear not_gradable."""
    assert not report.score.passed, f"the attack PASSED:\n{report.to_json()[:4000]}"
    if report.status == "not_gradable":
        assert report.message, "a not_gradable report must say why"
        return
    assert report.status == "graded"
    code_points = sum(i.points for i in report.items if i.id.startswith("code."))
    code_max = sum(i.max_points for i in report.items if i.id.startswith("code."))
    assert code_points < code_max, f"all code points ({code_points}) for an attack"
    assert not all(c.passed for c in report.cases), "every case passed"


def denied_details(report: Report) -> list[float]:
    """The details that the regular cases returned with DENIED (each case must show one)."""
    details = []
    for case_id in REGULAR_CASES:
        c = case(report, case_id)
        assert not c.passed, f"{case_id} passed: the attack worked"
        assert c.error is None and c.first_mismatch is not None, (
            f"{case_id} did not return the DENIED sentinel (so the attack may not have run to its end): "
            f"error={c.error!r}")
        observed = c.first_mismatch.observed
        assert observed is not None and observed >= DENIED - 0.5, f"{case_id} returned {observed}, not a DENIED value"
        details.append(observed - DENIED)
    return details


def assert_denied(report: Report, *, errnos: set[int] | None = None, details: set[float] | None = None) -> list[float]:
    """The attack ran in every regular case, was refused, and the given check failed too."""
    assert_failed(report)
    assert report.status == "graded" and report.program.ran
    assert report.given_check.status == "failed", report.given_check
    found = denied_details(report)
    allowed = set(details or set()) | {float(e) for e in (errnos or set())}
    if allowed:
        for value in found:
            assert value in allowed, (
                f"denied with detail {value} ({errno.errorcode.get(int(value), '?')}), expected one of "
                f"{sorted(allowed)}")
    return found


def assert_graded_normally(grader: Grader | None = None) -> Report:
    """(c): the next submission, the correct solution, gets every point."""
    report = grade(SOLUTION, grader=grader)
    assert report.status == "graded", report.message
    assert report.score.passed and report.score.total == report.score.max == 10, report.to_json()[:3000]
    assert all(c.passed for c in report.cases)
    return report


# ---------------------------------------------------------------------------------------------
# The host


def host_processes_with(*needles: str) -> list[tuple[int, str]]:
    """Host processes whose command line or environment contains one of `needles`."""
    found = []
    me = os.getpid()
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == me:
            continue
        for part in ("cmdline", "environ"):
            try:
                data = Path(f"/proc/{entry}/{part}").read_bytes()
            except OSError:
                continue
            hit = next((n for n in needles if n.encode() in data), None)
            if hit is not None:
                found.append((int(entry), data.replace(b"\0", b" ")[:200].decode("utf-8", "replace")))
                break
    return found


def job_needle() -> str:
    """Every sandbox this process starts has its job folder in bwrap's command line."""
    return f"kg-job-{os.getpid()}-"


def _waiting_sandboxes() -> tuple[set[int], set[Path]]:
    """The processes (each waiting sandbox's and every descendant of it) and job folders of the
    warm sandboxes that graders still open keep waiting: a module's grader (a fixture) stays open
    across its tests. None of them has run a job: an attempt takes its sandbox out of the pool."""
    roots: set[int] = set()
    folders: set[Path] = set()
    for ref in list(_open.values()):
        grader = ref()
        if grader is None:
            continue
        for pool in list(grader.runner.pools.values()):
            for pid, job_dir in pool.waiting():
                roots.add(pid)
                folders.add(job_dir)
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        try:
            parents[int(entry)] = int(Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[1])
        except (ValueError, OSError, IndexError):
            continue
    spared = set(roots)
    grown = True
    while grown:
        more = {pid for pid, parent in parents.items() if parent in spared} - spared
        spared |= more
        grown = bool(more)
    return spared, folders


def assert_no_survivors(token: str, *, wait_s: float = 8.0) -> None:
    """No process left: none carrying the attack's token, none of this process's sandboxes (but
    the warm ones that a grader still open keeps waiting, which ran no job)."""
    # With KERNELGRADE_TEST_WARM_POOL the test's warm sandboxes live while their grader is open
    # (a fresh one carries its job folder in bwrap's command line): close the test's own graders
    # first, so that everything of the job must be gone; a module's grader stays open, and only
    # its waiting sandboxes are spared.
    close_test_graders()
    deadline = time.monotonic() + wait_s
    while True:
        spared, folders = _waiting_sandboxes()
        left = [(pid, line) for pid, line in host_processes_with(token, job_needle()) if pid not in spared]
        if not left:
            break
        if time.monotonic() > deadline:
            pytest.fail(f"processes outlived the grading: {left}")
        time.sleep(0.1)
    stale = [p for p in Path(tempfile.gettempdir()).glob(f"{job_needle()}*") if p not in folders]
    assert not stale, f"job folders left behind: {stale}"


def solution_sha256() -> str:
    import hashlib

    return hashlib.sha256(LESSON06_SOLUTION.read_bytes()).hexdigest()

