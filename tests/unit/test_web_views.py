"""The pieces the pages are built from, without a server: the template diff, the highlighted
answer (escaped), the padding picture, and the feedback page in English."""
from __future__ import annotations

from datetime import UTC, datetime

from markupsafe import Markup

from service.config import REPO_ROOT
from service.exercises import ExerciseCatalog
from service.report import CaseReport, Diagnosis, Item, Mismatch, Report
from service.web.diff import code_diff
from service.web.feedback import case_views
from service.web.highlight import find_spans, highlighted
from service.web.i18n import texts
from service.web.pages import templates
from service.web.svg import PaddingRow, padding_row

LESSON = ExerciseCatalog(REPO_ROOT / "exercises").get("lesson06_mean_var")


def test_diff_highlights_the_fill_and_marks_edits_outside_it():
    code = (LESSON.template.replace("______", "cols < N")
            .replace("    mask = cols < N\n", "    mask = cols < N  # a comment is not an edit\n")
            .replace("atol=2e-4, rtol=2e-4", "atol=2e-1, rtol=2e-4"))
    lines = code_diff(LESSON.template, code, [{"rule": "boundary_check_removed", "reason": "tolerance loosened",
                                               "template_line": 31, "submission_line": 31}])
    (fill,) = [line for line in lines if line.kind == "fill"]
    assert [s.text for s in fill.segments if s.fill] == ["cols < N"]
    assert [line.template_no for line in lines if line.kind == "cosmetic"] == [10]
    edits = [line for line in lines if line.kind == "edit"]
    assert {line.side for line in edits} == {"template", "submission"}
    assert any("boundary_check_removed" in line.note for line in edits)


def test_highlighted_answer_marks_concepts_and_escapes_everything_else():
    question = LESSON.question("q2")
    answer = "<script>x()</script> padding 变成 -mean，平方以后是 mean^2"
    spans = find_spans(question, answer, concepts={c.id for c in question.concepts}, misconceptions=set())
    html = highlighted(answer, spans)
    assert isinstance(html, Markup) and "<mark" in html
    assert "<script>" not in html and "&lt;script&gt;" in html


def test_a_disguised_answer_is_marked_on_the_students_own_characters():
    question = LESSON.question("q2")
    answer = "the pаdding bеcomes -mе\u200bаn, so squared it is mеаn^2"  # Cyrillic а е, a zero-width space
    spans = find_spans(question, answer, concepts={"padding_neg_mean", "mean_squared"}, misconceptions=set())
    assert [answer[s.start:s.end] for s in spans] == ["-mе\u200bаn", "mеаn^2"]


def test_padding_picture_counts_the_lanes():
    svg = padding_row(PaddingRow(n=33, block=64, counted=64, valid_sum=1.0, padding_sum=5e6), '"<label>"')
    assert svg.count('class="lane valid"') == 33 and svg.count('class="lane padding counted"') == 31
    assert "<label>" not in svg and "&#34;&lt;label&gt;&#34;" in svg
    wide = padding_row(PaddingRow(n=2049, block=4096, counted=2049), "row")
    assert wide.count("<rect") == 2, "wide rows are drawn as runs"


def test_feedback_page_in_english():
    case = CaseReport(id="probe.large_mean", kind="probe", description="large mean", shape=[8, 33], seed=1, passed=False,
                      error_ratio=1e9, tolerance={"var": {"atol": 2e-4, "rtol": 2e-4}},
                      first_mismatch=Mismatch(output="var", index=[2], observed=1000.0, expected=0.5, allowed_error=2e-4))
    report = Report(submission_id="s", exercise={"id": LESSON.id, "version": 1}, status="graded", language="en",
                    score={"total": 8.5, "max": 10, "pass_threshold": 8, "passed": False, "provisional": True},
                    items=[Item(id="q2", title="Q2", points=1, max_points=2, status="needs_review", feedback="<b>quote</b>")],
                    cases=[case], diagnoses=[Diagnosis(id="missing_remask", message="the second mask is missing",
                                                       evidence={"cases": [{"case": "probe.large_mean", "lanes_counted": 64}]})],
                    environment={"backend": "interpreter", "sandbox": "bwrap"}, created_at=datetime.now(UTC))
    t = texts("en")
    (view,) = case_views(report, LESSON, t)
    assert view.picture is not None and "mean²" in view.picture.note
    html = templates().get_template("feedback.html").render(
        t=t, row=type("Row", (), {"exercise_id": LESSON.id, "status": "graded"})(), report=report, title="Feedback",
        exercise_title="Lesson 6", score_svg="", cases=[view], pending=["Q2"], reasons=[], lead=None)
    assert 'lang="en"' in html and "waiting for a TA" in html and "Provisional" in html
    assert "holds the pass back" in html and "&lt;b&gt;quote&lt;/b&gt;" in html
