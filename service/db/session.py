"""Engines and sessions. SQLite runs in WAL mode with a busy timeout; PostgreSQL by URL.

SQLite has one writer at a time. Its busy handler lets a waiting writer sleep and look again (1 ms
growing to 100 ms between looks), not wake when the lock is free: with several threads of one
process writing (fast threads claiming and writing reports, the lease keeper, the memo) a waiter
often slept long after the lock was free, and a burst through 8 fast threads went slower than
through one (docs/benchmarks.md, round 2, twelfth day). So the threads of one process take their
turn at writing on a lock of the engine's (`_WriteTurn`) that hands it over at once: from a
connection's first INSERT, UPDATE or DELETE to its COMMIT or ROLLBACK, the span in which SQLite
holds its own write lock for that connection. SQLite's lock still decides between processes, and
nothing depends on ours for being right: a writer that waited `BUSY_TIMEOUT_S` for its turn, or
whose thread already writes on another connection, goes on without it, as before.
"""
from __future__ import annotations

import threading
import weakref
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.orm import Session, sessionmaker

BUSY_TIMEOUT_S = 30.0
_TURN = "kernelgrade_write_turn"  # in a DBAPI connection's record: it holds the engine's turn
_TURNS: weakref.WeakKeyDictionary[Engine, _WriteTurn] = weakref.WeakKeyDictionary()


class _WriteTurn:
    """The one-writer-at-a-time turn of an SQLite engine's connections in this process."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._owner: int | None = None  # the thread id that holds it

    def take(self, info: dict[str, Any]) -> None:
        if info.get(_TURN):
            return
        me = threading.get_ident()
        if self._owner == me:  # this thread writes on another connection: SQLite decides, as before
            return
        if self._lock.acquire(timeout=BUSY_TIMEOUT_S):
            self._owner = me
            info[_TURN] = True

    def give(self, info: dict[str, Any]) -> None:
        if info.pop(_TURN, False):
            self._owner = None
            self._lock.release()

    @property
    def held(self) -> bool:
        return self._lock.locked()


def write_turn_held(engine: Engine) -> bool:
    """Whether a connection of this SQLite engine holds the process's write turn (tests)."""
    turn = _TURNS.get(engine)
    return turn is not None and turn.held


def _writes(context: Any, statement: str) -> bool:
    if context is not None and (context.isinsert or context.isupdate or context.isdelete):
        return True
    return statement.lstrip()[:7].upper() in ("INSERT ", "UPDATE ", "DELETE ", "REPLACE")


def _sqlite_engine(url: str) -> Engine:
    engine = create_engine(url, connect_args={"check_same_thread": False, "timeout": BUSY_TIMEOUT_S})
    turn = _TURNS[engine] = _WriteTurn()

    @event.listens_for(engine, "connect")
    def _sqlite_pragmas(dbapi_connection, _record):  # noqa: ANN001
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute(f"PRAGMA busy_timeout={int(BUSY_TIMEOUT_S * 1000)}")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.close()

    @event.listens_for(engine, "before_cursor_execute")
    def _take_turn(conn, _cursor, statement, _parameters, context, _executemany):  # noqa: ANN001
        if _writes(context, statement):
            turn.take(conn.info)  # the DBAPI connection's own (its pool record's)

    # The DBAPI connection's COMMIT and ROLLBACK (a session's, and the pool's reset on return) end
    # SQLite's write transaction: the turn goes with them, after them.
    dialect = engine.dialect
    do_commit, do_rollback = dialect.do_commit, dialect.do_rollback

    def _ended(end, connection) -> None:  # noqa: ANN001 - the pool's proxy of the DBAPI connection
        try:
            end(connection)
        finally:
            try:
                info = connection.info
            except (AttributeError, NotImplementedError):  # the first connect's ad hoc proxy: no record
                info = None
            if isinstance(info, dict):
                turn.give(info)

    dialect.do_commit = lambda connection: _ended(do_commit, connection)  # type: ignore[method-assign, assignment]
    dialect.do_rollback = lambda connection: _ended(do_rollback, connection)  # type: ignore[method-assign, assignment]

    @event.listens_for(engine, "checkin")
    def _checked_in(_dbapi_connection, record):  # noqa: ANN001 - never keep a turn in the pool
        turn.give(record.info)

    @event.listens_for(engine, "close")
    def _closed(_dbapi_connection, record):  # noqa: ANN001
        turn.give(record.info)

    @event.listens_for(engine, "invalidate")
    def _invalidated(_dbapi_connection, record, _exception):  # noqa: ANN001
        turn.give(record.info)

    return engine


def make_engine(url: str) -> Engine:
    if url.startswith("sqlite"):
        path = url.split("///", 1)[-1]
        if path and path != ":memory:":
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        return _sqlite_engine(url)
    return create_engine(url, pool_pre_ping=True, pool_size=10, max_overflow=20)


def make_sessionmaker(engine: Engine) -> sessionmaker[Session]:
    return sessionmaker(engine, expire_on_commit=False)


def one_snapshot(session: Session) -> None:
    """Make every read of the session's transaction, from its first statement to its end, see the
    database as it was at one moment (call it before that statement; for reading, not writing).
    Without it each statement sees what was committed when it ran (PostgreSQL's READ COMMITTED;
    SQLite outside a transaction, where the driver opens none for a SELECT), so what several
    statements read together may be a state the database never had: a policy read before an
    admin's change beside the hint levels read after a student's later one. PostgreSQL: REPEATABLE
    READ. SQLite: BEGIN, which reads one WAL snapshot until the transaction ends."""
    dialect = session.get_bind().dialect.name
    if dialect == "postgresql":
        session.connection(execution_options={"isolation_level": "REPEATABLE READ"})
    elif dialect == "sqlite":
        session.connection().exec_driver_sql("BEGIN")
