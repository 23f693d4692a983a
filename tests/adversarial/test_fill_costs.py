"""Whitelisted expression fills whose cost is unbounded: constexpr arithmetic that Python runs on
every run (towers of `**` and `<<`, integer constants of any size, tuple repetition) is refused
before anything runs; a fill that passes and still runs into its case's time limit is stopped at
its first timeout, and the timeout is memoised like any result of a deterministic program, so
resubmitting it costs no second run; but only when the sandbox used the CPU over that phase
(sandbox/cpu_time.py): a timeout that may be the machine's doing runs again."""
from __future__ import annotations

import dataclasses
import time

import pytest

from service.grading.memo import InMemoryMemo
from service.submission import Submission
from tests.adversarial.kit import SECRET_SEED, make_grader
from tests.adversarial.test_whitelisted_blank import assert_refused_before_running, fill, grade_lesson, lesson_grader  # noqa: F401

pytestmark = [pytest.mark.sandbox, pytest.mark.adversarial]

# (id, fill, a word of the refusal). Each passed the whitelist before and ran for minutes or
# allocated gigabytes in the sandbox, on every submission, with full marks at the end.
COSTLY = [
    ("power-tower", "cols < N if 9 ** 9 ** 9 else cols < N", "**"),
    ("power-of-a-name", "cols < N + 0 * N ** N ** N", "**"),
    ("shift-tower", "cols < N + 0 * (1 << (1 << 40))", "<<"),
    ("tuple-repetition", "cols < N if (0,) * (1 << 33) else cols < N", "元组"),
    ("huge-constant", "cols < N + 0 * 1" + "0" * 300, "整数常量太大"),
    ("many-powers", "cols < N + 0 * (2 ** 60 * 3 ** 60 * 5 ** 60)", "太多"),
]


@pytest.mark.parametrize("expression, reason", [(f, r) for _, f, r in COSTLY], ids=[i for i, _, _ in COSTLY])
def test_costly_fill_is_refused_before_running(lesson_grader, host, expression, reason):  # noqa: F811
    report = grade_lesson(lesson_grader, fill(expression))
    assert_refused_before_running(report, reason=reason)
    assert report.program.not_run_reason.endswith(".)")  # the English half
    host.assert_untouched()


# The CPU share a timeout needs to be memoised (Limits.timeout_cpu_fraction, 0.25 by default; why:
# sandbox/cpu_time.py), lowered here: the shared 2-core test machine gave a busy loop a third of a
# core at times. What the tests tell apart is a loop (over a second of CPU in its 6 s) from a sleep
# (a few milliseconds).
BUSY = dict(case_timeout_s=6, timeout_cpu_fraction=0.1)


def test_a_timeout_is_not_a_free_retry(host):
    """`range(1 << 40)` passes every static bound and runs until the case deadline: the first
    timeout ends the run (no fresh sandbox for the other phases), and the same program submitted
    again reuses that result instead of running to the limit again."""
    grader = dataclasses.replace(make_grader(**BUSY), memo=InMemoryMemo())
    code = (grader.catalog.get("adv_loop").template.replace("______", "1 << 40"))
    first = grader.grade(Submission(exercise="adv_loop", code=code), secret_seed=SECRET_SEED)
    assert first.status == "graded" and first.program.ran and not first.score.passed
    assert first.given_check.status == "timeout", first.given_check
    assert first.timing["attempts"] == 1.0, "a fresh sandbox was started after the timeout"
    assert all(not c.passed and "程序是确定性的" in (c.error or "") for c in first.cases if c.kind != "given")
    assert first.program.memo_key, "the timed-out run was not memoised (its busy loop's CPU time was not seen)"

    second = grader.grade(Submission(exercise="adv_loop", code=code), secret_seed=SECRET_SEED + 1)
    assert second.program.reused and grader.counts.sandbox_runs == 1, grader.counts.snapshot()
    assert second.given_check.status == "timeout" and not second.score.passed
    host.assert_untouched()

    # The right fill still gets every point (and a regrade would run afresh: reuse=False).
    solution = grader.grade(Submission(exercise="adv_loop", code=grader.catalog.get("adv_loop").solution),
                            secret_seed=SECRET_SEED)
    assert solution.score.passed and solution.score.total == 10, solution.to_json()[:2000]


def test_a_timeout_without_cpu_time_is_not_memoised(host):
    """A program that runs out of time without computing (adv_sleep: the host wrapper sleeps for
    the blank's seconds, the stand-in for a sandbox that a starved machine did not run) used almost
    no CPU in the phase that timed out: its timeout is not stored, and the same program submitted
    again runs in a sandbox again instead of getting the stored timeout."""
    grader = dataclasses.replace(make_grader(**BUSY), memo=InMemoryMemo())
    code = grader.catalog.get("adv_sleep").template.replace("______", "3600")
    first = grader.grade(Submission(exercise="adv_sleep", code=code), secret_seed=SECRET_SEED)
    assert first.status == "graded" and first.program.ran and not first.score.passed
    assert first.given_check.status == "timeout", first.given_check
    assert first.timing["attempts"] == 1.0  # still ended at its first timeout, as any deterministic run
    assert not first.program.memo_key, "a timeout without CPU time was memoised"

    second = grader.grade(Submission(exercise="adv_sleep", code=code), secret_seed=SECRET_SEED + 1)
    assert not second.program.reused, "the second submission got the stored timeout"
    assert grader.counts.sandbox_runs == 2, grader.counts.snapshot()
    assert second.given_check.status == "timeout" and not second.score.passed
    host.assert_untouched()

    solution = grader.grade(Submission(exercise="adv_sleep", code=grader.catalog.get("adv_sleep").solution),
                            secret_seed=SECRET_SEED)
    assert solution.score.passed and solution.score.total == 10, solution.to_json()[:2000]


# Red team 10: rule 3 of the host rules (service/grading/host_fills.py) keeps a tuple's value element by element, and
# a line per level of `a{i} = (a{i-1}, a{i-1})` shares one object per level that it walked as a tree: 2**k leaves
# for k lines, on the worker, before any sandbox and past every step budget (22 lines: 13 s of CPU; 40 lines would
# have held a worker for days). The fills are otherwise the solution's, so the grading goes on as usual.
DOUBLINGS = 40


@pytest.mark.timeout(300)
def test_host_code_that_doubles_a_tuple_per_line_costs_the_worker_little(host):
    from sandbox.contract import Limits
    from service.bootstrap import build_grader
    from service.config import Settings
    from tests.adversarial.kit import QUICK
    from tests.adversarial.test_host_blanks import RIGHT_ATOMIC, RIGHT_COMBINE, RIGHT_ZEROING, code_points, program

    block = "a0 = (0, 0)\n" + "".join(f"a{i} = (a{i - 1}, a{i - 1})\n" for i in range(1, DOUBLINGS + 1)) + RIGHT_ZEROING
    grader = build_grader(Settings(limits=Limits(**QUICK)))
    started = time.thread_time()  # this thread's CPU: the trusted side's work, not the sandbox's
    report = grader.grade(Submission(exercise="fused_mean_var_atomic", code=program(RIGHT_ATOMIC, RIGHT_COMBINE, block)),
                          secret_seed=SECRET_SEED)
    spent = time.thread_time() - started
    assert report.status == "graded" and report.program.ran, report.to_json()[:2000]
    assert code_points(report) == (3, 3), [(i.id, i.points) for i in report.items]
    assert spent < 30, spent
    host.assert_untouched()
