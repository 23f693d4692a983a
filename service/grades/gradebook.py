"""The grades export: one row per student and assignment, the attempt that counts under the
course's policy, its points after the veto policy, final or provisional, what blocks it, and the
TA's decisions. Read from the submissions' grade columns, never from the reports."""
from __future__ import annotations

import csv
import io
from dataclasses import replace
from typing import Literal

from pydantic import BaseModel, Field
from sqlalchemy import select
from sqlalchemy.orm import Session

from service.api.schemas import UTCDateTime
from service.db.models import Course, Decision, HintTaken, Submission
from service.db.session import one_snapshot
from service.downloads import spreadsheet_safe
from service.grades.policy import Counted, CoursePolicy, counted, counted_report
from service.status import IN_PROGRESS_STATUSES, SubmissionStatus

CSV_COLUMNS = ["assignment", "student_id", "student_name", "student_email", "exercise", "submission_id", "attempt",
               "graded_attempts", "points", "max_points", "raw_total", "passed", "state", "rule", "blocking",
               "ta_decisions", "hints", "hint_cost", "graded_at"]


class GradeRow(BaseModel):
    assignment: str
    student_id: str
    student_name: str | None = None
    student_email: str | None = None
    exercise: str | None = Field(None, description="the exercise of the attempt that counts")
    submission_id: str | None = Field(None, description="the attempt that counts (none: no graded attempt yet)")
    attempt: int | None = None
    graded_attempts: int = Field(description="submissions of this student for this assignment that have a grade "
                                             "(one being graded again keeps its grade until the regrade lands)")
    in_progress: int = Field(description="submissions still queued or being graded")
    not_gradable: int = Field(description="submissions kernelgrade failed to grade (they cost the student nothing)")
    points: float | None = Field(None, description="the grade that counts (after the course's veto policy)")
    max_points: float | None = None
    raw_total: float | None = Field(None, description="the rubric total of that attempt before the veto policy")
    passed: bool | None = None
    state: Literal["final", "provisional", "none"] = Field(
        description="provisional: a TA's decision is still pending; none: no graded attempt yet")
    rule: Literal["total", "capped", "zero"] | None = Field(None, description="how `points` follows from `raw_total`")
    blocking: str | None = Field(None,
                                 description="veto:<rule>:<status> or requirement:<id> that keeps it from passing")
    ta_decisions: list[str] = Field([], description="the TA decisions on that attempt, oldest first")
    hints: list[str] = Field([], description="the hint levels the student took on any attempt of this assignment, "
                                             "oldest first: `<ladder>:<level>`")
    hint_cost: float = Field(0.0, description="points the hints cost under the course's policy when taken "
                                              "(already taken off `points`, never below 0)")
    graded_at: UTCDateTime | None = None


class Gradebook(BaseModel):
    course: str
    assignment: str | None = Field(None, description="the assignment asked for (all when absent)")
    policy: CoursePolicy
    rows: list[GradeRow]
    unattributed: int = Field(description="submissions without an assignment or a student id (not in any row)")


def _decision_text(decision: Decision) -> str:
    if decision.target.startswith("item:"):
        change = f"{decision.before.get('points', 0):g}→{decision.after.get('points', 0):g}"
    else:
        change = "confirm" if decision.after.get("status") == "confirmed" else "dismiss"
    return f"{decision.target} {change} ({decision.actor}): {decision.reason}"


def gradebook(session: Session, course_id: str, policy: CoursePolicy, *, assignment: str | None = None) -> Gradebook:
    query = select(Submission).where(Submission.course_id == course_id)
    if assignment is not None:
        query = query.where(Submission.assignment == assignment)
    groups: dict[tuple[str, str], list[Submission]] = {}
    unattributed = 0
    for row in session.scalars(query.order_by(Submission.created_at, Submission.id)):
        if row.assignment is None or row.student_id is None:
            unattributed += 1
            continue
        groups.setdefault((row.assignment, row.student_id), []).append(row)
    chosen: dict[tuple[str, str], tuple[Submission, Counted]] = {}
    for key, rows in groups.items():
        graded = [(r, _counted(r, policy)) for r in rows if has_grade(r)]
        if graded:
            chosen[key] = _choose(graded, policy)
    decided: dict[str, list[str]] = {}
    ids = [row.id for row, _ in chosen.values()]
    for start in range(0, len(ids), 500):
        for decision in session.scalars(select(Decision).where(Decision.submission_id.in_(ids[start:start + 500]))
                                        .order_by(Decision.id)):
            decided.setdefault(decision.submission_id, []).append(_decision_text(decision))
    charges = _charges(session, groups)
    out = []
    for key in sorted(groups):
        rows = groups[key]
        empty = GradeRow(assignment=key[0], student_id=key[1], student_name=rows[-1].student_name,
                         student_email=rows[-1].student_email,
                         graded_attempts=sum(has_grade(r) for r in rows),
                         in_progress=sum(r.status in IN_PROGRESS_STATUSES for r in rows),
                         not_gradable=sum(r.status == SubmissionStatus.not_gradable for r in rows), state="none")
        hints, cost = charges.get(key, ((), 0.0))
        empty = empty.model_copy(update={"hints": list(hints), "hint_cost": round(cost, 6)})
        if key not in chosen:
            out.append(empty)
            continue
        row, grade = chosen[key]
        grade = grade.with_hints(hints, cost)
        out.append(empty.model_copy(update=dict(
            exercise=row.exercise_id, submission_id=row.id, attempt=row.attempt,
            points=grade.points,
            max_points=grade.max, raw_total=grade.total, passed=grade.passed,
            state="provisional" if grade.provisional else "final", rule=grade.rule, blocking=grade.blocking,
            ta_decisions=decided.get(row.id, []), graded_at=row.graded_at)))
    return Gradebook(course=course_id, assignment=assignment, policy=policy, rows=out, unattributed=unattributed)


def current_gradebook(session: Session, course_id: str, *, assignment: str | None = None) -> Gradebook:
    """`gradebook` under the course's policy, every row as the database had it at one moment: the
    policy, the attempts, the decisions and the hints read from one snapshot (session.one_snapshot;
    call it before the session's transaction begins). Read statement by statement, an admin's
    policy change and a student's hint level landing between them made a row no moment had (the
    capped points less the new hint's cost, where the new policy gave zero). LookupError: no such course."""
    one_snapshot(session)
    return gradebook(session, course_id, course_policy(session, course_id), assignment=assignment)


def course_policy(session: Session, course_id: str) -> CoursePolicy:
    """The course's policy as the database has it now, not as the session first loaded the row: the
    LMS score is computed under the policy read once the student's lock is held (lti.scores.enqueue),
    and a policy change committed while it waited must be what it reads. LookupError: no such course."""
    course = session.get(Course, course_id, populate_existing=True)
    if course is None:
        raise LookupError(f"no course {course_id!r}")
    return course.policy()


def has_grade(row: Submission) -> bool:
    """The submission has a graded current report: graded, or graded and being graded again. A
    regrade in flight leaves the grade it had current until its own report lands (a failed one
    keeps it for good, store.finish), so that grade still counts meanwhile: leaving the attempt out
    would hand the student's grade to another attempt, in the gradebook and at the LMS. The grade
    columns are set exactly when the current report is graded (policy.grade_columns)."""
    return row.score_total is not None and row.status != SubmissionStatus.not_gradable


def _choose(graded: list[tuple[Submission, Counted]], policy: CoursePolicy) -> tuple[Submission, Counted]:
    """The attempt that counts among a student's graded ones on an assignment, in submission order
    (created_at, id): the last submitted (`attempt`, then time), or the best (points that count,
    ties to the later). Submitted, not graded: attempts that finish out of order change nothing.
    Under `best` the grade is provisional too while another attempt that waits for a TA could
    still beat it (its maximum is above the points that count): the TA's decision may change it."""
    if policy.grade_policy != "best":
        return max(graded, key=lambda pair: (pair[0].attempt or 0, pair[0].created_at))
    row, grade = max(graded, key=lambda pair: (pair[1].points, pair[0].attempt or 0, pair[0].created_at))
    if not grade.provisional and any(other.id != row.id and counted.provisional and counted.max > grade.points
                                     for other, counted in graded):
        grade = replace(grade, provisional=True, awaiting_other=True)
    return row, grade


def counting(session: Session, submission: Submission,
             policy: CoursePolicy) -> tuple[Submission, Counted] | None:
    """The attempt whose grade counts now for `submission`'s student on its assignment, and that
    grade from the grade columns (before the hints), as the gradebook's row has them (None: none
    graded yet), reading that student's attempts only; a submission without an assignment or a
    student id is its own (when graded)."""
    if submission.assignment is None or submission.student_id is None:
        return (submission, _counted(submission, policy)) if has_grade(submission) else None
    rows = session.scalars(select(Submission).where(
        Submission.course_id == submission.course_id, Submission.assignment == submission.assignment,
        Submission.student_id == submission.student_id).order_by(Submission.created_at, Submission.id))
    attempts = [(r, _counted(r, policy)) for r in rows if has_grade(r)]
    return _choose(attempts, policy) if attempts else None


def counting_attempt(session: Session, submission: Submission, policy: CoursePolicy) -> Submission | None:
    """`counting`'s attempt only."""
    found = counting(session, submission, policy)
    return None if found is None else found[0]


Charge = tuple[tuple[str, ...], float]  # the levels taken (`<ladder>:<level>`, oldest first) and their cost


def _charges(session: Session, groups: dict[tuple[str, str], list[Submission]]) -> dict[tuple[str, str], Charge]:
    """The hints each (assignment, student) took on any attempt, and what they cost."""
    owner = {row.id: key for key, rows in groups.items() for row in rows}
    every = list(owner)
    taken: dict[tuple[str, str], list[HintTaken]] = {}
    for start in range(0, len(every), 500):
        for hint in session.scalars(select(HintTaken).where(HintTaken.submission_id.in_(every[start:start + 500]))
                                    .order_by(HintTaken.id)):
            taken.setdefault(owner[hint.submission_id], []).append(hint)
    return {key: (tuple(f"{h.diagnosis}:{h.level}" for h in hints), sum(h.cost for h in hints))
            for key, hints in taken.items()}


def hint_charge(session: Session, submission: Submission) -> Charge:
    """What the hints cost the grade of `submission`'s student, as the gradebook charges it: every level
    taken on any attempt of the student's assignment (the submission's own without an assignment or a
    student id). The LTI score, the webhook's grade and the Gradescope / PrairieLearn results use it."""
    if submission.assignment is None or submission.student_id is None:
        group = [submission]
    else:
        group = list(session.scalars(select(Submission).where(
            Submission.course_id == submission.course_id, Submission.assignment == submission.assignment,
            Submission.student_id == submission.student_id)))
    return _charges(session, {("", ""): group}).get(("", ""), ((), 0.0))


def counted_with_hints(session: Session, submission: Submission, report: dict, policy: CoursePolicy) -> Counted | None:
    """The grade a platform gets for `report` (a report of `submission`): the veto policy, then the hints' cost."""
    grade = counted_report(report, policy.veto_policy)
    return None if grade is None else grade.with_hints(*hint_charge(session, submission))


def _counted(row: Submission, policy: CoursePolicy) -> Counted:
    """Only for graded rows, whose grade columns are all set."""
    assert row.score_total is not None and row.score_max is not None and row.pass_threshold is not None
    return counted(total=row.score_total, max_points=row.score_max, pass_threshold=row.pass_threshold,
                   passed=bool(row.passed), provisional=bool(row.provisional), blocking=row.blocking,
                   veto_policy=policy.veto_policy)


def to_csv(book: Gradebook) -> str:
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(CSV_COLUMNS)
    for row in book.rows:
        values = row.model_dump(mode="json")
        values["ta_decisions"] = " | ".join(row.ta_decisions)
        values["hints"] = " ".join(row.hints)
        writer.writerow([spreadsheet_safe(values[column]) for column in CSV_COLUMNS])
    return out.getvalue()
