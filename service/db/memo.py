"""`DbMemo`: the verdict memo (service/grading/memo.py) in the database, shared by every worker.

Entries are rows of `verdict_memo` (migration 0004; where each was made, 0010); in-flight claims
are rows of `memo_claims` (migration 0005), so they hold across processes and hosts.
"""
from __future__ import annotations

import time
from datetime import timedelta
from typing import Any, cast

from sqlalchemy import CursorResult, Engine, bindparam, delete, func, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, sessionmaker

from service.db.base import as_utc, utcnow
from service.db.models import MemoClaimRow, VerdictMemoRow
from service.grading.memo import (
    POLL_S,
    MemoEntry,
    MemoEnvironment,
    Releases,
    decode_entry,
    encode_entry,
    with_performance,
)
from service.report import Performance

# A memo hit reads one column by its primary key: the statement is built once, and run on a connection
# of the engine, not through an ORM session (the session's identity map and the row's loading cost
# about 0.3 ms of CPU a hit, more than the read itself; issue #20).
_RESULT = select(VerdictMemoRow.result).where(VerdictMemoRow.key == bindparam("key"))


class DbMemo:
    """The `verdict_memo` table (migration 0004). The first result for a key wins; a concurrent
    second insert of the same key fails on the primary key and is dropped."""

    def __init__(self, sessions: sessionmaker[Session]) -> None:
        self.sessions = sessions
        self._releases = Releases()

    def get(self, key: str) -> MemoEntry | None:
        bind = self.sessions.kw.get("bind")
        if isinstance(bind, Engine):
            with bind.connect() as connection:
                value = connection.execute(_RESULT, {"key": key}).scalar()
        else:  # a sessionmaker bound otherwise (or per call)
            with self.sessions() as session:
                value = session.execute(_RESULT, {"key": key}).scalar()
        return decode_entry(value)

    def put(self, key: str, entry: MemoEntry, *, exercise_id: str, exercise_version: int) -> None:
        with self.sessions() as session:
            if session.get(VerdictMemoRow, key) is not None:
                return
            session.add(VerdictMemoRow(key=key, exercise_id=exercise_id, exercise_version=exercise_version,
                                       submission_id=entry.submission_id, program_digest=entry.program_digest,
                                       result=encode_entry(entry), mode=entry.environment.backend,
                                       device=entry.environment.device[:200], triton=entry.environment.triton[:64]))
            try:
                session.commit()
            except IntegrityError:
                session.rollback()  # an identical program finished first: its result is as good

    def environments(self, mode: str) -> list[MemoEnvironment]:
        """One GROUP BY over the covering index `ix_verdict_memo_environment` (migration 0010):
        no entry is read or decoded."""
        with self.sessions() as session:
            rows = session.execute(
                select(VerdictMemoRow.device, VerdictMemoRow.triton, func.min(VerdictMemoRow.created_at),
                       func.max(VerdictMemoRow.created_at))
                .where(VerdictMemoRow.mode == mode, VerdictMemoRow.triton != "")
                .group_by(VerdictMemoRow.device, VerdictMemoRow.triton)).all()
        return [MemoEnvironment(device=device, triton=triton, first_at=as_utc(first), last_at=as_utc(last))
                for device, triton, first, last in rows]

    def set_performance(self, key: str, performance: Performance) -> bool:
        """The entry's speed card, once measured after the grade; only over a `pending` one, so the
        first measurement stays (the row lock, or SQLite's write lock, orders two writers)."""
        with self.sessions() as session:
            row = session.scalar(select(VerdictMemoRow).where(VerdictMemoRow.key == key).with_for_update())
            entry = decode_entry(row.result if row is not None else None)
            if row is None or entry is None or entry.performance is None or entry.performance.status != "pending":
                return False
            row.result = encode_entry(with_performance(entry, performance))
            session.commit()
            return True

    def claim(self, key: str, *, owner: str, ttl_s: float) -> bool:
        """Insert the claim row; an expired row (its holder died) is deleted first, and a row of
        the same owner (an earlier attempt of this submission) is taken over. The primary key
        decides between two claimants racing for a free key, on SQLite and PostgreSQL alike."""
        now = utcnow()
        expires = now + timedelta(seconds=ttl_s)
        with self.sessions() as session:
            take = update(MemoClaimRow).where(MemoClaimRow.key == key, MemoClaimRow.owner == owner)
            taken = cast(CursorResult[Any], session.execute(take.values(expires_at=expires))).rowcount
            if taken:
                session.commit()
                return True
            session.execute(delete(MemoClaimRow).where(MemoClaimRow.key == key, MemoClaimRow.expires_at <= now))
            session.add(MemoClaimRow(key=key, owner=owner, expires_at=expires, created_at=now))
            try:
                session.commit()
            except IntegrityError:
                session.rollback()  # a live claim of someone else
                return False
            return True

    def release(self, key: str, *, owner: str) -> None:
        with self.sessions() as session:
            session.execute(delete(MemoClaimRow).where(MemoClaimRow.key == key, MemoClaimRow.owner == owner))
            session.commit()
        self._releases.notify()

    def wait_released(self, key: str, *, timeout_s: float) -> bool:
        deadline = time.monotonic() + timeout_s
        while True:
            seen = self._releases.generation
            with self.sessions() as session:
                live = session.scalar(select(MemoClaimRow.key)
                                      .where(MemoClaimRow.key == key, MemoClaimRow.expires_at > utcnow()))
            if live is None:
                return True
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            self._releases.wait(seen, min(POLL_S, left))
