"""Fills the shared Triton compile cache (sandbox/compile_cache.py) in the background, GPU only.

What gets compiled is chosen here, on the trusted side, never by a student: each exercise's
reference solution and mutants when the service starts, and each canonical program that has just
been graded. Only `fill_policy: expression` exercises qualify: their programs are the template
with whitelisted expressions substituted, so a compile run executes nothing a student wrote
beyond those expressions. A compile run is an ordinary sandbox run of the program's cases and
given check (the same specialisations a grading run compiles), with a fresh staging folder as
Triton's writable cache; `SharedCompileCache.publish` then moves what compiled into the cache.

`threads` runs at a time (daemon threads), behind the grading: a compile run never holds up a
submission. Each program digest is compiled at most once per process. A program queued after its
grading waits while gradings run in this process (at most `defer_busy_s`): it serves later
gradings under other seeds, not the burst it came from, whose sandbox start-ups it would slow (a
compile run starts its sandbox cold: torch's import is CPU-bound). The catalogue's programs, queued
at start, do not wait.

With `parallel` > 0, a program graded for the first time is compiled before its grading run
instead (`compile_first`, compile_parallel.py): its cases split over that many warm compile
sandboxes at once, the grading waiting for them at most `parallel_wait_s` (0: not at all; it
starts at once and finds whatever they published in time).
"""
from __future__ import annotations

import logging
import os
import queue
import threading
import time
from dataclasses import dataclass, field

from sandbox.backends.base import TritonCacheMount
from sandbox.backends.bwrap import BwrapBackend
from sandbox.compile_cache import SharedCompileCache
from sandbox.contract import DeviceMode, Limits
from sandbox.runner import RUNS_IN_FLIGHT, SandboxRunner
from service.exercises import CaseSpec, Exercise, ExerciseCatalog, ExerciseSpec, shape_candidates, with_shape
from service.grading.assemble import Program, assemble
from service.grading.compile_parallel import COMPILE_SEED, ParallelCompile, ParallelCompiler
from service.grading.extract import extract
from service.grading.run import run_program

log = logging.getLogger("kernelgrade.compile_cache")

# Triton compiles one kernel per specialisation of its arguments: an integer's divisibility by 16
# and whether it is 1 (`native_specialize_impl`), and each constexpr, which a kernel usually
# derives from a width as its next power of two (BLOCK). A drawn case's width and row count pick
# one of a few such classes, so a compile run covers each class once: where widths are runtime
# integers, a grading under any secret seed finds its kernels in the cache. Where the width itself
# is a constexpr (lessons 5-7 pass N and the stride so), every width is a kernel of its own and a
# grading still compiles its drawn cases (docs/benchmarks.md, run F).
MAX_VARIANTS_PER_CASE = 24
MAX_VARIANT_ELEMENTS = 1 << 24  # per drawn case, all its variants together (inputs the warmer makes)


def _shape_class(n: int) -> tuple[int, bool, bool]:
    return (n - 1).bit_length(), n % 16 == 0, n == 1


def covering_cases(spec: ExerciseSpec, secret_seed: int) -> list[CaseSpec]:
    """`spec`'s cases under `secret_seed`, then each drawn case again at one shape of every
    specialisation class its draw allows (up to MAX_VARIANTS_PER_CASE and MAX_VARIANT_ELEMENTS)."""
    graded = spec.cases_for(secret_seed)
    out = list(graded)
    fixed = spec.fixed_widths
    for case, drawn in zip(spec.cases, graded):
        draw = case.draw
        if draw is None or not case.secret:
            continue
        widths: dict[tuple[int, bool, bool], int] = {}
        for n in shape_candidates(draw, fixed):
            if case.stride is None or n < case.stride:  # a view of a wider tensor stays one
                widths.setdefault(_shape_class(n), n)
        heights: dict[tuple[int, bool, bool], int] = {}
        for r in range(draw.rows[0], draw.rows[1] + 1) if draw.rows else (case.rows,):
            heights.setdefault(_shape_class(r), r)
        seen = {(_shape_class(drawn.cols), _shape_class(drawn.rows))}
        added, elements = 0, 0
        for width_class, cols in widths.items():
            for height_class, rows in heights.items():
                if (width_class, height_class) in seen or added >= MAX_VARIANTS_PER_CASE:
                    continue
                if elements + rows * max(cols, case.stride or 0) > MAX_VARIANT_ELEMENTS:
                    continue
                seen.add((width_class, height_class))
                added += 1
                elements += rows * max(cols, case.stride or 0)
                out.append(with_shape(case, cols, rows).model_copy(update={"id": f"{case.id}-class{added}"}))
    return out



@dataclass
class WarmStats:
    queued: int = 0
    compiled: int = 0
    failed: int = 0
    published: int = 0  # key folders added to the cache
    parallel: int = 0  # programs compiled in parallel before their grading run (compile_first)
    parallel_skipped: int = 0  # new programs for which too few compile sandboxes were ready


@dataclass
class CompileWarmer:
    cache: SharedCompileCache
    backend: BwrapBackend  # the one backend that mounts the shared cache (`with_triton_cache`)
    limits: Limits
    device_index: int = 0
    threads: int = 2
    max_queue: int = 256
    mode: DeviceMode = DeviceMode.gpu  # the interpreter compiles nothing: tests only (nothing to publish)
    parallel: int = 0  # warm compile sandboxes for compile_first (0: off)
    parallel_wait_s: float = 5.0  # the most a grading waits for its program's compile runs
    defer_busy_s: float = 30.0  # the most a graded program's compile run waits for gradings to pause
    close_wait_s: float = 15.0  # the most close() waits for the compile runs it stopped to end
    stats: WarmStats = field(default_factory=WarmStats)
    _queue: queue.Queue[tuple[Exercise, Program, int | None, bool] | None] = field(init=False, repr=False)
    _seen: set[str] = field(default_factory=set, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _threads: list[threading.Thread] = field(default_factory=list, repr=False)
    _pending: int = field(default=0, repr=False)
    _running: int = field(default=0, repr=False)  # this warmer's compile runs in flight
    _runners: set[SandboxRunner] = field(default_factory=set, repr=False)  # those runs' runners (close stops them)
    _closed: bool = field(default=False, repr=False)
    _idle: threading.Event = field(default_factory=threading.Event, repr=False)
    _parallel: ParallelCompiler | None = field(default=None, repr=False)
    last_parallel: ParallelCompile | None = field(default=None, repr=False)  # the latest compile_first (tests, bench)

    def __post_init__(self) -> None:
        self._queue = queue.Queue(maxsize=self.max_queue)
        self._idle.set()

    def start(self) -> CompileWarmer:
        while len(self._threads) < self.threads:
            thread = threading.Thread(target=self._loop, name=f"compile-cache-{len(self._threads)}", daemon=True)
            thread.start()
            self._threads.append(thread)
        if self.parallel > 0 and self._parallel is None:
            self._parallel = ParallelCompiler(cache=self.cache, backend=self.backend, limits=self.limits,
                                              mode=self.mode, device_index=self.device_index,
                                              size=self.parallel).start()
        return self

    def compile_first(self, exercise: Exercise, program: Program, cases: list[CaseSpec]) -> ParallelCompile | None:
        """Before a grading run of `program` on `cases` (drawn shapes resolved): compile it in
        parallel into the shared cache and wait for that at most `parallel_wait_s`. None (and no
        wait) when parallel compiling is off, the program does not qualify or was compiled (or
        queued) before, or too few compile sandboxes are ready. The grading runs the same either
        way: this only decides what it finds in the cache."""
        parallel = self._parallel
        if parallel is None or exercise.spec.fill_policy != "expression":
            return None
        with self._lock:
            if program.digest in self._seen:
                return None
            self._seen.add(program.digest)  # the grading's own submit() afterwards: nothing left to do
        try:
            job = parallel.compile(exercise, program, cases)
        except Exception:  # noqa: BLE001 - the cache is an optimisation: the grading compiles alone
            log.exception("parallel compile of %s %s could not start", exercise.id, program.digest[:12])
            job = None
        if job is None:
            with self._lock:
                self._seen.discard(program.digest)  # compiled behind the grading instead, as before
                self.stats.parallel_skipped += 1
            return None
        with self._lock:
            self.stats.parallel += 1
            self.last_parallel = job
        if self.parallel_wait_s > 0:
            job.wait(self.parallel_wait_s)
        return job

    def submit(self, exercise: Exercise, program: Program, secret_seed: int | None = None, *,
               defer: bool = True) -> bool:
        """Queue a program for compiling into the shared cache; False when it does not qualify,
        was queued before, or the queue is full (then it simply compiles again where it runs).
        `secret_seed`: the grading's, so the shapes it drew compile too (a later grading under
        another seed compiles only its own drawn shapes, in its sandbox). `defer`: its run waits
        while gradings run (`defer_busy_s` at most)."""
        if exercise.spec.fill_policy != "expression":
            return False
        with self._lock:
            if program.digest in self._seen:
                return False
            try:
                self._queue.put_nowait((exercise, program, secret_seed, defer))
            except queue.Full:
                return False
            self._seen.add(program.digest)
            self.stats.queued += 1
            self._pending += 1
            self._idle.clear()
        return True

    def submit_catalog(self, catalog: ExerciseCatalog, only: list[str] | None = None) -> int:
        """Queue every exercise's reference solution, then its mutants (the wrong fills students
        most often submit are the ones the author wrote down)."""
        queued = 0
        for exercise in map(catalog.get, only or catalog.ids()):
            if exercise.spec.fill_policy != "expression":
                continue
            codes = [exercise.solution]
            for mutant in exercise.mutants:
                try:
                    codes.append(exercise.mutant_code(mutant))
                except Exception:  # noqa: BLE001 - a broken mutant is validate's business, not ours
                    continue
            for code in codes:
                extraction = extract(exercise.template, code)
                if extraction.error is None and not extraction.edits and not extraction.spills:
                    queued += self.submit(exercise, assemble(exercise.template, extraction.fill_sources),
                                          defer=False)
        return queued

    def wait_parallel_ready(self, timeout_s: float) -> bool:
        """Block until every warm compile sandbox of compile_first is ready (benchmarks and tests)."""
        return self._parallel is not None and self._parallel.wait_ready(timeout_s)

    def wait_idle(self, timeout_s: float) -> bool:
        return self._idle.wait(timeout_s)

    def close(self) -> None:
        """Stop taking work and end the compile runs in progress: their sandboxes are killed
        (SandboxRunner.stop) and close() returns once their threads are done, or after
        `close_wait_s` (logged); what stays queued is dropped. A run left going used to finish in
        its daemon thread after close(), its sandbox outliving the grader."""
        with self._lock:
            self._closed = True
            runners = list(self._runners)
        for runner in runners:
            runner.stop()
        parallel, self._parallel = self._parallel, None
        if parallel is not None:
            parallel.close()
        threads, self._threads = self._threads, []
        for _ in threads:  # wakes a thread waiting for work (one that is not ends at its next look)
            try:
                self._queue.put_nowait(None)
            except queue.Full:
                break
        deadline = time.monotonic() + self.close_wait_s
        for thread in threads:
            thread.join(timeout=max(0.0, deadline - time.monotonic()))
        left = [thread.name for thread in threads if thread.is_alive()]
        if left:
            log.error("compile runs still going %.0f s after close(): %s", self.close_wait_s, ", ".join(left))
        self._idle.set()

    def _loop(self) -> None:
        while True:
            item = self._queue.get()
            if item is None or self._closed:
                return
            exercise, program, secret_seed, defer = item
            if defer:
                self._wait_for_a_pause()
            with self._lock:
                self._running += 1
            try:
                self._compile(exercise, program, secret_seed)
            except Exception:  # noqa: BLE001 - the cache is an optimisation: log and go on
                self.stats.failed += 1
                log.exception("compile run failed")
            finally:
                with self._lock:
                    self._running -= 1
                    self._pending -= 1
                    if self._pending == 0:
                        self._idle.set()

    def gradings_running(self) -> int:
        """Sandbox runs in flight in this process that are not this warmer's compile runs."""
        with self._lock:
            return max(0, RUNS_IN_FLIGHT.count - self._running)

    def _wait_for_a_pause(self) -> None:
        deadline = time.monotonic() + self.defer_busy_s
        while self.gradings_running() > 0 and time.monotonic() < deadline and not self._closed:
            time.sleep(0.1)

    def _compile(self, exercise: Exercise, program: Program, secret_seed: int | None = None) -> None:
        # Writable by the compile sandbox: bwrap hands it to the sandbox's own host uid where it has
        # one (confine); a docker container runs as a fixed uid, which gets it here.
        host_uid = getattr(self.backend, "host_uid", None)
        owner = host_uid(self.mode, self.device_index) if callable(host_uid) else None
        staging = self.cache.new_staging(owner if os.geteuid() == 0 else None)
        runner = SandboxRunner(backend=self.backend.with_triton_cache(TritonCacheMount(staging, writable=True,
                                                                                       reads=self.cache.root)),
                               limits=self.limits)
        # The same run as a grading's (the speed phase's large shape included): the same kernels
        # compile, and those of every other shape a drawn case may take.
        cases = covering_cases(exercise.spec, COMPILE_SEED if secret_seed is None else secret_seed)
        arrays = {c.id: exercise.make_inputs(c, COMPILE_SEED) for c in cases}
        with self._lock:
            if self._closed:  # closed while this one waited: no run starts
                self.cache.discard(staging)
                return
            self._runners.add(runner)
        try:
            run = run_program(runner, exercise, program, arrays, mode=self.mode, device_index=self.device_index,
                              cases=cases)
        except BaseException:
            self.cache.discard(staging)
            raise
        finally:
            with self._lock:
                self._runners.discard(runner)
        if run.infra_error is not None:
            self.cache.discard(staging)
            self.stats.failed += 1
            log.warning("compile run for %s %s: %s", exercise.id, program.digest[:12], run.infra_error)
            return
        published = self.cache.publish(staging)
        self.stats.compiled += 1
        self.stats.published += published.added
        log.info("compiled %s %s into the shared cache: %d new, %d already there, %d refused",
                 exercise.id, program.digest[:12], published.added, published.already, published.refused)
