"""KERNELGRADE_COMPILE_AHEAD: how many threads a GPU job's compile-ahead phase uses (0: off), read
when a runner is built; a bad value stops the runner with one line naming the variable."""
from __future__ import annotations

import pytest

from sandbox.backends.base import SandboxUnavailable
from sandbox.contract import CompileAhead, DeviceMode, Job
from sandbox.runner import COMPILE_AHEAD_ENV, compile_ahead_setting


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
