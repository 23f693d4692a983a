"""A new program's compile runs start in parallel, in warm compile sandboxes, before its grading
run (service/grading/compile_parallel.py), and a fill that does not compile is graded as it would
be without them.

Real bubblewrap sandboxes on the Triton interpreter: it compiles nothing into the shared cache
(its staging folders stay empty, there is nothing to publish), but the sandbox's GPU-target
compile gate and the cases run in each compile run as on the GPU, so the orchestration is the
GPU's. What the grading sandbox then finds in the cache is tests/gpu/test_parallel_compile_gpu.py.
"""
from __future__ import annotations

import shutil
import time

import pytest

from sandbox.compile_cache import STAGING, SharedCompileCache
from sandbox.contract import DeviceMode, RunResult
from sandbox.runner import SandboxRunner
from service.bootstrap import build_grader
from service.config import REPO_ROOT, Settings
from service.grading.assemble import assemble
from service.grading.compile_parallel import compile_key
from service.grading.compile_warm import CompileWarmer
from service.submission import Submission

pytestmark = [pytest.mark.sandbox, pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs bubblewrap")]

EXAMPLE = REPO_ROOT / "exercises/lesson06_mean_var/example_submission.json"
READY_S = 180
RUNS = 2
NOT_COMPILABLE = "tl.arange(0, 3) < N"  # whitelisted, but arange's range must be a power of two


class RecordingRunner(SandboxRunner):
    """The real runner, noting when each grading run starts (the grader's runner only)."""

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.started: list[float] = []

    def run(self, **kwargs) -> RunResult:
        self.started.append(time.monotonic())
        return super().run(**kwargs)


def _with_fill(grader, fill: str) -> Submission:
    body = Submission.model_validate_json(EXAMPLE.read_text(encoding="utf-8"))
    template = grader.catalog.get(body.exercise).template
    return body.model_copy(update={"code": template.replace("______", fill, 1)})


@pytest.fixture(scope="module")
def grader(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("parallel-compile")
    grader = build_grader(Settings(sandbox="bwrap", device="interpreter", data_dir=tmp, warm_pool=0,
                                   compile_cache=False, compile_cache_prewarm=False))
    backend = grader.runner.backend
    grader.runner = RecordingRunner(backend=backend, limits=grader.runner.limits)
    cache = SharedCompileCache(tmp / "triton-shared")
    grader.compile_cache = CompileWarmer(cache=cache, backend=backend, limits=grader.runner.limits,
                                         mode=DeviceMode.interpreter, threads=1, parallel=RUNS,
                                         parallel_wait_s=READY_S)
    grader.start()
    try:
        yield grader
    finally:
        grader.close()


def test_a_new_programs_compile_runs_run_in_parallel_before_its_grading_run(grader):
    warmer = grader.compile_cache
    assert warmer.wait_parallel_ready(READY_S), "the warm compile sandboxes never said hello"
    report = grader.grade(_with_fill(grader, "mask"), secret_seed=7)

    job = warmer.last_parallel
    assert job is not None and job.done() and job.failed == 0
    assert report.status == "graded" and report.program.ran and all(c.passed for c in report.cases)
    assert report.timing["parallel_compile_runs"] == RUNS and "parallel_compile_s" in report.timing
    (grading_started,) = grader.runner.started
    starts, ends = sorted(s for s, _ in job.run_spans), sorted(e for _, e in job.run_spans)
    assert len(starts) == RUNS and ends[-1] <= grading_started, "the grading run waited for the compile runs"
    assert starts[-1] - starts[0] < ends[0] - starts[0], "the compile runs overlapped (warm sandboxes, started at once)"
    # Between them they ran the given check and one case of every shape the grading drew, in a sandbox.
    drawn = grader.catalog.get("lesson06_mean_var").spec.cases_for(7)
    ran = {c.id for g in job.groups for c in g.cases}
    assert {compile_key(c) for c in drawn if c.id in ran} == {compile_key(c) for c in drawn}
    assert job.statuses == {**{case_id: "ok" for case_id in ran}, "<given>": "passed"}
    # The interpreter writes no kernels: nothing published, no staging folder left behind.
    assert job.published == 0 and warmer.cache.entries() == 0
    assert sorted(p.name for p in (warmer.cache.root / STAGING).iterdir()) == sorted(
        s.staging.name for s in warmer._parallel.pool._slots.values())

    program = assemble(grader.catalog.get("lesson06_mean_var").template, report.program.fills)
    assert program.digest == report.program.digest
    assert warmer.compile_first(grader.catalog.get("lesson06_mean_var"), program, drawn) is None, "once per program"
    assert warmer.last_parallel is job


def test_a_fill_that_does_not_compile_is_graded_as_without_the_compile_runs(grader):
    warmer = grader.compile_cache
    assert warmer.wait_parallel_ready(READY_S)
    first = grader.grade(_with_fill(grader, NOT_COMPILABLE), secret_seed=8)
    job = warmer.last_parallel
    assert first.timing.get("parallel_compile_runs") == RUNS and job.failed == 0
    assert set(job.statuses.values()) <= {"error", "failed"}, job.statuses  # the compile error, in each run

    plain = grader.grade(_with_fill(grader, NOT_COMPILABLE), secret_seed=8, reuse=False)  # compiled before: none now
    assert "parallel_compile_runs" not in plain.timing
    assert first.status == plain.status == "graded" and not any(c.passed for c in first.cases)
    assert [c.model_dump(exclude={"elapsed_s"}) for c in first.cases] == [
        c.model_dump(exclude={"elapsed_s"}) for c in plain.cases]
    assert (first.given_check.status, first.score.total) == (plain.given_check.status, plain.score.total)
