"""The tool's HTTP side: OIDC login initiation, the launch, the student's submission from the
launched page, the deep-linking picker and its answer, the tool's JWKS, and the feedback page the
student lands on (framed by their own LMS only). Pages, not part of the OpenAPI."""
from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request
from pydantic import ValidationError
from pylti1p3.deep_link_resource import DeepLinkResource
from pylti1p3.lineitem import LineItem
from sqlalchemy import func, select
from sqlalchemy.orm import Session
from starlette.responses import JSONResponse, RedirectResponse, Response

from service.api.deps import SessionDep, SettingsDep
from service.api.schemas import SubmissionCreate
from service.config import Settings
from service.db import store
from service.db.lti_models import LtiDeployment, LtiLink, LtiPlatform, LtiScorePost, LtiSubmission
from service.db.models import Submission
from service.db.session import one_snapshot
from service.exercises import Exercise, ExerciseNotFound
from service.grades.gradebook import counted_with_hints, counting_attempt
from service.grades.platforms import reasons
from service.grades.policy import CoursePolicy
from service.lti import keys
from service.lti.adapter import LtiCookies, LtiLaunch, LtiRequest, Tool
from service.lti.launches import (
    Person,
    assignment_of,
    find_link,
    is_staff,
    record_context,
    record_link,
    record_member,
)
from service.lti.refusals import LaunchRefused
from service.lti.registry import origin_of
from service.lti.roster import names
from service.report import Report
from service.status import SubmissionStatus
from service.submission import Submission as SubmissionBody
from service.web.feedback import feedback_response, find_by_token
from service.web.i18n import LTI_REFUSAL_TITLE, LTI_REFUSALS, Language, texts
from service.web.pages import framed_by, render

router = APIRouter(include_in_schema=False)
SHOWN_SUBMISSIONS = 50


def _base(request: Request, settings: Settings) -> str:
    return (settings.public_url or str(request.base_url)).rstrip("/")


async def _lti_request(request: Request) -> LtiRequest:
    settings: Settings = request.app.state.settings
    secure = settings.public_url.startswith("https://") or request.url.scheme == "https"
    return await LtiRequest.read(request, secure=secure)


LtiParams = Annotated[LtiRequest, Depends(_lti_request)]


def refused(request: Request, exc: LaunchRefused) -> Response:
    """The page that says why, in both languages; any LMS may frame it (it shows nothing of anyone)."""
    params = {"detail": exc.detail or "-", **exc.params}
    messages = {lang: text.format_map(_Missing(params)) for lang, text in LTI_REFUSALS[exc.code].items()}
    return render(request, "lti_refused.html", {
        "t": texts("en"), "title": LTI_REFUSAL_TITLE["en"], "titles": LTI_REFUSAL_TITLE, "messages": messages,
        "code": exc.code, "detail": exc.detail}, status_code=exc.status, headers=framed_by(["*"]))


class _Missing(dict):
    def __missing__(self, key: str) -> str:
        return "?"


def _tool(session: Session, settings: Settings, params: LtiRequest) -> Tool:
    return Tool(session, settings, params.is_secure())


# --- login and launch ------------------------------------------------------------------------

@router.api_route("/lti/login", methods=["GET", "POST"])
def login(request: Request, session: SessionDep, settings: SettingsDep, params: LtiParams) -> Response:
    """Third-party initiated login: check the platform, then send the browser to its authorization
    endpoint with a fresh state (cookie) and nonce."""
    cookies = LtiCookies(request, secure=params.is_secure())
    client = request.client.host if request.client else "?"
    if request.app.state.rate_limiter.take(f"lti-login:{client}") > 0:  # each login stores a nonce for a while
        return Response("too many LTI logins from this address; retry in a minute\n", status_code=429,
                        media_type="text/plain", headers={"Retry-After": "60"})
    try:
        launch_url = f"{_base(request, settings)}/lti/launch"
        response = _tool(session, settings, params).login(params, cookies).redirect(launch_url)
    except LaunchRefused as exc:
        return refused(request, exc)
    response.headers["Cache-Control"] = "no-store"
    return cookies.apply(response)


@router.post("/lti/launch")
def launch(request: Request, session: SessionDep, settings: SettingsDep, params: LtiParams) -> Response:
    """The platform's signed launch: validated in full, then the activity page or the picker."""
    cookies = LtiCookies(request, secure=params.is_secure())
    try:
        message = _tool(session, settings, params).launch(params, cookies)
        message.validate()
        claims = dict(message.get_launch_data())
        platform, deployment = message.conf.platform, message.conf.deployment
        assert platform is not None and deployment is not None
        context = record_context(session, platform, claims, roster_max_age_s=settings.lti_roster_max_age_s)
        person = Person.of(claims)
        record_member(session, context, person)
        if message.is_deep_link_launch():
            if not is_staff(claims):
                raise LaunchRefused("not_instructor")
            return cookies.apply(_picker(request, message, platform))
        if not message.is_resource_launch():
            raise LaunchRefused("bad_message", f"message type {claims.get('https://purl.imsglobal.org/spec/lti/claim/message_type')}")
        link = record_link(session, deployment, context, claims)
        return cookies.apply(_activity(request, session, message, platform, link, person))
    except LaunchRefused as exc:
        return refused(request, exc)


# --- the student's page and submission --------------------------------------------------------

def _exercise(request: Request, link: LtiLink) -> Exercise:
    if not link.exercise_id:
        raise LaunchRefused("no_exercise")
    try:
        return request.app.state.grader_catalog.get(link.exercise_id)
    except ExerciseNotFound:
        raise LaunchRefused("unknown_exercise", link.exercise_id) from None


def _grade(session: Session, row: Submission, policy: CoursePolicy, language: Language) -> dict[str, Any]:
    """The attempt's grade as the LMS gets it: the score that counts (the veto policy's cap or zero,
    an unmet requirement's cap, less the hints' cost; service.grades), and, where it is not the
    rubric total, that total and why (the exports' words). Empty for an attempt with no grade."""
    current = store.current_report(session, row)
    if current is None or row.status != SubmissionStatus.graded:
        return {"score": "", "raw": "", "why": []}
    grade = counted_with_hints(session, row, current.report, policy)
    if grade is None:
        return {"score": "", "raw": "", "why": []}
    shown = f"{grade.points:g} / {grade.max:g}" + (" *" if grade.provisional else "")
    numbers = {"points": grade.points, "max": grade.max}
    if grade.points == grade.total:
        return {"score": shown, "raw": "", "why": [], **numbers}
    raw = texts(language)["lti_raw_total"].format(total=f"{grade.total:g}", max=f"{grade.max:g}")
    return {"score": shown, "raw": raw, "why": reasons(Report.model_validate(current.report), grade, language=language),
            **numbers}


def _submission_rows(session: Session, link: LtiLink, sub: str | None, *, policy: CoursePolicy,
                     language: Language) -> list[dict[str, Any]]:
    """Submissions to a placement, newest first: one person's (`sub`), or everyone's (staff), each
    with its grade as the LMS gets it, and `counts`: whether it is the attempt whose grade the LMS
    has for its student (the course's grade policy)."""
    query = (select(Submission, LtiSubmission.sub).join(LtiSubmission, LtiSubmission.submission_id == Submission.id)
             .where(LtiSubmission.link_id == link.id).order_by(Submission.created_at.desc()).limit(SHOWN_SUBMISSIONS))
    if sub is not None:
        query = query.where(LtiSubmission.sub == sub)
    found = session.execute(query).all()
    who = names(session, [row.id for row, _ in found]) if sub is None else {}
    posts = {p.submission_id: p for p in session.scalars(select(LtiScorePost).where(
        LtiScorePost.submission_id.in_([row.id for row, _ in found])).order_by(LtiScorePost.id))} if found else {}
    counting_ids: dict[str, str | None] = {}
    for row, author in found:
        if author not in counting_ids:
            chosen = counting_attempt(session, row, policy)
            counting_ids[author] = chosen.id if chosen is not None else None
    return [{"id": row.id, "created_at": row.created_at, "status": row.status,
             **_grade(session, row, policy, language), "counts": counting_ids.get(author) == row.id,
             "href": f"/lti/feedback/{row.feedback_token}", "who": who.get(row.id, author),
             "post": posts[row.id].state if row.id in posts else ""} for row, author in found]


def _activity(request: Request, session: Session, message: LtiLaunch, platform: LtiPlatform, link: LtiLink,
              person: Person, *, values: dict[str, Any] | None = None, errors: list[str] | None = None,
              status_code: int = 200) -> Response:
    exercise = _exercise(request, link)
    spec = exercise.spec
    t = texts(spec.language)
    staff = is_staff(dict(message.get_launch_data()))
    policy = store.course_policy(session, platform.course_id)
    context = {
        "t": t, "title": spec.title.in_(spec.language), "exercise": spec, "launch_id": message.get_launch_id(),
        "person": person,
        "values": values or {"code": exercise.template, "explanation": "", "claimed_output": "", "answers": {}},
        "errors": errors or [],
        "points_line": t["lti_points_line"].format(max=f"{spec.max_points:g}", threshold=f"{spec.pass_threshold:g}"),
        "explanation_prompt": next((q.prompt.in_(spec.language) for q in spec.questions if q.id == "explanation"),
                                   t["lti_explanation"]),
        "mine": _submission_rows(session, link, person.sub, policy=policy, language=spec.language),
        "staff": staff,
        "everyone": _submission_rows(session, link, None, policy=policy, language=spec.language) if staff else [],
        "counts_line": t["lti_counts_best" if policy.grade_policy == "best" else "lti_counts_last"],
    }
    return render(request, "lti_activity.html", context, status_code=status_code,
                  headers=framed_by(platform.frame_origins))


def _identity(session: Session, link: LtiLink, person: Person, language: str) -> dict[str, Any]:
    """The course-identity fields of the submission contract for an LTI submission: the student
    from the launch (never from the form), the placement as the assignment (its own, assignment_of),
    the attempt number."""
    earlier = session.scalar(select(func.count()).select_from(LtiSubmission)
                             .where(LtiSubmission.link_id == link.id, LtiSubmission.sub == person.sub)) or 0
    student = {"id": person.sub, **({"name": person.name} if person.name else {}),
               **({"email": person.email} if person.email else {})}
    fields = {"assignment": assignment_of(session, link), "student": student, "attempt": earlier + 1,
              "language": language}
    return {name: value for name, value in fields.items() if name in SubmissionBody.model_fields}


def _validated(body: dict[str, Any]) -> SubmissionCreate:
    """The submission; a name or e-mail the LMS sent that the contract refuses is left out (the
    student cannot fix the LMS's data, and the user id is what identifies them)."""
    try:
        return SubmissionCreate.model_validate(body)
    except ValidationError as exc:
        if not any(e["loc"][:1] == ("student",) for e in exc.errors()):
            raise
    return SubmissionCreate.model_validate({**body, "student": {"id": body["student"]["id"]}})


@router.post("/lti/submit")
def submit(request: Request, session: SessionDep, settings: SettingsDep, params: LtiParams) -> Response:
    """The launched page's form. Who submits comes from the stored launch, never from the form."""
    cookies = LtiCookies(request, secure=params.is_secure())
    try:
        message = _tool(session, settings, params).restore(params.get_param("launch"), params, cookies)
        claims = dict(message.get_launch_data())
        platform, deployment = message.conf.platform, message.conf.deployment
        link = find_link(session, deployment, claims) if deployment is not None else None
        if platform is None or link is None or not message.is_resource_launch():
            raise LaunchRefused("bad_message", "this launch is not a resource link launch")
        exercise = _exercise(request, link)
        person = Person.of(claims)
        values = {"code": params.get_param("code"), "explanation": params.get_param("explanation"),
                  "claimed_output": params.get_param("claimed_output"),
                  "answers": {q.id: params.get_param(f"answer_{q.id}") for q in exercise.spec.questions
                              if q.id != "explanation"}}  # the explanation is its own field of the contract
        body = {"exercise": exercise.spec.id, **values, **_identity(session, link, person, exercise.spec.language)}
        try:
            item = _validated(body)
        except ValidationError as exc:
            errors = [f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors()]
            return _activity(request, session, message, platform, link, person, values=values, errors=errors,
                             status_code=422)
        t = texts(exercise.spec.language)
        if request.app.state.rate_limiter.take(f"lti:{platform.id}:{person.sub}") > 0:
            return _activity(request, session, message, platform, link, person, values=values, status_code=429,
                             errors=[t["lti_slow_down"]])
        if (store.queue_depth(session) >= settings.max_queue
                or store.course_queue_depth(session, platform.course_id) >= settings.max_queue_per_course):
            return _activity(request, session, message, platform, link, person, values=values, status_code=503,
                             errors=[t["lti_queue_full"]])
        submission = SubmissionBody.model_validate(item.model_dump(include=set(SubmissionBody.model_fields)))
        # A double click sends the same form twice: the same launch and answers give the same submission.
        digest = hashlib.sha256(f"{message.get_launch_id()}\n{json.dumps(values, sort_keys=True)}".encode()).hexdigest()
        try:
            row, created = store.create_submission(
                session, course_id=platform.course_id, body=submission, callback_url=None,
                idempotency_key=f"lti:{digest}",
                related=lambda new: [LtiSubmission(submission_id=new.id, link_id=link.id, sub=person.sub)])
        except store.IdempotencyConflict:  # the same answers sent again once the first was stored (its attempt differs)
            row, created = session.scalars(select(Submission).where(
                Submission.course_id == platform.course_id, Submission.idempotency_key == f"lti:{digest}")).one(), False
    except LaunchRefused as exc:
        return refused(request, exc)
    if created:
        request.app.state.dispatcher.submitted(row.id)
    return cookies.apply(RedirectResponse(f"/lti/feedback/{row.feedback_token}", status_code=303))


def _counted_view(session: Session, row: Submission, course_id: str) -> Callable[[str], dict[str, Any]]:
    """The grade the LMS gets for the attempt, in the page's language, as the activity page shows
    it (_grade: the score that counts, the rubric total beside it and why), and whether it is the
    attempt the course's grade policy counts."""
    def view(page_language: str) -> dict[str, Any]:
        language: Language = "en" if page_language == "en" else "zh"
        policy = store.course_policy(session, course_id)
        t = texts(language)
        chosen = counting_attempt(session, row, policy)
        return {**_grade(session, row, policy, language), "counts": chosen is not None and chosen.id == row.id,
                "counts_line": t["lti_counts_best" if policy.grade_policy == "best" else "lti_counts_last"]}
    return view


@router.get("/lti/feedback/{token}")
def feedback(request: Request, token: str, session: SessionDep) -> Response:
    """The student's feedback page, which their own LMS (and only it) may show in a frame, with the
    score the LMS gets for the attempt (the course's grade policy), not only the rubric total; read
    from one snapshot, as the plain page is (feedback_response)."""
    one_snapshot(session)
    row = find_by_token(session, token)
    origins: list[str] = []
    counted = None
    if row is not None:
        platform = session.scalar(select(LtiPlatform).join(LtiDeployment, LtiDeployment.platform_id == LtiPlatform.id)
                                  .join(LtiLink, LtiLink.deployment_id == LtiDeployment.id)
                                  .join(LtiSubmission, LtiSubmission.link_id == LtiLink.id)
                                  .where(LtiSubmission.submission_id == row.id))
        origins = list(platform.frame_origins) if platform is not None else []
        counted = _counted_view(session, row, platform.course_id) if platform is not None else None
    return feedback_response(request, session, row, headers=framed_by(origins) if origins else None, counted=counted)


# --- deep linking -------------------------------------------------------------------------------

def _picker(request: Request, message: LtiLaunch, platform: LtiPlatform) -> Response:
    catalog = request.app.state.grader_catalog
    exercises = [catalog.get(i).spec for i in catalog.ids()]
    t = texts(exercises[0].language if exercises else "en")
    return render(request, "lti_pick.html", {"t": t, "title": t["lti_pick_title"], "exercises": exercises,
                                             "launch_id": message.get_launch_id(), "error": ""},
                  headers=framed_by(platform.frame_origins))


class _Resource(DeepLinkResource):
    """pylti1p3's content item, with the `text` field it leaves out (where the pass line is said)."""

    _text = ""

    def set_text(self, value: str) -> _Resource:
        self._text = value
        return self

    def to_dict(self) -> dict[str, object]:
        return {**super().to_dict(), **({"text": self._text} if self._text else {})}


@router.post("/lti/deep-link")
def deep_link(request: Request, session: SessionDep, settings: SettingsDep, params: LtiParams) -> Response:
    """The instructor's choice, sent back to the platform as a signed content item: the exercise id
    (a custom parameter) and the line item: the exercise's points and its pass line."""
    cookies = LtiCookies(request, secure=params.is_secure())
    try:
        message = _tool(session, settings, params).restore(params.get_param("launch"), params, cookies)
        if not message.is_deep_link_launch() or not is_staff(dict(message.get_launch_data())):
            raise LaunchRefused("not_instructor")
        try:
            spec = request.app.state.grader_catalog.get(params.get_param("exercise")[:100]).spec
        except ExerciseNotFound:
            raise LaunchRefused("unknown_exercise", params.get_param("exercise")[:100]) from None
        t = texts(spec.language)
        pass_line = t["lti_points_line"].format(max=f"{spec.max_points:g}", threshold=f"{spec.pass_threshold:g}")
        resource = (_Resource().set_text(f"{spec.id}: {pass_line}").set_url(f"{_base(request, settings)}/lti/launch")
                    .set_title(spec.title.in_(spec.language)).set_custom_params({"exercise": spec.id,
                                                              "pass_threshold": f"{spec.pass_threshold:g}"})
                    .set_lineitem(LineItem().set_label(spec.title.in_(spec.language)).set_score_maximum(spec.max_points)
                                  .set_resource_id(spec.id).set_tag("kernelgrade")))
        deep = message.get_deep_link()
        token = deep.get_response_jwt([resource])
        return_url = str(message.claim("https://purl.imsglobal.org/spec/lti-dl/claim/deep_linking_settings")
                         ["deep_link_return_url"])
    except LaunchRefused as exc:
        return refused(request, exc)
    platform = message.conf.platform
    target = [o for o in [origin_of(return_url)] if o]
    return render(request, "lti_return.html", {"t": t, "title": t["lti_return_title"], "return_url": return_url,
                                               "jwt": token},
                  headers=framed_by(platform.frame_origins if platform else [], form_targets=target))


# --- the tool's keys ------------------------------------------------------------------------------

@router.get("/lti/jwks")
def jwks(session: SessionDep, settings: SettingsDep) -> JSONResponse:
    """The tool's public keys (JWKS): platforms verify deep-linking answers and token requests with them."""
    return JSONResponse(keys.published(session, grace_s=settings.lti_tool_key_grace_s),
                        headers={"Cache-Control": "public, max-age=300"})
