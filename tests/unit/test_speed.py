"""Student kernel speed (issue #6 item 4), the pure parts: the harness's statistics, the runner's
reading of a `speed` frame, and the figures of the report's `performance` object (GB/s, share of
the HBM ceiling and of the copy bandwidth, speed-up over the baseline). The timing itself needs a
GPU: tests/gpu/test_gpu_speed.py; the interpreter's report: tests/integration/test_speed_report.py."""
from __future__ import annotations

import dataclasses
import math

import pytest

from sandbox import harness
from sandbox.contract import DeviceMode, SpeedRun
from sandbox.runner import _speed_run
from service.config import REPO_ROOT
from service.exercises import ExerciseCatalog
from service.grading.speed import gbps, hbm_peak_gbps, performance, speed_inputs, speed_job

LESSON = ExerciseCatalog(REPO_ROOT / "exercises").get("lesson06_mean_var")
SPEED = LESSON.spec.speed
H200 = {"name": "NVIDIA H200", "memory_clock_khz": None, "memory_bus_width_bits": None, "l2_bytes": 52428800,
        "sm_count": 132}


def _frame(kernel_times, baseline_times, copy_times, *, device=H200, copy_bytes=2 * 16384 * 4096 * 4) -> dict:
    """A `speed` frame as harness._speed sends it (its statistics computed by the harness's own _stats)."""
    return {"type": "speed", "status": "ok", "shape": [16384, 4096], "kernel": harness._stats(kernel_times),
            "baseline": harness._stats(baseline_times), "copy": harness._stats(copy_times), "copy_bytes": copy_bytes,
            "device": device, "elapsed_s": 1.2,
            "method": {"tool": "triton.testing.do_bench", "warmup_ms": 25, "rep_ms": 100, "l2_flush_bytes": 1 << 28,
                       "timer": "CUDA events", "triton": "3.6.0"}}


def test_harness_statistics_are_median_and_the_20_80_spread():
    stats = harness._stats([0.5, 0.1, 0.3, 0.2, 0.4])
    assert stats == pytest.approx({"median_ms": 0.3, "p20_ms": 0.18, "p80_ms": 0.42, "min_ms": 0.1, "max_ms": 0.5,
                                   "reps": 5})
    assert harness._stats([0.07])["median_ms"] == 0.07


def test_the_runner_reads_a_speed_frame_and_refuses_malformed_figures():
    run = _speed_run(_frame([0.07] * 10, [0.14] * 10, [0.15] * 10))
    assert run.status == "ok" and run.shape == [16384, 4096] and run.kernel["reps"] == 10
    assert run.device["name"] == "NVIDIA H200" and run.method["tool"] == "triton.testing.do_bench"

    for bad in ({"median_ms": float("nan")}, {"median_ms": -1.0}, {"median_ms": "fast"}, {"reps": 1.5}):
        frame = _frame([0.07] * 10, [0.14] * 10, [0.15] * 10)
        frame["kernel"] = {**frame["kernel"], **bad}
        assert _speed_run(frame).status == "error", bad
    frame = _frame([0.07], [0.14], [0.15])
    frame["baseline"] = {"median_ms": 0}
    assert _speed_run(frame).status == "ok" and _speed_run(frame).baseline == {}  # the kernel's figure stands
    frame["shape"] = ["16384"]
    assert _speed_run(frame).status == "error"
    failed = _speed_run({"type": "speed", "status": "error", "error": "Traceback ... IndexError", "device": H200})
    assert failed.status == "error" and "IndexError" in failed.error
    long_name = _speed_run(_frame([0.07], [0.14], [0.15], device={"name": "x" * 10_000, "evil": {"nested": 1}}))
    assert len(long_name.device["name"]) == 200 and "evil" not in long_name.device


def test_bandwidth_share_of_the_ceiling_and_speed_up():
    run = _speed_run(_frame([0.070, 0.071, 0.069], [0.140, 0.141, 0.139], [0.150, 0.151, 0.149]))
    p = performance(SPEED, run, mode=DeviceMode.gpu, language="zh", cases_passed=True)
    assert p.status == "measured" and p.informational and p.plausible and p.note is None
    assert p.ideal_bytes == 4 * 16384 * 4096 + 2 * 4 * 16384
    assert p.achieved_gbps == pytest.approx(p.ideal_bytes / 0.070e-3 / 1e9)  # ≈ 3837 GB/s
    assert (p.peak_gbps, p.peak_source) == (4800.0, "spec sheet (H200)")
    assert p.percent_of_peak == pytest.approx(100 * p.achieved_gbps / 4800)
    assert p.copy_gbps == pytest.approx(2 * 16384 * 4096 * 4 / 0.150e-3 / 1e9)
    assert p.percent_of_copy == pytest.approx(100 * p.achieved_gbps / p.copy_gbps)
    assert p.speedup_vs_baseline == pytest.approx(2.0) and p.predicted_speedup == 2.0
    assert p.baseline_gbps == pytest.approx(p.achieved_gbps / 2)
    assert p.kernel.median_ms == 0.070 and p.kernel.reps == 3
    assert "读取矩阵一次" in p.claim and p.method["timer"] == "CUDA events"


def test_the_ceiling_comes_from_the_device_properties_first():
    # H100 SXM: 2619 MHz, 5120-bit bus -> 3352 GB/s (the spec sheet says 3.35 TB/s).
    peak, source = hbm_peak_gbps({"name": "NVIDIA H100 80GB HBM3", "memory_clock_khz": 2_619_000,
                                  "memory_bus_width_bits": 5120})
    assert peak == pytest.approx(3352.32) and source.startswith("device properties")
    assert hbm_peak_gbps({"name": "NVIDIA H100 80GB HBM3"}) == (3350.0, "spec sheet (H100 80GB HBM3)")
    assert hbm_peak_gbps({"name": "Some Future GPU"}) == (None, None)
    assert gbps(1e9, 1.0) == pytest.approx(1000.0)


def test_faster_than_the_ceiling_is_implausible_and_failed_cases_are_noted():
    run = _speed_run(_frame([0.010], [0.140], [0.150]))  # 26.9 TB/s on an H200
    p = performance(SPEED, run, mode=DeviceMode.gpu, language="en", cases_passed=False)
    assert p.status == "measured" and not p.plausible
    assert "above the device's HBM ceiling" in p.note and "some cases failed" in p.note
    unknown = _speed_run(_frame([0.010], [0.140], [0.150], device={"name": "Some Future GPU"}))
    assert performance(SPEED, unknown, mode=DeviceMode.gpu, language="en", cases_passed=True).plausible  # no ceiling known


def test_not_measured_and_failed_say_why():
    on_cpu = performance(SPEED, None, mode=DeviceMode.interpreter, language="zh", cases_passed=True)
    assert on_cpu.status == "not_measured" and "解释器" in on_cpu.reason and on_cpu.kernel is None
    never = performance(SPEED, None, mode=DeviceMode.gpu, language="en", cases_passed=False)
    assert never.status == "not_measured" and "did not get as far" in never.reason
    skipped = performance(SPEED, SpeedRun(status="skipped", error="未运行：运行时间预算已用完"), mode=DeviceMode.gpu,
                          language="zh", cases_passed=True)
    assert skipped.status == "not_measured" and "预算" in skipped.reason
    for status, words in (("error", "large input"), ("crashed", "abnormally"), ("timeout", "out of time")):
        failed = performance(SPEED, SpeedRun(status=status, error="boom", device=H200), mode=DeviceMode.gpu,
                             language="en", cases_passed=True)
        # A phase killed at its budget sent no figures: not measured (#20.1), the reason says why.
        assert failed.status == ("not_measured" if status == "timeout" else "failed")
        assert words in failed.reason and "boom" in failed.reason
        assert failed.device == "NVIDIA H200" and failed.achieved_gbps is None


def test_the_speed_job_carries_the_drawn_block_and_the_authors_baseline():
    job = speed_job(LESSON.spec)
    assert job.repeat == 32 and job.names == ["x"] and [a.key for a in job.args] == ["@speed.x"]
    assert job.baseline == SPEED.baseline.code and "unbiased=False" in job.baseline
    arrays = speed_inputs(LESSON.make_inputs(SPEED.case(), SPEED.seed))
    assert list(arrays) == ["@speed.x"] and arrays["@speed.x"].shape == (512, 4096)
    assert math.prod(arrays["@speed.x"].shape) * job.repeat == SPEED.rows * SPEED.cols


def _page(report, language: str) -> str:
    from service.web.feedback import performance_view, reasons
    from service.web.i18n import texts
    from service.web.pages import templates

    t = texts(language)
    return templates().get_template("feedback.html").render(
        t=t, row=type("Row", (), {"exercise_id": LESSON.id, "status": "graded"})(), report=report, title="Feedback",
        exercise_title="Lesson 6", score_svg="", cases=[], pending=[], performance=performance_view(report, t),
        reasons=reasons(report, t, report.language), language=report.language, lead=None, ladders=[], hint_cost=None,
        lang_asked="", switch=[])


def _report(p, language: str):
    from datetime import datetime, timezone

    from service.report import Report

    return Report(submission_id="s", exercise={"id": LESSON.id, "version": 1}, status="graded", language=language,
                  score={"total": 10, "max": 10, "pass_threshold": 8, "passed": True, "provisional": False},
                  environment={"backend": "gpu", "sandbox": "bwrap", "device": "NVIDIA H200"}, performance=p,
                  created_at=datetime.now(timezone.utc))


def test_the_page_shows_the_figures_beside_the_claim_in_the_lessons_language():
    run = _speed_run(_frame([0.070, 0.072, 0.069, 0.071, 0.070], [0.140] * 5, [0.150] * 5))
    zh = _page(_report(performance(SPEED, run, mode=DeviceMode.gpu, language="zh", cases_passed=True), "zh"), "zh")
    assert 'id="performance"' in zh and 'data-status="measured"' in zh
    assert "速度（仅供参考，不计分）" in zh and "读取矩阵一次" in zh and "第 6 课" in zh
    assert "中位数 70.0 µs" in zh and "3,837 GB/s" in zh and "80%（上限 4,800 GB/s" in zh
    assert "×2.00（按课程的说法约为 ×2）" in zh and "CUDA event" in zh and "268.6 MB" in zh

    en = _page(_report(performance(SPEED, run, mode=DeviceMode.gpu, language="en", cases_passed=True), "en"), "en")
    assert "Speed (for information, no points)" in en and "×2.00 (the lesson implies about ×2)" in en

    not_measured = performance(SPEED, None, mode=DeviceMode.interpreter, language="zh", cases_passed=True)
    html = _page(_report(not_measured, "zh"), "zh")
    assert 'data-status="not_measured"' in html and "解释器" in html and "读取矩阵一次" in html and "GB/s" not in html
    assert 'id="performance"' not in _page(_report(None, "zh"), "zh")


def test_the_cli_text_report_has_a_speed_line():
    from rich.console import Console

    from service.cli import print_report

    run = _speed_run(_frame([0.070] * 5, [0.140] * 5, [0.150] * 5))
    console = Console(width=200, record=True)
    print_report(_report(performance(SPEED, run, mode=DeviceMode.gpu, language="zh", cases_passed=True), "zh"), console)
    assert "speed (no points): 70.0 µs median, 3,837 GB/s, 80% of the HBM ceiling, x2.00 vs the baseline" in console.export_text()
    console = Console(width=200, record=True)
    print_report(_report(performance(SPEED, None, mode=DeviceMode.interpreter, language="en", cases_passed=True), "en"),
                 console)
    assert "speed (no points): not_measured: Not measured" in console.export_text()


def test_in_language_swaps_the_cards_words_and_keeps_its_figures():
    """#21.2: a report's translation carries its speed card in the other language; in_language puts
    its words in place, the figures stay the report's; a stale card (another status) or none (a
    report from before) leaves the card in the report's language."""
    from service.report import SPEED_TEXTS, ReportTexts, in_language

    run = _speed_run(_frame([0.010], [0.140], [0.150]))  # implausible: a note to say
    zh = performance(SPEED, run, mode=DeviceMode.gpu, language="zh", cases_passed=True)
    en = performance(SPEED, run, mode=DeviceMode.gpu, language="en", cases_passed=True)
    report = _report(zh, "zh").model_copy(update={"translations": {"en": ReportTexts(performance=en)}})
    switched = in_language(report, "en").performance
    assert switched.model_dump(include=set(SPEED_TEXTS)) == en.model_dump(include=set(SPEED_TEXTS))
    assert switched.claim == SPEED.claim.in_("en") != zh.claim and "HBM ceiling" in switched.note
    assert switched.model_dump(exclude=set(SPEED_TEXTS)) == zh.model_dump(exclude=set(SPEED_TEXTS))
    html = _page(in_language(report, "en"), "en")
    assert SPEED.claim_source.in_("en") in html and SPEED.claim_source.in_("zh") not in html

    stale = report.model_copy(update={"translations": {"en": ReportTexts(
        performance=performance(SPEED, None, mode=DeviceMode.gpu, language="en", cases_passed=True))}})
    assert in_language(stale, "en").performance == zh
    assert in_language(_report(zh, "zh").model_copy(update={"translations": {"en": ReportTexts()}}),
                       "en").performance == zh


def test_a_card_is_restated_from_itself_where_its_words_are_all_codes():
    """speed.restated: the memo's card or a pending one said again in the other language; a card
    holding the sandbox's words (an error on the large input) is not."""
    from service.grading.speed import restated, unmeasured

    for code in ("speed.pending", "speed.not_passed", "speed.busy", "speed.reused_pending"):
        card = unmeasured(SPEED, code, language="zh", cases_passed=True)
        assert restated(card, SPEED, said_in="zh", language="en") == unmeasured(SPEED, code, language="en",
                                                                              cases_passed=True)
    run = _speed_run(_frame([0.010], [0.140], [0.150]))
    measured = performance(SPEED, run, mode=DeviceMode.gpu, language="zh", cases_passed=True).model_copy(
        update={"reused": True})
    again = restated(measured, SPEED, said_in="zh", language="en")
    assert again == performance(SPEED, run, mode=DeviceMode.gpu, language="en", cases_passed=True).model_copy(
        update={"reused": True})
    failed = performance(SPEED, SpeedRun(status="error", error="boom", device=H200), mode=DeviceMode.gpu,
                         language="zh", cases_passed=True)
    assert restated(failed, SPEED, said_in="zh", language="en") is None
    no_baseline = dataclasses.replace(_speed_run(_frame([0.07], [0.14], [0.15])), baseline={}, error="raised")
    card = performance(SPEED, no_baseline, mode=DeviceMode.gpu, language="zh", cases_passed=True)
    assert card.note and restated(card, SPEED, said_in="zh", language="en") is None
