"""The kit grading locally: `kernelgrade grade`'s exit 2 (input it cannot read) is said with the last
line of its stderr that says something, not a compile error's caret line or a blank one."""
from __future__ import annotations

import subprocess

import pytest

from service.kits import kernelgrade_kit
from service.kits.kernelgrade_kit import KitError, grade_locally, last_said_line

CARET_LAST = "CompilationError: at 3:10:\n    srt = tl.sort(x, dim=1)\n          ^\n   \n"


def _refused(monkeypatch, stderr: str) -> KitError:
    def run(args, **kwargs):
        return subprocess.CompletedProcess(args, 2, stdout="", stderr=stderr)

    monkeypatch.setattr(kernelgrade_kit.subprocess, "run", run)
    with pytest.raises(KitError) as refused:
        grade_locally({}, command="kernelgrade", result_format="gradescope", veto_policy="record", timeout_s=5)
    assert refused.value.code == "invalid"
    return refused.value


def test_a_caret_or_blank_last_line_gives_way_to_the_line_before(monkeypatch):
    assert _refused(monkeypatch, CARET_LAST).params["error"] == "srt = tl.sort(x, dim=1)"
    assert _refused(monkeypatch, "error: no answers object\n\n").params["error"] == "error: no answers object"


def test_stderr_that_says_nothing_is_refused(monkeypatch):
    assert _refused(monkeypatch, "").params["error"] == "refused"
    assert _refused(monkeypatch, "   ^\n  \n").params["error"] == "refused"


def test_the_kits_rule_is_the_case_summarys():
    """The kit carries a copy of rubric._case_failure's rule (it runs without the service)."""
    from service.grading.rubric import _case_failure
    from service.report import CaseReport

    for error in (CARET_LAST, CARET_LAST + "ValueError: '__func__' is not in list\n", "one line ~~~ \n  ~^~\n"):
        case = CaseReport(id="c", kind="regular", description="", shape=[1], seed=0, passed=False, error=error)
        assert last_said_line(error) == _case_failure(case, "en")
