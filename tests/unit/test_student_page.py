"""The first screen of the student's page (issue 21): the verdict's colour, why it did not pass
with the line concerned, the lead diagnosis with its picture, no harness internals, and rubric
quotes in the student's own spelling, never cut inside a word."""
from __future__ import annotations

from datetime import UTC, datetime

from service.config import REPO_ROOT
from service.exercises import ExerciseCatalog
from service.grading.freetext import _quote, _Text, score_answer
from service.report import CaseReport, Diagnosis, Mismatch, Report, Veto
from service.student_view import strip_internals, student_report
from service.web.feedback import case_views, lead_case, reasons
from service.web.i18n import texts
from service.web.pages import templates
from service.web.svg import score_bar

LESSON = ExerciseCatalog(REPO_ROOT / "exercises").get("lesson06_mean_var")

HARNESS_TRACEBACK = '''Traceback (most recent call last):
  File "/job/harness.py", line 178, in main
    exec(check_code, check_globals)  # noqa: S102 - the canonical program, in the sandbox
  File "/job/given_check.py", line 12, in <module>
    mean, var = mean_var(x)
  File "/job/submission.py", line 30, in mean_var
    raise ValueError("boom")
  File "/usr/lib/python3/dist-packages/triton/runtime/interpreter.py", line 1100, in __call__
    return self.fn(*args)
ValueError: boom
'''


MARKED_TRACEBACK = '''Traceback (most recent call last):
  File "/job/harness.py", line 178, in main
    exec(check_code, check_globals)  # noqa: S102 - the canonical program, in the sandbox
    ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
  File "/job/given_check.py", line 12, in <module>
    mean, var = mean_var(x)
                ^^^^^^^^^^^
  File "/opt/kg/sandbox/gpu_compile.py", line 120, in compile_for_gpu
    raise GPUCompileError(message)
sandbox.gpu_compile.GPUCompileError: at 8:4: static_range needs a constexpr bound
'''


def test_position_markers_go_with_their_frame_and_own_exception_types_lose_their_module():
    shown = strip_internals(MARKED_TRACEBACK)
    assert shown == ('''Traceback (most recent call last):
  File "given_check.py", line 12, in <module>
    mean, var = mean_var(x)
                ^^^^^^^^^^^
GPUCompileError: at 8:4: static_range needs a constexpr bound
''')


def test_harness_frames_are_stripped_and_student_frames_kept():
    shown = strip_internals(HARNESS_TRACEBACK)
    assert "harness.py" not in shown and "noqa" not in shown and "/job/" not in shown and "triton/runtime" not in shown
    assert 'File "given_check.py", line 12' in shown and "mean, var = mean_var(x)" in shown
    assert 'File "submission.py", line 30' in shown and shown.rstrip().endswith("ValueError: boom")
    assert strip_internals("plain output\nno frames") == "plain output\nno frames"
    report = student_report({"seeds": {"x": 1}, "cases": [{"id": "a", "seed": 3, "error": HARNESS_TRACEBACK}],
                             "given_check": {"status": "failed", "output": HARNESS_TRACEBACK},
                             "vetoes": [{"rule": "unverified_claim", "evidence": {"real_output": HARNESS_TRACEBACK}}]})
    assert "seeds" not in report and "seed" not in report["cases"][0]
    assert "harness.py" not in report["cases"][0]["error"] + report["given_check"]["output"]
    assert "harness.py" not in report["vetoes"][0]["evidence"]["real_output"]


def test_score_bar_takes_the_verdicts_colour():
    held = score_bar(total=10, maximum=10, pass_threshold=8, label="s", pass_label="p", passed=False)
    assert 'class="fill short"' in held and 'class="fill ok"' not in held
    assert 'class="fill ok"' in score_bar(total=9, maximum=10, pass_threshold=8, label="s", pass_label="p", passed=True)


def _vetoed_report(language: str = "zh") -> Report:
    probe = CaseReport(id="probe.large_mean", kind="probe", description="large mean", shape=[8, 33], seed=1, passed=False,
                       error_ratio=1e9, tolerance={"var": {"atol": 2e-4, "rtol": 2e-4}},
                       first_mismatch=Mismatch(output="var", index=[2], observed=1000.0, expected=0.5, allowed_error=2e-4))
    veto = Veto(rule="modified_outside_blank", status="confirmed", needs_review=False, evidence={
        "edits": [{"kind": "changed", "template_line": 24, "submission_line": 24, "template": "    mask = cols < N",
                   "submission": "    mask = cols < BLOCK", "reason": "r", "hint": None}],
        "note": "填空以外的改动没有运行", "note_en": "the changes outside the blank did not run"})
    return Report(submission_id="s", exercise={"id": LESSON.id, "version": 1}, status="graded", language=language,
                  score={"total": 10, "max": 10, "pass_threshold": 8, "passed": False, "provisional": False,
                         "requirements": [{"id": "given_check", "met": False, "evidence": {"note": "the check failed"}},
                                          {"id": "total", "met": True}]},
                  cases=[probe], vetoes=[veto],
                  diagnoses=[Diagnosis(id="missing_remask", message="第二次 mask 缺失",
                                       evidence={"cases": [{"case": "probe.large_mean", "lanes_counted": 64}]}),
                             Diagnosis(id="other", message="另一条诊断")],
                  environment={"backend": "interpreter", "sandbox": "bwrap"}, created_at=datetime.now(UTC))


def test_a_vetoed_submission_says_which_line_and_the_lead_picture_comes_first():
    report, t = _vetoed_report(), texts("zh")
    found = reasons(report, t)
    assert [(r.kind, r.id) for r in found] == [("veto", "modified_outside_blank"), ("requirement", "given_check")]
    assert found[0].lines == [("第 24 行", "mask = cols < BLOCK")]
    views = case_views(report, LESSON, t)
    lead = lead_case(report, views)
    assert lead is not None and lead.case.id == "probe.large_mean"
    html = templates().get_template("feedback.html").render(
        t=t, row=type("Row", (), {"exercise_id": LESSON.id, "status": "graded"})(), report=report, title="x",
        exercise_title="Lesson 6", score_svg="", cases=views, pending=[], reasons=found, lead=lead, language="zh")
    why = html[html.index('id="why"'):html.index('id="diagnoses"')]
    assert "第 24 行" in why and "mask = cols &lt; BLOCK" in why and "the check failed" in why
    lead_part = html[html.index('id="diagnoses"'):html.index('id="more-diagnoses"')]
    assert "第二次 mask 缺失" in lead_part and "svg" in lead_part and "另一条诊断" not in lead_part


def test_rubric_quotes_keep_the_students_spelling_and_whole_words():
    answer = "  The Padding lanes are NOT masked the Second time, so Mean^2 is added to VAR.  "
    text = _Text.of(answer)
    start = text.index("masked")
    quoted = _quote(text, start, start + len("masked"))
    assert "NOT masked the Second" in quoted
    for word in quoted.strip("…").split():
        assert word.strip(",.") in answer.split() or word.strip(",.") + "," in answer.split() or word in answer
    zh = "减掉均值以后 Padding 变成 -mean，平方以后是 mean²，所以方差偏大。"
    text = _Text.of(zh)
    assert text.offsets is not None
    start = text.index("padding")
    assert "Padding" in _quote(text, start, start + 7)
    result = score_answer(LESSON.question("q2"), zh, 2.0)
    quotes = [f["quote"] for f in result.found]
    assert quotes and all(q.strip("…") in zh for q in quotes), quotes


def test_the_veto_note_follows_the_students_language():
    report = _vetoed_report("zh")
    assert reasons(report, texts("en"), "en")[0].note == "the changes outside the blank did not run"
    assert reasons(report, texts("zh"), "zh")[0].note == "填空以外的改动没有运行"


def test_the_language_follows_the_request_then_the_submission_then_the_answers():
    from service.student_view import detected_language, student_language

    chinese = {"answers": {"q2": "减掉均值以后 padding 变成 -mean，平方以后是 mean^2，所以方差偏大。"}}
    english = {"answers": {"q2": "After centring, the padding lanes hold -mean; squared that is mean^2."}}
    assert detected_language(chinese) == "zh" and detected_language(english) == "en"
    assert detected_language({"answers": {}}) is None
    assert student_language(None, None, english, "zh") == "en"
    assert student_language(None, "zh", english, "zh") == "zh", "a declared language wins over detection"
    assert student_language("en", "zh", chinese, "zh") == "en", "?lang= wins"
    assert student_language(None, None, {}, "zh") == "zh"


def test_a_chinese_quote_is_cut_at_a_space_or_punctuation_not_between_two_characters():
    answer = ("输入阶段：masked load 把 padding 填成加法单位元 0，第一次求和不受影响。"
              "中心化以后再平方，padding 上是均值的平方，方差偏大。")
    text = _Text.of(answer)

    def ideograph(ch: str) -> bool:
        return "\u4e00" <= ch <= "\u9fff"

    for said in ("单位元", "均值的平方", "方差偏大"):
        start = text.index(said)
        quoted = _quote(text, start, start + len(said))
        inner = quoted.strip("…")
        at = answer.index(inner)
        assert said in inner, quoted
        if at > 0:
            assert not (ideograph(answer[at - 1]) and ideograph(inner[0])), f"starts inside a word: {quoted}"
        end = at + len(inner)
        if end < len(answer):
            assert not (ideograph(inner[-1]) and ideograph(answer[end])), f"ends inside a word: {quoted}"


def test_a_pass_rule_pattern_is_quoted_as_written_in_whole_words():
    """A named idea found by a pattern (not a concept) is quoted from the student's text, not from
    the lower-cased copy the pattern ran on, and never from inside a word."""
    from service.grading.passrule import named_requirement

    written = ("The Kernel reads the Matrix from HBM only once and keeps both Passes in Registers, "
               "which halves the Traffic, at the Cost of a whole Row having to fit in Registers.")
    found = named_requirement("performance_tradeoff", LESSON.spec.pass_rule.performance_tradeoff, items=[],
                              written=written, language="en")
    quote = found.evidence["quote"]
    assert found.met and "HBM" in quote and "Matrix" in quote, quote
    assert quote.strip("…") in written
    words = [w.rstrip(".,") for w in written.split()]  # the quote is the sentence, without its full stop
    for word in quote.strip("…").split():
        assert word.rstrip(".,") in words, (word, quote)
    assert quote in found.message
    assert found.evidence["sides"] == {"gain": "only once", "cost": "Cost of a whole Row having to fit in Registers"}


def test_a_warnings_file_is_named_without_the_graders_folders():
    said = ("/srv/kg/.venv/lib/python3.11/site-packages/triton/knobs.py:504: UserWarning: TRITON_DEFAULT_FP_FUSION\n"
            "  warn_once(FP_FUSION_DEFAULT_WARNING)\n/job/submission.py:12: DeprecationWarning: old\n"
            "/job/given_check.py:3: not a warning")
    assert strip_internals(said) == ("triton/knobs.py:504: UserWarning: TRITON_DEFAULT_FP_FUSION\n"
                                     "  warn_once(FP_FUSION_DEFAULT_WARNING)\nsubmission.py:12: DeprecationWarning: old\n"
                                     "/job/given_check.py:3: not a warning")
