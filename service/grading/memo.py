"""Verdict memo: the code results of a canonical program, reused for an identical program.

The program that runs is canonical (template + canonical unparse of each fill, `Program.digest`),
so two students who fill the blank the same way run byte-identical programs. For a deterministic
exercise, the sandbox results (cases, the given check's real output, diagnoses) of one are the
results of the other, as long as nothing else that decides them changed: the key covers the
program, the exercise id and version, a hash of everything in the exercise that shapes a run or
its comparison (entry point, arguments, cases, tolerances, the given check, the trusted
`checks.py`), and the environment (device mode, device name, Triton version).

What is stored is only the code part of a report (`MemoEntry`); written answers are never memoised
and are scored afresh for every submission. A reused result keeps the seeds it was produced with:
the report records those seeds (not this submission's secret seed), so it can still be replayed.

Two implementations: `InMemoryMemo` (one process: the benchmark, tests) and `DbMemo` (the service:
a table shared by every worker; two identical programs finishing together both try to insert,
and the second insert is simply dropped).
"""
from __future__ import annotations

import hashlib
import json
import threading
from typing import TYPE_CHECKING, Protocol

from pydantic import BaseModel, ConfigDict, ValidationError

from service.exercises import Exercise
from service.report import CaseReport, Diagnosis, Environment, Performance, Seeds

if TYPE_CHECKING:  # the database is imported only by DbMemo: the grader runs without SQLAlchemy
    from sqlalchemy.orm import Session, sessionmaker

MEMO_FORMAT = 1  # bump when MemoEntry or the key changes meaning: old entries then simply miss


class MemoEntry(BaseModel):
    """The code part of a report, as the sandbox run of `submission_id` produced it."""

    model_config = ConfigDict(extra="forbid")

    submission_id: str
    program_digest: str
    cases: list[CaseReport]
    diagnoses: list[Diagnosis]
    given_status: str
    given_output: str
    seeds: Seeds
    environment: Environment
    performance: Performance | None = None  # the speed figures of that run (exercises with `speed:`)


def exercise_fingerprint(exercise: Exercise) -> str:
    """sha256 of what decides a run's results besides the program: cases, tolerances, the call,
    the given check, the speed section where there is one, and the trusted checks.py (reference,
    inputs, diagnoses)."""
    spec = exercise.spec
    shape = spec.model_dump(mode="json", include={"entry_point", "args", "backward", "outputs", "given_check", "cases",
                                                  "fill_policy", "requires_gpu"})
    if spec.speed is not None:  # only then: the keys of exercises without one stay as they were
        shape["speed"] = spec.speed.model_dump(mode="json")
    digest = hashlib.sha256(json.dumps(shape, sort_keys=True).encode())
    digest.update((exercise.root / spec.checks).read_bytes())
    return digest.hexdigest()


def memo_key(*, program_digest: str, exercise: Exercise, mode: str, device: str, triton: str) -> str:
    parts = {"format": MEMO_FORMAT, "program": program_digest, "exercise": exercise.id,
             "version": exercise.spec.version, "spec": exercise_fingerprint(exercise),
             "mode": mode, "device": device, "triton": triton}
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()


def memoisable(exercise: Exercise) -> bool:
    """Deterministic exercises with whitelisted fills only: an exercise that opts out (atomics,
    ...) or whose blank may be a whole body (fill_policy any: anything can run there, randomness
    included) always runs its own program."""
    return exercise.spec.deterministic and exercise.spec.fill_policy == "expression"


class VerdictMemo(Protocol):
    def get(self, key: str) -> MemoEntry | None: ...

    def put(self, key: str, entry: MemoEntry, *, exercise_id: str, exercise_version: int) -> None: ...


def _encode(entry: MemoEntry) -> dict:
    # Through JSON text as reports are stored (store.finish): NaN/inf become null the same way.
    return json.loads(entry.model_dump_json())


def _decode(value: dict | None) -> MemoEntry | None:
    if value is None:
        return None
    try:
        return MemoEntry.model_validate(value)
    except ValidationError:
        return None  # an entry this version cannot read is a miss, never an error


class InMemoryMemo:
    def __init__(self) -> None:
        self._entries: dict[str, dict] = {}
        self._lock = threading.Lock()

    def get(self, key: str) -> MemoEntry | None:
        with self._lock:
            return _decode(self._entries.get(key))

    def put(self, key: str, entry: MemoEntry, *, exercise_id: str, exercise_version: int) -> None:
        with self._lock:
            self._entries.setdefault(key, _encode(entry))

    def __len__(self) -> int:
        return len(self._entries)


class DbMemo:
    """The `verdict_memo` table (migration 0004). The first result for a key wins; a concurrent
    second insert of the same key fails on the primary key and is dropped."""

    def __init__(self, sessions: "sessionmaker[Session]") -> None:
        self.sessions = sessions

    def get(self, key: str) -> MemoEntry | None:
        from service.db.models import VerdictMemoRow

        with self.sessions() as session:
            row = session.get(VerdictMemoRow, key)
            return _decode(row.result if row is not None else None)

    def put(self, key: str, entry: MemoEntry, *, exercise_id: str, exercise_version: int) -> None:
        from sqlalchemy.exc import IntegrityError

        from service.db.models import VerdictMemoRow

        with self.sessions() as session:
            if session.get(VerdictMemoRow, key) is not None:
                return
            session.add(VerdictMemoRow(key=key, exercise_id=exercise_id, exercise_version=exercise_version,
                                       submission_id=entry.submission_id, program_digest=entry.program_digest,
                                       result=_encode(entry)))
            try:
                session.commit()
            except IntegrityError:
                session.rollback()  # an identical program finished first: its result is as good
