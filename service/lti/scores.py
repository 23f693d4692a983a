"""Grades back to the LMS (Assignment and Grade Services), through an outbox: a score is queued
in the same transaction that makes a report current (service.db.store.notify, where webhooks are
queued) and posted by a background thread with retries, every attempt recorded. pylti1p3 does the
protocol (service token, line item lookup or creation, the score POST).

Which score: the grade that counts for the student on the placement, as the course's gradebook
has it (service.grades: the last or the best graded attempt, the veto policy's cap or zero, less
what the hint levels taken cost; taking a level, or a change of the course's policy, queues the
score again), so
the LMS and every export agree. `PendingManual` while a suspected veto or a low-confidence answer
waits for a TA, `FullyGraded` after. A `not_gradable` report changes no grade, so nothing is posted:
it costs the student nothing."""
from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any, cast

import requests
from pylti1p3.assignments_grades import AssignmentsGradesService
from pylti1p3.exception import LtiException, LtiServiceException
from pylti1p3.grade import Grade
from pylti1p3.lineitem import LineItem
from pylti1p3.service_connector import ServiceConnector
from sqlalchemy import CursorResult, Row, and_, func, or_, select, update
from sqlalchemy.orm import Session, sessionmaker

from service.db.base import as_utc, utcnow
from service.db.lti_models import LtiDeployment, LtiLink, LtiPlatform, LtiScoreAttempt, LtiScorePost, LtiSubmission
from service.db.models import Course, ReportRow, Submission
from service.grades.gradebook import counted_with_hints, counting
from service.grades.platforms import summary
from service.grades.policy import Counted, CoursePolicy
from service.lti import keys
from service.lti.adapter import ToolRegistration
from service.lti.http import BoundedSession
from service.report import Report

log = logging.getLogger("kernelgrade.lti.scores")
LEASE_S = 120  # a post being attempted is not picked up by another process meanwhile
LINE_ITEM_TAG = "kernelgrade"
SCORE_SCOPE = "https://purl.imsglobal.org/spec/lti-ags/scope/score"


def _iso(moment: datetime) -> str:
    return as_utc(moment).isoformat(timespec="milliseconds")


def score_body(report: Report, counted: Counted, *, sub: str, submitted_at: datetime, at: datetime) -> dict:
    """The AGS score (https://www.imsglobal.org/spec/lti-ags/v2p0/#score-publish-service): the
    points that count, and the same words as the Gradescope and PrairieLearn exports."""
    pending = counted.provisional
    return {
        "userId": sub,
        "scoreGiven": counted.points,
        "scoreMaximum": counted.max,
        "activityProgress": "Submitted" if pending else "Completed",
        "gradingProgress": "PendingManual" if pending else "FullyGraded",
        "timestamp": _iso(at),  # when the grade changed: later than any score posted before
        "comment": summary(report, counted, language=report.language, feedback_url=None),
        "submission": {"submittedAt": _iso(submitted_at)},
    }


def enqueue(session: Session, submission: Submission, report_row: ReportRow, *,
            policy: CoursePolicy | Callable[[], CoursePolicy], at: datetime | None = None) -> LtiScorePost | None:
    """Queue the student's grade on the placement after this report became current, or after the
    student took a hint level (`at`: when; the caller commits); nothing when it did not change what
    the LMS has or will get. `policy`: the course's, or how to read it (only for a submission that
    came through LTI: most did not)."""
    origin = session.get(LtiSubmission, submission.id)
    if origin is None:
        return None
    _lock_students(session, [(origin.link_id, origin.sub)])
    if callable(policy):  # read once the lock is ours: a policy change that held it is visible now
        policy = policy()
    if at is None:
        if report_row.created_at is None:
            report_row.created_at = utcnow()
        at = report_row.created_at
    return _queue(session, origin.link_id, origin.sub, counting(session, submission, policy), policy, at)


def _lock_students(session: Session, pairs: list[tuple[int, str]]) -> None:
    """Take the students' LTI submission rows (PostgreSQL row locks, in one order) before reading
    which attempt counts. Two attempts of a student finishing at once otherwise each read the
    other as not graded yet (READ COMMITTED) and both queue a score: the later-written one, maybe
    the earlier attempt's, is what the LMS keeps. Once the lock is ours, the other's commit is
    visible. SQLite needs none: a writer holds the database's write lock from its first UPDATE."""
    if session.get_bind().dialect.name != "postgresql" or not pairs:
        return
    for start in range(0, len(pairs), 500):
        window = pairs[start:start + 500]
        session.execute(select(LtiSubmission.submission_id)
                        .where(or_(*(and_(LtiSubmission.link_id == link_id, LtiSubmission.sub == sub)
                                     for link_id, sub in window)))
                        .order_by(LtiSubmission.submission_id).with_for_update())


def _queue(session: Session, link_id: int, sub: str, found: tuple[Submission, Counted] | None,
           policy: CoursePolicy, at: datetime, *, again: bool = False) -> LtiScorePost | None:
    """Queue the grade of the attempt that counts (`found`, service.grades.gradebook.counting) for
    `sub` on the placement, unless the LMS has it. `again`: even when the last score posted was this
    grade (it went to a gradebook column that was deleted since: requeue_placement)."""
    chosen = found[0] if found is not None else None
    current = (session.get(ReportRow, chosen.current_report_id)
               if chosen is not None and chosen.current_report_id else None)
    if found is None or chosen is None or current is None:
        return None  # no graded attempt yet
    counted = counted_with_hints(session, chosen, current.report, policy)
    if counted is None:
        return None
    if found[1].awaiting_other:  # another attempt waiting for a TA may still count instead (best)
        counted = replace(counted, provisional=True, awaiting_other=True)
    score = score_body(Report.model_validate(current.report), counted, sub=sub, submitted_at=chosen.created_at,
                       at=_after_earlier_posts(session, link_id, sub, at))
    # The newest score that went (or goes) out. A failed one may have reached the LMS all the same (it
    # took the score, the answer timed out, the retry of the same timestamp was refused): after one,
    # what the LMS holds is not known, so the grade is sent again, never taken as there already.
    last = session.scalar(select(LtiScorePost).where(LtiScorePost.link_id == link_id, LtiScorePost.sub == sub,
                                                     LtiScorePost.state.in_(("pending", "posted", "failed")))
                          .order_by(LtiScorePost.id.desc()).limit(1))
    if (not again and last is not None and last.state != "failed" and last.submission_id == chosen.id
            and _same(last.score, score)):
        return None  # the LMS has (or gets) this grade already
    # An older score still waiting would only be overwritten: drop it.
    session.execute(update(LtiScorePost).where(LtiScorePost.link_id == link_id, LtiScorePost.sub == sub,
                                               LtiScorePost.state == "pending")
                    .values(state="superseded", next_attempt_at=None))
    post = LtiScorePost(submission_id=chosen.id, report_id=current.id, link_id=link_id, sub=sub,
                        score=score, state="pending", next_attempt_at=utcnow())
    session.add(post)
    return post


def _after_earlier_posts(session: Session, link_id: int, sub: str, at: datetime) -> datetime:
    """`at`, or just after the newest score queued before for `sub` on the placement when that one
    is not older. The LMS keeps the score with the newest timestamp and refuses an older one (AGS:
    "MUST NOT update a result if the last timestamp on record is later"); a score queued late (its
    report written, then a wait for the student's lock or for the database) would otherwise carry
    a time older than one already posted, and the true grade would be refused for it."""
    stamps = session.scalars(select(LtiScorePost.score["timestamp"].as_string())
                             .where(LtiScorePost.link_id == link_id, LtiScorePost.sub == sub))
    newest = max((datetime.fromisoformat(stamp) for stamp in stamps if stamp), default=None)
    if newest is not None and newest >= as_utc(at):
        return newest + timedelta(milliseconds=1)  # the body says milliseconds (_iso)
    return at


def requeue_course(session: Session, course_id: str, policy: CoursePolicy) -> int:
    """After the course's policy changed (which attempt counts, what a veto exports): queue again
    every LTI student's grade on every placement of the course, where it changed (the caller
    commits). Returns how many were queued."""
    rows = session.execute(select(LtiSubmission.link_id, LtiSubmission.sub, func.max(Submission.id))
                           .join(Submission, LtiSubmission.submission_id == Submission.id)
                           .where(Submission.course_id == course_id)
                           .group_by(LtiSubmission.link_id, LtiSubmission.sub)).all()
    return _requeue(session, rows, lambda submission: policy)


def requeue_placement(session: Session, link: LtiLink, *, column: str, besides: str | None = None) -> int:
    """After the placement's line item became `column` (its gradebook column deleted in the LMS and
    found or created again, _line_item, or a new one named in a launch, line_item_named): queue once
    more the grade that counts for every learner with a graded attempt on the placement whose last
    score did not go to `column`, `besides` the one whose post is going there now: the new column
    starts empty (the caller commits, in the transaction that records the new line item, holding
    the placement's row lock). By the line item each post went to (LtiScorePost.lineitem_url, set
    under a share lock of that row just before sending, _sending): a learner whose score went to the
    old column is queued again, the one whose POST was still in flight there included (the LMS may
    have taken it just before the column went, or answered 2xx after); a learner whose newest score
    waits unsent keeps it (it goes to the new column and is their newest grade). Returns how many
    were queued."""
    query = (select(LtiSubmission.link_id, LtiSubmission.sub, func.max(Submission.id))
             .join(Submission, LtiSubmission.submission_id == Submission.id)
             .where(LtiSubmission.link_id == link.id).group_by(LtiSubmission.link_id, LtiSubmission.sub))
    if besides is not None:
        query = query.where(LtiSubmission.sub != besides)
    return _requeue(session, session.execute(query).all(),
                    lambda submission: session.get_one(Course, submission.course_id).policy(), column=column)


def line_item_named(session: Session, link: LtiLink, named: str) -> int:
    """A launch names `named` as the placement's line item, and it is not the one on record (the
    LMS's column was deleted and made again, or the LMS now names one for a placement kernelgrade
    made a column for): record it, and queue every learner's grade that counts for it, in one
    transaction under the placement's row lock (as _line_item replaces one: requeue_placement).
    Without this, the column would get each learner's grade only when it next changed. Commits;
    returns how many were queued."""
    session.execute(select(LtiLink.id).where(LtiLink.id == link.id).with_for_update(key_share=True))
    session.refresh(link)  # read once the lock is ours: another launch may have recorded it meanwhile
    if link.lineitem_url == named:
        session.commit()
        return 0
    link.lineitem_url, link.lineitem_by_tool = named, False
    queued = requeue_placement(session, link, column=named)
    session.commit()
    log.info("placement %s: the platform names line item %s: %s learners' grades queued for it",
             link.id, named, queued)
    return queued


def _requeue(session: Session, rows: Sequence[Row[int, str, str]],
             policy_of: Callable[[Submission], CoursePolicy], *, column: str | None = None) -> int:
    """Queue again, for each (placement, learner, their newest attempt) of `rows`, the grade that
    counts, as a grade change queues it: under the learners' locks, read once they are ours, with a
    timestamp after their earlier posts; where it changed, or, with `column` (the placement's new
    line item), whether or not, for every learner whose newest score did not go there and does not
    wait unsent (requeue_placement)."""
    rows = sorted(rows)
    _lock_students(session, [(link_id, sub) for link_id, sub, _ in rows])
    # Read once the locks are ours: a score another process queued meanwhile is visible now.
    there: set[tuple[int, str]] = set()
    if column is not None:
        newest: dict[tuple[int, str], tuple[str, str | None]] = {}
        for link_id, sub, state, lineitem_url in session.execute(
                select(LtiScorePost.link_id, LtiScorePost.sub, LtiScorePost.state, LtiScorePost.lineitem_url)
                .where(LtiScorePost.state.in_(("pending", "posted", "failed")),
                       LtiScorePost.link_id.in_({r[0] for r in rows})).order_by(LtiScorePost.id)):
            newest[(link_id, sub)] = (state, lineitem_url)
        there = {key for key, (state, sent_to) in newest.items()
                 if sent_to == column or (state == "pending" and sent_to is None)}
    at, queued = utcnow(), 0
    for link_id, sub, submission_id in rows:
        if (link_id, sub) in there:
            continue
        submission = session.get_one(Submission, submission_id)
        policy = policy_of(submission)
        if _queue(session, link_id, sub, counting(session, submission, policy), policy, at,
                  again=column is not None) is not None:
            queued += 1
    return queued


def _same(before: dict, after: dict) -> bool:
    return {k: v for k, v in before.items() if k != "timestamp"} == {k: v for k, v in after.items() if k != "timestamp"}


def posts_for(session: Session, submission_id: str) -> list[tuple[LtiScorePost, list[LtiScoreAttempt]]]:
    posts = list(session.scalars(select(LtiScorePost).where(LtiScorePost.submission_id == submission_id)
                                 .order_by(LtiScorePost.id)))
    attempts: dict[int, list[LtiScoreAttempt]] = {p.id: [] for p in posts}
    if posts:
        for attempt in session.scalars(select(LtiScoreAttempt).where(LtiScoreAttempt.post_id.in_(list(attempts)))
                                       .order_by(LtiScoreAttempt.id)):
            attempts[attempt.post_id].append(attempt)
    return [(p, attempts[p.id]) for p in posts]


# --- posting -------------------------------------------------------------------------------------

class PermanentFailure(Exception):
    """Retrying cannot help (revoked registration, no line item and no right to create one, the
    platform's own line item deleted and no right to create one)."""


def _claim(sessions: sessionmaker[Session], post_id: int) -> bool:
    with sessions() as session:
        result = cast(CursorResult[Any], session.execute(  # an UPDATE gives a CursorResult (the stubs say Result)
            update(LtiScorePost).where(LtiScorePost.id == post_id, LtiScorePost.state == "pending",
                                       LtiScorePost.next_attempt_at <= utcnow())
            .values(next_attempt_at=utcnow() + timedelta(seconds=LEASE_S))))
        session.commit()
        return result.rowcount == 1


def _line_item(session: Session, ags: AssignmentsGradesService, link: LtiLink, maximum: float, *,
               gone: str | None = None, posting_for: str | None = None) -> LineItem:
    """The placement's line item: the one the platform named, else found or created by its resource
    link. Finding or creating happens under the link's row lock (PostgreSQL), read again once it is
    ours: two processes posting a placement's first scores at once (API replicas, each with its LTI
    thread) would each look it up, find none, and create one: two gradebook columns, each student's
    grade in one of them.

    `gone`: the line item a score POST just answered 404 for (an instructor deleted the gradebook
    column). Unless another process replaced it meanwhile, it is forgotten and found or created again:
    always for one of the tool's own, and for one the platform named only where the platform lets the
    tool create line items; otherwise the post fails for good, saying the column was deleted. The
    process that replaces it (the one holding the lock) queues every other learner's grade again in
    the same transaction (requeue_placement; `posting_for`: the learner whose score is being posted):
    the new column starts empty.

    The lock is FOR NO KEY UPDATE: queueing a score (an INSERT naming the link, store.notify) takes
    a KEY SHARE lock on the link's row while holding its student's lock (_lock_students). Under FOR
    UPDATE it would wait for this transaction, which waits for that student's lock to requeue them:
    a deadlock."""
    if link.lineitem_url and gone is None:
        return LineItem({"id": link.lineitem_url})
    session.execute(select(LtiLink.id).where(LtiLink.id == link.id).with_for_update(key_share=True))
    session.refresh(link)  # another process's line item, if it made one while we waited
    if link.lineitem_url and link.lineitem_url != gone:
        session.commit()
        return LineItem({"id": link.lineitem_url})
    can_create = bool(link.lineitems_url) and ags.can_create_lineitem()
    if gone is not None and link.lineitem_url == gone and not link.lineitem_by_tool and not can_create:
        session.commit()
        raise PermanentFailure(f"the LMS gradebook column this placement posts to ({gone}) was deleted, and the "
                               "platform does not let the tool create one: recreate the column in the LMS")
    if not can_create:
        session.commit()
        raise PermanentFailure("the platform named no line item for this placement "
                               "and does not let the tool create one")
    wanted = (LineItem().set_label(link.title or link.exercise_id or "kernelgrade").set_score_maximum(maximum)
              .set_resource_id(link.exercise_id or "").set_tag(LINE_ITEM_TAG)
              .set_resource_link_id(link.resource_link_id))
    found = ags.find_or_create_lineitem(wanted, find_by="resource_link_id")
    found_id = found.get_id()
    if not found_id or found_id == gone:
        session.rollback()
        raise LtiException("the platform created a line item without an id" if not found_id
                           else "the platform still lists the line item it answered 404 for")
    link.lineitem_url, link.lineitem_by_tool = found_id, True
    if gone is not None:
        queued = requeue_placement(session, link, column=found_id, besides=posting_for)
        log.info("placement %s has a new line item %s: %s other learners' grades queued again",
                 link.id, found_id, queued)
    session.commit()
    return found


def _post(session: Session, post: LtiScorePost, http: BoundedSession) -> int | None:
    # get_one: foreign keys name these rows, and links, deployments and platforms are revoked, never deleted.
    link = session.get_one(LtiLink, post.link_id)
    platform = session.get_one(LtiPlatform, session.get_one(LtiDeployment, link.deployment_id).platform_id)
    if platform.revoked_at is not None:
        raise PermanentFailure("the platform's registration was revoked")
    scopes = list(link.ags_scopes or [])
    if SCORE_SCOPE not in scopes:
        raise PermanentFailure("the platform did not grant the score scope for this placement")
    connector = ServiceConnector(ToolRegistration(platform, keys.active_key(session)), http)
    # ignore: pylti1p3 types "scope" as a list of the scopes it knows; ours are what the platform granted (strings)
    ags = AssignmentsGradesService(connector, {"scope": scopes,  # type: ignore[typeddict-item]
                                               "lineitems": link.lineitems_url or "",
                                               "lineitem": link.lineitem_url or ""})
    score = dict(post.score)
    line_item = _sent_to(session, ags, link, post, score["scoreMaximum"])
    grade = (Grade().set_user_id(score["userId"]).set_score_given(score["scoreGiven"])
             .set_score_maximum(score["scoreMaximum"]).set_activity_progress(score["activityProgress"])
             .set_grading_progress(score["gradingProgress"]).set_timestamp(score["timestamp"])
             .set_comment(score["comment"]).set_extra_claims({"submission": score["submission"]}))
    try:
        response = ags.put_grade(grade, line_item)
    except LtiServiceException as exc:
        if exc.response.status_code != 404 or not line_item.get_id():
            raise
        # The line item is gone (its column deleted in the LMS): find or create it again, post once more.
        log.warning("line item %s of placement %s answered 404; finding or creating it again",
                    line_item.get_id(), link.id)
        line_item = _sent_to(session, ags, link, post, score["scoreMaximum"], gone=line_item.get_id())
        response = ags.put_grade(grade, line_item)
    return 200 if response is not None else None


class Superseded(Exception):
    """A newer score replaced the post before it was sent (a placement's column replaced: requeue_placement)."""


def _sent_to(session: Session, ags: AssignmentsGradesService, link: LtiLink, post: LtiScorePost, maximum: float,
             *, gone: str | None = None) -> LineItem:
    """The line item to send `post` to, recorded on the post (_sending) before it is sent; read again
    when the placement's line item changed in between (another process replaced it, or a launch
    named a new one: the learners whose scores went to the old one are queued again then)."""
    for _ in range(3):
        line_item = _line_item(session, ags, link, maximum, gone=gone, posting_for=post.sub)
        if _sending(session, post.id, link.id, line_item.get_id() or ""):
            return line_item
        session.refresh(post)
        if post.state != "pending":
            raise Superseded()
        session.refresh(link)
        gone = None  # the placement has another line item now: that one
    raise LtiException("the placement's line item kept changing while its score was being sent")


def _sending(session: Session, post_id: int, link_id: int, url: str) -> bool:
    """Record that the post goes to line item `url`, if it still waits and `url` is still the
    placement's line item, reading the placement's row under a share lock (PostgreSQL; on SQLite the
    UPDATE holds the database's write lock): a process that replaces the line item holds that row's
    lock while it queues the learners whose scores went to the old one (requeue_placement), so
    either it sees this post as sent there, and queues the learner again, or this reads the new
    line item. Commits."""
    current = (select(LtiLink.lineitem_url).where(LtiLink.id == link_id).with_for_update(read=True)
               .scalar_subquery())
    result = cast(CursorResult[Any], session.execute(
        update(LtiScorePost).where(LtiScorePost.id == post_id, LtiScorePost.state == "pending", current == url)
        .values(lineitem_url=url)))
    session.commit()
    return result.rowcount == 1


def attempt(sessions: sessionmaker[Session], post_id: int, *, http: BoundedSession, backoff_s: list[float],
            on_attempt: Callable[[bool], None] | None = None) -> None:
    if not _claim(sessions, post_id):
        return  # posted, superseded, or being attempted elsewhere
    status_code, error, permanent = None, None, False
    with sessions() as session:
        post = session.get_one(LtiScorePost, post_id)  # _claim just updated it; score posts are never deleted
        try:
            status_code = _post(session, post, http)
        except LtiServiceException as exc:
            status_code, error = exc.response.status_code, f"HTTP {exc.response.status_code}: {exc.response.text[:300]}"
            permanent = status_code in (400, 403, 404, 409, 422)  # the platform refuses this score as such
        except PermanentFailure as exc:
            error, permanent = str(exc), True
        except Superseded:
            error = "superseded by a newer score before it was sent"
        except (requests.RequestException, LtiException, ValueError, KeyError) as exc:
            error = f"{type(exc).__name__}: {exc}"[:500]
    ok = error is None
    with sessions() as session:
        post = session.get_one(LtiScorePost, post_id)
        post.attempt += 1
        post.last_status_code, post.last_error = status_code, error
        session.add(LtiScoreAttempt(post_id=post_id, ok=ok, status_code=status_code, error=error))
        if post.state == "superseded":  # a newer score replaced it meanwhile (requeue_placement): that one goes
            post.next_attempt_at = None
        elif ok:
            post.state, post.next_attempt_at = "posted", None
        elif permanent or post.attempt > len(backoff_s):
            post.state, post.next_attempt_at = "failed", None  # given up: visible on the submission
        else:
            post.next_attempt_at = utcnow() + timedelta(seconds=backoff_s[post.attempt - 1])
        session.commit()
    if on_attempt is not None:
        on_attempt(ok)
    log.info("score post %s attempt %s -> %s", post_id, "ok" if ok else "failed", error or status_code)


def deliver_due(sessions: sessionmaker[Session], *, http: BoundedSession, backoff_s: list[float],
                on_attempt: Callable[[bool], None] | None = None) -> int:
    """Attempt every score post that is due, once. Returns how many were due."""
    with sessions() as session:
        due = list(session.scalars(select(LtiScorePost.id).where(
            LtiScorePost.state == "pending", LtiScorePost.next_attempt_at <= utcnow())
            .order_by(LtiScorePost.next_attempt_at).limit(50)))
    for post_id in due:
        attempt(sessions, post_id, http=http, backoff_s=backoff_s, on_attempt=on_attempt)
    return len(due)
