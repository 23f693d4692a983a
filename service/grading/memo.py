"""Verdict memo: the code results of a canonical program, reused for an identical program, and
in-flight claims so that a class burst runs each new program once (how: docs/grading.md, "How the
memo works").
"""
from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Protocol

from pydantic import BaseModel, ConfigDict, ValidationError

from service.exercises import Exercise
from service.report import CaseReport, CaseTexts, Diagnosis, Environment, Performance, Seeds

MEMO_FORMAT = 11  # bump when MemoEntry or the key changes meaning: old entries then simply miss
# 11: on the interpreter a tensor method from a @jit function (`logits.max(0)`, `x.sum(axis=1)`) compiles in the
#    gate, as on a GPU (format 10 refused it as "does not compile for a GPU": sandbox/gpu_compile.py, member_twin)
# 10: on the interpreter a kernel's and/or/not of tensors are element-wise, as on a GPU (format 9 ran Python's:
#    one operand for the whole block, or False: sandbox/gpu_compile.py, _CompilerBooleans)
# 9: on the interpreter a kernel's min/max of tensors are element-wise, as on a GPU (the compiler's
#    builtin_min/builtin_max; format 8 ran Python's, one argument for the whole block: sandbox/gpu_compile.py)
# 8: on the interpreter a range/tl.range loop's induction variable is a tensor, as on a GPU (a kernel
#    that calls .to() on it passes where format 7 failed every case: sandbox/gpu_compile.py)
# 7: what the entry point allocates uninitialised (torch.empty & co.) is poisoned (a kernel that read
#    it fails a case that format 6 passed), and the diagnosis uninitialised_read
# 6: the key no longer names the report's language: an entry says which one it is in, and a grading
#    in another language reuses it through its stored translations (MemoEntry.said_in)
# 5: the cases' texts and the given check's output in the other language (Report.translations)
# 3: cases may draw their shapes from the secret seed (a reused entry keeps its seeds, so its shapes),
#    and every run now compares inputs after the call (diagnosis input_overwritten)
# 2: guard regions around the buffers (an out-of-bounds write fails a case that format 1 passed)


class MemoEntry(BaseModel):
    """The code part of a report, as the sandbox run of `submission_id` produced it."""

    model_config = ConfigDict(extra="forbid")

    submission_id: str
    program_digest: str
    cases: list[CaseReport]
    diagnoses: list[Diagnosis]
    given_status: str
    given_output: str
    given_no_launch: bool = False  # GivenRun.no_launch of that run (the claim check's kernel_bypassed)
    seeds: Seeds
    environment: Environment
    performance: Performance | None = None  # the speed figures of that run (exercises with `speed:`)
    # The cases' texts and the given check's output in the report's other language, by language
    # (service/grading/translate.py): a reuse needs them, and has no run to say them again from.
    case_texts: dict[str, dict[str, CaseTexts]] = {}
    given_outputs: dict[str, str] = {}
    language: str = ""  # the language of the texts above the translations; "" before format 6

    def said_in(self, language: str, *, restate: Callable[[Performance, str, str], Performance | None]
                ) -> MemoEntry | None:
        """This entry with `language` as its language, its own texts becoming a translation; None
        when some text of it cannot be said in `language` (then the grading runs the program).
        `restate(card, said_in, language)`: the speed card in another language (speed.restated)."""
        if language == self.language:
            return self
        cases = self.case_texts.get(language)
        given = self.given_outputs.get(language)
        if cases is None or given is None or any(c.id not in cases for c in self.cases):
            return None
        diagnoses = [d.said_in(language) for d in self.diagnoses]
        if any(d is None for d in diagnoses):
            return None
        performance = None
        if self.performance is not None:
            performance = restate(self.performance, self.language, language)
            if performance is None:
                return None
        own = {c.id: CaseTexts.model_validate(c.model_dump(include=set(CaseTexts.model_fields))) for c in self.cases}
        return self.model_copy(update={
            "language": language, "cases": [c.model_copy(update=cases[c.id].model_dump()) for c in self.cases],
            "diagnoses": diagnoses, "given_output": given, "performance": performance,
            "case_texts": {**{k: v for k, v in self.case_texts.items() if k != language}, self.language: own},
            "given_outputs": {**{k: v for k, v in self.given_outputs.items() if k != language},
                              self.language: self.given_output}})


def exercise_fingerprint(exercise: Exercise) -> str:
    """sha256 of what decides a run's results besides the program: cases, tolerances, the call,
    the given check, the speed section where there is one, and the trusted checks.py (reference,
    inputs, diagnoses) with its messages.yaml: `Exercise.fingerprint`, computed once per loaded
    exercise (as its checks.py is loaded once), not on each of a submission's memo keys."""
    return exercise.fingerprint


def memo_key(*, program_digest: str, exercise: Exercise, mode: str, device: str, triton: str) -> str:
    """What decides a run's results; not the report's language (an entry holds its texts in each)."""
    parts = {"format": MEMO_FORMAT, "program": program_digest, "exercise": exercise.id,
             "version": exercise.spec.version, "spec": exercise_fingerprint(exercise),
             "mode": mode, "device": device, "triton": triton}
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()


def memoisable(exercise: Exercise) -> bool:
    """Deterministic exercises with whitelisted fills only: an exercise that opts out (atomics,
    ...) or whose blank may be a whole body (fill_policy any: anything can run there, randomness
    included) always runs its own program."""
    return exercise.spec.deterministic and exercise.spec.fill_policy == "expression"


@dataclass(frozen=True)
class MemoEnvironment:
    """A device and Triton version that entries of one mode were produced on, and when the
    first and the newest of them were stored."""

    device: str
    triton: str
    first_at: datetime
    last_at: datetime


def settled_environment(environments: Sequence[MemoEnvironment]) -> MemoEnvironment | None:
    """The environment a grader that has not heard its own sandbox may assume, or None: the one
    environment there is, or the newest one if it replaced every other (each other's newest entry
    is older than its first: an upgrade of Triton or of the GPUs). Environments whose entries
    interleave (a fleet of mixed GPUs, a rolling upgrade going on) give no guess: a grader would
    otherwise answer from runs on another device than the one it will run on."""
    if not environments:
        return None
    newest = max(environments, key=lambda e: e.first_at)
    if all(other.last_at < newest.first_at for other in environments if other is not newest):
        return newest
    return None


class VerdictMemo(Protocol):
    def get(self, key: str) -> MemoEntry | None: ...

    def put(self, key: str, entry: MemoEntry, *, exercise_id: str, exercise_version: int) -> None: ...

    # In-flight de-duplication (optional: a memo without these is looked up, never waited on).
    def claim(self, key: str, *, owner: str, ttl_s: float) -> bool:
        """True if `owner` now holds the only live claim on `key` (it should run the program)."""

    def release(self, key: str, *, owner: str) -> None:
        """Drop `owner`'s claim on `key` (a no-op if it holds none)."""

    def wait_released(self, key: str, *, timeout_s: float) -> bool:
        """Block until no live claim on `key` remains (True) or `timeout_s` passed (False)."""

    # Where its entries were made (optional: without it, a grader learns only from its own sandboxes).
    def environments(self, mode: str) -> list[MemoEnvironment]:
        """The distinct device/Triton environments entries of `mode` were produced on (entries
        with no Triton version left out)."""

    # The speed card that came after the grade (optional: without it, reuses say "not measured").
    def set_performance(self, key: str, performance: Performance) -> bool:
        """Put the speed figures into `key`'s entry if its card is still `pending` (True if it was)."""


POLL_S = 0.25  # how often a waiter in another process looks at a claim


class Releases:
    """Wakes the waiters of this process when a claim is released (any key: they re-check). A
    waiter notes `generation` before it looks, so a release in between is not missed."""

    def __init__(self) -> None:
        self.condition = threading.Condition()
        self.generation = 0

    def notify(self) -> None:
        with self.condition:
            self.generation += 1
            self.condition.notify_all()

    def wait(self, since: int, timeout_s: float) -> None:
        with self.condition:
            self.condition.wait_for(lambda: self.generation != since, max(0.0, timeout_s))


def encode_entry(entry: MemoEntry) -> dict:
    # Through JSON text as reports are stored (store.finish): NaN/inf become null the same way.
    return json.loads(entry.model_dump_json())


def with_performance(entry: MemoEntry, performance: Performance) -> MemoEntry:
    """`entry` with the speed card its run measured after the grade (service/grading/speed_card.py)."""
    return entry.model_copy(update={"performance": performance.model_copy(update={"reused": False})})


def decode_entry(value: dict | None) -> MemoEntry | None:
    if value is None:
        return None
    try:
        return MemoEntry.model_validate(value)
    except ValidationError:
        return None  # an entry this version cannot read is a miss, never an error


class InMemoryMemo:
    def __init__(self) -> None:
        self._entries: dict[str, dict] = {}
        self._made: dict[tuple[str, str, str], tuple[datetime, datetime]] = {}  # environment -> first, last put
        self._claims: dict[str, tuple[str, float]] = {}  # key -> (owner, monotonic expiry)
        self._lock = threading.Lock()
        self._released = threading.Condition(self._lock)

    def get(self, key: str) -> MemoEntry | None:
        with self._lock:
            return decode_entry(self._entries.get(key))

    def put(self, key: str, entry: MemoEntry, *, exercise_id: str, exercise_version: int) -> None:
        with self._lock:
            if key in self._entries:
                return
            self._entries[key] = encode_entry(entry)
            made = (entry.environment.backend, entry.environment.device, entry.environment.triton)
            now = datetime.now(UTC)
            self._made[made] = (self._made.get(made, (now, now))[0], now)

    def environments(self, mode: str) -> list[MemoEnvironment]:
        with self._lock:
            return [MemoEnvironment(device=device, triton=triton, first_at=first, last_at=last)
                    for (made_mode, device, triton), (first, last) in self._made.items()
                    if made_mode == mode and triton]

    def set_performance(self, key: str, performance: Performance) -> bool:
        with self._lock:
            entry = decode_entry(self._entries.get(key))
            if entry is None or entry.performance is None or entry.performance.status != "pending":
                return False
            self._entries[key] = encode_entry(with_performance(entry, performance))
            return True

    def __len__(self) -> int:
        return len(self._entries)

    def claim(self, key: str, *, owner: str, ttl_s: float) -> bool:
        now = time.monotonic()
        with self._lock:
            held = self._claims.get(key)
            if held is not None and held[0] != owner and held[1] > now:
                return False
            self._claims[key] = (owner, now + ttl_s)
            return True

    def release(self, key: str, *, owner: str) -> None:
        with self._lock:
            if self._claims.get(key, ("",))[0] == owner:
                del self._claims[key]
                self._released.notify_all()

    def wait_released(self, key: str, *, timeout_s: float) -> bool:
        deadline = time.monotonic() + timeout_s
        with self._lock:
            while True:
                held = self._claims.get(key)
                now = time.monotonic()
                if held is None or held[1] <= now:
                    return True
                if now >= deadline:
                    return False
                self._released.wait(min(deadline, held[1]) - now)
