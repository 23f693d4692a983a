"""The assignment dashboard pages for TAs (issue #23): the assignments of the signed-in courses,
and one assignment's figures as server-drawn SVG with the numbers in tables beside them, plus
its CSV. The same service.dashboard.queries.dashboard as GET /v1/dashboard; the same sign-in as
the review pages (the session cookie travels only to /review)."""
from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any
from urllib.parse import urlencode

from fastapi import APIRouter, Query, Request
from starlette.responses import Response

from service.api.deps import SessionDep
from service.dashboard.export import to_csv
from service.dashboard.queries import Dashboard, assignments, dashboard
from service.downloads import csv_attachment
from service.hints import LEVEL_NAMES, LEVELS
from service.messages import render as say
from service.web import auth
from service.web.charts import Bin, Series, histogram, hourly, level_bars, share_bar
from service.web.i18n import DASHBOARD
from service.web.pages import render, secure
from service.web.review import _bearer_key, _to_sign_in

router = APIRouter(include_in_schema=False)

Text = Annotated[str, Query(max_length=200)]


def _words(lang: str) -> dict[str, str]:
    return DASHBOARD.get(lang, DASHBOARD["en"])


def _deadline(text: str) -> datetime | None:
    try:
        moment = datetime.fromisoformat(text.strip()) if text.strip() else None
    except ValueError:
        return None
    if moment is None:
        return None
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def _fmt(value: float | None, digits: int = 1) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{value * 100:.0f}%"


def _charts(board: Dashboard, w: dict[str, str]) -> dict[str, Any]:
    o = board.overview
    line = o.pass_threshold
    latest_students = sum(b.students for b in board.scores)
    latest_passed = sum(b.passed for b in board.scores)
    scores = histogram([Bin(b.low, b.high, b.students, b.passed) for b in board.scores], pass_line=line,
                       label=w["scores_chart"].format(passed=latest_passed, students=latest_students,
                                                      line=_fmt(line, 1)),
                       pass_label=w["pass_line"].format(line=f"{line:g}" if line is not None else "–"),
                       y_label=w["students"])
    hours = [h.hour for h in board.timeline.hours]
    deadline = board.timeline.deadline
    per_hour = hourly(hours, columns=Series("submissions", [h.submissions for h in board.timeline.hours]),
                      lines=[Series("queue", [h.queue_depth for h in board.timeline.hours])],
                      label=w["per_hour_chart"], y_label=w["submissions"], marker=deadline, marker_label=w["deadline"])
    latency = hourly(hours, columns=None,
                     lines=[Series("p50", [h.latency_p50_s for h in board.timeline.hours]),
                            Series("p95", [h.latency_p95_s for h in board.timeline.hours])],
                     label=w["latency_chart"], y_label="s", marker=deadline, marker_label=w["deadline"])
    families = {f.family: share_bar(f.share_failing,
                                    f"{_pct(f.share_failing)} {w['failing']}") for f in board.case_families}
    concepts = {(c.item, c.concept): share_bar(c.share_missed,
                                               f"{_pct(c.share_missed)} {w['missed']}") for c in board.concepts}
    return {"scores": scores, "per_hour": per_hour, "latency": latency, "families": families, "concepts": concepts,
            "hints": _hint_bars(board, w)}


def _level_labels(lang: str) -> list[str]:
    """"1 · 概念区域" …: the ladder's level names, numbered, in `lang`."""
    return [say("dashboard_hint_level", lang, level=n, name=name)
            for n, name in enumerate(LEVEL_NAMES[lang][:LEVELS], start=1)]


def _hint_bars(board: Dashboard, w: dict[str, str]) -> dict[tuple[str, str], Any]:
    lang = "zh" if w["lang"].startswith("zh") else "en"
    labels = _level_labels(lang)  # once for the table, not once per row
    return {(h.exercise, h.ladder): level_bars(h.levels, say("dashboard_hint_bars", lang, counts=[
                f"{label}: {count}" for label, count in zip(labels, h.levels)]))
            for h in [*board.hints.by_exercise, *board.hints.by_ladder]}


def _hint_words(lang: str) -> dict[str, Any]:
    """The hint table's words (service/messages/catalogue.yaml) and the four level names."""
    lang = "zh" if lang == "zh" else "en"
    codes = ("heading", "skip", "none", "exercise", "ladder", "all_ladders", "students")
    return {**{c: say(f"dashboard_hint{'s' if c in ('heading', 'skip', 'none') else ''}_{c}", lang) for c in codes},
            "levels": _level_labels(lang),
            "total": lambda students, taken: say("dashboard_hints_total", lang, students=students, taken=taken),
            "hinted": lambda students: say("dashboard_hinted", lang, students=students)}


@router.get("/review/dashboard")
def dashboard_page(request: Request, session: SessionDep, course: Text = "", assignment: Text = "",
                   deadline: Annotated[str, Query(max_length=40)] = "",
                   lang: Annotated[str, Query(max_length=2)] = "en") -> Response:
    keys = auth.review_keys(request, session)
    if not keys:
        return _to_sign_in(request)
    w = _words(lang)
    lang = w["lang"][:2]
    other = "zh" if lang == "en" else "en"
    mine = {k.course_id for k in keys}
    if not assignment or course not in mine:
        listing = [(k.course_id, name, students, count)
                   for k in keys if not course or k.course_id == course
                   for name, students, count in assignments(session, k.course_id)]
        rows = [{"course": c, "assignment": a, "students": s, "submissions": n,
                 "href": "/review/dashboard?" + urlencode({"course": c, "assignment": a, "lang": lang})}
                for c, a, s, n in listing]
        return render(request, "dashboard_index.html", {
            "title": w["title"], "w": w, "t": {"lang": w["lang"]}, "csrf": auth.csrf_token(request), "keys": keys,
            "rows": rows,
            "lang_href": "/review/dashboard?"
                         + urlencode({"course": course, "lang": other} if course else {"lang": other})})
    when = _deadline(deadline)
    board = dashboard(session, course, assignment, deadline=when)
    query = {"course": course, "assignment": assignment, **({"deadline": deadline} if when else {})}
    return render(request, "dashboard.html", {
        "title": f"{w['title']} · {assignment}", "w": w, "t": {"lang": w["lang"]}, "csrf": auth.csrf_token(request),
        "keys": keys, "board": board,
        "charts": _charts(board, w), "hw": _hint_words(lang), "fmt": _fmt, "pct": _pct,
        "deadline": deadline if when else "",
        "course": course, "assignment": assignment, "lang": lang,
        "csv_href": "/review/dashboard.csv?" + urlencode(query),
        "lang_href": "/review/dashboard?" + urlencode({**query, "lang": other}),
        "back_href": "/review/dashboard?" + urlencode({"lang": lang})})


@router.get("/review/dashboard.csv")
def dashboard_csv(request: Request, session: SessionDep, course: Annotated[str, Query(max_length=64)] = "",
                  assignment: Text = "", deadline: Annotated[str, Query(max_length=40)] = "") -> Response:
    """The page's numbers as CSV (the signed-in session, or a Bearer key with `review`)."""
    key = _bearer_key(request, session)
    keys = [key] if key is not None else auth.review_keys(request, session)
    if not keys:
        return _to_sign_in(request) if "authorization" not in request.headers else secure(
            Response("a key with the review scope is needed\n", status_code=401, media_type="text/plain"))
    course = course or keys[0].course_id
    if course not in {k.course_id for k in keys}:
        return secure(Response(f"no course {course[:64]!r} among your keys\n", status_code=404,
                               media_type="text/plain"))
    if not assignment:
        return secure(Response("give ?assignment=\n", status_code=422, media_type="text/plain"))
    board = dashboard(session, course, assignment, deadline=_deadline(deadline))
    return secure(Response(to_csv(board), media_type="text/csv; charset=utf-8",
                           headers=csv_attachment("dashboard", course, assignment)))
