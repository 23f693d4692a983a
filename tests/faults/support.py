"""Helpers of the fault tests: a client thread that POSTs a burst of submissions and records every
outcome (answered, refused, reset, timed out), the PostgreSQL cluster's stop and start, and what
the database says about a course's submissions and their reports."""
from __future__ import annotations

import subprocess
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

import httpx
from sqlalchemy import create_engine, select

from service.db.models import ReportRow, Submission
from tests.api.support import postgres_up
from tests.support.waiting import wait_for

FINAL = ("graded", "not_gradable")


# --- a burst of POSTs ------------------------------------------------------------------------

@dataclass
class Outcome:
    index: int
    idempotency_key: str
    started: float           # time.monotonic() when the request was sent
    elapsed: float
    status: int | None       # None: no HTTP answer (refused, reset, timed out)
    submission_id: str | None = None
    retry_after: str | None = None
    error: str | None = None  # the exception's type name when there was no answer
    body: str = ""

    @property
    def acknowledged(self) -> bool:
        return self.status in (200, 202) and self.submission_id is not None


@dataclass
class Burst:
    """POSTs `bodies` (a finite list, or a function of the index that returns None to stop) one
    after the other from a thread, each with its own Idempotency-Key, and records every outcome.
    `stop()` ends an open-ended burst after the request in flight."""

    url: str
    key: str
    bodies: list[dict] | Callable[[int], dict | None]
    pause_s: float = 0.05
    timeout_s: float = 15.0
    prefix: str = "burst"
    waits: dict[int, float] = field(default_factory=dict)  # index -> ?wait= seconds (answer once graded)
    outcomes: list[Outcome] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"{self.prefix}-client", daemon=True)

    def idempotency_key(self, index: int) -> str:
        return f"{self.prefix}-{index}"

    def body(self, index: int) -> dict | None:
        if callable(self.bodies):
            return self.bodies(index)
        return self.bodies[index] if index < len(self.bodies) else None

    def start(self) -> "Burst":
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()

    def join(self, timeout: float = 120) -> None:
        self._thread.join(timeout)
        assert not self._thread.is_alive(), "the client thread did not finish: a request hung"

    def _run(self) -> None:
        # A new connection per request (no keep-alive pool): a killed server shows up as a
        # refused or reset request, never as a stale pooled connection.
        index = 0
        while not self._stop.is_set():
            body = self.body(index)
            if body is None:
                return
            self._record(post(self.url, self.key, body, self.idempotency_key(index), index=index, timeout_s=self.timeout_s,
                              wait_s=self.waits.get(index)))
            index += 1
            self._stop.wait(self.pause_s)

    def _record(self, outcome: Outcome) -> None:
        with self._lock:
            self.outcomes.append(outcome)

    def snapshot(self) -> list[Outcome]:
        with self._lock:
            return list(self.outcomes)

    def acknowledged(self) -> dict[str, str]:
        """Idempotency-Key -> submission id of every acknowledged request."""
        return {o.idempotency_key: o.submission_id for o in self.snapshot() if o.acknowledged}


def post(url: str, key: str, body: dict, idempotency_key: str, *, index: int = -1, timeout_s: float = 15.0,
         wait_s: float | None = None) -> Outcome:
    started = time.monotonic()
    headers = {"Authorization": f"Bearer {key}", "Idempotency-Key": idempotency_key}
    params = {"wait": wait_s} if wait_s is not None else None
    try:
        response = httpx.post(f"{url}/v1/submissions", json=body, headers=headers, params=params, timeout=timeout_s)
    except httpx.HTTPError as exc:
        return Outcome(index, idempotency_key, started, time.monotonic() - started, None, error=type(exc).__name__)
    submission_id = None
    if response.status_code in (200, 202):
        submission_id = response.json()["id"]
    return Outcome(index, idempotency_key, started, time.monotonic() - started, response.status_code,
                   submission_id=submission_id, retry_after=response.headers.get("retry-after"),
                   body=response.text[:500])


# --- the PostgreSQL cluster --------------------------------------------------------------------

def _cluster() -> tuple[str, str]:
    versions = sorted(p.name for p in Path("/etc/postgresql").iterdir() if p.is_dir())
    assert versions, "no PostgreSQL cluster under /etc/postgresql"
    return versions[-1], "main"


def pg_ctlcluster(action: str, *extra: str) -> subprocess.CompletedProcess:
    version, name = _cluster()
    return subprocess.run(["pg_ctlcluster", "--skip-systemctl-redirect", version, name, action, *extra],
                          capture_output=True, text=True, timeout=120, check=False)


def stop_postgres() -> None:
    done = pg_ctlcluster("stop", "-m", "fast")
    assert done.returncode == 0, f"pg_ctlcluster stop failed: {done.stderr}"
    wait_for(lambda: not postgres_up(), timeout=30, interval=0.2, what="PostgreSQL to stop")


def restart_postgres() -> None:
    """`pg_ctlcluster restart -m fast`: every connection is cut, the cluster answers again soon after."""
    done = pg_ctlcluster("restart", "-m", "fast")
    assert done.returncode == 0, f"pg_ctlcluster restart failed: {done.stderr}"
    wait_for(postgres_up, timeout=60, interval=0.2, what="PostgreSQL to answer after its restart")


def ensure_postgres_running() -> None:
    """Start the cluster if it does not answer; wait until it does."""
    if postgres_up():
        return
    done = pg_ctlcluster("start")
    wait_for(postgres_up, timeout=60, interval=0.2, what="PostgreSQL to answer again",
             on_timeout=lambda: f"pg_ctlcluster start: rc {done.returncode} {done.stderr}")


# --- the database, read directly -----------------------------------------------------------

@dataclass
class Stored:
    id: str
    idempotency_key: str | None
    status: str
    attempts: int
    current_report_id: int | None
    lease_token: str | None
    reports: list[tuple[int, int, str]]  # (id, seq, reason)


class CourseLedger:
    """Every submission of one course and its reports, straight from the database."""

    def __init__(self, database_url: str, course_id: str) -> None:
        self.engine = create_engine(database_url, pool_pre_ping=True)
        self.course_id = course_id

    def close(self) -> None:
        self.engine.dispose()

    def stored(self) -> dict[str, Stored]:
        with self.engine.connect() as conn:
            rows = conn.execute(select(Submission.id, Submission.idempotency_key, Submission.status, Submission.attempts,
                                       Submission.current_report_id, Submission.lease_token)
                                .where(Submission.course_id == self.course_id)).all()
            reports = conn.execute(select(ReportRow.submission_id, ReportRow.id, ReportRow.seq, ReportRow.reason)
                                   .join(Submission, Submission.id == ReportRow.submission_id)
                                   .where(Submission.course_id == self.course_id).order_by(ReportRow.seq)).all()
        by_submission: dict[str, list[tuple[int, int, str]]] = {}
        for submission_id, report_id, seq, reason in reports:
            by_submission.setdefault(submission_id, []).append((report_id, seq, reason))
        return {r.id: Stored(r.id, r.idempotency_key, r.status, r.attempts, r.current_report_id, r.lease_token,
                             by_submission.get(r.id, [])) for r in rows}

    def id_of(self, idempotency_key: str) -> str | None:
        with self.engine.connect() as conn:
            return conn.scalar(select(Submission.id).where(Submission.course_id == self.course_id,
                                                           Submission.idempotency_key == idempotency_key))

    def status(self, submission_id: str) -> str | None:
        with self.engine.connect() as conn:
            return conn.scalar(select(Submission.status).where(Submission.id == submission_id))

    def wait_all_final(self, *, timeout: float, on_timeout: Callable[[], str] | None = None) -> dict[str, Stored]:
        def done():
            stored = self.stored()
            return stored if all(s.status in FINAL for s in stored.values()) else None

        def explain() -> str:
            pending = {s.id: (s.status, s.attempts) for s in self.stored().values() if s.status not in FINAL}
            return f"not final: {pending}" + (f"\n{on_timeout()}" if on_timeout else "")

        return wait_for(done, timeout=timeout, interval=0.5, what="every stored submission to be graded",
                        on_timeout=explain)


def exactly_one_current_report(stored: Iterable[Stored]) -> list[str]:
    """The problems (empty when none): each submission final, with exactly one report row, seq 1,
    `initial`, which is its current report, and no lease left."""
    problems = []
    for s in stored:
        if s.status not in FINAL:
            problems.append(f"{s.id} ({s.idempotency_key}): status {s.status}")
        elif len(s.reports) != 1:
            problems.append(f"{s.id} ({s.idempotency_key}): {len(s.reports)} reports {s.reports}")
        elif s.current_report_id != s.reports[0][0] or s.reports[0][1:] != (1, "initial"):
            problems.append(f"{s.id} ({s.idempotency_key}): current {s.current_report_id}, reports {s.reports}")
        elif s.lease_token is not None:
            problems.append(f"{s.id} ({s.idempotency_key}): lease left {s.lease_token}")
    return problems
