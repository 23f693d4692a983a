"""GET /feedback/{token}: the student's report as a page (the same report /v1/feedback/{token}
returns as JSON), in the lesson's language, readable on a phone. The token is the only key:
it names one submission, and the page shows nothing of any other."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Annotated, Any

from fastapi import APIRouter, Form, Request
from sqlalchemy import select
from starlette.responses import RedirectResponse, Response

from service import hints as hint_ladder
from service.api.deps import SessionDep
from service.db import store
from service.db.models import Submission
from service.db.session import one_snapshot
from service.exercises import Exercise, ExerciseNotFound
from service.report import BenchTiming, CaseReport, Performance, Report, in_language
from service.status import FINAL_STATUSES
from service.student_view import LANGUAGES, strip_tracebacks, student_language
from service.web.i18n import texts
from service.web.pages import render, secure
from service.web.svg import PaddingRow, padding_row, score_bar

router = APIRouter(include_in_schema=False)



def find_by_token(session, token: str) -> Submission | None:
    if len(token) > 64 or "\x00" in token:
        return None
    return session.scalar(select(Submission).where(Submission.feedback_token == token))


def exercise_of(request: Request, exercise_id: str) -> Exercise | None:
    try:
        return request.app.state.grader_catalog.get(exercise_id)
    except ExerciseNotFound:
        return None


@dataclass
class Picture:
    """A padding probe's row: the SVG and the words that go with it."""
    svg: Any  # Markup
    title: str
    valid_sum: str
    padding_sum: str
    note: str


@dataclass
class CaseView:
    case: CaseReport
    kind_label: str
    picture: Picture | None = None


def _lanes_counted(report: Report) -> dict[str, int]:
    """case id -> lanes the second sum counted, from the diagnoses that read it off the numbers."""
    counted = {}
    for diagnosis in report.diagnoses:
        for where in diagnosis.evidence.get("cases", []):
            if isinstance(where, dict) and "lanes_counted" in where and "case" in where:
                counted[where["case"]] = int(where["lanes_counted"])
    return counted


def padding_picture(case: CaseReport, *, n: int, block: int, counted: int | None, t: dict[str, str]) -> Picture:
    """The picture of one row of a padding probe, with the sums read from its first mismatch."""
    if case.passed:
        counted = n
    row = PaddingRow(n=n, block=block, counted=counted, padding_sum=0.0 if case.passed else None)
    note = t["padding_ok"] if case.passed else ""
    mismatch = case.first_mismatch
    if not case.passed and counted is not None and mismatch is not None and mismatch.output == "var" \
            and mismatch.observed is not None:
        observed_sum, true_sum = mismatch.observed * n, mismatch.expected * n
        pad = max(0, min(counted, block) - n)
        padding_sum = max(0.0, observed_sum - true_sum) if pad else 0.0
        row = PaddingRow(n=n, block=block, counted=counted, valid_sum=observed_sum - padding_sum,
                         padding_sum=padding_sum)
        if pad:
            note = t["padding_bad"].format(each=f"{padding_sum / pad:.4g}", total=f"{padding_sum:.4g}")
    title = t["padding_title"].format(n=n, pad=block - n)

    def shown(value: float | None) -> str:
        return "N · var" if value is None else f"{value:.4g}"

    return Picture(svg=padding_row(row, title), title=title, note=note,
                   valid_sum=f"{t['padding_valid_sum']}: {shown(row.valid_sum)}",
                   padding_sum=f"{t['padding_padding_sum']}: {shown(row.padding_sum)}")


def case_views(report: Report, exercise: Exercise | None, t: dict[str, str]) -> list[CaseView]:
    graded = []  # the cases as this report's run drew them (drawn shapes come from its secret seed)
    if exercise is not None:
        graded = exercise.spec.cases_for(report.seeds.secret) if report.seeds is not None else exercise.spec.cases
    widths = {c.id: (c.cols, c.block) for c in graded}
    counted = _lanes_counted(report)
    views = []
    for case in report.cases:
        view = CaseView(case=case, kind_label=t.get(f"kind_{case.kind}", case.kind))
        n, block = widths.get(case.id, (0, 0))
        if case.kind == "probe" and block > n:
            view.picture = padding_picture(case, n=n, block=block, counted=counted.get(case.id), t=t)
        views.append(view)
    return views


@dataclass
class PerformanceView:
    """The report's `performance` in the page's words: (label, value) rows next to the claim."""
    p: Performance
    rows: list[tuple[str, str]]
    bytes_line: str
    method: str


def _duration(ms: float) -> str:
    return f"{ms * 1000:.1f} µs" if ms < 1 else f"{ms:.3g} ms"


def _times(timing: BenchTiming, t: dict[str, str]) -> str:
    return t["perf_time"].format(median=_duration(timing.median_ms), p20=_duration(timing.p20_ms),
                                 p80=_duration(timing.p80_ms), reps=timing.reps)


def performance_view(report: Report, t: dict[str, str]) -> PerformanceView | None:
    p = report.performance
    if p is None:
        return None
    rows: list[tuple[str, str]] = []
    method = ""
    if p.status == "measured" and p.kernel is not None and p.achieved_gbps is not None:
        rows.append((t["perf_shape"], " × ".join(map(str, p.timed_shape or p.shape))))
        rows.append((t["perf_kernel"], _times(p.kernel, t)))
        rows.append((t["perf_bandwidth"], t["perf_bandwidth_value"].format(gbps=f"{p.achieved_gbps:,.0f}")))
        if p.percent_of_peak is not None and p.peak_gbps is not None:
            rows.append((t["perf_peak"], t["perf_peak_value"].format(percent=f"{p.percent_of_peak:.0f}",
                                                                     peak=f"{p.peak_gbps:,.0f}", source=p.peak_source)))
        if p.percent_of_copy is not None and p.copy_gbps is not None:
            rows.append((t["perf_copy"], t["perf_copy_value"].format(percent=f"{p.percent_of_copy:.0f}",
                                                                     copy=f"{p.copy_gbps:,.0f}")))
        if p.baseline is not None and p.baseline_gbps is not None:
            rows.append((t["perf_baseline"].format(label=p.baseline_label),
                         t["perf_baseline_value"].format(time=_times(p.baseline, t), gbps=f"{p.baseline_gbps:,.0f}")))
        if p.speedup_vs_baseline is not None:
            predicted = t["perf_predicted"].format(predicted=f"×{p.predicted_speedup:g}") if p.predicted_speedup else ""
            rows.append((t["perf_speedup"], f"×{p.speedup_vs_baseline:.2f}{predicted}"))
        m = p.method
        flush = m.get("l2_flush_bytes")
        method = t["perf_method"].format(tool=m.get("tool", "?"), warmup=m.get("warmup_ms", "?"),
                                         rep=m.get("rep_ms", "?"),
                                         flush=f"{flush / 1e6:.0f}" if isinstance(flush, (int, float)) else "?")
    bytes_line = t["perf_bytes"].format(note=p.bytes_note, mb=f"{p.ideal_bytes / 1e6:,.1f}")
    return PerformanceView(p=p, rows=rows, bytes_line=bytes_line, method=method)


@dataclass
class Reason:
    """Why the verdict is not a pass, first screen: an unmet requirement of the pass rule or a
    veto, with the lines of the submission it concerns."""
    kind: str  # "requirement" | "veto"
    id: str
    title: str
    status: str  # a veto's status; "unmet" for a requirement
    note: str
    lines: list[tuple[str, str]]  # (line label, the code on that line)
    words: list[str] = field(default_factory=list)  # what each edit of those lines is and the misconception it shows


def _lines_of(evidence: dict[str, Any], t: dict[str, str]) -> list[tuple[str, str]]:
    """The lines a veto's or a requirement's evidence names (`edits`, or `line`/`lines`), read
    defensively: evidence is free-form and written by several graders."""
    found: list[tuple[str, str]] = []
    for edit in evidence.get("edits") or []:
        if not isinstance(edit, dict):
            continue
        number = edit.get("submission_line") or edit.get("template_line")
        code = edit.get("submission") if edit.get("submission_line") else edit.get("template")
        label = t["reason_line"].format(line=number) if number else t["reason_somewhere"]
        if edit.get("kind") == "deleted":
            label = t["reason_deleted_line"].format(line=edit.get("template_line") or "?")
        found.append((label, str(code or "").strip()))
    for key in ("line", "lines"):
        value = evidence.get(key)
        for number in (value if isinstance(value, list) else [value] if value is not None else []):
            if isinstance(number, int):
                found.append((t["reason_line"].format(line=number), ""))
    return found[:5]


def _edit_words(report: Report, evidence: dict[str, Any]) -> list[str]:
    """What each edit a veto names is, and the misconception it shows where one is known ("the divisor
    was changed from N to BLOCK: … shrinks by a factor N/BLOCK"), in the page's language: the
    report's `program.edits` (said in the language the page shows: in_language) for the veto's edits."""
    known = report.program.edits if report.program is not None else []
    said: list[str] = []
    for edit in evidence.get("edits") or []:
        if not isinstance(edit, dict):
            continue
        same = next((e for e in known if e.template_line == edit.get("template_line")
                     and e.submission_line == edit.get("submission_line") and e.kind == edit.get("kind")), None)
        reason, hint = (same.reason, same.hint) if same is not None else (edit.get("reason"), edit.get("hint"))
        for text in (reason, hint):
            if isinstance(text, str) and text.strip() and text.strip() not in said:
                said.append(text.strip())
    return said[:6]


def note_in(evidence: dict[str, Any], language: str) -> str:
    """A veto's note in the student's language: `note_<lang>` where the grader wrote one, else `note`."""
    return str(evidence.get(f"note_{language}") or evidence.get("note") or "")


def reasons(report: Report, t: dict[str, str], language: str = "zh") -> list[Reason]:
    """The unmet requirements and the standing vetoes, vetoes first (they override points)."""
    found = []
    for veto in report.vetoes:
        if veto.status == "dismissed":
            continue
        ev = veto.evidence if isinstance(veto.evidence, dict) else {}
        found.append(Reason(kind="veto", id=veto.rule, title=t.get(f"veto_{veto.rule}", veto.rule), status=veto.status,
                            note=note_in(ev, language), lines=_lines_of(ev, t), words=_edit_words(report, ev)))
    for requirement in getattr(report.score, "requirements", None) or []:
        if getattr(requirement, "met", True):
            continue
        ev = requirement.evidence if isinstance(requirement.evidence, dict) else {}
        title = requirement.title or t.get(f"req_{requirement.id}") or str(ev.get("title") or ev.get("label")
                                                                             or requirement.id)
        note = requirement.message or str(ev.get(f"message_{language}") or ev.get("message") or note_in(ev, language)
                                          or ev.get("reason") or "")
        found.append(Reason(kind="requirement", id=requirement.id, title=title, status="unmet", note=note,
                            lines=_lines_of(ev, t)))
    return found


def lead_case(report: Report, views: list[CaseView]) -> CaseView | None:
    """The failed case whose picture goes with the first diagnosis: the one its evidence names,
    else the first failed probe with a picture."""
    by_id = {v.case.id: v for v in views}
    if report.diagnoses:
        for where in report.diagnoses[0].evidence.get("cases", []):
            case_id = where.get("case") if isinstance(where, dict) else where
            view = by_id.get(case_id) if isinstance(case_id, str) else None
            if view is not None and view.picture is not None and not view.case.passed:
                return view
    return next((v for v in views if v.picture is not None and not v.case.passed and v.case.kind == "probe"), None)


def pending(report: Report) -> list[str]:
    """What still waits for a TA, in the report's words."""
    t = texts(report.language)
    waiting = [f"{i.title}" for i in report.items if i.status == "needs_review"]
    waiting += [t.get(f"veto_{v.rule}", v.rule) for v in report.vetoes if v.status == "suspected"]
    return waiting


@router.get("/feedback/{token}")
def feedback_page(request: Request, token: str, session: SessionDep) -> Response:
    one_snapshot(session)  # the submission, its report, the policy's hint cost and the levels taken: one moment
    return feedback_response(request, session, find_by_token(session, token))


@dataclass
class LadderView:
    diagnosis: str
    title: str
    taken: list[hint_ladder.Taken]
    next_level: int | None
    next_name: str


def ladder_views(session, request: Request, row: Submission, language: str,
                 t: dict[str, str]) -> tuple[list[LadderView], float | None]:
    """The ladders the page offers, with only the levels already taken."""
    exercise = exercise_of(request, row.exercise_id)
    state = hint_ladder.ladders(session, row, exercise.root if exercise is not None else None)
    shown = hint_ladder.shown(state.rows, state.hints, language)
    names = hint_ladder.LEVEL_NAMES.get(language, hint_ladder.LEVEL_NAMES["zh"])
    views = []
    for number, diagnosis in enumerate(state.offered, 1):
        level = state.next_level(diagnosis)
        views.append(LadderView(diagnosis=diagnosis, title=t["hint_general"] if diagnosis == hint_ladder.GENERAL
                                else t["hint_for_diagnosis"].format(number=number),
                                taken=[h for h in shown if h.diagnosis == diagnosis], next_level=level,
                                next_name=names[level - 1] if level else ""))
    return views, state.cost


FormText = Annotated[str, Form(max_length=100)]


@router.post("/feedback/{token}/hints")
def take_hint(request: Request, token: str, session: SessionDep, diagnosis: FormText = "",
              lang: FormText = "") -> Response:
    """The page's "next hint" button (a plain form: no script): record the level, then back to the
    page. The token is the key, as for the page; there is no cookie, so nothing to forge."""
    row = find_by_token(session, token)
    if row is None:
        return feedback_response(request, session, None)
    exercise = exercise_of(request, row.exercise_id)
    state = hint_ladder.ladders(session, row, exercise.root if exercise is not None else None)
    current = store.current_report(session, row)
    lesson = str((current.report or {}).get("language") or "zh") if current is not None else "zh"
    language = student_language(lang or None, row.language, row.body, lesson)
    try:
        hint_ladder.take_next(session, row, state.hints, state.offered, diagnosis or None, language)
    except hint_ladder.HintError:
        pass  # all given, or not graded: the page shows the ladder as it is
    query = f"?lang={lang}" if lang in LANGUAGES else ""
    return secure(RedirectResponse(f"/feedback/{token}{query}#hints", status_code=303))


def feedback_response(request: Request, session, row: Submission | None, *,
                      headers: dict[str, str] | None = None,
                      counted: Callable[[str], dict[str, Any]] | None = None) -> Response:
    """The page of one submission (`headers` override the security headers: the LTI route lets
    the submission's own LMS frame it; `counted`: the grade the LMS gets for it, in the page's
    language, shown as the score with the rubric total beside it and why: service.lti.routes).
    The caller reads the row from one snapshot (session.one_snapshot, before its first read): the
    page reads the report, the course's policy and the hint levels in separate statements, and a
    policy change and a hint level landing between them made a page no moment had."""
    if row is None:
        t = texts("zh")
        return render(request, "not_found.html", {"t": t, "title": t["not_found_title"], "message": t["not_found"]},
                      status_code=404, headers=headers)
    exercise = exercise_of(request, row.exercise_id)
    current = store.current_report(session, row)
    # the harness's frames are not the student's (service/student_view.py); the seeds stay (the pictures use them)
    report = (Report.model_validate(strip_tracebacks(current.report))
              if current is not None and row.status in FINAL_STATUSES else None)
    lesson = report.language if report is not None else (exercise.spec.language if exercise is not None else "zh")
    asked = request.query_params.get("lang")
    language = student_language(asked, row.language, row.body, lesson)
    if report is not None:
        report = in_language(report, language)  # graded before translations: stays in its own (said below)
    t = texts(language)
    exercise_title = exercise.spec.title.in_(language) if exercise is not None else row.exercise_id
    context: dict[str, Any] = {"t": t, "row": row, "report": report, "title": t["feedback_title"],
                               "exercise_title": exercise_title,
                               # the other language, as a link that keeps the page (?lang= wins over the rest)
                               "switch": [(code, texts(code)["language_name"])
                                          for code in LANGUAGES if code != language]}
    if report is not None:
        score = report.score
        lms = counted(language) if counted is not None and report.status == "graded" else None
        lms = lms if lms and lms.get("score") else None
        shown = lms["points"] if lms is not None else score.total
        context.update(
            lms=lms,
            score_svg=score_bar(total=shown, maximum=score.max, pass_threshold=score.pass_threshold,
                                label=f"{t['score']} {shown:g} / {score.max:g}",
                                pass_label=f"{t['pass_line']} {score.pass_threshold:g}", passed=score.passed),
            pending=pending(report), performance=performance_view(report, t), reasons=reasons(report, t, language),
            language=language,
            untranslated=texts(report.language)["language_name"] if report.language != language else "")
        views = case_views(report, exercise, t)
        lead = lead_case(report, views)
        context.update(cases=views, lead=lead)
        ladders, cost = ladder_views(session, request, row, language, t)
        context.update(ladders=ladders, hint_cost=cost, lang_asked=asked if asked in LANGUAGES else "")
    return render(request, "feedback.html", context, headers=headers)
