"""CompileWarmer.close() ends a compile run in progress (service/grading/compile_warm.py): its
sandbox is killed and nothing of it is left when close() returns. A run that close() left going
finished in its daemon thread after the grader had closed, its sandbox still alive (on a GPU host,
the bwrap processes that outlived the adversarial suite's graders). Real bwrap sandboxes on the
interpreter: a compile run there compiles nothing, but it is the same sandbox run."""
from __future__ import annotations

import dataclasses
import os
import time
from pathlib import Path

import pytest

from sandbox.compile_cache import SharedCompileCache
from sandbox.contract import DeviceMode, Limits
from sandbox.pool import JOB_PREFIX
from sandbox.runner import RUNS_IN_FLIGHT
from service.config import REPO_ROOT
from service.exercises import ExerciseCatalog
from service.grading.assemble import assemble
from service.grading.compile_warm import CompileWarmer
from service.grading.extract import extract

pytestmark = pytest.mark.sandbox
HOLD_S = 90  # the compile run's program sleeps this long as it loads: a run in progress for the whole test


def sandbox_processes() -> list[tuple[int, str]]:
    """This process's sandboxes: each carries its job folder in its command line (bwrap's binds)."""
    needle = f"{JOB_PREFIX}{os.getpid()}-".encode()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            line = Path(f"/proc/{entry}/cmdline").read_bytes()
        except OSError:
            continue
        if needle in line:
            found.append((int(entry), line.replace(b"\0", b" ")[:200].decode(errors="replace")))
    return found


def test_close_ends_a_compile_run_in_progress(bwrap_backend, tmp_path):
    deadline = time.monotonic() + 240  # the count is the process's: an earlier test's runs end first
    while RUNS_IN_FLIGHT.count and time.monotonic() < deadline:
        time.sleep(0.1)
    assert RUNS_IN_FLIGHT.count == 0, "runs of an earlier test are still going"
    # An earlier test's grader still open in this process (a module or session fixture) keeps its warm
    # sandboxes waiting: they are not this test's, so only sandboxes started after this point count.
    earlier = {pid for pid, _ in sandbox_processes()}

    def started_here() -> list[tuple[int, str]]:
        return [(pid, line) for pid, line in sandbox_processes() if pid not in earlier and "--warm" not in line]

    exercise = ExerciseCatalog(REPO_ROOT / "exercises").get("lesson06_mean_var")
    solution = assemble(exercise.template, extract(exercise.template, exercise.solution).fill_sources)
    program = dataclasses.replace(solution, module=f"import time\ntime.sleep({HOLD_S})\n" + solution.module)
    warmer = CompileWarmer(cache=SharedCompileCache(tmp_path / "cache"), backend=bwrap_backend,
                           limits=Limits(case_timeout_s=HOLD_S + 30), mode=DeviceMode.interpreter, threads=1).start()
    try:
        assert warmer.submit(exercise, program, defer=False)
        deadline = time.monotonic() + 60
        while not started_here() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert started_here(), "the compile run's sandbox did not start"
        time.sleep(5)  # past its start-up (torch's import), into the program's load, as a rule
        assert RUNS_IN_FLIGHT.count == 1 and started_here()
        started = time.monotonic()
        warmer.close()
        took = time.monotonic() - started
        left = started_here()
    finally:
        warmer.close()
    assert not left, f"close() returned after {took:.1f} s with the compile run's sandbox alive: {left}"
    assert took < warmer.close_wait_s, took
    assert RUNS_IN_FLIGHT.count == 0, "the run returned"
    assert warmer.stats.compiled == 0 and warmer.stats.published == 0, warmer.stats
