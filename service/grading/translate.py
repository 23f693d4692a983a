"""A graded report's student-facing texts in the other language (`Report.translations`).

Rendered at grading, after the report, by the same message functions from the same facts (the one
sandbox run's cases, the same extraction, the same answers): nothing is scored again that could
differ (points, statuses and evidence stay the report's), the model assist is not asked twice, and
the page and the student JSON switch language without running anything (docs/grading.md).
"""
from __future__ import annotations

from collections.abc import Mapping

from service.exercises import Exercise
from service.grading import passrule, rubric
from service.grading.claims import parse_claim, unverified_claim
from service.grading.extract import Extraction, extract
from service.grading.fills import rejected_fill
from service.grading.freetext import TextScore
from service.messages import LANGUAGES, Language, render
from service.report import (
    CaseTexts,
    Diagnosis,
    EditTexts,
    ItemTexts,
    Performance,
    Report,
    ReportTexts,
    RequirementTexts,
)
from service.submission import Submission


def other_languages(language: str) -> list[Language]:
    return [lang for lang in LANGUAGES if lang != language]


def diagnosis_in(diagnosis: Diagnosis, language: str) -> Diagnosis:
    """A diagnosis in `language` (Diagnosis.said_in); one without its messages keeps its own."""
    return diagnosis.said_in(language) or diagnosis


def report_texts(report: Report, *, exercise: Exercise, submission: Submission, cases: dict[str, CaseTexts],
                 given_output: str, language: Language, performance: Performance | None = None,
                 extraction: Extraction | None = None, text_scores: dict[str, TextScore] | None = None) -> ReportTexts:
    """`report` (graded from `submission`) said in `language`. `cases`: its cases' texts in `language`
    (cases.case_texts, or the verdict memo's); `given_output`: the given check's output in it;
    `performance`: its speed card in it (built from the same figures). `extraction` and
    `text_scores`: the grading's own (rubric.score_items), so that nothing is analysed twice."""
    spec = exercise.spec
    if extraction is None or extraction.error is not None or extraction.edits:  # words to say again
        extraction = extract(exercise.template, submission.code, language=language)
    not_run_reason = extraction.error or rejected_fill(exercise, extraction, language)
    case_reports = [c.model_copy(update=cases[c.id].model_dump()) if c.id in cases else c for c in report.cases]
    diagnoses = [diagnosis_in(d, language) for d in report.diagnoses]
    said = rubric.score_items(exercise, submission, case_reports, not_run_reason=not_run_reason, diagnoses=diagnoses,
                              fills=extraction.fill_sources, language=language, text_scores=text_scores,
                              fill_refusal=not_run_reason if extraction.error is None else None,
                              spilled=tuple(extraction.spills))
    by_id = {i.id: i for i in said}
    items: dict[str, ItemTexts] = {}
    for item in report.items:  # the report's own points and statuses; only the words are new
        other = by_id.get(item.id)
        if other is None:
            continue
        feedback = other.feedback
        if item.evidence.get("reused"):
            feedback += "\n" + render("grading.reused_note", language)
        if "model_disagrees" in (item.evidence.get("flags") or []) and "model_disagrees" not in (
                other.evidence.get("flags") or []):
            feedback += "\n" + render("assist.disagrees", language)
        items[item.id] = ItemTexts(title=other.title, feedback=feedback)
    given_status = report.given_check.status if report.given_check is not None else "not_run"
    vetoes = [*rubric.edit_vetoes(extraction.edits, language=language),
              rubric.coincidental_pass_veto(case_reports, diagnoses, language=language)
              or rubric.wrong_chain_veto(case_reports, report.items, language=language),
              unverified_claim(claimed_output=submission.claimed_output, program_ran=report.program is not None
                               and report.program.ran,
                               given_status=None if given_status == "not_run" else given_status,
                               real_output=given_output, not_run_reason=not_run_reason, language=language)]
    notes = {v.rule: str(v.evidence.get("note", "")) for v in vetoes if v is not None}
    requirements = passrule.requirements(
        spec.pass_rule, items=report.items, vetoes=report.vetoes, threshold=spec.pass_threshold,
        given_status=given_status, given_output=given_output, not_run_reason=not_run_reason,
        claim_kind=parse_claim(submission.claimed_output).kind, claimed_output=submission.claimed_output,
        written="\n".join([submission.explanation, *submission.answers.values()]), language=language)
    own = {r.id: r.evidence for r in report.score.requirements}
    return ReportTexts(
        items=items, cases=cases, diagnoses={d.id: d.message for d in diagnoses}, vetoes=notes,
        requirements={r.id: RequirementTexts(title=r.title, message=r.message,
                                             evidence=r.evidence if r.evidence != own.get(r.id) else {})
                      for r in requirements},
        not_run_reason=not_run_reason, edits=[EditTexts(reason=e.reason, hint=e.hint) for e in extraction.edits],
        given_output=given_output, performance=performance)


def translated(report: Report, *, exercise: Exercise, submission: Submission,
               cases: dict[str, dict[str, CaseTexts]], given_outputs: dict[str, str],
               performances: Mapping[str, Performance | None] | None = None,
               extraction: Extraction | None = None, text_scores: dict[str, TextScore] | None = None) -> Report:
    """`report` with its texts in every other language (`cases`, `given_outputs`, `performances`:
    by language; `extraction`, `text_scores`: as in report_texts)."""
    return report.model_copy(update={"translations": {
        lang: report_texts(report, exercise=exercise, submission=submission, cases=cases.get(lang, {}),
                           given_output=given_outputs.get(lang, ""), language=lang,
                           performance=(performances or {}).get(lang), extraction=extraction,
                           text_scores=text_scores)
        for lang in other_languages(report.language)}})
