"""The report is written in the submission's declared language (service.messages.report_language),
else the exercise's: lesson 6's missing re-mask graded for real in the sandbox, once in English, once
undeclared (Chinese, the lesson's language)."""
from __future__ import annotations

import re

import pytest
import yaml

from service.report import Report
from service.submission import Submission
from tests.support.backends import grader_for

pytestmark = [pytest.mark.sandbox, pytest.mark.sandbox_backends("bwrap")]

SEED = 424242
CJK = re.compile(r"[\u4e00-\u9fff]")


@pytest.fixture(scope="module")
def grader(sandbox_backend_name):
    return grader_for(sandbox_backend_name)


@pytest.fixture(scope="module")
def reports(grader) -> dict[str | None, Report]:
    exercise = grader.catalog.get("lesson06_mean_var")
    mutant = next(m for m in exercise.mutants if m.id == "wrong.remask_missing_true")
    code = exercise.mutant_code(mutant)
    return {language: grader.grade(Submission(exercise=exercise.id, code=code, language=language), secret_seed=SEED)
            for language in ("en", None)}


def _authored(exercise) -> list[str]:
    """Every string the exercise's author wrote in exercise.yaml (case descriptions, concept labels,
    ...): Chinese only for now, quoted inside the service's words; longest first, to be cut out."""
    found: list[str] = []

    def walk(node) -> None:
        if isinstance(node, str):
            found.append(node)
        elif isinstance(node, dict):
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)
    walk(yaml.safe_load((exercise.root / "exercise.yaml").read_text(encoding="utf-8")))
    return sorted({s for s in found if CJK.search(s)}, key=len, reverse=True)


def _service_words(report: Report, authored: list[str]) -> list[str]:
    """The report's student-facing text (every item's feedback, diagnoses, requirements) with the
    exercise's authored strings and the cases' descriptions (drawn ones are filled-in templates) cut
    out: what is left is the service's and the checks' own words."""
    texts = [*(i.feedback for i in report.items), *(d.message for d in report.diagnoses),
             *(r.message for r in report.score.requirements)]
    for quoted in sorted({*authored, *(c.description for c in report.cases)}, key=len, reverse=True):
        texts = [t.replace(quoted, "") for t in texts]
    return texts


def test_english_submission_gets_an_english_report(reports, grader):
    report = reports["en"]
    assert report.status == "graded" and report.language == "en"
    missing = next(d for d in report.diagnoses if d.id == "missing_remask")
    assert "tl.where" in missing.message
    boundary = next(i for i in report.items if i.id == "code.boundary")
    assert boundary.points == 0 and "probe.large_mean" in boundary.feedback
    assert report.score.requirements and not report.score.passed
    words = _service_words(report, _authored(grader.catalog.get("lesson06_mean_var")))
    assert all(words) and [t for t in words if CJK.search(t)] == []


def test_undeclared_language_stays_the_lessons(reports):
    report = reports[None]
    assert report.language == "zh"
    assert next(d for d in report.diagnoses if d.id == "missing_remask").message != \
        next(d for d in reports["en"].diagnoses if d.id == "missing_remask").message
    assert CJK.search(next(i for i in report.items if i.id == "code.boundary").feedback)
    assert any(CJK.search(d.message) for d in report.diagnoses)
    assert all(CJK.search(r.message) for r in report.score.requirements)


def test_the_memo_keeps_languages_apart(grader):
    """The memo stores rendered cases and diagnoses: an English grading never reuses a Chinese one."""
    from service.grading.memo import memo_key

    exercise = grader.catalog.get("lesson06_mean_var")
    key = {lang: memo_key(program_digest="d", exercise=exercise, mode="interpreter", device="cpu", triton="3",
                          language=lang) for lang in ("zh", "en", None)}
    assert key["zh"] != key["en"] and key[None] == key[exercise.spec.language]
