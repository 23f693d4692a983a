"""The report is written in the submission's declared language (service.messages.report_language),
else the one its answers are written in, else the exercise's: lesson 6's missing re-mask graded for
real in the sandbox, declared English, undeclared with English answers, and undeclared without answers
(Chinese, the lesson's language); and all nine exercises' English reports hold no Chinese."""
from __future__ import annotations

import pytest

from service.report import Report, in_language
from service.submission import Submission
from tests.support.backends import warm_grader
from tests.support.english import CJK, LESSON06_ENGLISH, chinese_in, student_texts

pytestmark = [pytest.mark.sandbox, pytest.mark.sandbox_backends("bwrap")]

SEED = 424242


@pytest.fixture(scope="module")
def grader(sandbox_backend_name):
    with warm_grader(sandbox_backend_name) as grader:
        yield grader


@pytest.fixture(scope="module")
def reports(grader) -> dict[str | None, Report]:
    """Lesson 6's missing re-mask graded in the sandbox: declared English, undeclared without answers
    (the lesson's Chinese), undeclared with English answers."""
    exercise = grader.catalog.get("lesson06_mean_var")
    mutant = next(m for m in exercise.mutants if m.id == "wrong.remask_missing_true")
    code = exercise.mutant_code(mutant)
    graded = {language: grader.grade(Submission(exercise=exercise.id, code=code, language=language), secret_seed=SEED)
              for language in ("en", None)}
    english = {k: v for k, v in LESSON06_ENGLISH.items() if k != "claimed_output"}
    graded["written"] = grader.grade(Submission(exercise=exercise.id, code=code, **english), secret_seed=SEED)
    return graded


def test_english_submission_gets_an_english_report(reports):
    report = reports["en"]
    assert report.status == "graded" and report.language == "en"
    missing = next(d for d in report.diagnoses if d.id == "missing_remask")
    assert "tl.where" in missing.message
    boundary = next(i for i in report.items if i.id == "code.boundary")
    assert boundary.points == 0 and "probe.large_mean" in boundary.feedback
    assert report.score.requirements and not report.score.passed
    # Everything the student reads is English, the exercise's own words too (titles, cases, probes'
    # targets, concept labels, requirements): no quoted Chinese left.
    assert report.items[0].title == "Regular inputs (with the given check)"
    assert chinese_in(report.model_dump(mode="json")) == {}


def test_english_answers_get_an_english_report_without_declaring_it(reports, grader):
    """No `language` in the submission: the answers are English (lesson 6's example, translated), so
    is the report, quotes, labels and all."""
    report = reports["written"]
    assert report.status == "graded" and report.language == "en"
    q2 = next(i for i in report.items if i.id == "q2")
    identity = grader.catalog.get("lesson06_mean_var").question("q2").concepts[0]  # other=0.0: the first sum's identity
    assert q2.points > 0 and identity.label.en and identity.label.en in q2.feedback
    assert {d.id for d in report.diagnoses} == {d.id for d in reports["en"].diagnoses}
    assert chinese_in(report.model_dump(mode="json")) == {}


def _english_answers(exercise) -> dict[str, object]:
    """Answers in English for any exercise: each question's concepts, in its own English words."""
    said = {q.id: " Because of that, ".join(c.label.en or "" for c in q.concepts) + "." for q in exercise.spec.questions}
    return {"explanation": said.pop("explanation", "It is filled as the lesson says."), "answers": said}


@pytest.mark.parametrize("exercise_id", ["fused_mean_var_atomic", "lesson05_row_sum", "lesson06_mean_var",
                                         "lesson07_softmax", "puzzle_long_softmax", "puzzle_long_sum",
                                         "puzzle_outer_add", "weighted_sum_fwd_bwd", "welford_merge"])
def test_every_exercise_reports_in_english_for_english_answers(grader, exercise_id):
    """All nine, through the real grader without starting the sandbox (code that is not the
    template: nothing runs, every case is reported unrun with its description; weighted_sum is GPU
    only and says why): every student-facing text is English."""
    exercise = grader.catalog.get(exercise_id)
    report = grader.grade(Submission(exercise=exercise_id, code="x = 1\n", **_english_answers(exercise)),
                          secret_seed=SEED)
    assert report.language == "en" and report.status in ("graded", "not_gradable")
    texts = student_texts(report.model_dump(mode="json"))
    if report.status == "graded":
        assert len(report.cases) == len(exercise.spec.cases) and len(report.items) == len(exercise.spec.rubric)
        assert any(f["label"] for i in report.items for f in i.evidence.get("found", [])), "concepts quoted"
    else:
        assert "block pointers" in report.message
    assert texts and chinese_in(report.model_dump(mode="json")) == {}


def test_undeclared_language_stays_the_lessons(reports):
    report = reports[None]
    assert report.language == "zh"
    assert next(d for d in report.diagnoses if d.id == "missing_remask").message != \
        next(d for d in reports["en"].diagnoses if d.id == "missing_remask").message
    assert CJK.search(next(i for i in report.items if i.id == "code.boundary").feedback)
    assert any(CJK.search(d.message) for d in report.diagnoses)
    assert all(CJK.search(r.message) for r in report.score.requirements)


def test_the_memo_serves_every_language(grader):
    """The memo key names no language: a program graded for a Chinese report is reused for an
    English one (no second run), said exactly as a reuse of an English grading says it, in both
    languages, facts and all."""
    from service.grading.memo import InMemoryMemo

    exercise = grader.catalog.get("lesson06_mean_var")
    code = exercise.mutant_code(next(m for m in exercise.mutants if m.id == "wrong.remask_missing_true"))
    memo = grader.memo

    def first_then(first: str, then: str) -> tuple[Report, Report]:
        grader.memo = InMemoryMemo()
        return tuple(grader.grade(Submission(exercise=exercise.id, code=code, language=language), secret_seed=SEED)
                     for language in (first, then))

    try:
        zh, en_after_zh = first_then("zh", "en")
        en, en_after_en = first_then("en", "en")
    finally:
        grader.memo = memo
    assert not zh.program.reused and not en.program.reused
    assert en_after_zh.program.reused and en_after_en.program.reused
    assert en_after_zh.program.memo_key == zh.program.memo_key == en.program.memo_key
    assert en_after_zh.language == "en" and _texts(en_after_zh) == _texts(en_after_en)
    assert _facts(en_after_zh) == _facts(en_after_en)
    assert en_after_zh.given_check.output == en_after_en.given_check.output
    assert _texts(in_language(en_after_zh, "zh")) == _texts(in_language(en_after_en, "zh"))
    assert chinese_in(en_after_zh.model_dump(mode="json", exclude={"translations"})) == {}


def _texts(report: Report) -> dict[str, object]:
    """Every text of `report` the student reads, with the evidence that has words (the given check's
    output aside: the run's own)."""
    program = report.program
    return {"items": [(i.id, i.title, i.feedback) for i in report.items],
            "cases": [(c.id, c.description, c.targets, c.error) for c in report.cases],
            "diagnoses": [(d.id, d.message) for d in report.diagnoses],
            "vetoes": [(v.rule, v.evidence.get("note"), v.evidence.get("failed_probes")) for v in report.vetoes],
            "requirements": [(r.id, r.title, r.message, r.evidence) for r in report.score.requirements],
            "not_run": program.not_run_reason if program else None,
            "edits": [(e.reason, e.hint) for e in program.edits] if program else []}


def _facts(report: Report) -> dict[str, object]:
    return {"score": report.score.model_dump(exclude={"requirements"}),
            "met": [(r.id, r.met) for r in report.score.requirements],
            "given": report.given_check.status if report.given_check else None,
            "items": [(i.id, i.points, i.status, i.evidence) for i in report.items],
            "cases": [(c.id, c.passed, c.error_ratio) for c in report.cases],
            "vetoes": [(v.rule, v.status) for v in report.vetoes]}


def test_the_other_language_is_the_same_report_said_in_it(reports):
    """The same program and seed graded once in Chinese and once in English (declared): each report
    carries the other language, and switching one gives word for word the other's texts (the same
    message functions from the same facts), while its points, statuses and verdict stay its own."""
    zh, en = reports[None], reports["en"]
    assert set(zh.translations) == {"en"} and set(en.translations) == {"zh"}
    as_en, as_zh = in_language(zh, "en"), in_language(en, "zh")
    assert as_en.language == "en" and as_zh.language == "zh"
    assert _texts(as_en) == _texts(en)
    assert _texts(as_zh) == _texts(zh)
    assert _facts(as_en) == _facts(zh) and _facts(as_zh) == _facts(en)
    missing = next(d for d in as_en.diagnoses if d.id == "missing_remask")
    assert "tl.where" in missing.message and not CJK.search(missing.message)
    assert chinese_in(as_en.model_dump(mode="json", exclude={"translations"})) == {}
    assert in_language(zh, "zh") is zh, "its own language: the report as stored"


def test_written_answers_stay_quoted_as_written(reports):
    """English answers, read in Chinese: the feedback's words are Chinese, the quotes the student's English."""
    written = reports["written"]
    as_zh = in_language(written, "zh")
    q2, q2_zh = (next(i for i in r.items if i.id == "q2") for r in (written, as_zh))
    quotes = [f["quote"] for f in q2.evidence["found"]]
    assert quotes and all(q in q2_zh.feedback for q in quotes)
    assert CJK.search(q2_zh.feedback) and q2_zh.points == q2.points


def test_a_ta_decision_is_said_in_both_languages(reports):
    """The TA's line on the item and the requirements it recomputes follow in the other language."""
    from service.review import DecisionRequest, apply_decision

    zh = reports[None]
    decided, _, _ = apply_decision(zh, DecisionRequest(item="q1", points=2, reason="讲清楚了因果链"), actor="TA Lin")
    as_en = in_language(decided, "en")
    q1 = next(i for i in as_en.items if i.id == "q1")
    assert "讲清楚了因果链" in q1.feedback and not CJK.search(q1.feedback.replace("讲清楚了因果链", ""))
    total = next(r for r in as_en.score.requirements if r.id == "total")
    assert f"{decided.score.total:g}" in total.message and not CJK.search(total.message)
    assert [(r.id, r.met) for r in as_en.score.requirements] == [(r.id, r.met) for r in decided.score.requirements]
