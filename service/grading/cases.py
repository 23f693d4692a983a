"""Case comparison: a run's outputs against the reference, as case reports and the evidence diagnoses read.

Also the inputs check (`overwritten_inputs`): every input that came back changed in any bit.
"""
from __future__ import annotations

import numpy as np

from sandbox.contract import RunResult
from service.exercises import CaseSpec, Exercise, ExerciseSpec
from service.exercises.kit import CaseEvidence
from service.grading import bounds
from service.grading.compare import compare_outputs
from service.grading.inputs import layout_view
from service.grading.overwrite import changed_input
from service.grading.overwrite import diagnosis as overwrite_diagnosis
from service.grading.run import sandbox_inputs
from service.grading.sandbox_text import expand_marks, say
from service.messages import Language, render
from service.report import CaseReport, CaseTexts, Diagnosis, OutOfBounds

GIVEN_CASE_ID = "given"


def compare_cases(exercise: Exercise, run: RunResult | None, arrays: dict[str, dict[str, np.ndarray]],
                  seeds: dict[str, int], graded: list[CaseSpec], *,
                  language: Language | None = None) -> tuple[list[CaseReport], list[CaseEvidence]]:
    """One report per case (the given check first when the program ran), and the evidence of every
    case that returned; `run` None (the program did not run): every case fails, no evidence.
    `language`: the report's (default: the exercise's)."""
    spec = exercise.spec
    lang = language or spec.language
    tolerance = {name: t.model_dump() for name, t in spec.outputs.items()}
    reports: list[CaseReport] = []
    if run is not None:
        given = run.given
        reports.append(CaseReport(
            id=GIVEN_CASE_ID, kind="given", description=spec.given_check.description.in_(lang), shape=[],
            seed=spec.given_check.seed,
            passed=given is not None and given.status == "passed", tolerance=tolerance,
            error=None if given is None or given.status == "passed" else (given.output or given.status),
            elapsed_s=given.elapsed_s if given else None,
        ))
    runs = {c.id: c for c in run.cases} if run is not None else {}
    evidence = []
    for case in graded:
        inputs64 = {name: a.astype(np.float64) if a.dtype.kind == "f" else a for name, a in arrays[case.id].items()}
        primary = inputs64[spec.args[0]]
        base = dict(id=case.id, kind=case.kind, description=case.description.in_(lang), shape=list(primary.shape),
                    stride=case.stride, seed=seeds[case.id], tolerance=tolerance,
                    layout={name: layout_view(layout, arrays[case.id][name].shape)
                            for name, layout in case.layout.items() if name in arrays[case.id]},
                    targets=case.targets.in_(lang) if case.targets is not None else None,
                    drawn=case.draw.family if case.draw is not None and case.secret else None)
        outcome = runs.get(case.id)
        if outcome is None or outcome.status != "ok":
            error = render("cases.not_run", lang) if outcome is None else (outcome.error or outcome.status)
            breaches = [OutOfBounds(**b) for b in outcome.out_of_bounds] if outcome is not None else []
            if breaches:
                error = bounds.describe(breaches, language=lang, entry_point=spec.entry_point)
            reports.append(CaseReport(**base, passed=False, error=error, out_of_bounds=breaches,
                                      elapsed_s=outcome.elapsed_s if outcome else None))
            if outcome is not None:
                evidence.append(CaseEvidence(case, primary, None, {}, False, inputs64, error=error,
                                             out_of_bounds=list(outcome.out_of_bounds),
                                             allocations=list(outcome.allocations), tolerances=spec.outputs))
            continue
        expected = exercise.checks.reference(**inputs64)
        result = compare_outputs(outcome.outputs, expected, spec.outputs, language=lang)
        reports.append(CaseReport(**base, passed=result.passed, max_abs_err=result.max_abs_err,
                                  max_rel_err=result.max_rel_err, error_ratio=result.error_ratio,
                                  first_mismatch=result.first_mismatch, error=result.error,
                                  elapsed_s=outcome.elapsed_s))
        observed = outcome.outputs if result.error is None else None
        evidence.append(CaseEvidence(case, primary, observed, expected, result.passed, inputs64,
                                     tolerances=spec.outputs))
    return reports, evidence


def case_texts(exercise: Exercise, run: RunResult | None, reports: list[CaseReport], evidence: list[CaseEvidence],
               graded: list[CaseSpec], *, given_output: str, language: Language) -> dict[str, CaseTexts]:
    """The texts of `reports` (compare_cases's, in another language) in `language`, from the same run:
    descriptions from the exercise, errors said again from the runner's codes, the guards' evidence or
    the comparison (redone only for a case whose outputs could not be compared). `given_output`: the
    given check's output in `language` (given.given_output_in)."""
    spec = exercise.spec
    specs = {c.id: c for c in graded}
    outcomes = {c.id: c for c in run.cases} if run is not None else {}
    expected = {e.case.id: e.expected for e in evidence}
    texts: dict[str, CaseTexts] = {}
    for report in reports:
        if report.kind == "given":
            texts[report.id] = CaseTexts(description=spec.given_check.description.in_(language),
                                         error=None if report.error is None else (given_output or report.error))
            continue
        case = specs.get(report.id)
        if case is None:
            continue
        error = report.error
        outcome = outcomes.get(report.id)
        if error is None:
            pass
        elif report.out_of_bounds:
            error = bounds.describe(report.out_of_bounds, language=language, entry_point=spec.entry_point)
        elif outcome is None:
            error = render("cases.not_run", language)
        elif outcome.status != "ok":
            error = say(outcome.said, language) if outcome.said is not None \
                else expand_marks(outcome.raw_error, language) if outcome.raw_error is not None else error
        elif report.id in expected:  # outputs of the wrong name, shape or dtype: the comparison's words
            error = compare_outputs(outcome.outputs, expected[report.id], spec.outputs, language=language).error
        texts[report.id] = CaseTexts(description=case.description.in_(language), error=error,
                                     targets=case.targets.in_(language) if case.targets is not None else None)
    return texts


def overwritten_inputs(spec: ExerciseSpec, graded: list[CaseSpec], arrays: dict[str, dict[str, np.ndarray]],
                       run: RunResult, *, language: Language | None = None) -> Diagnosis | None:
    """The `input_overwritten` diagnosis when an input (not in `written_args`) came back from the
    sandbox changed in any bit, on any case that returned; None otherwise."""
    sent = sandbox_inputs(graded, spec, arrays)
    by_id = {c.id: c for c in graded}
    found = []
    for outcome in run.cases:
        case = by_id.get(outcome.id)
        if case is None or not outcome.inputs_after:
            continue
        for index, name in enumerate(spec.args):
            key = f"{case.id}.{name}"
            if name in spec.written_args or key not in sent:
                continue
            columns = case.cols if index == 0 and case.stride else None
            layout = case.layout.get(name)
            view = layout_view(layout, arrays[case.id][name].shape) if layout is not None else None
            change = changed_input(case.id, name, sent[key], outcome.inputs_after.get(key), columns=columns,
                                   view=view)
            if change is not None:
                found.append(change)
    return overwrite_diagnosis(found[:16], language=language or spec.language)
