"""What one `store.claim` costs with a deep queue, on SQLite and PostgreSQL (fair claiming, docs/benchmarks.md).

    python bench/claim_cost.py --db sqlite --queued 5000 --courses 20
    python bench/claim_cost.py --db postgresql --repo /path/to/another/checkout   # its store and migrations

Fills a fresh database (migrated to head of `--repo`'s tree) with `--graded` finished submissions
and `--queued` queued ones over `--courses` courses (the first course holds `--burst` of the queued
ones, posted first; the rest are spread over the others), plus `--idle-courses` courses with nothing
queued. Then claims `--claims` times in one thread, keeping at most `--workers` submissions running
(the oldest held one is marked graded, untimed, as a finished grading would be), and prints the
claim's wall and thread-CPU time (p50, p90, mean) and how many of the first claims went to the burst
course. `--no-fsync` turns off the commit's flush to disk (SQLite `synchronous=OFF`, PostgreSQL
`synchronous_commit=off`), which is most of a claim's wall time on a slow disk, so that the wall time
is the statements' own (PostgreSQL's work is in its server process: the thread CPU does not see it).
`--explain` prints the plan of the claim's statement on the filled database; on PostgreSQL the
statement is also run 30 times under EXPLAIN ANALYZE with TIMING OFF (per-node clock reads cost
more than the probes on this VM), each rolled back, before the claims, and the
median server-side execution time is printed (`server_ms_p50`). The database is removed afterwards.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
import uuid
from datetime import timedelta
from pathlib import Path

POSTGRES_ADMIN = "postgresql://postgres@127.0.0.1:5432/postgres"


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def fill(sessions, *, courses: int, idle_courses: int, queued: int, burst: int, graded: int) -> list[str]:
    from sqlalchemy import insert

    from service.db import store
    from service.db.base import utcnow
    from service.db.models import Submission

    names = [f"c{i:03d}" for i in range(courses + idle_courses)]
    with sessions() as session:
        for name in names:
            store.create_course(session, name, name)
    body = {"exercise": "lesson06_mean_var", "code": "x = 1\n" * 500}
    start = utcnow() - timedelta(days=1)
    rows = []
    for i in range(graded):  # history: every course has finished work older than the queue
        rows.append(("graded", names[i % len(names)]))
    others = names[1:courses] or names[:1]
    for i in range(queued):
        rows.append(("queued", names[0] if i < burst else others[i % len(others)]))
    records = [{"id": uuid.uuid4().hex, "course_id": course, "exercise_id": "lesson06_mean_var", "body": body,
                "body_sha256": "0" * 64, "feedback_token": uuid.uuid4().hex, "secret_seed": i, "status": status,
                "attempts": 1 if status == "graded" else 0, "created_at": start + timedelta(milliseconds=i),
                "updated_at": start + timedelta(milliseconds=i)} for i, (status, course) in enumerate(rows)]
    with sessions() as session:
        for offset in range(0, len(records), 2000):
            session.execute(insert(Submission), records[offset:offset + 2000])
        session.commit()
    return names


def measure(sessions, *, claims: int, workers: int, burst_course: str) -> dict:
    from sqlalchemy import update

    from service.db import store
    from service.db.models import Submission

    walls, cpus, held, first = [], [], [], []
    with sessions() as session:
        course_of = dict(session.query(Submission.id, Submission.course_id).filter(Submission.status == "queued"))
        for _ in range(claims):
            wall, cpu = time.perf_counter(), time.thread_time()
            claim = store.claim(session, lease_s=600)
            walls.append(time.perf_counter() - wall)
            cpus.append(time.thread_time() - cpu)
            if claim is None:
                break
            held.append(claim.submission_id)
            if len(first) < 40:
                first.append(course_of[claim.submission_id])
            if len(held) > workers:
                session.execute(update(Submission).where(Submission.id == held.pop(0))
                                .values(status="graded", lease_token=None, lease_expires_at=None))
                session.commit()
    ms = [w * 1000 for w in walls]
    cpu_ms = [c * 1000 for c in cpus]
    return {"claims": len(walls), "wall_ms": {"p50": percentile(ms, 0.5), "p90": percentile(ms, 0.9),
                                               "mean": statistics.fmean(ms)},
            "cpu_ms": {"p50": percentile(cpu_ms, 0.5), "p90": percentile(cpu_ms, 0.9), "mean": statistics.fmean(cpu_ms)},
            "burst_course_in_first_40": sum(1 for c in first if c == burst_course),
            "courses_in_first_40": len(set(first))}


def explain(engine, db: str, *, show: bool, repeat: int = 30) -> float | None:
    """The plan of the claim's statement (the fair one where the tree has it), printed when `show`.
    PostgreSQL: EXPLAIN ANALYZE `repeat` times, each rolled back; returns the median server-side
    execution time (ms), which the client's wall time (scheduling on a loaded host) blurs."""
    from datetime import datetime, timezone

    from service.db import store

    statement = getattr(store, "_CLAIM_FAIR", store._CLAIM_OLDEST)  # noqa: SLF001 - what claim runs
    compiled = statement.compile(dialect=engine.dialect)
    prefix = "EXPLAIN (ANALYZE, TIMING OFF, BUFFERS) " if db == "postgresql" else "EXPLAIN QUERY PLAN "
    times = []
    with engine.connect() as conn:
        for i in range(repeat if db == "postgresql" else 1):
            now = datetime.now(timezone.utc)
            flat = {**compiled.params, "now": now, "token": "t" * 32, "expires": now + timedelta(seconds=60),
                    "sid": None}
            if db == "postgresql":
                rows = conn.exec_driver_sql(prefix + str(compiled), flat).all()
            else:
                positional = tuple(flat[name] if not isinstance(flat[name], datetime) else
                                   flat[name].isoformat(" ").replace("+00:00", "")
                                   for name in compiled.positiontup)
                rows = conn.exec_driver_sql(prefix + str(compiled), positional).all()
            conn.rollback()
            lines = [" | ".join(str(v) for v in row) for row in rows]
            if show and i == 0:
                print("\n".join(lines), file=sys.stderr)
            times += [float(line.split(":")[1].split()[0]) for line in lines if line.startswith("Execution Time")]
    return statistics.median(times) if times else None


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--db", choices=["sqlite", "postgresql"], default="sqlite")
    parser.add_argument("--repo", type=Path, default=Path(__file__).resolve().parents[1],
                        help="the checkout whose store and migrations are measured")
    parser.add_argument("--courses", type=int, default=20)
    parser.add_argument("--idle-courses", type=int, default=0)
    parser.add_argument("--queued", type=int, default=5000)
    parser.add_argument("--burst", type=int, default=1000, help="queued submissions of the first course, posted first")
    parser.add_argument("--graded", type=int, default=20000)
    parser.add_argument("--claims", type=int, default=500)
    parser.add_argument("--workers", type=int, default=16)
    parser.add_argument("--no-fsync", action="store_true")
    parser.add_argument("--explain", action="store_true")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    sys.path.insert(0, str(args.repo.resolve()))

    from service.db.migrate import upgrade
    from service.db.session import make_engine, make_sessionmaker

    with tempfile.TemporaryDirectory() as tmp:
        name = None
        if args.db == "sqlite":
            url = f"sqlite:///{Path(tmp) / 'kernelgrade.db'}"
        else:
            import psycopg

            name = f"kg_bench_{uuid.uuid4().hex[:12]}"
            with psycopg.connect(POSTGRES_ADMIN, autocommit=True) as conn:
                conn.execute(f'CREATE DATABASE "{name}"')
            url = f"postgresql+psycopg://postgres@127.0.0.1:5432/{name}"
        try:
            upgrade(url)
            engine = make_engine(url)
            if args.no_fsync:
                from sqlalchemy import event

                @event.listens_for(engine, "connect")
                def _no_fsync(dbapi_connection, _record):  # noqa: ANN001
                    cursor = dbapi_connection.cursor()
                    cursor.execute("PRAGMA synchronous=OFF" if args.db == "sqlite" else "SET synchronous_commit = off")
                    cursor.close()
            sessions = make_sessionmaker(engine)
            names = fill(sessions, courses=args.courses, idle_courses=args.idle_courses, queued=args.queued,
                         burst=args.burst, graded=args.graded)
            if args.db == "postgresql":
                with engine.connect() as conn:
                    conn.exec_driver_sql("ANALYZE submissions")
                    conn.commit()
            server_ms = explain(engine, args.db, show=args.explain)
            result = measure(sessions, claims=args.claims, workers=args.workers, burst_course=names[0])
            result["server_ms_p50"] = server_ms
            engine.dispose()
        finally:
            if name is not None:
                with psycopg.connect(POSTGRES_ADMIN, autocommit=True) as conn:
                    conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    result = {"db": args.db, "repo": str(args.repo), **{k: getattr(args, k) for k in (
        "courses", "idle_courses", "queued", "burst", "graded", "claims", "workers")}, **result}
    print(json.dumps(result, indent=1))
    if args.out:
        args.out.write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
