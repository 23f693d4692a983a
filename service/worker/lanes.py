"""The in-process grading of `kernelgrade serve`: fast threads, sandbox lanes, parked gradings.

A grading is `Grader.steps` (service/grading/pipeline.py), a generator that stops where it would
block. Here:
- **fast threads** claim queued submissions and drive their gradings through everything cheap:
  extraction, refused fills, memo hits, comparison, written answers, the report and its write.
- A `RunStep` goes to the **sandbox lanes**: one per configured GPU (`KERNELGRADE_GPUS`, e.g.
  `0,1`; `0,0` simulates two lanes on one device), each with its own sandbox runner and warm pool
  on its device and as many threads as sandboxes in that pool. Lane threads only run programs;
  the result goes back to a fast thread. The verdict memo, the compile cache and the exercise
  catalogue are the one grader's, shared by every lane. Waiting runs are taken fairly between
  courses (`FairRuns`), as store.claim takes submissions.
- A `ParkStep` (an identical program is in flight elsewhere) **parks** the grading: it holds no
  thread, only its place in `Parking`, which resumes it when the claim it waits on is gone
  (released by a grading of this process: at once; by another process, or expired: within
  `POLL_S`), and then it looks at the memo again (reused_after_wait) or runs the program itself.

Leases as before: one `LeaseKeeper` thread renews the lease of every grading this process holds
(claimed, running, waiting for a lane or parked), each for a bounded time per phase; if the
process dies they all expire and the submissions are claimed again. Nothing is stored in memory
that the database does not also know: a parked grading is a running submission under a lease.
"""
from __future__ import annotations

import logging
import queue
import threading
import time
from collections import deque
from collections.abc import Generator
from dataclasses import dataclass, field

from sqlalchemy.orm import Session, sessionmaker

from sandbox.contract import RunResult
from sandbox.runner import SandboxRunner
from service.db import store
from service.db.models import Submission
from service.exercises import ExerciseNotFound
from service.grading.memo import POLL_S
from service.grading.pipeline import CLAIM_MARGIN_S, GRADING_MARGIN_S, Grader
from service.grading.steps import ParkStep, RunStep, Step
from service.report import Report
from service.submission import Submission as SubmissionBody
from service.worker.grading import gave_up_report
from service.worker.metrics import Metrics
from service.worker.speed_revision import SpeedRevision

log = logging.getLogger("kernelgrade.lanes")


@dataclass
class Grading:
    """One claimed submission on its way through the steps."""

    claim: store.Claim
    row: Submission
    steps: Generator[Step, RunResult | None, Report] | None = None
    claims: list[tuple[str, str]] = field(default_factory=list)  # the memo claim it holds (Grader._release)
    step: Step | None = None
    started: float = field(default_factory=time.monotonic)
    parked_until: float = 0.0  # monotonic: resume at the latest then (the awaited claim's lifetime)
    speed: SpeedRevision | None = None  # its speed card's revision, once the grade is written (#20.1)


class LeaseKeeper:
    """Renews, every third of a lease, the lease of each grading this process holds, until that
    grading's deadline: a grading stuck past every budget it has (a bug of ours) loses its lease,
    so it is retried and, after max_attempts, reported not_gradable, instead of held forever."""

    def __init__(self, sessions: sessionmaker[Session], lease_s: float) -> None:
        self.sessions, self.lease_s = sessions, lease_s
        self._held: dict[str, tuple[store.Claim, float]] = {}  # submission id -> (claim, monotonic deadline)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="leases", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()

    def hold(self, claim: store.Claim, for_s: float) -> None:
        """Keep renewing `claim` for `for_s` more seconds (each phase of a grading sets its own)."""
        with self._lock:
            self._held[claim.submission_id] = (claim, time.monotonic() + for_s)

    def drop(self, claim: store.Claim) -> None:
        with self._lock:
            self._held.pop(claim.submission_id, None)

    def _holds(self, claim: store.Claim) -> bool:
        with self._lock:
            held = self._held.get(claim.submission_id)
        return held is not None and held[0] is claim

    def renew_now(self) -> None:
        with self._lock:
            held = list(self._held.values())
        now = time.monotonic()
        for claim, deadline in held:
            if now > deadline:
                log.error("grading %s ran past its budget: no longer renewing its lease", claim.submission_id)
                self.drop(claim)
                continue
            try:
                with self.sessions() as session:
                    renewed = store.renew_lease(session, claim, lease_s=self.lease_s)
                # A grading drops its claim before it writes its report: a claim dropped since the
                # list was copied above was finished, not lost (no warning for it).
                if not renewed and self._holds(claim):
                    log.warning("lost the lease on %s", claim.submission_id)
                    self.drop(claim)
            except Exception:  # noqa: BLE001 - retried at the next beat
                log.exception("lease renewal failed for %s", claim.submission_id)

    def _loop(self) -> None:
        while not self._stop.wait(self.lease_s / 3):
            self.renew_now()


class Parking:
    """Gradings waiting for an identical program in flight, by memo key; no thread each. One
    thread looks at the awaited claims when `kick`ed (a grading of this process finished a step,
    which may have released one) and every POLL_S (a release by another process, an expiry)."""

    def __init__(self, memo, resume) -> None:
        self.memo, self.resume = memo, resume
        self._parked: dict[str, list[Grading]] = {}
        self._lock = threading.Lock()
        self._kick = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="parking", daemon=True)
        self.parked_total = 0  # gradings ever parked (tests, bench)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._kick.set()

    def __len__(self) -> int:
        with self._lock:
            return sum(len(v) for v in self._parked.values())

    def park(self, grading: Grading, step: ParkStep) -> None:
        grading.parked_until = time.monotonic() + step.timeout_s
        with self._lock:
            self._parked.setdefault(step.key, []).append(grading)
            self.parked_total += 1
        self._kick.set()  # the claim may have gone between the grading's look and now

    def kick(self) -> None:
        self._kick.set()

    def _released(self, key: str) -> bool:
        try:
            return bool(self.memo.wait_released(key, timeout_s=0))
        except Exception:  # noqa: BLE001 - cannot tell: resume them (they look again, or run it themselves)
            log.exception("could not look at the memo claim on %s", key[:12])
            return True

    def check(self) -> int:
        """Resume the gradings whose claim is gone or whose wait is over; returns how many."""
        with self._lock:
            keys = list(self._parked)
        resumed = 0
        now = time.monotonic()
        for key in keys:
            gone = self._released(key)
            with self._lock:
                waiting = self._parked.get(key, [])
                ready = waiting if gone else [g for g in waiting if g.parked_until <= now]
                left = [] if gone else [g for g in waiting if g.parked_until > now]
                if left:
                    self._parked[key] = left
                else:
                    self._parked.pop(key, None)
            for grading in ready:
                self.resume(grading)
            resumed += len(ready)
        return resumed

    def _loop(self) -> None:
        while not self._stop.is_set():
            self._kick.wait(POLL_S)
            self._kick.clear()
            try:
                self.check()
            except Exception:  # noqa: BLE001 - looked at again at the next poll
                log.exception("parking check failed")


class FairRuns:
    """The gradings waiting for a lane, handed out fairly between courses, as store.claim hands out
    submissions: a free lane thread takes the earliest waiting run of the course with the fewest
    runs in a lane now, ties going to the course whose latest run started longest ago (never first),
    then to the one whose run has waited longest. Within a course, first come first run. Fast
    threads claim up to `max_waiting_runs` ahead of the lanes; without this, another course's run,
    claimed at once, would still wait behind all of them."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._waiting: dict[str, deque[tuple[int, Grading]]] = {}  # course -> (arrival, grading), oldest first
        self._running: dict[str, int] = {}
        self._last_start: dict[str, int] = {}
        self._seq = 0
        self._stops = 0

    def put(self, course_id: str, grading: Grading) -> None:
        with self._cond:
            self._seq += 1
            self._waiting.setdefault(course_id, deque()).append((self._seq, grading))
            self._cond.notify()

    def stop_one(self) -> None:
        """One waiting (or the next) `get` returns None."""
        with self._cond:
            self._stops += 1
            self._cond.notify()

    def get(self) -> Grading | None:
        with self._cond:
            while not self._waiting and not self._stops:
                self._cond.wait()
            if self._stops:
                self._stops -= 1
                return None
            course = min(self._waiting, key=lambda c: (self._running.get(c, 0), self._last_start.get(c, 0),
                                                        self._waiting[c][0][0]))
            runs = self._waiting[course]
            _, grading = runs.popleft()
            if not runs:
                del self._waiting[course]
            self._seq += 1
            self._running[course] = self._running.get(course, 0) + 1
            self._last_start[course] = self._seq
            return grading

    def done(self, course_id: str) -> None:
        """A run of `course_id` left its lane."""
        with self._cond:
            left = self._running.get(course_id, 0) - 1
            if left > 0:
                self._running[course_id] = left
            else:
                self._running.pop(course_id, None)


@dataclass
class Lane:
    """One GPU's sandboxes: its own runner (so its own warm pool) on `device_index`."""

    index: int
    device_index: int
    runner: SandboxRunner
    threads: int
    runs: int = 0  # programs this lane ran (tests, bench)


class Lanes:
    """Fast threads + sandbox lanes over one grader (see the module's docstring)."""

    def __init__(self, *, sessions: sessionmaker[Session], grader: Grader, lane_devices: list[int],
                 lane_threads: int, fast_threads: int, lease_s: float, max_attempts: int,
                 metrics: Metrics | None = None, max_waiting_runs: int | None = None) -> None:
        self.sessions, self.grader, self.metrics = sessions, grader, metrics
        self.lease_s, self.max_attempts = lease_s, max_attempts
        self.fast_threads = max(1, fast_threads)
        # Lane 0 runs on the grader's own runner (its warm pool tells the memo key its device);
        # each further lane gets a runner of its own: same backend and limits, its own pool.
        self.lanes = [Lane(index=i, device_index=device,
                           runner=grader.runner if i == 0 else SandboxRunner(
                               backend=grader.runner.backend, limits=grader.runner.limits,
                               work_root=grader.runner.work_root),
                           threads=max(1, lane_threads))
                      for i, device in enumerate(lane_devices or [grader.device_index])]
        grader.device_index = self.lanes[0].device_index
        # Claim no new submission while this many wait for a lane (parked ones do not count):
        # beyond it the runs would only wait here instead of in the database.
        self.max_waiting_runs = max_waiting_runs or 4 * self.sandbox_slots
        self.leases = LeaseKeeper(sessions, lease_s)
        self.parking = Parking(grader.memo, self._resume)
        self._ready: queue.Queue = queue.Queue()  # (grading, value to send) for a fast thread; None: poll the db
        self._runs = FairRuns()  # gradings waiting for a lane
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._count_lock = threading.Lock()
        self.busy_fast = 0  # fast threads working on a grading now
        self.busy_lanes = 0  # lane threads running a program now
        self.waiting_runs = 0

    @property
    def sandbox_slots(self) -> int:
        return sum(lane.threads for lane in self.lanes)

    def start(self) -> None:
        try:
            self.grader.start()  # lane 0's warm pool (and the compile cache)
            for lane in self.lanes[1:]:
                lane.runner.start_pool(mode=self.grader.mode, device_index=lane.device_index,
                                       size=self.grader.warm_pool)
        except Exception:  # noqa: BLE001 - grading still works cold
            log.exception("could not start the warm sandbox pools")
        self.leases.start()
        self.parking.start()
        for i in range(self.fast_threads):
            self._threads.append(threading.Thread(target=self._fast_loop, name=f"fast-{i}", daemon=True))
        for lane in self.lanes:
            for i in range(lane.threads):
                self._threads.append(threading.Thread(target=self._lane_loop, args=(lane,),
                                                      name=f"lane-{lane.index}-{i}", daemon=True))
        for thread in self._threads:
            thread.start()

    def stop(self) -> None:
        self._stop.set()
        for _ in range(self.fast_threads):
            self._ready.put(None)
        for _ in range(self.sandbox_slots):
            self._runs.stop_one()
        self.parking.stop()
        self.leases.stop()
        for thread in self._threads:
            thread.join(timeout=2)
        for lane in self.lanes[1:]:
            lane.runner.close()
        self.grader.close()

    def wake(self) -> None:
        """A submission was stored: a fast thread claims it now rather than at its next poll."""
        self._ready.put(None)

    def counts(self) -> dict[str, int]:
        with self._count_lock:
            return {"busy_fast": self.busy_fast, "busy_lanes": self.busy_lanes, "waiting_runs": self.waiting_runs,
                    "parked": len(self.parking), "parked_total": self.parking.parked_total,
                    **{f"lane_{lane.index}_runs": lane.runs for lane in self.lanes}}

    def _busy(self, name: str, delta: int) -> None:
        with self._count_lock:
            setattr(self, name, getattr(self, name) + delta)

    # --- fast threads -------------------------------------------------------------------------

    def _fast_loop(self) -> None:
        while not self._stop.is_set():
            try:
                item = self._ready.get_nowait()
            except queue.Empty:
                item = None
            if item is None and self.waiting_runs < self.max_waiting_runs:
                claim = self._claim()
                if claim is not None:
                    self._busy("busy_fast", 1)
                    try:
                        self._begin(claim)
                    finally:
                        self._busy("busy_fast", -1)
                    continue
            if item is None:
                try:
                    item = self._ready.get(timeout=1.0)
                except queue.Empty:
                    continue
                if item is None:
                    continue
            grading, value = item
            self._busy("busy_fast", 1)
            try:
                self._advance(grading, value)
            finally:
                self._busy("busy_fast", -1)

    def _claim(self) -> store.Claim | None:
        try:
            with self.sessions() as session:
                return store.claim(session, lease_s=self.lease_s)
        except Exception:  # noqa: BLE001 - the database may be restarting: try again shortly
            log.exception("claiming failed")
            self._stop.wait(2)
            return None

    def _begin(self, claim: store.Claim) -> None:
        """Start a claimed grading: the same preamble as grade_claimed (service/worker/grading.py)."""
        with self.sessions() as session:
            row = session.get_one(Submission, claim.submission_id)
            body = SubmissionBody.model_validate(row.body)
            # A submission has reports exactly when it has a current one (store.finish says why).
            regrade = row.current_report_id is not None
            session.expunge(row)
        grading = Grading(claim=claim, row=row)
        try:
            exercise = self.grader.catalog.get(body.exercise)
        except ExerciseNotFound as exc:
            self._finish(grading, gave_up_report(row, None, str(exc)))
            return
        if claim.attempt > self.max_attempts:
            self._finish(grading, gave_up_report(
                row, exercise, f"grading was interrupted {claim.attempt - 1} times (worker died or timed out)"))
            return
        self.leases.hold(claim, self._phase_s())
        self.grader.learn_environment()  # before any sandbox said hello (a restart): at most every 30 s
        # A regrade asks for a fresh run: never answered from the verdict memo.
        grading.speed = SpeedRevision(self.sessions, row.id, wait_s=self.grader.max_grading_s())
        grading.steps = self.grader.steps(body, submission_id=row.id, secret_seed=row.secret_seed,
                                          reuse=not regrade, claims=grading.claims, on_speed=grading.speed.on_speed)
        self._advance(grading, None)

    def _phase_s(self, run: bool = False) -> float:
        limits = self.grader.runner.limits
        return (limits.run_timeout_s if run else 0.0) + GRADING_MARGIN_S

    def _advance(self, grading: Grading, value: RunResult | None | BaseException) -> None:
        """Drive a grading to its next blocking step (or its report) on this fast thread."""
        assert grading.steps is not None
        try:
            if isinstance(value, BaseException):
                step = grading.steps.throw(value)
            else:
                step = grading.steps.send(value)
        except StopIteration as done:
            self._finish(grading, done.value)
            return
        except Exception as exc:  # noqa: BLE001 - our bug must become not_gradable, never a lost submission
            log.exception("grading %s failed", grading.claim.submission_id)
            exercise = self._exercise(grading.row.exercise_id)
            self._finish(grading, gave_up_report(grading.row, exercise, f"{type(exc).__name__}: {exc}"))
            return
        finally:
            self.parking.kick()  # the step may have released a memo claim
        grading.step = step
        if isinstance(step, RunStep):
            # Waiting for a lane: at most max_waiting_runs ahead of it, each bounded by the run budget.
            runs_ahead = self.max_waiting_runs / self.sandbox_slots + 1
            self.leases.hold(grading.claim, runs_ahead * self._phase_s(run=True))
            self._busy("waiting_runs", 1)
            self._runs.put(grading.row.course_id, grading)
        else:
            # Parked: renewed while the claim it waits on may live, and a margin to finish after.
            self.leases.hold(grading.claim, step.timeout_s + self._phase_s(run=True) + CLAIM_MARGIN_S)
            self.parking.park(grading, step)

    def _exercise(self, exercise_id: str):
        try:
            return self.grader.catalog.get(exercise_id)
        except ExerciseNotFound:
            return None

    def _resume(self, grading: Grading) -> None:
        self._ready.put((grading, None))

    def _finish(self, grading: Grading, report: Report) -> None:
        self.grader._release(grading.claims)  # noqa: SLF001 - the grading's memo claim, however it ended
        self.parking.kick()
        self.leases.drop(grading.claim)
        written_id = None
        try:
            with self.sessions() as session:
                written = store.finish(session, grading.claim, report)
                written_id = written.id if written is not None else None
        except Exception:  # noqa: BLE001 - the lease expires and the submission is retried
            log.exception("could not write the report of %s", grading.claim.submission_id)
            return
        finally:
            if grading.speed is not None:
                grading.speed.graded(written_id)
        if written is None:
            log.warning("lease on %s was lost; discarded this worker's report", grading.claim.submission_id)
            return
        if self.metrics is not None:
            self.metrics.graded(report, time.monotonic() - grading.started)

    # --- sandbox lanes ------------------------------------------------------------------------

    def _lane_loop(self, lane: Lane) -> None:
        while not self._stop.is_set():
            grading = self._runs.get()
            if grading is None:
                continue
            self._busy("waiting_runs", -1)
            self._busy("busy_lanes", 1)
            step = grading.step
            assert isinstance(step, RunStep)
            self.leases.hold(grading.claim, self._phase_s(run=True))
            try:
                value: RunResult | BaseException = self.grader.run_step(step, runner=lane.runner,
                                                                        device_index=lane.device_index)
                with self._count_lock:
                    lane.runs += 1
            except Exception as exc:  # noqa: BLE001 - thrown into the grading, which becomes not_gradable
                value = exc
            finally:
                self._busy("busy_lanes", -1)
                self._runs.done(grading.row.course_id)
            self._ready.put((grading, value))
