"""The TA review pages: sign-in, the queue (filters, keyboard), one case with its evidence and
the decision forms, and the CSV export of a course's decisions. Decisions go through the same
service.db.decisions.decide as POST /v1/submissions/{id}/decisions: next report, audit, webhook."""
from __future__ import annotations

import csv
import io
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any
from urllib.parse import urlencode

from fastapi import APIRouter, Form, Query, Request
from pydantic import ValidationError
from starlette.responses import RedirectResponse, Response

from service import hints as hint_ladder
from service.api.deps import SessionDep
from service.db import decisions, store
from service.db.base import utcnow
from service.db.models import ApiKey, Submission
from service.downloads import csv_attachment, spreadsheet_safe
from service.grades import copies
from service.lti.roster import names as student_names
from service.report import Report
from service.review import DecisionError, DecisionRequest
from service.submission import Submission as SubmissionBody
from service.web import auth
from service.web.case import diff_lines, item_views, veto_views
from service.web.feedback import exercise_of
from service.web.pages import render, secure

router = APIRouter(include_in_schema=False)

FLAG_KINDS = {"coincidental_pass": "suspected veto: coincidental pass",
              "unverified_claim": "suspected veto: unverified claim",
              "needs_review": "an item for a TA (a low-confidence written answer, or cases passed "
                              "with a split of the work of its own)",
              "earlier_decision": "a regrade changed what a TA decided on"}
AGES = {"1h": timedelta(hours=1), "1d": timedelta(days=1), "3d": timedelta(days=3), "7d": timedelta(days=7)}

Text = Annotated[str, Query(max_length=100)]
FormText = Annotated[str, Form(max_length=200)]


def _see_other(url: str) -> Response:
    return secure(RedirectResponse(url, status_code=303))


def _to_sign_in(request: Request) -> Response:
    target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
    return _see_other("/review/login?" + urlencode({"next": target}))


def _naive_utc(moment: datetime | None) -> datetime:
    if moment is None:
        return datetime.min
    return moment.astimezone(UTC).replace(tzinfo=None) if moment.tzinfo else moment


def _age(moment: datetime | None) -> str:
    if moment is None:
        return "?"
    seconds = max(0.0, (_naive_utc(utcnow()) - _naive_utc(moment)).total_seconds())
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            return f"{int(seconds // size)} {unit}"
    return f"{int(seconds)} s"


class Filters:
    """The queue's filters, as given in the query string (unknown values are ignored)."""

    def __init__(self, course: str = "", exercise: str = "", flag: str = "", age: str = "") -> None:
        self.course, self.exercise = course, exercise
        self.flag = flag if flag in FLAG_KINDS else ""
        self.age = age if age in AGES else ""

    def query(self, **extra: str) -> str:
        pairs = {"course": self.course, "exercise": self.exercise, "flag": self.flag, "age": self.age, **extra}
        return urlencode({k: v for k, v in pairs.items() if v})

    def entries(self, session, keys: list[ApiKey]) -> list[tuple[Submission, list[str]]]:
        courses = [k.course_id for k in keys if not self.course or k.course_id == self.course]
        before = utcnow() - AGES[self.age] if self.age else None
        found = [entry for course in courses
                 for entry in decisions.review_queue(session, course, exercise=self.exercise or None,
                                                     kind=self.flag or None, graded_before=before)]
        return sorted(found, key=lambda e: _order(e[0]))


def _order(row: Submission) -> tuple:
    return (_naive_utc(row.graded_at), _naive_utc(row.created_at), row.id)


# --- sign-in -----------------------------------------------------------------------------------

@router.get("/review/login")
def login_form(request: Request, next: Annotated[str, Query(max_length=500)] = "") -> Response:
    return render(request, "review_login.html", {"title": "Sign in", "csrf": auth.csrf_token(request),
                                                  "next": auth.safe_next(next), "error": ""})


@router.post("/review/login")
def login(request: Request, session: SessionDep, key: FormText = "", csrf: FormText = "",
          next: Annotated[str, Form(max_length=500)] = "") -> Response:
    def again(error: str, status: int) -> Response:
        return render(request, "review_login.html", {"title": "Sign in", "csrf": auth.csrf_token(request),
                                                      "next": auth.safe_next(next), "error": error}, status_code=status)

    if not auth.csrf_ok(request, csrf):
        return again("The form expired or came from elsewhere: sign in again.", 403)
    client = request.client.host if request.client else "?"
    if request.app.state.rate_limiter.take(f"sign-in:{client}") > 0:
        return again("Too many attempts: wait a minute.", 429)
    if auth.sign_in(request, session, key) is None:
        return again("That key is not valid, or it lacks the review scope.", 401)
    return _see_other(auth.safe_next(next))


@router.post("/review/logout")
def logout(request: Request, csrf: FormText = "") -> Response:
    if auth.csrf_ok(request, csrf):
        auth.sign_out(request)
    return _see_other("/review/login")


# --- the queue ---------------------------------------------------------------------------------

@router.get("/review")
def queue_page(request: Request, session: SessionDep, course: Text = "", exercise: Text = "", flag: Text = "",
               age: Text = "") -> Response:
    keys = auth.review_keys(request, session)
    if not keys:
        return _to_sign_in(request)
    filters = Filters(course, exercise, flag, age)
    entries = filters.entries(session, keys)
    students = student_names(session, [row.id for row, _ in entries])
    rows = [{"id": row.id, "exercise": row.exercise_id, "course": row.course_id, "reasons": reasons,
             "student": students.get(row.id) or row.student_name or row.student_id or "", "age": _age(row.graded_at),
             "href": f"/review/cases/{row.id}?{filters.query()}"}
            for row, reasons in entries]
    exercises = request.app.state.grader_catalog.ids()
    return render(request, "review_queue.html", {
        "title": "Review queue", "csrf": auth.csrf_token(request), "keys": keys, "filters": filters, "rows": rows,
        "exercises": exercises, "flag_kinds": FLAG_KINDS, "ages": list(AGES)})


# --- one case ----------------------------------------------------------------------------------

def _case_context(request: Request, session, keys: list[ApiKey], row: Submission, filters: Filters) -> dict[str, Any]:
    current = store.current_report(session, row)
    assert current is not None  # _reviewable lets only submissions with a report through
    report = Report.model_validate(current.report)
    exercise = exercise_of(request, row.exercise_id)
    try:
        body = SubmissionBody.model_validate(row.body)
    except ValidationError:
        body = None
    entries = [e[0] for e in filters.entries(session, keys)]
    later = [e for e in entries if _order(e) > _order(row) and e.id != row.id]
    earlier = [e for e in entries if _order(e) < _order(row) and e.id != row.id]
    nav = filters.query()
    return {
        "title": f"Case {row.id[:8]}", "csrf": auth.csrf_token(request), "keys": keys, "filters": filters,
        "row": row, "report": report, "report_seq": current.seq, "age": _age(row.graded_at), "body": body,
        "diff": diff_lines(report, exercise, body), "vetoes": veto_views(report),
        "items": item_views(report, exercise, body),
        "audit": decisions.decisions_for(session, row.id),
        # the hint levels the student asked for (service/hints.py), in English like the rest of these pages
        "hints": hint_ladder.shown(hint_ladder.taken(session, row.id),
                                   hint_ladder.hints_of(exercise.root) if exercise is not None else None, "en"),
        "next_href": f"/review/cases/{later[0].id}?{nav}" if later else "",
        "prev_href": f"/review/cases/{earlier[-1].id}?{nav}" if earlier else "",
        "queue_href": f"/review?{nav}", "position": (len(earlier) + 1, len(entries)),
        "done": request.query_params.get("done", "")[:130], "error": "",
    }


def _reviewable(request: Request, session, submission_id: str) -> tuple[list[ApiKey], Submission] | Response:
    """The signed-in keys and the case, or the page to answer instead (sign in; not found)."""
    keys = auth.review_keys(request, session)
    if not keys:
        return _to_sign_in(request)
    row = session.get(Submission, submission_id) if len(submission_id) <= 64 and "\x00" not in submission_id else None
    if row is None or row.course_id not in {k.course_id for k in keys} or row.current_report_id is None:
        # Another course's submission does not exist for this TA.
        return render(request, "not_found.html", {"title": "Not found", "message": "No such case in your courses."},
                      status_code=404)
    return keys, row


@router.get("/review/cases/{submission_id}")
def case_page(request: Request, session: SessionDep, submission_id: str, course: Text = "", exercise: Text = "",
              flag: Text = "", age: Text = "") -> Response:
    found = _reviewable(request, session, submission_id)
    if isinstance(found, Response):
        return found
    keys, row = found
    return render(request, "review_case.html",
                  _case_context(request, session, keys, row, Filters(course, exercise, flag, age)))


@router.post("/review/cases/{submission_id}/decisions")
def decide(request: Request, session: SessionDep, submission_id: str, csrf: FormText = "", target: FormText = "",
           action: FormText = "", points: FormText = "", reason: Annotated[str, Form(max_length=4000)] = "",
           course: FormText = "", exercise: FormText = "", flag: FormText = "", age: FormText = "",
           report_seq: FormText = "") -> Response:
    found = _reviewable(request, session, submission_id)
    if isinstance(found, Response):
        return found
    keys, row = found
    filters = Filters(course, exercise, flag, age)

    def refuse(message: str, status: int) -> Response:
        context = _case_context(request, session, keys, row, filters)
        return render(request, "review_case.html", {**context, "error": message}, status_code=status)

    if not auth.csrf_ok(request, csrf):
        return refuse("The form expired or came from elsewhere: nothing was recorded. Reload and decide again.", 403)
    kind, _, name = target.partition(":")
    try:
        # the report the page showed: a decision on an item or veto a regrade changed since is refused
        seen = int(report_seq) if report_seq.strip() else None
        if kind == "veto":
            request_ = DecisionRequest(veto=name, action=action, reason=reason, report_seq=seen)
        elif kind == "item":
            request_ = DecisionRequest(item=name, points=float(points) if points.strip() else None, reason=reason,
                                       report_seq=seen)
        else:
            return refuse(f"Unknown decision target {target!r}.", 422)
    except (ValidationError, ValueError) as exc:
        errors = exc.errors() if isinstance(exc, ValidationError) else [{"loc": ["points"], "msg": str(exc)}]
        return refuse("Nothing was recorded: " + "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'decision'}: {e['msg']}" for e in errors), 422)
    key = next(k for k in keys if k.course_id == row.course_id)
    try:
        decisions.decide(session, row.id, request_, actor=decisions.actor_of(key))
    except decisions.NotDecidable:
        session.expire_all()
        return refuse(f"This submission is not graded now (status: {row.status}): nothing was recorded.", 409)
    except decisions.StaleDecision as exc:
        session.expire_all()
        return refuse(f"{request_.target} changed since the report you decided on (report {exc.seen}; a regrade "
                      f"landed, report {exc.current} is current): nothing was recorded. Read it again and decide.", 409)
    except DecisionError as exc:
        return refuse(f"Nothing was recorded: {exc}", 422)
    return _see_other(f"/review/cases/{row.id}?{filters.query(done=request_.target)}")


# --- copied answers --------------------------------------------------------------------------

PAIRS_ON_PAGE = 10  # side-by-side pairs shown per cluster (the API lists up to copies.MAX_PAIRS_SHOWN)


@router.get("/review/copies")
def copies_page(request: Request, session: SessionDep, course: Text = "",
                assignment: Annotated[str, Query(max_length=200)] = "") -> Response:
    """Near-identical answers and fills within one assignment, the pairs side by side. Evidence only:
    nothing here changes a grade."""
    keys = auth.review_keys(request, session)
    if not keys:
        return _to_sign_in(request)
    courses = [k.course_id for k in keys]
    course = course if course in courses else courses[0]
    known = copies.assignments(session, course)
    report = None
    clusters: list[dict[str, Any]] = []
    if assignment and assignment in known:  # only a real assignment (nor NUL, which PostgreSQL text cannot hold)
        report = copies.find_copies(session, request.app.state.grader_catalog, course, assignment)
        for cluster in report.clusters:
            members = {m.submission_id: m for m in cluster.members}
            clusters.append({"cluster": cluster,
                             "pairs": [(members[a], members[b], s) for a, b, s in cluster.pairs[:PAIRS_ON_PAGE]]})
    return render(request, "review_copies.html", {
        "title": "Copies", "csrf": auth.csrf_token(request), "keys": keys, "course": course, "assignment": assignment,
        "assignments": known, "report": report, "clusters": clusters, "pairs_on_page": PAIRS_ON_PAGE,
        "min_text_chars": copies.MIN_TEXT_CHARS, "threshold": copies.TEXT_THRESHOLD,
        "min_fill_nodes": copies.MIN_FILL_NODES})


# --- export ------------------------------------------------------------------------------------

CSV_COLUMNS = ["submission_id", "exercise", "target", "action", "before", "after", "reason", "who", "when"]


def _state(target: str, value: dict) -> str:
    if target.startswith("item:") and "points" in value:
        return f"{value.get('points', ''):g}"
    return str(value.get("status", ""))


def _bearer_key(request: Request, session) -> ApiKey | None:
    scheme, _, presented = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not presented:
        return None
    key = store.authenticate(session, presented.strip())
    return key if key is not None and auth.has_review_scope(key) else None


@router.get("/review/export.csv")
def export_csv(request: Request, session: SessionDep, course: Annotated[str, Query(max_length=64)] = "") -> Response:
    """Every decision of one course, oldest first (the signed-in session, or a Bearer key with `review`)."""
    key = _bearer_key(request, session)
    keys = [key] if key is not None else auth.review_keys(request, session)
    if not keys:
        return _to_sign_in(request) if "authorization" not in request.headers else secure(
            Response("a key with the review scope is needed\n", status_code=401, media_type="text/plain"))
    course = course or keys[0].course_id
    if course not in {k.course_id for k in keys}:
        return secure(Response(f"no course {course[:64]!r} among your keys\n", status_code=404,
                               media_type="text/plain"))
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(CSV_COLUMNS)
    for decision, row in decisions.course_decisions(session, course):
        action = "override" if decision.target.startswith("item:") else (
            "confirm" if decision.after.get("status") == "confirmed" else "dismiss")
        writer.writerow([spreadsheet_safe(v) for v in (
            row.id, row.exercise_id, decision.target, action, _state(decision.target, decision.before),
            _state(decision.target, decision.after), decision.reason, decision.actor,
            _naive_utc(decision.created_at).isoformat(timespec="seconds") + "Z")])
    return secure(Response(out.getvalue(), media_type="text/csv; charset=utf-8",
                           headers=csv_attachment("decisions", course)))
