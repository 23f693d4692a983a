"""A new program's specialisations, compiled in parallel before (or while) its grading run (GPU).

Without this, the grading sandbox of a fill nobody submitted before compiles every specialisation
of the cases itself, one after the other (lesson 6: about 12, ~40-50 ms each on an H200), and the
trusted side's compile run (compile_warm.py) fills the shared cache only after the grading. Here
the trusted side splits the program's cases into groups, one per distinct compile-relevant shape
(`split_cases`), and runs each group at once in a warm compile sandbox of its own: started ahead of
demand like the grading pool's, each with a fresh staging folder as Triton's writable cache
(`CompileSandboxes`). What each one compiled is published into the shared read-only cache as soon
as it ends (`SharedCompileCache.publish`: only what its staging folder holds, never following a
link), so the grading sandbox finds it there.

The same rules as the background warmer: only `fill_policy: expression` programs (template plus
whitelisted expressions), each program digest at most once per process, and never the speed
phase (its 256 MiB input and timing would cost more than the one kernel it compiles). The grading
run itself is unchanged: a fill that does not compile fails there exactly as it did; a compile
that is late or fails only costs the grading its own compiles, as before.
"""
from __future__ import annotations

import logging
import os
import shutil
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, cast

from sandbox.backends.base import TritonCacheMount
from sandbox.compile_cache import SharedCompileCache
from sandbox.contract import DeviceMode, Limits
from sandbox.pool import Sandbox, WarmPool, copy_harness, new_job_dir, start_sandbox
from sandbox.runner import SandboxRunner
from service.exercises import CaseSpec, Exercise
from service.grading.assemble import Program
from service.grading.run import run_program

if TYPE_CHECKING:
    from sandbox.backends.bwrap import BwrapBackend

log = logging.getLogger("kernelgrade.compile_cache")

COMPILE_SEED = 0  # inputs only fix shapes and dtypes here; the values do not matter
# What a case's kernels are specialised on is decided by its shape, layout and arguments, not by
# the values drawn into it: cases that agree on everything but these compile the same kernels.
_VALUE_ONLY = {"id", "kind", "seed", "secret", "data", "description", "targets", "draw", "calls"}


@dataclass(frozen=True)
class CompileGroup:
    """What one compile run runs: some cases, and perhaps the given check."""

    cases: list[CaseSpec]
    given: bool = False

    @property
    def weight(self) -> int:
        return len(self.cases) + (2 if self.given else 0)


def compile_key(case: CaseSpec) -> str:
    return case.model_dump_json(exclude=_VALUE_ONLY)


def split_cases(cases: list[CaseSpec], *, groups: int, given_weight: int = 0) -> list[CompileGroup]:
    """At most `groups` groups, none empty, covering one case of each compile key (a shape seen
    before compiles nothing new); the given check (`given_weight` > 0: its calls) goes to a group
    of its own weight. Longest first onto the lightest group, so the slowest run is short."""
    representatives: dict[str, CaseSpec] = {}
    for case in cases:
        representatives.setdefault(compile_key(case), case)
    units: list[tuple[int, CaseSpec | None]] = [(1, case) for case in representatives.values()]
    if given_weight > 0:
        units.insert(0, (given_weight, None))
    count = max(1, min(groups, len(units)))
    loads = [0] * count
    members: list[list[CaseSpec | None]] = [[] for _ in range(count)]
    for weight, unit in sorted(units, key=lambda u: -u[0]):  # stable: the cases keep their order
        lightest = loads.index(min(loads))
        loads[lightest] += weight
        members[lightest].append(unit)
    return [CompileGroup(cases=[c for c in m if c is not None], given=None in m) for m in members if m]


@dataclass
class _Slot:
    """A warm compile sandbox, its staging folder, and a runner whose cold retries mount it too."""

    sandbox: Sandbox
    staging: Path
    runner: SandboxRunner


class _Handed:
    """The runner's view of a slot's one warm sandbox (SandboxRunner takes warm ones from `pools`)."""

    def __init__(self, sandbox: Sandbox) -> None:
        self._sandbox: Sandbox | None = sandbox

    def acquire(self, *, wait: bool = False) -> Sandbox | None:
        sandbox, self._sandbox = self._sandbox, None
        return sandbox if sandbox is not None and sandbox.alive() else None

    def close(self) -> None:
        if self._sandbox is not None:
            self._sandbox.kill()
            self._sandbox = None


class CompileSandboxes(WarmPool):
    """Warm sandboxes for compile runs: each mounts a fresh staging folder of `cache` as Triton's
    writable cache (GPU; the interpreter mounts nothing, so its staging folders stay empty)."""

    def __init__(self, *, cache: SharedCompileCache, backend: BwrapBackend, limits: Limits, mode: DeviceMode,
                 device_index: int, size: int, work_root: Path | None = None) -> None:
        super().__init__(backend=backend, limits=limits, mode=mode, device_index=device_index, size=size,
                         work_root=work_root)
        self.cache, self.base = cache, backend
        self._slots: dict[int, _Slot] = {}  # by the sandbox's pid, while it waits

    def take(self) -> _Slot | None:
        sandbox = self.acquire()
        if sandbox is None:
            return None
        with self._lock:
            slot = self._slots.pop(sandbox.proc.pid, None)
        if slot is None:  # not started by our _start_one: no staging folder of its own, never a compile run's
            sandbox.kill(self.limits.kill_grace_s)
        return slot

    def close(self) -> None:
        super().close()
        with self._lock:
            slots, self._slots = list(self._slots.values()), {}
        for slot in slots:
            self.cache.discard(slot.staging)

    def _start_one(self) -> None:
        # Writable by the compile sandbox: bwrap's confine() hands it to the sandbox's own host uid
        # where it has one; a docker container runs as a fixed uid, which gets it here (as the warmer).
        host_uid = getattr(self.base, "host_uid", None)
        owner = host_uid(self.mode, self.device_index) if callable(host_uid) and os.geteuid() == 0 else None
        staging = self.cache.new_staging(owner)
        backend = self.base.with_triton_cache(TritonCacheMount(staging, writable=True, reads=self.cache.root))
        job_dir = new_job_dir(self.work_root)
        try:
            runner = SandboxRunner(backend=backend, limits=self.limits, work_root=self.work_root)
            copy_harness(job_dir)
            sandbox = start_sandbox(backend=backend, limits=self.limits, job_dir=job_dir, mode=self.mode,
                                    device_index=self.device_index, warm=True)
        except BaseException:
            shutil.rmtree(job_dir, ignore_errors=True)
            self.cache.discard(staging)
            raise
        runner.pools[(self.mode, self.device_index)] = cast(WarmPool, _Handed(sandbox))
        self.started_total += 1
        with self._lock:
            self._slots[sandbox.proc.pid] = _Slot(sandbox=sandbox, staging=staging, runner=runner)
            self._waiting.append(sandbox)

    def _discard(self, sandbox: Sandbox, why: str) -> None:
        slot = self._slots.pop(sandbox.proc.pid, None)  # the lock is held (WarmPool)
        super()._discard(sandbox, why)
        if slot is not None:
            self.cache.discard(slot.staging)


@dataclass
class ParallelCompile:
    """One program's compile runs, in flight or done."""

    digest: str
    groups: list[CompileGroup]
    started_at: float = field(default_factory=time.monotonic)
    ended_at: float | None = None
    published: int = 0  # key folders added to the shared cache
    failed: int = 0  # runs that could not run (infra error); a program's own errors are not failures here
    run_spans: list[tuple[float, float]] = field(default_factory=list)  # (start, end) of each run, monotonic
    waited_s: float = 0.0  # how long the grading waited for them (CompileWarmer.compile_first)
    statuses: dict[str, str] = field(default_factory=dict)  # case id (`<given>`) -> its status in the compile run
    _done: threading.Event = field(default_factory=threading.Event, repr=False)
    _left: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def runs(self) -> int:
        return len(self.groups)

    def wait(self, timeout_s: float) -> bool:
        waiting = time.monotonic()
        try:
            return self._done.wait(timeout_s)
        finally:
            self.waited_s += time.monotonic() - waiting

    def timing(self) -> dict[str, float]:
        """The grading report's `timing` entries: runs, the grading's wait, and the compile's
        wall time once it is over (in the `while` setting it may end after the grading run began)."""
        with self._lock:
            timing = {"parallel_compile_runs": float(self.runs), "parallel_compile_wait_s": self.waited_s}
            if self.ended_at is not None:
                timing["parallel_compile_s"] = self.ended_at - self.started_at
            return timing

    def done(self) -> bool:
        return self._done.is_set()

    def _finished(self, span: tuple[float, float], *, published: int, failed: bool,
                  statuses: dict[str, str]) -> None:
        with self._lock:
            self.run_spans.append(span)
            self.statuses.update(statuses)
            self.published += published
            self.failed += failed
            self._left -= 1
            if self._left == 0:
                self.ended_at = time.monotonic()
                self._done.set()


@dataclass
class ParallelCompiler:
    """`size` warm compile sandboxes; `compile` spreads a program's cases over those ready."""

    cache: SharedCompileCache
    backend: BwrapBackend
    limits: Limits
    mode: DeviceMode = DeviceMode.gpu
    device_index: int = 0
    size: int = 4
    min_runs: int = 2  # fewer ready than this: no parallel compile (the grading compiles alone, as before)
    work_root: Path | None = None
    pool: CompileSandboxes | None = field(default=None, repr=False)
    _take: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def start(self) -> ParallelCompiler:
        if self.pool is None and self.size > 0:
            self.backend.check()
            pool = CompileSandboxes(cache=self.cache, backend=self.backend, limits=self.limits, mode=self.mode,
                                    device_index=self.device_index, size=self.size, work_root=self.work_root)
            pool.start()
            self.pool = pool
        return self

    def wait_ready(self, timeout_s: float) -> bool:
        """Block until every compile sandbox is ready (benchmarks and tests)."""
        return self.pool is not None and self.pool.wait_ready(self.size, timeout_s)

    def close(self) -> None:
        pool, self.pool = self.pool, None
        if pool is not None:
            pool.close()

    def compile(self, exercise: Exercise, program: Program, cases: list[CaseSpec]) -> ParallelCompile | None:
        """Start compiling `program` for `cases` (the grading's, drawn shapes resolved) and its given
        check, in as many warm compile sandboxes as are ready (at most one per group); returns at
        once. None when fewer than `min_runs` are ready (or the program does not qualify)."""
        pool = self.pool
        if pool is None or exercise.spec.fill_policy != "expression":
            return None
        with self._take:  # one program takes its sandboxes at a time: two never split the pool in halves too small
            ready = min(pool.ready_count(), self.size)
            if ready < self.min_runs:
                return None
            groups = split_cases(cases, groups=ready, given_weight=exercise.spec.given_check.calls or 1)
            if len(groups) < self.min_runs:  # one run would only move the serial compile out of the grading
                return None
            slots: list[_Slot] = []
            while len(slots) < len(groups) and (slot := pool.take()) is not None:
                slots.append(slot)
        if not slots:
            return None
        if len(slots) < len(groups):  # one died since it was counted: fewer, larger groups
            groups = split_cases(cases, groups=len(slots), given_weight=exercise.spec.given_check.calls or 1)
        job = ParallelCompile(digest=program.digest, groups=groups, _left=len(groups))
        for slot, group in zip(slots, groups):
            threading.Thread(target=self._run, args=(slot, group, exercise, program, job), daemon=True,
                             name=f"compile-{program.digest[:8]}").start()
        return job

    def _run(self, slot: _Slot, group: CompileGroup, exercise: Exercise, program: Program,
             job: ParallelCompile) -> None:
        started, published, failed = time.monotonic(), 0, True
        statuses: dict[str, str] = {}
        try:
            arrays = {c.id: exercise.make_inputs(c, COMPILE_SEED) for c in group.cases}
            run = run_program(slot.runner, exercise, program, arrays, mode=self.mode, device_index=self.device_index,
                              cases=group.cases, with_given=group.given, with_speed=False)
            statuses = {c.id: c.status for c in run.cases}
            if run.given is not None:
                statuses["<given>"] = run.given.status
            if run.infra_error is None:
                result = self.cache.publish(slot.staging)
                published, failed = result.added, False
                log.info("compile run of %s %s (%d cases%s): %d new in the shared cache", exercise.id,
                         program.digest[:12], len(group.cases), ", given check" if group.given else "", result.added)
            else:
                log.warning("compile run of %s %s: %s", exercise.id, program.digest[:12], run.infra_error)
        except Exception:  # noqa: BLE001 - the cache is an optimisation: log and go on
            log.exception("compile run of %s %s failed", exercise.id, program.digest[:12])
        finally:
            if os.path.lexists(slot.staging):  # not published (publish removes it)
                self.cache.discard(slot.staging)
            slot.runner.close()  # its handed sandbox, if the run never took it
            job._finished((started, time.monotonic()), published=published, failed=failed, statuses=statuses)
