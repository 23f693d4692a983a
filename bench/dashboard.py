"""The assignment dashboard on a generated course: 1 000 students × 10 graded attempts (issue #23).

    python bench/dashboard.py --students 1000 --attempts 10 --db sqlite --db postgresql --out dashboard.json

Writes the class into a fresh database of each kind (migrated to head): the rows a worker's
store.finish leaves (report, grade columns, report facts), inserted in bulk so 10 000 load in
seconds; then times
service.dashboard.queries.dashboard (every figure of GET /v1/dashboard) and the CSV, `--repeat`
times each, and prints the medians. PostgreSQL: a database is created and dropped on
tests.support.servers.POSTGRES_ADMIN.
"""
from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import tempfile
import time
import uuid
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sqlalchemy import insert, text  # noqa: E402

from service.dashboard.export import to_csv  # noqa: E402
from service.dashboard.facts import report_facts  # noqa: E402
from service.dashboard.queries import dashboard  # noqa: E402
from service.db import store  # noqa: E402
from service.db.migrate import upgrade  # noqa: E402
from service.db.models import ReportFact, ReportRow, Submission  # noqa: E402
from service.db.session import make_engine, make_sessionmaker  # noqa: E402
from service.grades.policy import grade_columns  # noqa: E402
from tests.support.class_reports import generate, report_for  # noqa: E402

DEADLINE = datetime(2026, 11, 30, 23, 59, tzinfo=UTC)
# A real body (the lesson's example: code and written answers, about 2.7 kB): the submissions table
# holds it inline, so scans that read the row pay for it.
BODY = json.loads((Path(__file__).resolve().parents[1] / "exercises/lesson06_mean_var/example_submission.json").read_text())
BATCH = 500


@contextmanager
def database(kind: str):
    if kind == "sqlite":
        with tempfile.TemporaryDirectory() as folder:
            yield f"sqlite:///{folder}/bench.db"
        return
    import psycopg

    from tests.support.servers import POSTGRES_ADMIN
    name = f"kg_bench_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(POSTGRES_ADMIN, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield f"postgresql+psycopg://postgres@127.0.0.1:5432/{name}"
    finally:
        with psycopg.connect(POSTGRES_ADMIN, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def load(sessions, course_id: str, students: int, attempts: int) -> int:
    """Every student submits exactly `attempts` times; returns the submissions written. The rows are
    what store.finish leaves (the report, the grade columns of policy.grade_columns, the facts of
    dashboard.facts.report_facts), inserted in bulk, a window at a time."""
    rows = generate(students, attempts, deadline=DEADLINE, exact=True)
    with sessions() as session:
        store.create_course(session, course_id, "bench")
        for start in range(0, len(rows), BATCH):
            submissions, reports, facts = [], [], []
            for offset, attempt in enumerate(rows[start:start + BATCH]):
                sid, report_id = uuid.uuid4().hex, start + offset + 1
                graded_at = attempt.received_at + timedelta(seconds=attempt.latency_s)
                report = json.loads(report_for(sid, attempt, created_at=graded_at).to_json())
                submissions.append({
                    "id": sid, "course_id": course_id, "exercise_id": "lesson06_mean_var",
                    "body": BODY, "body_sha256": "bench",
                    "feedback_token": uuid.uuid4().hex + uuid.uuid4().hex, "secret_seed": 1, "status": report["status"],
                    "attempts": 1, "assignment": "hw6", "student_id": attempt.student, "created_at": attempt.received_at,
                    "updated_at": graded_at, "graded_at": graded_at, "first_graded_at": graded_at,
                    "current_report_id": report_id, "needs_review": bool(store.review_flags(report)),
                    **grade_columns(report)})
                reports.append({"id": report_id, "submission_id": sid, "seq": 1, "reason": "initial",
                                "status": report["status"], "report": report, "created_at": graded_at})
                facts += [{"submission_id": sid, **fact} for fact in report_facts(report)]
            session.execute(insert(Submission), submissions)
            session.execute(insert(ReportRow), reports)
            if facts:
                session.execute(insert(ReportFact), facts)
            session.commit()
    return len(rows)


def timed(fn, repeat: int) -> tuple[float, list[float]]:
    times = []
    for _ in range(repeat):
        began = time.perf_counter()
        fn()
        times.append(time.perf_counter() - began)
    return statistics.median(times), times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--students", type=int, default=1000)
    parser.add_argument("--attempts", type=int, default=10)
    parser.add_argument("--db", action="append", choices=["sqlite", "postgresql"])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    results = {"students": args.students, "attempts": args.attempts, "python": platform.python_version(), "runs": {}}
    for kind in args.db or ["sqlite"]:
        with database(kind) as url:
            upgrade(url)
            engine = make_engine(url)
            sessions = make_sessionmaker(engine)
            began = time.perf_counter()
            count = load(sessions, "bench", args.students, args.attempts)
            load_s = time.perf_counter() - began
            if kind == "postgresql":  # what autovacuum does within a minute of a bulk load: the planner's statistics
                with engine.connect() as conn:
                    conn.execution_options(isolation_level="AUTOCOMMIT").execute(text("ANALYZE"))
            with sessions() as session:
                facts = session.query(ReportFact).count()
                board = dashboard(session, "bench", "hw6", deadline=DEADLINE)  # warm the caches once
                median, times = timed(lambda s=session: dashboard(s, "bench", "hw6", deadline=DEADLINE), args.repeat)
                csv_median, _ = timed(lambda s=session: to_csv(dashboard(s, "bench", "hw6", deadline=DEADLINE)),
                                      args.repeat)
            engine.dispose()
        run = {"submissions": count, "report_facts": facts, "load_s": round(load_s, 1),
               "dashboard_median_s": round(median, 4), "dashboard_all_s": [round(t, 4) for t in times],
               "csv_median_s": round(csv_median, 4), "students": board.overview.students,
               "pass_rate": board.overview.pass_rate, "hours": len(board.timeline.hours)}
        results["runs"][kind] = run
        print(f"{kind}: {count} submissions, {facts} facts loaded in {load_s:.1f} s; dashboard median "
              f"{median * 1000:.0f} ms (of {args.repeat}: {', '.join(f'{t * 1000:.0f}' for t in times)} ms); "
              f"with the CSV {csv_median * 1000:.0f} ms")
    if args.out:
        args.out.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
