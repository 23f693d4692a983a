"""The dashboard's figures for one assignment of a course, aggregated in SQL (SQLite and PostgreSQL)
over the submissions' grade columns and the report facts (service/dashboard/facts.py).

Students are the platform's student ids; submissions without one are counted apart (`unattributed`).
"Latest" is a student's most recent graded submission: where the class ended up. "Ever" counts a
student once if any graded submission of theirs had it: what the class ran into."""
from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from pydantic import BaseModel, Field
from sqlalchemy import Float, and_, case, cast, distinct, func, literal_column, select
from sqlalchemy.orm import Session
from sqlalchemy.sql.elements import ColumnElement

from service.api.schemas import UTCDateTime
from service.db.models import HintTaken, ReportFact, Submission
from service.hints import LEVELS
from service.status import IN_PROGRESS_STATUSES, SubmissionStatus

EXAMPLES = 3  # example submissions per diagnosis
HOURS_MAX = 24 * 14  # the timeline keeps the last two weeks of hours


class Overview(BaseModel):
    submissions: int = Field(description="submissions of the assignment with a student id")
    graded: int
    not_gradable: int
    in_progress: int = Field(description="queued or being graded now")
    students: int
    students_graded: int = Field(description="students with at least one graded submission")
    students_passed: int = Field(description="students with at least one passing submission")
    pass_rate: float | None = Field(None, description="students_passed / students_graded")
    submissions_passed: int
    pass_threshold: float | None = Field(None,
                                         description="the pass line of the assignment's reports (the highest seen)")
    score_max: float | None = None
    unattributed: int = Field(description="submissions of the assignment without a student id (not counted above)")


class ScoreBin(BaseModel):
    low: float = Field(description="scores in [low, high); the last bin holds the maximum too")
    high: float
    students: int = Field(description="students whose latest graded submission scored in this bin")
    passed: int = Field(description="of them, how many passed (a score over the line can still fail: a veto, a "
                                    "requirement)")


class AttemptsBin(BaseModel):
    attempts: int = Field(description="graded submissions up to and including the first passing one")
    students: int


class RuleRow(BaseModel):
    kind: str = Field(description="veto (suspected or confirmed, not dismissed) | requirement (unmet)")
    rule: str
    students: int = Field(description="students with at least one graded submission that has it")
    submissions: int
    students_latest: int = Field(description="students whose latest graded submission still has it")


class DiagnosisRow(BaseModel):
    id: str
    message: str = Field(description="the diagnosis in the lesson's words, from one of the reports that has it")
    students: int
    submissions: int
    students_latest: int
    examples: list[str] = Field(description="the most recent submissions with this diagnosis (ids)")
    hinted: int = Field(0, description="students who took at least one level of this diagnosis's hint ladder")


class CaseFamilyRow(BaseModel):
    family: str = Field(description="regular | boundary | probe | given")
    students: int = Field(description="students whose latest graded submission ran cases of this family")
    failing_latest: int = Field(description="of them, how many fail at least one case of it there")
    share_failing: float | None = Field(None, description="failing_latest / students")
    failed_ever: int = Field(description="students who failed a case of this family in any graded submission")


class ConceptRow(BaseModel):
    item: str = Field(description="the written question's rubric item")
    concept: str
    label: str
    found: int = Field(description="students whose latest answer names it")
    missed: int
    share_missed: float | None = None


class HintRow(BaseModel):
    exercise: str
    ladder: str = Field(description="the ladder: a diagnosis id, `general`; empty in `by_exercise` (every ladder)")
    students: int = Field(description="students who took at least one level of it (any attempt of the assignment)")
    levels: list[int] = Field(description="students who took level 1, 2, 3 and 4 (概念区域 → 具体方向 → 关键局部 → "
                                          "完整答案)")
    taken: int = Field(description="levels taken in all (a student asks anew on each attempt)")


class Hints(BaseModel):
    students: int = Field(0, description="students who took at least one hint level")
    taken: int = Field(0, description="hint levels taken in all")
    by_exercise: list[HintRow] = Field([], description="per exercise, over its ladders")
    by_ladder: list[HintRow] = Field([], description="per exercise and ladder")


class HourRow(BaseModel):
    hour: UTCDateTime = Field(description="the start of the hour (UTC)")
    submissions: int = Field(description="submissions received in this hour")
    graded: int = Field(description="first reports written in this hour")
    queue_depth: int = Field(description="submissions waiting or being graded at the end of the hour")
    latency_p50_s: float | None = Field(None,
                                        description="of the submissions received in this hour: first report − received")
    latency_p95_s: float | None = None


class Timeline(BaseModel):
    deadline: UTCDateTime | None = None
    latency_p50_s: float | None = None
    latency_p95_s: float | None = None
    peak_queue_depth: int = 0
    hours: list[HourRow]


class Dashboard(BaseModel):
    course: str
    assignment: str
    exercises: list[str] = Field(description="the exercises submitted for this assignment")
    overview: Overview
    scores: list[ScoreBin]
    attempts_to_pass: list[AttemptsBin]
    not_passed_yet: int = Field(description="students with graded submissions and none passing")
    rules: list[RuleRow]
    diagnoses: list[DiagnosisRow]
    case_families: list[CaseFamilyRow]
    concepts: list[ConceptRow]
    hints: Hints = Field(default_factory=Hints, description="the hint ladder's levels taken (service/hints.py)")
    timeline: Timeline


def _scope(course_id: str, assignment: str) -> ColumnElement[bool]:
    return and_(Submission.course_id == course_id, Submission.assignment == assignment,
                Submission.student_id.is_not(None))


def _share(part: int, whole: int) -> float | None:
    return round(part / whole, 6) if whole else None


def _as_utc(value: datetime | str) -> datetime:
    moment = datetime.fromisoformat(value) if isinstance(value, str) else value
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def assignments(session: Session, course_id: str) -> list[tuple[str, int, int]]:
    """(assignment, students, submissions) of the course, most recent activity first."""
    rows = session.execute(
        select(Submission.assignment, func.count(distinct(Submission.student_id)), func.count(),
               func.max(Submission.created_at))
        .where(Submission.course_id == course_id, Submission.assignment.is_not(None),
               Submission.student_id.is_not(None))
        .group_by(Submission.assignment)).all()
    ordered = sorted(rows, key=lambda r: (_as_utc(r[3]), r[0]), reverse=True)
    return [(r[0] or "", r[1], r[2]) for r in ordered]


def dashboard(session: Session, course_id: str, assignment: str, *, deadline: datetime | None = None) -> Dashboard:
    scope = _scope(course_id, assignment)
    graded = and_(scope, Submission.status == SubmissionStatus.graded)
    # Each student's latest graded submission.
    ranked = (select(Submission.id, Submission.student_id, Submission.score_total, Submission.passed,
                     func.row_number().over(partition_by=Submission.student_id,
                                            order_by=(Submission.created_at.desc(), Submission.id.desc())).label("rn"))
              .where(graded).subquery())
    latest = select(ranked.c.id, ranked.c.student_id, ranked.c.score_total,
                    ranked.c.passed).where(ranked.c.rn == 1).subquery()

    overview = _overview(session, course_id, assignment, scope)
    exercises = sorted(session.scalars(select(Submission.exercise_id).where(scope).distinct()))
    facts = _facts(session, graded, latest)
    hints, hinted = _hints(session, scope)
    return Dashboard(
        course=course_id, assignment=assignment, exercises=exercises, overview=overview,
        scores=_scores(session, latest, overview), attempts_to_pass=_attempts(session, graded),
        not_passed_yet=overview.students_graded - overview.students_passed,
        rules=_rules(facts), diagnoses=_diagnoses(session, graded, facts, hinted), case_families=_families(facts),
        concepts=_concepts(facts), hints=hints, timeline=_timeline(session, scope, deadline))


def _overview(session: Session, course_id: str, assignment: str, scope: ColumnElement[bool]) -> Overview:
    is_graded = Submission.status == SubmissionStatus.graded
    passed = and_(is_graded, Submission.passed.is_(True))
    row = session.execute(select(
        func.count(),
        func.coalesce(func.sum(case((is_graded, 1), else_=0)), 0),
        func.coalesce(func.sum(case((Submission.status == SubmissionStatus.not_gradable, 1), else_=0)), 0),
        func.coalesce(func.sum(case((Submission.status.in_(IN_PROGRESS_STATUSES), 1), else_=0)), 0),
        func.count(distinct(Submission.student_id)),
        func.count(distinct(case((is_graded, Submission.student_id)))),
        func.count(distinct(case((passed, Submission.student_id)))),
        func.coalesce(func.sum(case((passed, 1), else_=0)), 0),
        func.max(case((is_graded, Submission.pass_threshold))),
        func.max(case((is_graded, Submission.score_max))),
    ).where(scope)).one()
    unattributed = session.scalar(select(func.count()).select_from(Submission).where(
        Submission.course_id == course_id, Submission.assignment == assignment, Submission.student_id.is_(None))) or 0
    return Overview(submissions=row[0], graded=row[1], not_gradable=row[2], in_progress=row[3], students=row[4],
                    students_graded=row[5], students_passed=row[6], pass_rate=_share(row[6], row[5]),
                    submissions_passed=row[7], pass_threshold=row[8], score_max=row[9], unattributed=unattributed)


def _scores(session: Session, latest, overview: Overview) -> list[ScoreBin]:
    """Bins one point wide from 0 to the maximum; the SQL groups by exact score (a few dozen values)."""
    counts = session.execute(select(latest.c.score_total, func.count(),
                                    func.coalesce(func.sum(case((latest.c.passed.is_(True), 1), else_=0)), 0))
                             .group_by(latest.c.score_total)).all()
    top = max([overview.score_max or 0.0, *(float(s) for s, _, _ in counts if s is not None)])
    width = 1.0 if top <= 40 else float(int(top / 20) or 1)
    bins = [ScoreBin(low=i * width, high=(i + 1) * width, students=0,
                     passed=0) for i in range(max(1, int(-(-top // width))))]
    for score, students, passed in counts:
        if score is None:
            continue
        index = min(len(bins) - 1, max(0, int(float(score) // width)))
        bins[index].students += students
        bins[index].passed += int(passed)
    return bins


def _attempts(session: Session, graded: ColumnElement[bool]) -> list[AttemptsBin]:
    """One scan: each graded submission's rank among its student's, the smallest rank that passed."""
    ranked = (select(Submission.student_id, Submission.passed,
                     func.row_number().over(partition_by=Submission.student_id,
                                            order_by=(Submission.created_at, Submission.id)).label("rn"))
              .where(graded).subquery())
    first = func.min(case((ranked.c.passed.is_(True), ranked.c.rn)))
    per_student = select(first.label("n")).group_by(ranked.c.student_id).having(first.is_not(None)).subquery()
    rows = session.execute(select(per_student.c.n, func.count())
                           .group_by(per_student.c.n).order_by(per_student.c.n)).all()
    return [AttemptsBin(attempts=n, students=count) for n, count in rows]


@dataclass
class _Fact:
    """One (kind, item, key) of the facts, counted over every graded submission ("ever": only where it
    went wrong) and over the students' latest graded submissions (all, and how many went right)."""

    label: str = ""
    students_bad: int = 0
    submissions_bad: int = 0
    latest: int = 0
    latest_ok: int = 0


def _facts(session: Session, graded: ColumnElement[bool], latest) -> dict[tuple[str, str, str], _Fact]:
    """Two aggregates for every kind of fact at once: the students' `latest` submission is ranked
    once per query, not once per figure."""
    bad = func.coalesce(ReportFact.ok, False).is_(False)
    group = (ReportFact.kind, ReportFact.item, ReportFact.key)
    facts: dict[tuple[str, str, str], _Fact] = {}
    for kind, item, key, students, submissions, label in session.execute(
            select(*group, func.count(distinct(Submission.student_id)), func.count(), func.min(ReportFact.label))
            .join(Submission, Submission.id == ReportFact.submission_id)
            .where(graded, bad).group_by(*group)):
        facts[(kind, item, key)] = _Fact(label=label or "", students_bad=students, submissions_bad=submissions)
    for kind, item, key, count, ok, label in session.execute(
            select(*group, func.count(), func.sum(case((ReportFact.ok.is_(True), 1), else_=0)),
                   func.min(ReportFact.label))
            .join(latest, latest.c.id == ReportFact.submission_id).group_by(*group)):
        fact = facts.setdefault((kind, item, key), _Fact(label=label or ""))
        fact.latest, fact.latest_ok = count, int(ok or 0)
        fact.label = fact.label or label or ""
    return facts


def _rules(facts: dict[tuple[str, str, str], _Fact]) -> list[RuleRow]:
    rows = [RuleRow(kind=kind, rule=key, students=f.students_bad, submissions=f.submissions_bad,
                    students_latest=f.latest - f.latest_ok)
            for (kind, _, key), f in facts.items() if kind in ("veto", "requirement") and f.students_bad]
    return sorted(rows, key=lambda r: (-r.students, r.kind, r.rule))


def _diagnoses(session: Session, graded: ColumnElement[bool], facts: dict[tuple[str, str, str], _Fact],
               hinted: dict[str, int]) -> list[DiagnosisRow]:
    ranked = (select(ReportFact.key, ReportFact.submission_id,
                     func.row_number().over(partition_by=ReportFact.key,
                                            order_by=(Submission.created_at.desc(), Submission.id.desc())).label("rn"))
              .join(Submission, Submission.id == ReportFact.submission_id)
              .where(graded, ReportFact.kind == "diagnosis").subquery())
    examples: dict[str, list[str]] = {}
    for key, submission_id in session.execute(select(ranked.c.key, ranked.c.submission_id)
                                              .where(ranked.c.rn <= EXAMPLES).order_by(ranked.c.key, ranked.c.rn)):
        examples.setdefault(key, []).append(submission_id)
    rows = [DiagnosisRow(id=key, message=f.label or key, students=f.students_bad, submissions=f.submissions_bad,
                         students_latest=f.latest - f.latest_ok, examples=examples.get(key, []),
                         hinted=hinted.get(key, 0))
            for (kind, _, key), f in facts.items() if kind == "diagnosis" and f.students_bad]
    return sorted(rows, key=lambda r: (-r.students, -r.submissions, r.id))


FAMILY_ORDER = {"given": 0, "regular": 1, "boundary": 2, "probe": 3}


def _families(facts: dict[tuple[str, str, str], _Fact]) -> list[CaseFamilyRow]:
    rows = [CaseFamilyRow(family=key, students=f.latest, failing_latest=f.latest - f.latest_ok,
                          share_failing=_share(f.latest - f.latest_ok, f.latest), failed_ever=f.students_bad)
            for (kind, _, key), f in facts.items() if kind == "case" and f.latest]
    return sorted(rows, key=lambda r: (FAMILY_ORDER.get(r.family, 9), r.family))


def _concepts(facts: dict[tuple[str, str, str], _Fact]) -> list[ConceptRow]:
    rows = [ConceptRow(item=item, concept=key, label=f.label or key, found=f.latest_ok, missed=f.latest - f.latest_ok,
                       share_missed=_share(f.latest - f.latest_ok, f.latest))
            for (kind, item, key), f in facts.items() if kind == "concept" and f.latest]
    return sorted(rows, key=lambda r: (r.item, r.concept))


def _hints(session: Session, scope: ColumnElement[bool]) -> tuple[Hints, dict[str, int]]:
    """The levels taken, counted in SQL over `hints_taken` joined to the assignment's submissions:
    distinct students per (exercise, ladder, level), per (exercise, level), per ladder, per exercise
    and in all. Also the students per diagnosis ladder (over exercises), for the diagnoses' rows."""
    student, exercise = Submission.student_id, Submission.exercise_id
    ladder, level = HintTaken.diagnosis, HintTaken.level

    def grouped(*columns):
        return session.execute(select(*columns, func.count(distinct(student)), func.count()).select_from(HintTaken)
                               .join(Submission, Submission.id == HintTaken.submission_id)
                               .where(scope).group_by(*columns)).all()

    def rows(per_level, per_key) -> list[HintRow]:
        out: dict[tuple[str, str], HintRow] = {}
        for *key, students, taken in per_key:
            ex, name = key[0], key[1] if len(key) > 1 else ""
            out[(ex, name)] = HintRow(exercise=ex, ladder=name, students=students, levels=[0] * LEVELS, taken=taken)
        for *key, lvl, students, _ in per_level:
            row = out.get((key[0], key[1] if len(key) > 1 else ""))
            if row is not None and 1 <= lvl <= LEVELS:
                row.levels[lvl - 1] = students
        return sorted(out.values(), key=lambda r: (r.exercise, -r.students, r.ladder))

    (students, taken), = grouped()  # no columns: one row, over the whole assignment
    hints = Hints(students=students, taken=taken,
                  by_exercise=rows(grouped(exercise, level), grouped(exercise)),
                  by_ladder=rows(grouped(exercise, ladder, level), grouped(exercise, ladder)))
    per_diagnosis = {name: students for name, students, _ in grouped(ladder)}
    return hints, per_diagnosis


# --- over time -----------------------------------------------------------------------------------

def _hour(session: Session, column):
    if session.get_bind().dialect.name == "postgresql":
        return func.date_trunc("hour", func.timezone("UTC", column))
    return func.strftime("%Y-%m-%d %H:00:00", column)


def _seconds(session: Session, later, earlier):
    if session.get_bind().dialect.name == "postgresql":
        return func.extract("epoch", later - earlier)
    return (func.julianday(later) - func.julianday(earlier)) * literal_column("86400.0")


def _percentiles(session: Session, scope: ColumnElement[bool], by_hour: bool) -> dict:
    """Nearest-rank p50 and p95 of the grading latency (first report − received), overall or per hour
    received: ranks by a window function, the value at rank ceil(p·n) picked by an aggregate."""
    latency = cast(_seconds(session, Submission.first_graded_at, Submission.created_at), Float)
    hour = _hour(session, Submission.created_at) if by_hour else literal_column("0")
    partition = [hour] if by_hour else None
    ranked = (select(hour.label("h"), latency.label("s"),
                     func.row_number().over(partition_by=partition, order_by=latency).label("rn"),
                     func.count().over(partition_by=partition).label("n"))
              .where(scope, Submission.first_graded_at.is_not(None)).subquery())
    rows = session.execute(select(ranked.c.h, func.min(case((ranked.c.rn * 100 >= ranked.c.n * 50, ranked.c.s))),
                                  func.min(case((ranked.c.rn * 100 >= ranked.c.n * 95, ranked.c.s))))
                           .group_by(ranked.c.h)).all()
    return {h: (p50, p95) for h, p50, p95 in rows}


def _timeline(session: Session, scope: ColumnElement[bool], deadline: datetime | None) -> Timeline:
    received_hour = _hour(session, Submission.created_at)
    graded_hour = _hour(session, Submission.first_graded_at)
    received = {_as_utc(h): n for h, n in session.execute(
        select(received_hour, func.count()).where(scope).group_by(received_hour)).all()}
    graded = {_as_utc(h): n for h, n in session.execute(
        select(graded_hour, func.count()).where(scope, Submission.first_graded_at.is_not(None))
        .group_by(graded_hour)).all()}
    overall = _percentiles(session, scope, by_hour=False)
    p50, p95 = next(iter(overall.values()), (None, None))
    if not received:
        return Timeline(deadline=deadline, hours=[])
    per_hour = {_as_utc(h): v for h, v in _percentiles(session, scope, by_hour=True).items()}
    first, last = min(received), max([*received, *graded])
    if deadline is not None and last < deadline <= last + timedelta(hours=HOURS_MAX):  # the hours up to it
        last = deadline.astimezone(UTC).replace(minute=0, second=0, microsecond=0)
    hours: list[HourRow] = []
    depth = 0
    moment = first
    while moment <= last:
        depth += received.get(moment, 0) - graded.get(moment, 0)
        lat = per_hour.get(moment, (None, None))
        hours.append(HourRow(hour=moment, submissions=received.get(moment, 0), graded=graded.get(moment, 0),
                             queue_depth=depth, latency_p50_s=_round(lat[0]), latency_p95_s=_round(lat[1])))
        moment += timedelta(hours=1)
    hours = hours[-HOURS_MAX:]
    return Timeline(deadline=deadline, latency_p50_s=_round(p50), latency_p95_s=_round(p95),
                    peak_queue_depth=max((h.queue_depth for h in hours), default=0), hours=hours)


def _round(value: float | None) -> float | None:
    return None if value is None else round(float(value), 3)
