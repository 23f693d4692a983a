"""The compile warmer stays out of a burst's way (service/grading/compile_warm.py): a program
queued after its grading waits until no grading runs in this process, while the catalogue's
programs, queued at start, do not wait. Real bwrap sandboxes on the interpreter (a compile run
there compiles nothing, but it is the same sandbox run at the same moment)."""
from __future__ import annotations

import threading
import time

import pytest

from sandbox.compile_cache import SharedCompileCache
from sandbox.contract import DeviceMode, Limits
from sandbox.runner import RUNS_IN_FLIGHT, SandboxRunner
from service.config import REPO_ROOT
from service.exercises import ExerciseCatalog
from service.grading.assemble import assemble
from service.grading.compile_warm import CompileWarmer
from service.grading.extract import extract
from tests.conftest import run_probes

pytestmark = pytest.mark.sandbox
READY_S = 240

SLOW = '''
import time


def probe_slow():  # a grading that holds its sandbox for a while
    time.sleep(4)
    return outcome(True)
'''


def _peak_runs_while(action) -> int:
    """The most sandbox runs in flight in this process at once while `action` runs."""
    peak, done = [0], threading.Event()

    def watch() -> None:
        while not done.is_set():
            peak[0] = max(peak[0], RUNS_IN_FLIGHT.count)
            done.wait(0.01)

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        action()
    finally:
        done.set()
        watcher.join()
    return peak[0]


@pytest.mark.parametrize("defer", [True, False], ids=["graded-program-waits", "catalogue-program-does-not"])
def test_a_graded_programs_compile_run_waits_for_the_gradings_in_flight(bwrap_backend, tmp_path, defer):
    # The count is the process's: runs an earlier test left going (a daemon compile run) end first.
    deadline = time.monotonic() + READY_S
    while RUNS_IN_FLIGHT.count and time.monotonic() < deadline:
        time.sleep(0.1)
    assert RUNS_IN_FLIGHT.count == 0, "sandbox runs of an earlier test are still going"
    exercise = ExerciseCatalog(REPO_ROOT / "exercises").get("lesson06_mean_var")
    program = assemble(exercise.template, extract(exercise.template, exercise.solution).fill_sources)
    warmer = CompileWarmer(cache=SharedCompileCache(tmp_path / "cache"), backend=bwrap_backend, limits=Limits(),
                           mode=DeviceMode.interpreter, threads=1).start()
    runner = SandboxRunner(backend=bwrap_backend, limits=Limits(case_timeout_s=60), work_root=tmp_path)
    try:
        def grade_while_queued() -> None:
            started = threading.Timer(1.0, lambda: warmer.submit(exercise, program, defer=defer))
            started.start()  # queued once the grading's run is in flight
            try:
                result, cases = run_probes(runner, SLOW, ["slow"])
                assert cases["slow"].status == "ok", result
            finally:
                started.join()

        peak = _peak_runs_while(grade_while_queued)
        assert warmer.wait_idle(READY_S) and warmer.stats.compiled == 1, warmer.stats
        if defer:
            assert peak == 1, "the compile run started while the grading ran"
        else:
            assert peak == 2, "the catalogue's compile run waited for the grading"
    finally:
        warmer.close()
