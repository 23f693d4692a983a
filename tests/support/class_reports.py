"""A generated class for the dashboard: students, attempts and lesson-6-shaped reports, written
through the real store (create_submission, finish), so the report facts and grade columns are
what a worker would leave. The tests and bench/dashboard.py share it.

`Attempt` says what one report holds; the tests compute the dashboard's numbers from the
attempts themselves, independently of the SQL."""
from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from sqlalchemy import update
from sqlalchemy.orm import Session

from service.db import store
from service.db.models import Submission
from service.report import Report
from service.submission import Submission as SubmissionBody

DIAGNOSES = {
    "missing_remask": "第二次规约前没有把 padding lane 重新置零：(x − mean)² 在 padding 上等于 mean²，方差偏大。",
    "divide_by_block": "除以 BLOCK 而不是 N：均值和方差都偏小。",
    "one_pass_cancellation": "用 E[x²] − E[x]² 一遍算方差：大均值小方差时发生灾难性抵消。",
}
CONCEPTS = {"q2": [("other_mask", "padding 的 other=0"), ("mean_squared", "(0 − mean)² = mean²"),
                   ("remask", "第二次 mask")]}
FAMILIES = ("given", "regular", "boundary", "probe")
TEMPLATE = "def mean_var(x):\n    pass\n"


@dataclass
class Attempt:
    student: str
    received_at: datetime
    latency_s: float
    total: float
    passed: bool
    diagnoses: list[str] = field(default_factory=list)
    vetoes: dict[str, str] = field(default_factory=dict)  # rule -> status
    unmet: list[str] = field(default_factory=list)  # requirement ids not met
    failing: list[str] = field(default_factory=list)  # case families with a failed case
    found: dict[str, list[str]] = field(default_factory=dict)  # item -> concept ids found (the rest: missed)
    not_gradable: bool = False


def report_for(submission_id: str, attempt: Attempt, *, created_at: datetime) -> Report:
    if attempt.not_gradable:
        return Report.model_validate({
            "submission_id": submission_id, "exercise": {"id": "lesson06_mean_var", "version": 1},
            "status": "not_gradable", "message": "sandbox failed", "language": "zh",
            "score": {"total": 0, "max": 10, "pass_threshold": 8, "passed": False, "provisional": False},
            "environment": {"backend": "interpreter", "sandbox": "bwrap"}, "created_at": created_at})
    cases = [{"id": f"{family}.c{i}", "kind": family, "description": f"{family} {i}", "shape": [4, 33], "seed": i,
              "passed": not (family in attempt.failing and i == 1)} for family in FAMILIES for i in (0, 1)]
    items = [{"id": item, "title": item, "points": 1.0, "max_points": 2.0, "status": "partial", "feedback": "",
              "evidence": {"found": [{"concept": c, "label": label, "quote": label} for c, label in concepts
                                     if c in attempt.found.get(item, [])],
                           "missing": [{"concept": c, "label": label} for c, label in concepts
                                       if c not in attempt.found.get(item, [])]}}
             for item, concepts in CONCEPTS.items()]
    return Report.model_validate({
        "submission_id": submission_id, "exercise": {"id": "lesson06_mean_var", "version": 1}, "status": "graded",
        "language": "zh",
        "score": {"total": attempt.total, "max": 10, "pass_threshold": 8, "passed": attempt.passed,
                  "provisional": any(s == "suspected" for s in attempt.vetoes.values()),
                  "requirements": [{"id": r, "met": False} for r in attempt.unmet]},
        "items": items, "cases": cases,
        "diagnoses": [{"id": d, "message": DIAGNOSES[d], "evidence": {}} for d in attempt.diagnoses],
        "vetoes": [{"rule": rule, "status": status, "needs_review": status == "suspected"}
                   for rule, status in attempt.vetoes.items()],
        "environment": {"backend": "interpreter", "sandbox": "bwrap"}, "created_at": created_at})


def write(session: Session, course_id: str, assignment: str, attempt: Attempt) -> str:
    """Store one graded submission as the API and a worker would: create (held, so no worker of a
    running service takes it), finish under that lease, then date it as the attempt says."""
    body = SubmissionBody.model_validate({"exercise": "lesson06_mean_var", "code": TEMPLATE, "answers": {},
                                          "assignment": assignment, "student": {"id": attempt.student}})

    def hold(row: Submission) -> list[object]:
        row.status, row.lease_token = "running", "class-reports"
        row.lease_expires_at = datetime.now(UTC) + timedelta(hours=1)
        return []

    row, _ = store.create_submission(session, course_id=course_id, body=body, callback_url=None,
                                     idempotency_key=None, related=hold)
    graded_at = attempt.received_at + timedelta(seconds=attempt.latency_s)
    written = store.finish(session, store.Claim(row.id, "class-reports", 1),
                           report_for(row.id, attempt, created_at=graded_at))
    assert written is not None
    session.execute(update(Submission).where(Submission.id == row.id)
                    .values(created_at=attempt.received_at, first_graded_at=graded_at, graded_at=graded_at))
    session.commit()
    return row.id


def generate(students: int, attempts: int, *, deadline: datetime, seed: int = 23, exact: bool = False) -> list[Attempt]:
    """A class: each student submits up to `attempts` times (exactly, with `exact`) in the days
    before the deadline and mostly improves; misconceptions go away as they do."""
    rng = random.Random(seed)
    out: list[Attempt] = []
    for s in range(students):
        student = f"s{s:05d}"
        skill = rng.random()
        tries = attempts if exact else rng.randint(1, attempts)
        start = deadline - timedelta(hours=rng.uniform(1, 72))
        for a in range(tries):
            received = start + timedelta(minutes=rng.uniform(0, 60) * a + rng.uniform(0, 20))
            received = min(received, deadline - timedelta(seconds=1))
            level = min(1.0, skill + 0.15 * a)
            total = round(min(10.0, max(0.0, level * 10 + rng.uniform(-1.5, 1.0))) * 2) / 2
            diagnoses = [d for d, p in zip(DIAGNOSES, (0.6, 0.3, 0.4)) if rng.random() < p * (1 - level)]
            vetoes = {}
            if rng.random() < 0.05:
                vetoes["boundary_check_removed"] = rng.choice(["suspected", "confirmed", "dismissed"])
            if rng.random() < 0.03:
                vetoes["modified_outside_blank"] = "confirmed"
            unmet = ["code_cases"] if "missing_remask" in diagnoses else []
            failing = [f for f in FAMILIES if rng.random() < (0.1 if f in ("given", "regular") else 0.5) * (1 - level)]
            found = {item: [c for c, _ in concepts if rng.random() < level] for item, concepts in CONCEPTS.items()}
            blocked = any(st in ("suspected", "confirmed") for st in vetoes.values()) or bool(unmet)
            out.append(Attempt(student=student, received_at=received, latency_s=rng.uniform(2, 90), total=total,
                               passed=total >= 8 and not blocked, diagnoses=diagnoses, vetoes=vetoes, unmet=unmet,
                               failing=failing, found=found, not_gradable=rng.random() < 0.01))
    return out
