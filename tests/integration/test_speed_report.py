"""Student kernel speed end to end in the real bwrap sandbox: the report's `performance` object and
the feedback page for lesson 6, its reuse with the memoised code results, and forged speed frames
(GPU where present: figures measured; on the Triton interpreter: "not measured", with the reason)."""
from __future__ import annotations

import shutil

import numpy as np
import pytest

from sandbox.contract import CaseJob, DeviceMode, SpeedJob, TensorArg
from service.bootstrap import build_grader
from service.config import REPO_ROOT, Settings
from service.grading.memo import InMemoryMemo
from service.grading.sandbox_text import render_run
from service.report import Report
from service.submission import Submission
from service.web.feedback import performance_view, reasons
from service.web.i18n import texts
from service.web.pages import templates

pytestmark = [pytest.mark.sandbox, pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs bubblewrap")]

EXAMPLE = REPO_ROOT / "exercises/lesson06_mean_var/example_submission.json"


@pytest.fixture(scope="module")
def grader():
    grader = build_grader(Settings())  # the GPU where there is one, else the interpreter
    grader.memo = InMemoryMemo()
    return grader


def test_lesson06_report_and_page_carry_the_speed_beside_the_claim_and_reuse_it(grader):
    spec = grader.catalog.get("lesson06_mean_var").spec
    example = Submission.model_validate_json(EXAMPLE.read_text(encoding="utf-8"))
    first = grader.grade(example, secret_seed=61)
    assert first.status == "graded" and first.score.total == 10, "timing never changes points"
    p = first.performance
    assert p is not None and p.informational and not p.reused and p.cases_passed is True
    assert p.claim == spec.speed.claim.zh and "读取矩阵一次" in p.claim and p.ideal_bytes == spec.speed.ideal_bytes
    if grader.mode is DeviceMode.interpreter:
        assert p.status == "not_measured" and "解释器" in p.reason
        assert p.kernel is None and p.achieved_gbps is None and p.method == {}
    else:
        assert p.status == "measured", p.reason
        assert p.timed_shape == [spec.speed.rows, spec.speed.cols] and p.kernel.reps >= 5
        assert 0 < p.kernel.p20_ms <= p.kernel.median_ms <= p.kernel.p80_ms
        assert p.plausible and 0 < p.percent_of_peak <= 105 and p.achieved_gbps > 0
        assert p.baseline is not None and p.speedup_vs_baseline > 0 and p.copy_gbps > 0
        assert p.method["timer"] == "CUDA events" and p.method["l2_flush_bytes"] >= 1 << 26
    assert Report.model_validate_json(first.to_json()).performance == p  # through the contract's JSON

    t = texts(first.language)
    html = templates().get_template("feedback.html").render(
        t=t, row=type("Row", (), {"exercise_id": spec.id, "status": "graded"})(), report=first, title="",
        exercise_title=spec.title, score_svg="", cases=[], pending=[], performance=performance_view(first, t),
        reasons=reasons(first, t, first.language), language=first.language, lead=None, ladders=[], hint_cost=None,
        lang_asked="", switch=[])
    assert t["perf_title"] in html and "读取矩阵一次" in html and f'data-status="{p.status}"' in html

    # The same program again: its code results and speed figures come from the memo, marked reused.
    second = grader.grade(example, secret_seed=62)
    assert second.program.reused and second.performance.reused
    assert second.performance.model_dump(exclude={"reused"}) == p.model_dump(exclude={"reused"})


FORGER = '''
import sys
import torch


def probe(kind):
    frame = {"type": bytes(kind.tolist()).decode(), "status": "ok", "shape": [1],
             "kernel": {"median_ms": 1e-6, "p20_ms": 1e-6, "p80_ms": 1e-6, "min_ms": 1e-6, "max_ms": 1e-6, "reps": 9}}
    sys.modules["wire"].write_frame(int(sys.argv[2]), frame)
    return torch.zeros(1)
'''


@pytest.mark.parametrize("kind", ["speed", "speed_start"])
def test_a_speed_frame_written_by_the_submission_breaks_the_channel(bwrap_runner, kind):
    """The harness sends `speed_start` only after the cases and only when the job asks for timing
    (never on the interpreter): one written by student code is a protocol violation, like a
    forged case result, and no speed result is taken from it."""
    runner = bwrap_runner(case_timeout_s=60)
    result = runner.run(program=FORGER, given_check=None, given_seed=0, entry_point="probe",
                        cases=[CaseJob(id="forge", args=[TensorArg(key="kind")], outputs=["out"])],
                        inputs={"kind": np.frombuffer(kind.encode(), dtype=np.uint8).copy()},
                        mode=DeviceMode.interpreter)
    assert result.infra_error is None
    (case,) = result.cases
    assert case.status == "crashed" and case.said is not None and case.said.code == "sandbox.broken_channel", case.said
    render_run(result, "zh")
    assert "违反协议" in case.error and kind in case.error, case.error
    assert result.speed is None


def test_a_speed_job_on_the_interpreter_is_not_run(bwrap_runner):
    """Timing is GPU only: the harness ignores a speed job in interpreter mode (the pipeline never sends one)."""
    runner = bwrap_runner(case_timeout_s=60)
    program = "import torch\n\ndef double(x):\n    return x * 2\n"
    speed = SpeedJob(args=[TensorArg(key="x")], names=["x"], repeat=4, baseline="x * 2")
    result = runner.run(program=program, given_check=None, given_seed=0, entry_point="double",
                        cases=[CaseJob(id="c", args=[TensorArg(key="x")], outputs=["y"])],
                        inputs={"x": np.arange(4, dtype=np.float32)}, mode=DeviceMode.interpreter, speed=speed)
    assert result.infra_error is None and result.cases[0].status == "ok" and result.speed is None
