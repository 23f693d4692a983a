"""Step 6: points per rubric item, vetoes, and the score."""
from __future__ import annotations

import ast
import dataclasses
import functools
import math
from collections.abc import Collection

from service.exercises import Exercise, Question, RubricItem
from service.grading import host_blanks
from service.grading.cases import GIVEN_CASE_ID
from service.grading.extract import extract
from service.grading.freetext import NOT_THE_FILL, TextScore, score_answer, score_text
from service.grading.model_assist import ModelAssist
from service.grading.stated_fill import fill_scope
from service.messages import render
from service.report import CaseReport, Diagnosis, EditReport, Item, Score, Veto, points_total
from service.submission import Submission


def score_cases_item(item: RubricItem, cases: list[CaseReport], *, not_run_reason: str | None,
                     diagnoses: list[Diagnosis], language: str = "zh", holds_given: bool = False) -> Item:
    """`holds_given`: this item also answers for the given check's case where a TA must look at it
    (host_blanks.split_diagnosis; the first cases item)."""
    if not_run_reason is not None:
        return Item(id=item.id, title=item.title.in_(language), points=0.0, max_points=item.points, status="fail",
                    feedback=render("rubric.not_run", language, reason=not_run_reason))
    mine = [c for c in cases if c.kind in item.case_kinds]
    passed = [c for c in mine if c.passed]
    failed = [c for c in mine if not c.passed]
    if not failed:
        points, status = item.points, "pass"
    elif item.scoring == "fraction":
        points = math.floor(len(passed) / len(mine) * item.points * 2) / 2
        status = "partial" if points > 0 else "fail"
    else:
        points, status = 0.0, "fail"
    kinds = [render(f"rubric.kind.{k}", language) for k in item.case_kinds]
    lines = [render("rubric.cases_line", language, kinds=kinds, passed=len(passed), total=len(mine))]
    for case in failed:
        lines.append(render("rubric.failed_case", language, case=case.id, description=case.description,
                            failure=_case_failure(case, language)))
    related = [d for d in diagnoses
               if any(e.get("case") in {c.id for c in failed} for e in d.evidence.get("cases", []))]
    if related:
        lines.append(render("rubric.diagnoses_heading", language))
        lines += [f"- {d.message}" for d in related]
    # Cases that passed with the student's own split of the work between kernel and host code, and
    # not with the solution's host code: the points stand provisionally and a TA decides.
    split = next((d for d in diagnoses if d.id == host_blanks.SPLIT_DIAGNOSIS), None)
    disputed = {e.get("case") for e in split.evidence.get("cases", [])} if split is not None else set()
    if status != "fail" and ({c.id for c in passed} & disputed or (holds_given and GIVEN_CASE_ID in disputed)):
        status = "needs_review"
        lines.append(f"- {split.message}" if split is not None else "")
    return Item(id=item.id, title=item.title.in_(language), points=points, max_points=item.points, status=status,
                feedback="\n".join(lines),
                evidence={"passed": [c.id for c in passed], "failed": [c.id for c in failed],
                          "diagnoses": [d.id for d in related]})


def _case_failure(case: CaseReport, language: str) -> str:
    if case.out_of_bounds and case.error:  # one line, worded in full by service/grading/bounds.py
        return case.error.strip()
    if case.error:
        # the last line that says something: a compile error's caret line (`          ^`) says nothing
        said = [line for line in case.error.strip().splitlines() if line.strip().strip("^~ ")]
        return said[-1].strip()[:300] if said else render("rubric.case_error", language)
    m = case.first_mismatch
    if m is None:
        return render("rubric.case_failed", language)
    observed = "NaN/inf" if m.observed is None else f"{m.observed:.6g}"
    return render("rubric.mismatch", language, output=m.output, index=str(m.index), observed=observed,
                  expected=m.expected, allowed=m.allowed_error, ratio=case.error_ratio)


# The written answer that explains the code (the contract's `explanation` field; lesson 6's
# "解释实现", one of the code's 4 points), and the flag of one given over a refused fill.
EXPLANATION_QUESTION = "explanation"
FILL_REFUSED = "fill_refused"


def score_items(exercise: Exercise, submission: Submission, cases: list[CaseReport], *,
                not_run_reason: str | None, diagnoses: list[Diagnosis], assist: ModelAssist | None = None,
                fills: list[str | None] | None = None, language: str | None = None,
                text_scores: dict[str, TextScore] | None = None, fill_refusal: str | None = None,
                spilled: Collection[int] = (), ahead: AnswersAhead | None = None) -> list[Item]:
    """`fills`: the submitted fills' canonical sources; explanations are scored against them.
    `language`: the report's (default: the exercise's). `text_scores`: one grading's written-answer
    scores by item id, filled by its first call and reused by the next (the report said in another
    language scores nothing twice: a score does not depend on the language it is said in).
    `fill_refusal`: why the fills were refused before they ran (fills.fill_refusal: a spilled fill, an
    expression outside the allowed set, an unfilled blank, host code that computes the result), in
    `language`: the code's explanation then explains code that was not accepted and earns nothing
    (_over_refused_fill). `spilled`: the blanks (by index) whose fill spilled past the blank (the
    extraction's `spills`; freetext._spilled). `ahead`: answers scored while the run went on
    (score_answers_ahead), reused where they are what this would score."""
    items = []
    lang = language or exercise.spec.language
    reference = _reference_if_alike(exercise, cases, diagnoses, not_run_reason)
    first_cases_item = next((item.id for item in exercise.spec.rubric if item.source == "cases"), None)
    for item in exercise.spec.rubric:
        if item.source == "cases":
            items.append(score_cases_item(item, cases, not_run_reason=not_run_reason, diagnoses=diagnoses,
                                          language=lang, holds_given=item.id == first_cases_item))
            continue
        if item.question is None:  # the spec refuses it (RubricItem._check): a text item names its question
            raise ValueError(f"rubric item {item.id}: a text item needs the question it grades")
        question, answer = exercise.question(item.question), submission.answer(item.question)
        result = text_scores.get(item.id) if text_scores is not None else None
        if result is None and (result := _ahead(ahead, item.id, reference)) is not None and text_scores is not None:
            text_scores[item.id] = result
        if result is None:
            result = _score_item_answer(exercise, item, answer, fills=fills, reference=reference, spilled=spilled)
            if text_scores is not None:
                text_scores[item.id] = result
        if fill_refusal is not None and item.question == EXPLANATION_QUESTION:
            items.append(_over_refused_fill(item, question, answer, result, fills=fills, refusal=fill_refusal,
                                            language=lang))
            continue
        scored = score_text(item_id=item.id, title=item.title.in_(lang), max_points=item.points, question=question,
                            answer=answer, fills=fills, language=lang, result=result)
        items.append(assist.annotate(scored, question, answer, language=lang) if assist is not None else scored)
    return items


def _score_item_answer(exercise: Exercise, item: RubricItem, answer: str, *, fills: list[str | None] | None,
                       reference: tuple[str | None, ...] | None, spilled: Collection[int]) -> TextScore:
    """score_answer for a text item of the rubric; the code's explanation is also read for the fill it says
    it wrote (freetext._stated_not_the_fill)."""
    assert item.question is not None
    scope = fill_scope(exercise.template) if item.question == EXPLANATION_QUESTION else None
    return score_answer(exercise.question(item.question), answer, item.points, fills=fills, reference_fills=reference,
                        course_text=exercise.spec.course_text, scope=scope, spilled=spilled)


@dataclasses.dataclass
class AnswersAhead:
    """Written answers scored while a new program's sandbox runs (RunStep.meanwhile), by item id.
    An answer no run can change (not the code's explanation, no `describes` claim: score_answer reads
    `fills` and `reference_fills` for those only) is in `scores`; one that the run can change is in
    `guessed` with the `reference_fills` it was read with, and score_items reuses it only where the run
    gave the same (_reference_if_alike)."""

    scores: dict[str, TextScore] = dataclasses.field(default_factory=dict)
    guessed: dict[str, tuple[tuple[str | None, ...] | None, TextScore]] = dataclasses.field(default_factory=dict)


def score_answers_ahead(exercise: Exercise, submission: Submission, fills: list[str | None],
                        ahead: AnswersAhead, *, spilled: Collection[int] = ()) -> None:
    """Score the written answers before the run ends, into `ahead` (issue #20: a new program's report
    no longer waits for them after its run; the code's explanation is the dearest, 10-25 ms). Where the
    run decides the reference (every case passed: _reference_if_alike), the guess is the one a class
    mostly needs: the reference's expression fills when the submitted ones are those, else none."""
    reference = expression_fills(exercise.template, exercise.solution)
    same = len(reference) == len(fills) and all(r is None or r == f for r, f in zip(reference, fills))
    guess = reference if same else None
    for item in exercise.spec.rubric:
        if item.source == "cases" or item.question is None:
            continue
        answer = submission.answer(item.question)
        if item.question != EXPLANATION_QUESTION and not exercise.question(item.question).describes:
            ahead.scores[item.id] = _score_item_answer(exercise, item, answer, fills=fills, reference=None,
                                                       spilled=spilled)
        else:
            ahead.guessed[item.id] = (guess, _score_item_answer(exercise, item, answer, fills=fills, reference=guess,
                                                                spilled=spilled))


def _ahead(ahead: AnswersAhead | None, item_id: str, reference: tuple[str | None, ...] | None) -> TextScore | None:
    """What score_answers_ahead scored for the item, where it is what score_items would score now."""
    if ahead is None:
        return None
    if item_id in ahead.scores:
        return ahead.scores[item_id]
    guessed = ahead.guessed.get(item_id)
    return guessed[1] if guessed is not None and guessed[0] == reference else None


def _over_refused_fill(item: RubricItem, question: Question, answer: str, result: TextScore, *,
                       fills: list[str | None] | None, refusal: str, language: str) -> Item:
    """The code's explanation where the fill was refused and did not run. The rubric's explanation
    point is one of the code's points ("代码 4 分：正常输入 2 分，边界输入 1 分，解释实现 1 分"), scored
    against the fill actually submitted; a refused fill is no implementation that ran, so nothing
    explains one: 0, `fail`, no TA (nothing a TA decides would change it), and the feedback says why
    with the refusal itself. It is still read against the fill as written (what it covered and
    missed stays in the feedback; a mismatch, `not_the_fill`, stays in the evidence, not flagged)."""
    said = dataclasses.replace(result, not_the_fill=[], confidence=1.0,  # sure: nothing a TA sees changes the 0
                               flags=[*(f for f in result.flags if f != NOT_THE_FILL), FILL_REFUSED])
    scored = score_text(item_id=item.id, title=item.title.in_(language), max_points=item.points,
                        question=question, answer=answer, fills=fills, language=language, result=said)
    head = render("rubric.explanation_fill_refused", language, reason=refusal)
    return scored.model_copy(update={
        "points": 0.0, "status": "fail", "feedback": "\n".join(t for t in (head, scored.feedback) if t),
        "evidence": {**scored.evidence, "not_the_fill": [*result.not_the_fill],
                     FILL_REFUSED: {"reason": refusal, "fills": [*(fills or [])], "points_as_written": result.points,
                                       "confidence_as_written": result.confidence}},
    })


def _reference_if_alike(exercise: Exercise, cases: list[CaseReport], diagnoses: list[Diagnosis],
                        not_run_reason: str | None) -> tuple[str | None, ...] | None:
    """The reference solution's expression fills when the submitted ones behave as them on every case
    (all passed, the given check too, nothing diagnosed), else None: an explanation of the reference's
    `cols < N` then describes the submitted `~(cols >= N)` (freetext._not_the_fill)."""
    if not_run_reason is not None or not cases or diagnoses or not all(c.passed for c in cases):
        return None
    return expression_fills(exercise.template, exercise.solution)


@functools.lru_cache(maxsize=64)
def expression_fills(template: str, solution: str) -> tuple[str | None, ...]:
    """Each blank's fill in the reference solution, canonical; None for a block blank."""
    return tuple(ast.unparse(f) if isinstance(f, ast.expr) else None for f in extract(template, solution).fills)


def edit_vetoes(edits: list[EditReport], language: str = "zh") -> list[Veto]:
    vetoes = []
    for rule in ("boundary_check_removed", "modified_outside_blank"):
        mine = [e for e in edits if e.rule == rule]
        if mine:
            vetoes.append(Veto(rule=rule, status="confirmed", needs_review=False, evidence={
                "edits": [{"kind": e.kind, "template_line": e.template_line, "submission_line": e.submission_line,
                           "template": e.template_text, "submission": e.submission_text, "reason": e.reason,
                           "hint": e.hint} for e in mine],
                "note": render("rubric.note.outside_blank", language),
                "note_en": render("rubric.note.outside_blank", "en"),
            }))
    return vetoes


def coincidental_pass_veto(cases: list[CaseReport], diagnoses: list[Diagnosis], language: str = "zh") -> Veto | None:
    """The lesson's own check passes while a probe shows the reasoning is wrong: a TA decides."""
    given = next((c for c in cases if c.kind == "given"), None)
    failed_probes = [c for c in cases if c.kind == "probe" and not c.passed]
    if given is None or not given.passed or not failed_probes:
        return None
    return Veto(rule="coincidental_pass", status="suspected", needs_review=True, evidence={
        "given_check": "passed",
        "failed_probes": [{"case": c.id, "targets": c.targets, "error_ratio": c.error_ratio} for c in failed_probes],
        "diagnoses": [d.id for d in diagnoses],
        # which probe, the misconception it targets and how far off it was (a case's `targets` is in the
        # report's language: in another language's note the probe is named by its id and its error alone)
        "note": render("rubric.note.probe_failed", language, probes=_probes_said(failed_probes, language)),
        "note_en": render("rubric.note.probe_failed", "en",
                          probes=_probes_said(failed_probes, "en", targets=language == "en")),
    })


NOTE_PROBES_SAID = 4  # a note names at most this many failed probes (the cases list has them all)


def _probes_said(probes: list[CaseReport], language: str, *, targets: bool = True) -> str:
    said = []
    for c in probes[:NOTE_PROBES_SAID]:
        code = "rubric.note.probe_error" if c.error and c.error_ratio is None else "rubric.note.probe"
        what = (c.targets or c.description or "").strip()
        said.append(render(code if targets and what else code + "_bare", language, case=c.id, targets=what,
                           ratio=c.error_ratio if c.error_ratio is not None else math.inf))
    more = [f"… (+{len(probes) - NOTE_PROBES_SAID})"] if len(probes) > NOTE_PROBES_SAID else []
    return render("passrule.separator", language).join(said + more)


def wrong_chain_veto(cases: list[CaseReport], items: list[Item], language: str = "zh") -> Veto | None:
    """The code is right, but a written answer states a misconception: right by accident?"""
    ran = [c for c in cases if c.kind != "given"]
    if not ran or not all(c.passed and c.error is None for c in cases):
        return None
    stated = [{"item": i.id, **m} for i in items for m in i.evidence.get("misconceptions", [])]
    if not stated:
        return None
    titles = {i.id: i.id.upper() if i.id.startswith("q") else i.id for i in items}

    def said(lang: str) -> str:  # which answer states which misconception
        return render("passrule.separator", lang).join(
            render("rubric.note.stated", lang, item=titles.get(m["item"], m["item"]),
                   label=(m.get("label_en") if lang == "en" else None) or m.get("label") or m.get("misconception"))
            for m in stated)

    return Veto(rule="coincidental_pass", status="suspected", needs_review=True, evidence={
        "misconceptions": stated,
        "note": render("rubric.note.wrong_chain", language, stated=said(language)),
        "note_en": render("rubric.note.wrong_chain", "en", stated=said("en")),
    })


def total_score(exercise: Exercise, items: list[Item], vetoes: list[Veto]) -> Score:
    total = points_total(items)
    blocking = any(v.status in ("confirmed", "suspected") for v in vetoes)
    provisional = any(i.status == "needs_review" for i in items) or any(v.status == "suspected" for v in vetoes)
    return Score(total=total, max=exercise.spec.max_points, pass_threshold=exercise.spec.pass_threshold,
                 passed=total >= exercise.spec.pass_threshold and not blocking, provisional=provisional)
