"""The one not_gradable report: no points, never provisional, says the failure is ours in the report's language."""
from __future__ import annotations

from service.grading.not_gradable import MAX_REASON, not_gradable_report
from service.report import Environment, ExerciseRef


def build(**overrides):
    args = dict(submission_id="s1", exercise=ExerciseRef(id="lesson06_mean_var", version=2), max_points=10,
                pass_threshold=8, language="zh", reason="sandbox died during start-up")
    return not_gradable_report(**{**args, **overrides})


def test_it_costs_nothing_and_names_the_internal_reason_in_the_reports_language():
    zh, en = build(), build(language="en")
    for report in (zh, en):
        assert report.status == "not_gradable" and report.score.total == 0 and report.score.max == 10
        assert not report.score.passed and not report.score.provisional
        assert "sandbox died during start-up" in report.message
    assert "不是你的问题" in zh.message and zh.language == "zh"
    assert "not your code" in en.message and en.language == "en"


def test_a_long_reason_is_cut_and_a_given_message_replaces_the_standard_one():
    report = build(reason="x" * (MAX_REASON + 500))
    assert report.message.count("x") == MAX_REASON
    assert build(message="只能在 GPU 上评分").message == "只能在 GPU 上评分"


def test_where_it_failed_is_kept_when_known():
    env = Environment(backend="gpu", sandbox="bwrap", device="H200")
    assert build(environment=env, timing={"total_s": 1.5}).environment == env
    assert build().environment.sandbox == "none"
