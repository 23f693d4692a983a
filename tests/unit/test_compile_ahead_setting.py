"""KERNELGRADE_COMPILE_AHEAD: how many threads a GPU job's compile-ahead phase uses (0: off), read
when a runner is built; a bad value stops the runner with one line naming the variable."""
from __future__ import annotations

import pytest

from sandbox.backends.base import SandboxUnavailable
from sandbox.contract import CompileAhead, DeviceMode, Job
from sandbox.runner import COMPILE_AHEAD_ENV, compile_ahead_for, compile_ahead_setting


def test_on_with_four_threads_by_default(monkeypatch):
    monkeypatch.delenv(COMPILE_AHEAD_ENV, raising=False)
    assert compile_ahead_setting() == CompileAhead(threads=4)
    monkeypatch.setenv(COMPILE_AHEAD_ENV, " ")
    assert compile_ahead_setting() == CompileAhead(threads=4)


@pytest.mark.parametrize("value, threads", [("0", None), ("1", 1), ("8", 8), ("16", 16)])
def test_a_number_of_threads_or_off(monkeypatch, value, threads):
    monkeypatch.setenv(COMPILE_AHEAD_ENV, value)
    setting = compile_ahead_setting()
    assert (setting.threads if setting else None) == threads


@pytest.mark.parametrize("value", ["four", "2.5", "-1", "17"])
def test_a_bad_value_names_the_variable(monkeypatch, value):
    monkeypatch.setenv(COMPILE_AHEAD_ENV, value)
    with pytest.raises(SandboxUnavailable, match=COMPILE_AHEAD_ENV) as raised:
        compile_ahead_setting()
    assert "\n" not in str(raised.value)


def test_the_job_carries_it_and_an_old_job_has_none():
    job = Job(mode=DeviceMode.gpu, entry_point="f", run_given_check=False, given_seed=0, cases=[],
              compile_ahead=CompileAhead(threads=2))
    assert Job.model_validate_json(job.model_dump_json()).compile_ahead == CompileAhead(threads=2, wait_s=10.0)
    assert Job(mode=DeviceMode.gpu, entry_point="f", run_given_check=False, given_seed=0, cases=[]).compile_ahead is None
    with pytest.raises(ValueError):
        CompileAhead(threads=0)


@pytest.mark.parametrize("in_flight, cpus, threads", [
    (1, 16, 4),     # alone on the H200 host: the setting's 4
    (2, 16, 4),
    (3, 16, 2),     # 16 // 6
    (4, 16, 2),
    (5, 16, None),  # one thread would compile serially: off
    (8, 16, None),  # a class burst on 8 sandboxes: off (it lost a quarter of its rate with 4 each)
    (1, 2, None),   # this 2-core machine
    (0, 16, 4),     # counted before the run registered: as if alone
])
def test_fewer_threads_while_more_sandboxes_run(in_flight, cpus, threads):
    setting = compile_ahead_for(CompileAhead(threads=4, wait_s=7.0), in_flight=in_flight, cpus=cpus)
    assert (setting.threads if setting else None) == threads
    if setting:
        assert setting.wait_s == 7.0
    assert compile_ahead_for(None, in_flight=in_flight, cpus=cpus) is None


def test_every_runners_runs_count_while_they_run(tmp_path):
    """The count compile_ahead_for reads: a run is counted from its start to its end, on every runner."""
    from sandbox.backends.base import SandboxBackend
    from sandbox.contract import Limits
    from sandbox.runner import RUNS_IN_FLIGHT, SandboxRunner

    seen: list[int] = []

    class Unavailable(SandboxBackend):  # the runner's first step asks the backend; record the count there
        name = "unavailable"

        def check(self) -> None:
            seen.append(RUNS_IN_FLIGHT.count)
            raise SandboxUnavailable("no sandbox here")

    before = RUNS_IN_FLIGHT.count
    runner = SandboxRunner(backend=Unavailable(), limits=Limits(), work_root=tmp_path)
    result = runner.run(program="", given_check=None, given_seed=0, entry_point="f", cases=[], inputs={},
                        mode=DeviceMode.gpu)
    assert result.infra_error == "no sandbox here"
    assert seen == [before + 1] and RUNS_IN_FLIGHT.count == before
