"""Tables: courses, API keys, submissions (the queue's source of truth), reports (with history),
webhook deliveries, TA decisions, the review flags of each current report, the verdict memo and its
claims, bulk regrade jobs, the dashboard's report facts."""
from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    UniqueConstraint,
    false,
)
from sqlalchemy.orm import Mapped, mapped_column, relationship

from service.db.base import Base, utcnow
from service.grades.policy import CoursePolicy
from service.status import SubmissionStatus

TZDateTime = DateTime(timezone=True)
DASHBOARD_COLUMNS = ("course_id", "assignment", "student_id", "status", "created_at", "id", "passed", "score_total",
                     "first_graded_at", "pass_threshold", "score_max", "exercise_id")


class Course(Base):
    __tablename__ = "courses"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    name: Mapped[str] = mapped_column(String(200))
    webhook_secret: Mapped[str] = mapped_column(String(64))  # HMAC key for this course's callbacks
    # The course's grade policy (service/grades/policy.py): which attempt counts, what a veto exports.
    grade_policy: Mapped[str] = mapped_column(String(8), default="last", server_default="last")  # last | best
    veto_policy: Mapped[str] = mapped_column(String(8), default="capped", server_default="capped")  # capped | zero
    # Points each hint level costs (service/hints.py); NULL: hints cost nothing (the default).
    hint_cost: Mapped[float | None] = mapped_column(Float, nullable=True)
    created_at: Mapped[datetime] = mapped_column(TZDateTime, default=utcnow)

    def policy(self) -> CoursePolicy:
        return CoursePolicy(grade_policy=self.grade_policy, veto_policy=self.veto_policy,
                            hint_cost=self.hint_cost or 0.0)


class ApiKey(Base):
    """Only a SHA-256 of the secret is stored: keys are 256-bit random, so no slow hash is needed."""

    __tablename__ = "api_keys"

    id: Mapped[str] = mapped_column(String(16), primary_key=True)  # the public prefix, "kg_<id>_..."
    course_id: Mapped[str] = mapped_column(ForeignKey("courses.id"), index=True)
    secret_hash: Mapped[str] = mapped_column(String(64))
    scopes: Mapped[list[str]] = mapped_column(JSON)
    label: Mapped[str] = mapped_column(String(200), default="")
    created_at: Mapped[datetime] = mapped_column(TZDateTime, default=utcnow)
    revoked_at: Mapped[datetime | None] = mapped_column(TZDateTime, nullable=True)


class Submission(Base):
    __tablename__ = "submissions"
    __table_args__ = (
        UniqueConstraint("course_id", "idempotency_key"),
        Index("ix_submissions_status_created_at", "status", "created_at"),
        # store.claim's fair pick: each course's oldest queued submission and its running count
        # (and course_queue_depth's count) are ranges of this index, whatever else the course has;
        # the course's latest claim is the last entry of the next one.
        Index("ix_submissions_course_id_status_created_at", "course_id", "status", "created_at"),
        Index("ix_submissions_course_id_claimed_at", "course_id", "claimed_at"),
        Index("ix_submissions_course_id_needs_review", "course_id", "needs_review"),
        Index("ix_submissions_course_id_created_at_id", "course_id", "created_at", "id"),
        Index("ix_submissions_course_id_assignment_student_id", "course_id", "assignment", "student_id"),
        Index("ix_submissions_course_id_student_id", "course_id", "student_id"),
        Index("ix_submissions_course_id_external_ref", "course_id", "external_ref"),
        Index("ix_submissions_course_id_exercise_id_exercise_version", "course_id", "exercise_id", "exercise_version"),
        # The dashboard's (service/dashboard/queries.py): covers every column it reads, so its scans of
        # an assignment never touch the rows (and their bodies).
        Index("ix_submissions_dashboard", *DASHBOARD_COLUMNS),
        Index("ix_submissions_id_dashboard", "id", *DASHBOARD_COLUMNS[:5]),  # the same, from a report fact
    )

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    course_id: Mapped[str] = mapped_column(ForeignKey("courses.id"), index=True)
    exercise_id: Mapped[str] = mapped_column(String(100))
    body: Mapped[dict[str, Any]] = mapped_column(JSON)
    body_sha256: Mapped[str] = mapped_column(String(64))
    idempotency_key: Mapped[str | None] = mapped_column(String(200), nullable=True)
    callback_url: Mapped[str | None] = mapped_column(String(2000), nullable=True)
    feedback_token: Mapped[str] = mapped_column(String(64), unique=True)
    secret_seed: Mapped[int] = mapped_column(BigInteger)
    status: Mapped[str] = mapped_column(String(16), default=SubmissionStatus.queued)  # service/status.py
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    lease_token: Mapped[str | None] = mapped_column(String(32), nullable=True)
    lease_expires_at: Mapped[datetime | None] = mapped_column(TZDateTime, nullable=True)
    claimed_at: Mapped[datetime | None] = mapped_column(TZDateTime, nullable=True)  # its latest claim (store.claim)
    current_report_id: Mapped[int | None] = mapped_column(Integer, nullable=True)
    # Kept in sync with the current report on every write (store.finish, decisions.decide), so the
    # review queue filters in SQL: does it wait for a TA, and since when was it graded.
    needs_review: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    # the grading report, not a TA's re-issue
    graded_at: Mapped[datetime | None] = mapped_column(TZDateTime, nullable=True)
    # The platform's identity (service.submission.Submission), copied from the body to be filtered on.
    assignment: Mapped[str | None] = mapped_column(String(200), nullable=True)
    student_id: Mapped[str | None] = mapped_column(String(200), nullable=True)
    student_name: Mapped[str | None] = mapped_column(String(200), nullable=True)
    student_email: Mapped[str | None] = mapped_column(String(320), nullable=True)
    attempt: Mapped[int | None] = mapped_column(Integer, nullable=True)
    external_ref: Mapped[str | None] = mapped_column(String(200), nullable=True)
    language: Mapped[str | None] = mapped_column(String(2), nullable=True)
    # The current report's grade, kept in sync like needs_review (store.on_current_report), so the
    # listing and the grades export never parse reports: NULL while ungraded or not_gradable.
    exercise_version: Mapped[int | None] = mapped_column(Integer, nullable=True)
    score_total: Mapped[float | None] = mapped_column(Float, nullable=True)
    score_max: Mapped[float | None] = mapped_column(Float, nullable=True)
    pass_threshold: Mapped[float | None] = mapped_column(Float, nullable=True)
    passed: Mapped[bool | None] = mapped_column(Boolean, nullable=True)
    provisional: Mapped[bool | None] = mapped_column(Boolean, nullable=True)
    blocking: Mapped[str | None] = mapped_column(String(200), nullable=True)  # veto:<rule>:<status> | requirement:<id>
    # When the first report was written (graded_at moves with every regrade): the grading latency.
    first_graded_at: Mapped[datetime | None] = mapped_column(TZDateTime, nullable=True)
    created_at: Mapped[datetime] = mapped_column(TZDateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(TZDateTime, default=utcnow, onupdate=utcnow)

    reports: Mapped[list[ReportRow]] = relationship(back_populates="submission", lazy="raise", order_by="ReportRow.seq")


class ReportRow(Base):
    """Every report ever issued for a submission; `submissions.current_report_id` names the current one."""

    __tablename__ = "reports"
    __table_args__ = (UniqueConstraint("submission_id", "seq"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    submission_id: Mapped[str] = mapped_column(ForeignKey("submissions.id"), index=True)
    seq: Mapped[int] = mapped_column(Integer)
    reason: Mapped[str] = mapped_column(String(32))  # initial | regrade
    status: Mapped[str] = mapped_column(String(16))
    report: Mapped[dict[str, Any]] = mapped_column(JSON)
    created_at: Mapped[datetime] = mapped_column(TZDateTime, default=utcnow)

    submission: Mapped[Submission] = relationship(back_populates="reports", lazy="raise")


class ReportFact(Base):
    """What the dashboard counts in the current report of a submission (service/dashboard/facts.py):
    rewritten with every report that becomes current, like the review flags."""

    __tablename__ = "report_facts"
    __table_args__ = (Index("ix_report_facts_kind_key", "kind", "key"),)

    submission_id: Mapped[str] = mapped_column(ForeignKey("submissions.id"), primary_key=True)
    kind: Mapped[str] = mapped_column(String(16), primary_key=True)  # diagnosis | veto | requirement | case | concept
    item: Mapped[str] = mapped_column(String(100), primary_key=True, default="")  # the question's item (concepts)
    key: Mapped[str] = mapped_column(String(200), primary_key=True)
    ok: Mapped[bool | None] = mapped_column(Boolean, nullable=True)
    label: Mapped[str] = mapped_column(Text, default="")


class WebhookDelivery(Base):
    __tablename__ = "webhook_deliveries"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    submission_id: Mapped[str] = mapped_column(ForeignKey("submissions.id"), index=True)
    report_id: Mapped[int] = mapped_column(ForeignKey("reports.id"))
    url: Mapped[str] = mapped_column(String(2000))
    attempt: Mapped[int] = mapped_column(Integer, default=0)
    delivered: Mapped[bool] = mapped_column(Boolean, default=False)
    last_status_code: Mapped[int | None] = mapped_column(Integer, nullable=True)
    last_error: Mapped[str | None] = mapped_column(Text, nullable=True)
    next_attempt_at: Mapped[datetime | None] = mapped_column(TZDateTime, nullable=True, index=True)
    # submission.graded | submission.regraded | submission.decision_recorded | submission.speed_measured
    # (service/worker/webhook_payload.py)
    event: Mapped[str] = mapped_column(String(40), default="submission.graded", server_default="submission.graded")
    decision_id: Mapped[int | None] = mapped_column(Integer, nullable=True)  # for submission.decision_recorded
    created_at: Mapped[datetime] = mapped_column(TZDateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(TZDateTime, default=utcnow, onupdate=utcnow)


class Decision(Base):
    """A TA's decision on one item or veto of a report, and the report it produced (audit trail)."""

    __tablename__ = "decisions"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    submission_id: Mapped[str] = mapped_column(ForeignKey("submissions.id"), index=True)
    report_id: Mapped[int] = mapped_column(ForeignKey("reports.id"))  # the report decided on
    new_report_id: Mapped[int] = mapped_column(ForeignKey("reports.id"))  # the report it issued
    target: Mapped[str] = mapped_column(String(120))  # item:<id> | veto:<rule>
    before: Mapped[dict[str, Any]] = mapped_column(JSON)
    after: Mapped[dict[str, Any]] = mapped_column(JSON)
    reason: Mapped[str] = mapped_column(Text)
    actor: Mapped[str] = mapped_column(String(200))
    created_at: Mapped[datetime] = mapped_column(TZDateTime, default=utcnow)


class HintTaken(Base):
    """One level of the hint ladder a student asked for (service/hints.py), with the cost the
    course's policy set when it was taken."""

    __tablename__ = "hints_taken"
    __table_args__ = (UniqueConstraint("submission_id", "diagnosis", "level"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    submission_id: Mapped[str] = mapped_column(ForeignKey("submissions.id"), index=True)
    course_id: Mapped[str] = mapped_column(ForeignKey("courses.id"), index=True)
    diagnosis: Mapped[str] = mapped_column(String(100))  # a diagnosis id, or "general"
    level: Mapped[int] = mapped_column(Integer)  # 1 概念区域 … 4 完整答案
    cost: Mapped[float] = mapped_column(Float, default=0.0)
    language: Mapped[str] = mapped_column(String(2))
    created_at: Mapped[datetime] = mapped_column(TZDateTime, default=utcnow)


class ReviewFlag(Base):
    """One reason the current report waits for a TA: a suspected veto or a needs_review item.
    Rewritten with every report that becomes current; the review queue filters on `kind`."""

    __tablename__ = "review_flags"

    submission_id: Mapped[str] = mapped_column(ForeignKey("submissions.id"), primary_key=True)
    target: Mapped[str] = mapped_column(String(120), primary_key=True)  # veto:<rule> | item:<id>
    kind: Mapped[str] = mapped_column(String(32), index=True)  # the veto rule, or needs_review for an item


class VerdictMemoRow(Base):
    """The code results of one canonical program (service.grading.memo): reused for an identical
    program, exercise version, case set and environment. Never holds written answers."""

    __tablename__ = "verdict_memo"

    key: Mapped[str] = mapped_column(String(64), primary_key=True)  # sha256, see memo.memo_key
    exercise_id: Mapped[str] = mapped_column(String(100), index=True)
    exercise_version: Mapped[int] = mapped_column(Integer)
    program_digest: Mapped[str] = mapped_column(String(64))
    # whose sandbox run produced it (no FK: rows outlive nothing)
    submission_id: Mapped[str] = mapped_column(String(32))
    result: Mapped[dict[str, Any]] = mapped_column(JSON)
    created_at: Mapped[datetime] = mapped_column(TZDateTime, default=utcnow)
    # Where the run was made (the result's environment; migration 0010), so that a grader whose
    # sandbox has not said hello yet learns the fleet's environment without decoding results
    # (DbMemo.environments): the covering index answers it from the index alone.
    mode: Mapped[str] = mapped_column(String(16), default="")
    device: Mapped[str] = mapped_column(String(200), default="")
    triton: Mapped[str] = mapped_column(String(64), default="")

    __table_args__ = (Index("ix_verdict_memo_environment", "mode", "device", "triton", "created_at"),)


class MemoClaimRow(Base):
    """A grading running a new program holds its memo key here until the result is stored (or it
    gives up): identical programs graded meanwhile wait for that result (service.grading.memo)."""

    __tablename__ = "memo_claims"

    key: Mapped[str] = mapped_column(String(64), primary_key=True)  # the memo key (VerdictMemoRow.key)
    owner: Mapped[str] = mapped_column(String(32))  # the submission id of the claiming grading
    expires_at: Mapped[datetime] = mapped_column(TZDateTime)  # past it, anyone may take the claim over
    created_at: Mapped[datetime] = mapped_column(TZDateTime, default=utcnow)


class RegradeJob(Base):
    """A bulk regrade (service/db/regrades.py): every submission of an assignment, or of an exercise
    version, graded again a window at a time; its items say how far it got, so it resumes after a restart."""

    __tablename__ = "regrade_jobs"

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    course_id: Mapped[str] = mapped_column(ForeignKey("courses.id"), index=True)
    scope: Mapped[str] = mapped_column(String(16))  # assignment | exercise
    assignment: Mapped[str | None] = mapped_column(String(200), nullable=True)
    exercise_id: Mapped[str | None] = mapped_column(String(100), nullable=True)
    exercise_version: Mapped[int | None] = mapped_column(Integer, nullable=True)
    status: Mapped[str] = mapped_column(String(16), default="running")  # running | done
    total: Mapped[int] = mapped_column(Integer, default=0)
    requested_by: Mapped[str] = mapped_column(String(200), default="")
    created_at: Mapped[datetime] = mapped_column(TZDateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(TZDateTime, default=utcnow, onupdate=utcnow)
    finished_at: Mapped[datetime | None] = mapped_column(TZDateTime, nullable=True)


class RegradeItem(Base):
    """One submission of a bulk regrade: pending (not yet queued), queued, or done (regraded)."""

    __tablename__ = "regrade_items"
    __table_args__ = (Index("ix_regrade_items_job_id_state", "job_id", "state"),)

    job_id: Mapped[str] = mapped_column(ForeignKey("regrade_jobs.id"), primary_key=True)
    submission_id: Mapped[str] = mapped_column(ForeignKey("submissions.id"), primary_key=True)
    state: Mapped[str] = mapped_column(String(16), default="pending")
    seq_before: Mapped[int] = mapped_column(Integer, default=0)  # the highest report seq when the job started
