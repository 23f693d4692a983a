"""The grading pipeline, which only sequences: extract -> assemble -> run -> compare -> diagnose -> score -> report.

`Grader.grade` returns a report in every case; failures of the service become `not_gradable`
reports (costing the student nothing), failures of the submission become graded reports. The sandbox
run is run.py, case comparison cases.py; the grader is wired from settings in service/bootstrap.py.
"""
from __future__ import annotations

import functools
import logging
import secrets
import threading
import time
import uuid
from collections.abc import Callable, Generator
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING

import numpy as np

from sandbox.contract import DeviceMode, RunResult, SpeedRun
from sandbox.runner import SandboxRunner
from sandbox.speed_phase import SpeedPhase
from service.exercises import CaseSpec, Exercise, ExerciseCatalog, ExerciseSpec
from service.grading import host_blanks, passrule, rubric
from service.grading.assemble import Program, assemble
from service.grading.cases import case_texts, compare_cases, overwritten_inputs
from service.grading.claims import parse_claim, unverified_claim
from service.grading.extract import extract
from service.grading.fills import (
    InterpreterGap,
    block_pointers_removed,
    builds_block_pointer,
    fill_refusal,
    interpreter_gaps,
    triton_version,
)
from service.grading.freetext import TextScore
from service.grading.given import given_output_in, verify_given
from service.grading.inputs import case_seed
from service.grading.memo import MemoEntry, VerdictMemo, memo_key, memoisable, settled_environment
from service.grading.model_assist import ModelAssist
from service.grading.not_gradable import not_gradable_report
from service.grading.run import run_program, run_timing
from service.grading.sandbox_text import gpu_only_shown, render_speed
from service.grading.speed import performance as speed_performance
from service.grading.speed import restated, unmeasured
from service.grading.speed_card import SPEED_IN_FLIGHT, OnSpeed, follow, follow_memo, kernel_passed
from service.grading.steps import ParkStep, RunStep, Step
from service.grading.translate import other_languages, translated
from service.grading.uninit import uninitialised_reads
from service.grading.warm import start_warming
from service.messages import Language, render, report_language
from service.report import (
    CaseReport,
    CaseTexts,
    Diagnosis,
    Environment,
    ExerciseRef,
    GivenCheckReport,
    Item,
    Performance,
    ProgramReport,
    Report,
    Seeds,
)
from service.submission import Submission

if TYPE_CHECKING:
    from service.grading.compile_parallel import ParallelCompile
    from service.grading.compile_warm import CompileWarmer

log = logging.getLogger("kernelgrade.grader")

ENVIRONMENT_RETRY_S = 1.0  # learn_environment: how often a grader that knows no environment asks the memo
# (one grouped query on an index; longer made a fast-only worker started on an empty memo send the
# programs of its first half minute to the sandbox queue unparked)
CLAIM_MARGIN_S = 60.0  # a memo claim outlives the run's time budget by this (inputs, comparison)
GRADING_MARGIN_S = 120.0  # beyond the run and memo budgets, before a grading's lease stops being renewed


@dataclass
class GradeCounts:
    """What one grader's gradings did with their programs (tests and bench/grade_speed.py read it):
    sandbox runs, code results reused from the memo, and of those the ones that waited for an
    identical program in flight; `ran_after_wait`: waited, found nothing to reuse, ran it."""

    sandbox_runs: int = 0
    reused: int = 0
    reused_after_wait: int = 0
    ran_after_wait: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def add(self, **deltas: int) -> None:
        with self._lock:
            for name, delta in deltas.items():
                setattr(self, name, getattr(self, name) + delta)

    def snapshot(self) -> dict[str, int]:
        with self._lock:
            return {"sandbox_runs": self.sandbox_runs, "reused": self.reused,
                    "reused_after_wait": self.reused_after_wait, "ran_after_wait": self.ran_after_wait}


@dataclass
class Grader:
    catalog: ExerciseCatalog
    runner: SandboxRunner
    mode: DeviceMode
    device_index: int = 0
    assist: ModelAssist | None = None  # optional second opinion on written answers
    memo: VerdictMemo | None = None  # reuse code results of identical programs (deterministic exercises)
    warm_pool: int = 0  # sandboxes kept started ahead of demand once start() is called
    compile_cache: CompileWarmer | None = None  # fills the shared Triton cache (GPU); None: each sandbox compiles alone
    prewarm: bool = False  # start(): queue every exercise's solution and mutants for the compile cache
    cpu_speed_timer: bool = False  # tests only: the interpreter runs the speed phase too, with a plain clock
    speed_after_grade: bool = True  # False: grade() waits for the speed card even when given `on_speed`
    # Speed phases going on after their grade (each holds a sandbox): past this, a kernel is not timed (busy).
    _speed_slots: threading.BoundedSemaphore = field(
        default_factory=lambda: threading.BoundedSemaphore(SPEED_IN_FLIGHT), repr=False)
    _environment_seen: dict[str, str] | None = field(default=None, repr=False)  # the last sandbox's hello
    _environment_asked: float | None = field(default=None, repr=False)  # monotonic time learn_environment asked
    _environment_lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    counts: GradeCounts = field(default_factory=GradeCounts, repr=False)
    _followers: list[threading.Thread] = field(default_factory=list, repr=False)  # speed cards still to come
    _followers_lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    warm_first_use: bool = True  # start(): pay a first grading's once-per-process costs in the background (warm.py)
    warming: threading.Thread | None = field(default=None, repr=False)  # that warm-up, once started
    _stop_warming: threading.Event = field(default_factory=threading.Event, repr=False)

    def start(self) -> None:
        """Start the warm sandbox pool (the service's workers; one-off graders never do), and pay what a
        first grading pays once per process in a thread of its own (service/grading/warm.py)."""
        if self.warm_first_use and self.warming is None:
            try:
                self.warming = start_warming(self.catalog, mode=self.mode, stop=self._stop_warming)
            except Exception:  # noqa: BLE001 - a speed-up only: never the start's failure
                log.exception("could not start the first-use warm-up")
        if self.compile_cache is not None:
            self.compile_cache.start()
            if self.prewarm:
                self.compile_cache.submit_catalog(self.catalog)
        pool = self.runner.start_pool(mode=self.mode, device_index=self.device_index, size=self.warm_pool)
        if pool is not None and pool.environment and self._environment_seen is None:
            self._environment_seen = dict(pool.environment)

    def learn_environment(self) -> bool:
        """Make sure the memo key can be computed before any sandbox of this grader said hello (a
        Celery fast-only worker, which starts none; `serve` just restarted, its warm pool not up):
        take the device and Triton version from the memo's entries of this mode when they settle on
        one (memo.settled_environment: a single environment, or one that replaced the others; with
        interleaved ones, a fleet of mixed GPUs, no guess). Until then gradings carry no memo key
        (no reuse, no waiting). The memo is asked at most once per ENVIRONMENT_RETRY_S while the
        environment is unknown, and never once a sandbox or the memo told it. True: known."""
        if self._environment_seen is not None or self._pool_environment() is not None:
            return True
        environments = getattr(self.memo, "environments", None)
        if not callable(environments):
            return False
        now = time.monotonic()
        with self._environment_lock:
            if self._environment_asked is not None and now - self._environment_asked < ENVIRONMENT_RETRY_S:
                return False
            self._environment_asked = now
        try:
            settled = settled_environment(environments(self.mode.value))
        except Exception:  # noqa: BLE001 - the memo is an optimisation: ask again after the interval
            log.exception("could not read the memo's environments")
            return False
        if settled is None:
            return False
        with self._environment_lock:
            if self._environment_seen is None:  # a sandbox's hello meanwhile is the better answer
                self._environment_seen = {"mode": self.mode.value, "device": settled.device,
                                          "triton": settled.triton}
        return True

    def max_grading_s(self) -> float:
        """The longest one grading may take: the sandbox's run budget, a wait for an identical
        program in flight (at most a claim's lifetime), and a margin for the rest (inputs,
        comparison, written answers: each bounded by the submission's size caps), and the run of
        its kernel fills alone where it has host blanks too, and its kernel contribution zeroed where
        that run failed a case the program passed (host_blanks.py): three run budgets."""
        run_s = self.runner.limits.run_timeout_s
        return 3 * run_s + (run_s + CLAIM_MARGIN_S) + GRADING_MARGIN_S

    def close(self) -> None:
        """Kill the waiting sandboxes, after the speed cards still to come (each bounded by its budget)."""
        self._stop_warming.set()
        deadline = time.monotonic() + self._speed_wait_s()
        with self._followers_lock:
            followers = list(self._followers)
        for thread in followers:
            thread.join(max(0.0, deadline - time.monotonic()))
        self.runner.close()
        if self.compile_cache is not None:
            self.compile_cache.close()

    def grade(self, submission: Submission, *, submission_id: str | None = None, secret_seed: int | None = None,
              reuse: bool = True, on_speed: OnSpeed | None = None) -> Report:
        """`reuse=False` (a regrade) runs the program even when the memo holds its results, and
        never waits for an identical program in flight (`_lookup`). All at once, in this thread
        (CLI, validate, bench); the service's workers drive `steps` instead (service/worker/lanes.py).
        `on_speed`: the report comes back with the speed card `pending`, and the card is handed to
        `on_speed` from another thread once measured (service/grading/speed_card.py); without it,
        the grading waits for it."""
        report = self.drive(submission, submission_id=submission_id, secret_seed=secret_seed, reuse=reuse,
                            on_speed=on_speed)
        assert report is not None  # only a refusing `on_step` ends a grading without a report
        return report

    def drive(self, submission: Submission, *, submission_id: str | None = None, secret_seed: int | None = None,
              reuse: bool = True, on_speed: OnSpeed | None = None,
              on_step: Callable[[Step, list[tuple[str, str]]], bool] | None = None) -> Report | None:
        """`steps` driven in this thread: each RunStep run here, each ParkStep waited for here.
        `on_step` (the workers: a lease check, or Celery handing the step to another queue) is
        asked first with the step and the memo claims held; False ends the grading with no report
        (None). The claims are released however it ends."""
        claims: list[tuple[str, str]] = []  # the memo claim this grading holds
        try:
            steps = self.steps(submission, submission_id=submission_id, secret_seed=secret_seed, reuse=reuse,
                               claims=claims, on_speed=on_speed)
            answer: RunResult | None = None
            while True:
                try:
                    step = steps.send(answer)
                except StopIteration as done:
                    return done.value
                if on_step is not None and not on_step(step, claims):
                    steps.close()
                    return None
                if isinstance(step, RunStep):
                    answer = self.run_step(step)
                else:
                    self.wait_step(step)
                    answer = None
        finally:
            self._release(claims)

    def run_step(self, step: RunStep, *, runner: SandboxRunner | None = None,
                 device_index: int | None = None) -> RunResult:
        """The sandbox part of a grading: its program, on `runner`'s device (a lane's; default this
        grader's), after its kernels were compiled in parallel into the shared cache (GPU, a new program)."""
        if self.compile_cache is not None:
            step.compiled_first = self.compile_cache.compile_first(step.exercise, step.program, step.cases)
        return run_program(runner or self.runner, step.exercise, step.program, step.arrays, mode=self.mode,
                           device_index=self.device_index if device_index is None else device_index,
                           cases=step.cases, language=step.language, detach_speed=True,
                           cpu_timer=self.cpu_speed_timer, with_speed=step.with_speed, meanwhile=step.meanwhile)

    def wait_step(self, step: ParkStep) -> None:
        """Block this thread until the claim `step` waits on is gone (or its lifetime passed)."""
        assert self.memo is not None  # a grading parks only on a memo claim (_lookup)
        try:
            self.memo.wait_released(step.key, timeout_s=step.timeout_s)
        except Exception:  # noqa: BLE001 - de-duplication is an optimisation: look again, then run the program
            log.exception("memo wait on %s failed; running the program", step.key[:12])

    def steps(self, submission: Submission, *, submission_id: str | None, secret_seed: int | None, reuse: bool,
              claims: list[tuple[str, str]], on_speed: OnSpeed | None = None,
              ) -> Generator[Step, RunResult | None, Report]:
        """One grading as a generator that yields where it would block: a `RunStep` (send back the
        sandbox's RunResult) and a `ParkStep` (an identical program is in flight elsewhere: send
        None once its claim is gone). Everything else is cheap: extraction, the memo, comparison,
        written answers, the report. The caller releases `claims` however it ends. `on_speed`: as
        in `grade`; without it, a RunResult's speed phase still going on (`speed_pending`) is
        collected here, in the driving thread."""
        on_speed = on_speed if self.speed_after_grade else None
        started = time.monotonic()
        exercise = self.catalog.get(submission.exercise)
        submission_id = submission_id or uuid.uuid4().hex
        secret_seed = secrets.randbits(63) if secret_seed is None else secret_seed
        spec = exercise.spec
        language = report_language(submission.language, spec.language, submission.written)  # declared, written, lesson

        if self.mode is DeviceMode.interpreter and spec.requires_gpu:
            requires_gpu = spec.requires_gpu
            return self._not_gradable(exercise, submission_id, None, started, language,
                                      message=lambda lang: render("grading.gpu_only", lang,
                                                                  reason=requires_gpu.in_(lang)))

        extraction = extract(exercise.template, submission.code, language=language)
        if self.mode is DeviceMode.interpreter and extraction.error is None \
                and builds_block_pointer(extraction.fills) and block_pointers_removed():
            # Right or wrong, it cannot run here, and a GPU would run it: ours to say, not the student's fail.
            return self._not_gradable(exercise, submission_id, None, started, language,
                                      message=lambda lang: render("grading.block_pointers_removed", lang,
                                                                  triton=triton_version()))
        not_run_reason, host_refusal = extraction.error, None
        if not_run_reason is None:
            not_run_reason, host_refusal = fill_refusal(exercise, extraction, language)
        # A fill the blank's rules refuse is refused on a GPU too: the student's to fix, not a gap of this
        # interpreter's (`tl.extra.cuda.libdevice.pow` in an expression blank was "not gradable here,
        # submit where a GPU grades", sixth probe batch, wf6.right.libdevice_pow).
        gaps = [gap for gap in interpreter_gaps() if gap.used_by(extraction.fills)] \
            if self.mode is DeviceMode.interpreter and not_run_reason is None else []
        if (static_gap := next((gap for gap in gaps if gap.error is None and not gap.on_pass), None)) is not None:
            return self._not_gradable(exercise, submission_id, None, started, language,
                                      message=self._gap_message(static_gap))

        def drawn() -> tuple[list[CaseSpec], Seeds]:
            """The cases as graded under the secret seed (drawn shapes resolved: replay with the seed gives
            the same) and their seeds; only where inputs are drawn: a memo hit reuses its run's seeds."""
            graded = spec.cases_for(secret_seed)
            return graded, Seeds(secret=secret_seed, given=spec.given_check.seed,
                                 cases={c.id: case_seed(c, secret_seed) for c in graded})

        seeds: Seeds

        program: Program | None = None
        run: RunResult | None = None
        alone_run: RunResult | None = None  # the kernel fills with the solution's host fills (host_blanks.py)
        extra_timing: dict[str, float] = {}
        compiled_first: ParallelCompile | None = None
        memo_key: str | None = None
        reused: MemoEntry | None = None
        waited_s: float | None = None  # spent waiting for an identical program in flight
        cases: list[CaseReport] = []
        diagnoses: list[Diagnosis] = []
        given_status, given_output = "not_run", ""
        given_no_launch = False  # the harness said a call returned without launching the kernel (GivenRun.no_launch)
        # the cases' texts and the given check's output in the other language (Report.translations)
        other_cases: dict[str, dict[str, CaseTexts]] = {}
        other_given: dict[str, str] = {}
        performance: Performance | None = None  # exercises with `speed:` only
        environment = self._environment(None)
        text_scores: dict[str, TextScore] = {}  # the written answers' scores, said again in the other language
        scored_ahead = rubric.AnswersAhead()  # scored while a new program runs (RunStep.meanwhile)
        if not_run_reason is None:
            program = assemble(exercise.template, extraction.fill_sources)
            memo_key = self._memo_key(exercise, program, self._environment_seen or self._pool_environment())
            if memo_key is not None and reuse:
                reused, waited_s = yield from self._lookup(memo_key, submission_id, claims, exercise, language)
            if reused is not None:
                cases, diagnoses, seeds = reused.cases, reused.diagnoses, reused.seeds
                if reused.performance is None and spec.speed is not None:  # not timed on that run (busy)
                    performance = unmeasured(spec.speed, "speed.reused_pending", language=language,
                                             cases_passed=all(c.passed for c in cases)).model_copy(
                                                 update={"reused": True})
                if reused.performance is not None:  # measured with the code results, on that run
                    performance = reused.performance.model_copy(update={"reused": True})
                    if performance.status == "pending" and spec.speed is not None:  # that run is still timing
                        fallback = unmeasured(spec.speed, "speed.reused_pending", language=language,
                                              cases_passed=performance.cases_passed).model_copy(update={"reused": True})
                        if on_speed is None or memo_key is None or self.memo is None:
                            performance = fallback
                        else:  # its card follows here too, as this report's revision
                            self._follow(follow_memo(self.memo, memo_key, within_s=self._speed_wait_s(),
                                                     fallback=fallback, on_speed=on_speed, name=submission_id,
                                                     say=self._restate(exercise), language=language,
                                                     others=other_languages(language)))
                given_status, given_output, environment = reused.given_status, reused.given_output, reused.environment
                given_no_launch = reused.given_no_launch
                other_cases, other_given = reused.case_texts, reused.given_outputs
            else:
                graded, seeds = drawn()
                arrays = {c.id: exercise.make_inputs(c, seeds.cases[c.id]) for c in graded}
                # Host blanks beside kernel blanks: the kernel's fills run once more
                # with the solution's host code, before the program itself (whose speed phase may
                # still be timing on the device after it returns). host_blanks.py says why.
                alone = host_blanks.kernel_alone(exercise, extraction, program)
                if alone is not None:
                    alone_run = yield from self._side_run(exercise, alone, arrays, graded, language)
                    if alone_run.infra_error is not None:
                        return self._not_gradable(exercise, submission_id, alone_run, started, language)
                self.counts.add(sandbox_runs=1, ran_after_wait=int(waited_s is not None))
                # A new program: on a GPU its kernels compile in parallel into the shared cache
                # first (run_step, in the sandbox part: it may wait), then it runs.
                step = RunStep(exercise=exercise, program=program, arrays=arrays, cases=graded, language=language,
                               meanwhile=functools.partial(rubric.score_answers_ahead, exercise, submission,
                                                           extraction.fill_sources, scored_ahead,
                                                           spilled=tuple(extraction.spills)))
                run = yield step
                assert run is not None  # the driver sends the sandbox's result back
                compiled_first = step.compiled_first
                if run.infra_error is not None:
                    return self._not_gradable(exercise, submission_id, run, started, language)
                if (shown := _gap_shown(gaps, run)) is not None:  # the interpreter's limit, not the kernel's
                    return self._not_gradable(exercise, submission_id, run, started, language,
                                              message=self._gap_message(shown))
                if self.mode is DeviceMode.interpreter and gpu_only_shown(run):
                    # The kernel compiled for the GPU with inline asm (the gate's refusal, sandbox/gpu_compile.py):
                    # a GPU runs it, the interpreter cannot. Ours to say, at no cost, and not the program's verdict.
                    return self._not_gradable(exercise, submission_id, run, started, language,
                                              message=lambda lang: render("grading.gpu_only_inline_asm", lang,
                                                                          triton=triton_version()))
                with self._environment_lock:  # (learn_environment's guess never overwrites a hello)
                    self._environment_seen = dict(run.environment)
                if self.compile_cache is not None:
                    # the next student with this fill compiles little
                    self.compile_cache.submit(exercise, program, secret_seed)
                sent_given = run.given  # as the sandbox returned it: said again in the other language
                run.given = verify_given(exercise, run.given, language=language)
                alone_cases: list[CaseReport] = []
                given_alone_failed = False
                split: Diagnosis | None = None  # host_blanks.split_diagnosis: a TA looks at these cases
                if alone_run is not None:
                    alone_run.given = verify_given(exercise, alone_run.given, language=language)
                    alone_cases, _ = compare_cases(exercise, alone_run, arrays, seeds.cases, graded, language=language)
                    own, _ = compare_cases(exercise, run, arrays, seeds.cases, graded, language=language)
                    failed = host_blanks.failed_alone_ids(own, alone_cases)
                    # Only a program right on every case can be an honest split; where its own run fails
                    # some, the cases it passed only with its own host code are taken as coincidences.
                    ablated = (host_blanks.kernel_ablated(exercise, extraction)
                               if failed and all(c.passed for c in own) else None)
                    if ablated is not None:  # did the host code need the kernel's contribution?
                        ablated_run = yield from self._side_run(exercise, ablated, arrays, graded, language)
                        if ablated_run.infra_error is not None:
                            return self._not_gradable(exercise, submission_id, ablated_run, started, language)
                        extra_timing["kernel_ablated_sandbox_s"] = ablated_run.elapsed_s
                        ablated_run.given = verify_given(exercise, ablated_run.given, language=language)
                        ablated_cases, _ = compare_cases(exercise, ablated_run, arrays, seeds.cases, graded,
                                                         language=language)
                        disputed = host_blanks.split_differs(failed, ablated_cases)
                        split = host_blanks.split_diagnosis(disputed, failed, language)
                        alone_cases = [c for c in alone_cases if c.id not in disputed]  # they stand as the program's
                    run.given, given_alone_failed = host_blanks.merge_given(run.given, alone_cases, language)
                cases, evidence = compare_cases(exercise, run, arrays, seeds.cases, graded, language=language)
                failed_alone = host_blanks.failed_alone_ids(cases, alone_cases)
                cases = host_blanks.merge(cases, failed_alone, language)
                try:
                    other_given = {lang: host_blanks.said_given(given_output_in(exercise, sent_given, lang),
                                                                given_alone_failed, alone_cases, lang)
                                   for lang in other_languages(language)}
                    other_cases = {lang: host_blanks.said_cases(
                                       case_texts(exercise, run, cases, evidence, graded,
                                                  given_output=other_given[lang], language=lang),
                                       failed_alone, lang)
                                   for lang in other_languages(language)}
                except Exception:  # noqa: BLE001 - the other language is an addition: the grade stands without it
                    log.exception("could not say the cases of %s in the other language", submission_id)
                if (doubted := next((gap for gap in gaps if gap.on_pass), None)) is not None and all(
                        c.passed for c in cases) and (run.given is None or run.given.status == "passed"):
                    # Passed here, where every tensor is on the CPU; on a GPU the moved one meets the lesson's check.
                    return self._not_gradable(exercise, submission_id, run, started, language,
                                              message=self._gap_message(doubted))
                diagnoses = exercise.diagnose(evidence, language=language)
                if split is not None:
                    diagnoses.append(split)
                if (overwritten := overwritten_inputs(spec, graded, arrays, run, language=language)) is not None:
                    diagnoses.append(overwritten)  # on every exercise: inputs compared bit for bit
                if (unwritten := uninitialised_reads(cases, run, language=language)) is not None:
                    diagnoses.append(unwritten)  # on every exercise: the poison of torch.empty in the outputs
                if run.given is not None:
                    given_status, given_output = run.given.status, run.given.output
                    given_no_launch = run.given.no_launch
                environment = self._environment(run)
                performance = self._performance(exercise, run, cases, language)
                phase, run.speed_pending = run.speed_pending, None  # the sandbox is timing the kernel meanwhile
                timed = self.mode is DeviceMode.gpu or self.cpu_speed_timer
                if spec.speed is not None and run.speed is None and timed:
                    performance = self._speed_card(exercise, run, phase, cases, given_status, language, on_speed)
                memo_key = self._remember(exercise, program, run, submission_id=submission_id, cases=cases,
                                          diagnoses=diagnoses, seeds=seeds, environment=environment,
                                          performance=None if _busy(performance, language) else performance,
                                          language=language, case_texts=other_cases, given_outputs=other_given)
                if phase is not None and on_speed is not None and performance is not None \
                        and performance.status == "pending":
                    self._follow(follow(phase, card=self._card(exercise), language=language,
                                        others=other_languages(language),
                                        memo=self.memo, memo_key=memo_key, on_speed=on_speed, name=submission_id,
                                        release=self._speed_slots.release))
                self._release(claims)  # stored (or not storable): the waiting gradings go on now
        else:
            graded, seeds = drawn()
            arrays = {c.id: exercise.make_inputs(c, seeds.cases[c.id]) for c in graded}
            cases, _ = compare_cases(exercise, None, arrays, seeds.cases, graded, language=language)
            if host_refusal is not None:  # what the host code did, for the TA and the dashboard
                diagnoses = [host_refusal.diagnosis(language)]
            other_cases = {lang: case_texts(exercise, None, cases, [], graded, given_output="", language=lang)
                           for lang in other_languages(language)}
            performance = self._performance(exercise, None, cases, language)

        items = rubric.score_items(exercise, submission, cases, not_run_reason=not_run_reason, diagnoses=diagnoses,
                                   assist=self.assist, fills=extraction.fill_sources, language=language,
                                   text_scores=text_scores, ahead=scored_ahead,
                                   fill_refusal=not_run_reason if extraction.error is None else None,
                                   spilled=tuple(extraction.spills))
        if reused is not None:
            items = [_mark_reused(item, language) if _is_cases_item(item, spec) else item for item in items]
        vetoes = rubric.edit_vetoes(extraction.edits, language=language)
        coincidental = (rubric.coincidental_pass_veto(cases, diagnoses, language=language)
                        or rubric.wrong_chain_veto(cases, items, language=language))
        claim = unverified_claim(claimed_output=submission.claimed_output, program_ran=program is not None,
                                 given_status=None if given_status == "not_run" else given_status,
                                 real_output=given_output,
                                 not_run_reason=not_run_reason, language=language,
                                 # the harness's field, not the output's words (a kernel prints those too)
                                 kernel_bypassed=given_status == "failed" and given_no_launch)
        vetoes += [v for v in (coincidental, claim) if v is not None]
        score = rubric.total_score(exercise, items, vetoes)
        requirements = passrule.requirements(
            spec.pass_rule, items=items, vetoes=vetoes, threshold=spec.pass_threshold, given_status=given_status,
            given_output=given_output, not_run_reason=not_run_reason,
            claim_kind=parse_claim(submission.claimed_output).kind, claimed_output=submission.claimed_output,
            written="\n".join([submission.explanation, *submission.answers.values()]), language=language)
        score = score.model_copy(update={"requirements": requirements, "passed": all(r.met for r in requirements)})
        timing = run_timing(run, started)
        if reused is not None:
            timing["reused"] = 1.0
        if waited_s is not None:
            timing["memo_wait_s"] = waited_s
        if compiled_first is not None:
            timing.update(compiled_first.timing())
        if alone_run is not None:
            timing["kernel_alone_sandbox_s"] = alone_run.elapsed_s
        timing.update(extra_timing)
        report = Report(
            submission_id=submission_id,
            exercise=ExerciseRef(id=exercise.id, version=spec.version),
            status="graded",
            language=language,
            score=score,
            items=items, cases=cases, diagnoses=diagnoses, vetoes=vetoes,
            environment=environment,
            timing=timing,
            seeds=seeds,
            program=ProgramReport(
                digest=program.digest if program else None, fills=extraction.fill_sources, ran=program is not None,
                not_run_reason=not_run_reason, fill_policy=spec.fill_policy,
                edits=extraction.edits, reused=reused is not None, memo_key=memo_key,
            ),
            given_check=GivenCheckReport(status=given_status, output=given_output,
                                         claimed_output=submission.claimed_output),
            performance=performance,
            created_at=datetime.now(UTC),
        )
        try:
            # the card in the other language: from the same figures where this run has them, else
            # from the card itself (the memo's, or one said by a code alone)
            collected = run is not None and run.speed is not None
            restate = self._restate(exercise)
            other_cards: dict[str, Performance | None] = {
                lang: self._performance(exercise, run, cases, lang) if collected
                else restate(performance, language, lang) if performance is not None else None
                for lang in other_languages(language)}
            return translated(report, exercise=exercise, submission=submission, cases=other_cases,
                              given_outputs=other_given, performances=other_cards, extraction=extraction,
                              text_scores=text_scores)
        except Exception:  # noqa: BLE001 - the other language is an addition: the grade stands without it
            log.exception("could not say the report of %s in the other language", submission_id)
            return report

    def _pool_environment(self) -> dict[str, str] | None:
        pool = self.runner.pools.get((self.mode, self.device_index))
        return dict(pool.environment) if pool is not None and pool.environment else None

    def _side_run(self, exercise: Exercise, program: Program, arrays: dict[str, dict[str, np.ndarray]],
                  graded: list[CaseSpec], language: Language) -> Generator[RunStep, object, RunResult]:
        """A run of a program other than the submitted one (host_blanks.py: its kernel fills alone,
        or its kernel zeroed): the same cases, no speed phase, one more sandbox run."""
        self.counts.add(sandbox_runs=1)
        result = yield RunStep(exercise=exercise, program=program, arrays=arrays, cases=graded, language=language,
                               with_speed=False)
        assert isinstance(result, RunResult)  # the driver sends the sandbox's result back
        return result

    def _memo_key(self, exercise: Exercise, program: Program, environment: dict[str, str] | None) -> str | None:
        """The memo key of this program here, or None when nothing may be reused: no memo, an
        exercise that opts out, or no sandbox has told us its device and Triton version yet. Not
        the report's language: an entry holds its texts in every language (MemoEntry.said_in)."""
        if self.memo is None or not memoisable(exercise) or not environment:
            return None
        if environment.get("mode") != self.mode.value or not environment.get("triton"):
            return None
        return memo_key(program_digest=program.digest, exercise=exercise, mode=self.mode.value,
                        device=environment.get("device", ""), triton=environment["triton"])

    def _lookup(self, key: str, owner: str, claims: list[tuple[str, str]], exercise: Exercise,
                language: Language) -> Generator[ParkStep, object, tuple[MemoEntry | None, float | None]]:
        """The memo's entry for `key`, or None: then this grading runs the program. In-flight
        de-duplication (service/grading/memo.py): with no entry yet, claim the key; the grading
        that gets the claim runs the program (the claim goes into `claims`, released once the
        result is stored); the others wait until that claim is gone (released, or expired because
        its holder died: at most the run's time budget), then look again, and run the program
        themselves if nothing was stored; they wait by yielding a ParkStep, so a driver may park
        them without a thread (service/worker/lanes.py). Second: the seconds spent waiting (None: no wait).
        The entry comes said in `language`; one that cannot be (MemoEntry.said_in) is not reused."""
        memo = self.memo
        assert memo is not None  # a key exists only with a memo (_memo_key)
        entry, waited_s = memo.get(key), None
        if entry is None and callable(getattr(memo, "claim", None)):
            ttl_s = self.runner.limits.run_timeout_s + CLAIM_MARGIN_S
            try:
                if memo.claim(key, owner=owner, ttl_s=ttl_s):
                    claims.append((key, owner))
                    entry = memo.get(key)  # stored between the first look and the claim
                else:
                    waiting = time.monotonic()
                    yield ParkStep(key=key, timeout_s=ttl_s)
                    waited_s = time.monotonic() - waiting
                    entry = memo.get(key)
            except Exception:  # noqa: BLE001 - de-duplication is an optimisation: run the program
                log.exception("memo claim or wait on %s failed; running the program", key[:12])
        if entry is not None:
            entry = entry.said_in(language, restate=self._restate(exercise))
        if entry is not None:
            self._release(claims)
            self.counts.add(reused=1, reused_after_wait=int(waited_s is not None))
        return entry, waited_s

    def _release(self, claims: list[tuple[str, str]]) -> None:
        while claims:
            key, owner = claims.pop()
            memo = self.memo
            assert memo is not None  # claims are taken only on a memo (_lookup)
            try:
                memo.release(key, owner=owner)
            except Exception:  # noqa: BLE001 - the claim expires by itself; waiters then run the program
                log.exception("could not release the memo claim on %s", key[:12])

    def _performance(self, exercise: Exercise, run: RunResult | None, cases: list[CaseReport],
                     language: Language) -> Performance | None:
        """The report's `performance` (None for an exercise without `speed:`); never points."""
        spec = exercise.spec
        if spec.speed is None:
            return None
        # (a copy said in `language`: the run's own stays as the grading said it)
        speed = render_speed(replace(run.speed), language) if run is not None and run.speed is not None else None
        return speed_performance(spec.speed, speed, mode=self.mode,
                                 language=language, cases_passed=all(c.passed for c in cases) if cases else None)

    def _follow(self, thread: threading.Thread) -> None:
        """Keep the speed card's thread until close(): a clean shutdown still delivers the card."""
        with self._followers_lock:
            self._followers[:] = [t for t in self._followers if t.is_alive()] + [thread]

    def _speed_wait_s(self) -> float:
        """How long a reused grading watches the memo for the first run's card: that run's speed
        budget and its kill, with a margin for the card's way into the memo."""
        limits = self.runner.limits
        return limits.speed_timeout_s + limits.kill_grace_s + CLAIM_MARGIN_S / 6

    def _speed_card(self, exercise: Exercise, run: RunResult, phase: SpeedPhase | None, cases: list[CaseReport],
                    given_status: str, language: Language, on_speed: OnSpeed | None) -> Performance | None:
        """The card of a run whose speed phase was handed over (`phase`) or never started: a kernel
        that did not pass is not timed (the harness skips a kernel that raised; a sandbox timing a
        kernel whose outputs were wrong is killed now); with `on_speed` the card is `pending`
        (follow() collects it), or `not_measured` ("busy") with SPEED_IN_FLIGHT phases already going
        on after their grades (each holds a sandbox: a student's many passing programs whose timing
        hangs must not hold more, nor hold the service's threads); without, this grading collects
        it here, as before."""
        speed = exercise.spec.speed
        assert speed is not None  # called only for an exercise with `speed:`
        if not kernel_passed(cases, given_status):
            if phase is not None:
                phase.cancel()
            return unmeasured(speed, "speed.not_passed", language=language, cases_passed=all(c.passed for c in cases))
        if phase is None:  # it passed, yet the sandbox ended before timing it
            return self._performance(exercise, run, cases, language)
        if on_speed is None:
            run.speed = phase.collect()
            return self._card(exercise)(run.speed, language)
        if not self._speed_slots.acquire(blocking=False):  # (released by follow())
            phase.cancel()  # never waited for here: the service's driving thread does cheap work only
            return unmeasured(speed, "speed.busy", language=language, cases_passed=True)
        return unmeasured(speed, "speed.pending", language=language, cases_passed=True)

    def _card(self, exercise: Exercise) -> Callable[[SpeedRun, str], Performance]:
        """The card of a passed kernel's collected speed phase, in a language (said from a copy of
        the run: the same run is said again in the other language)."""
        speed = exercise.spec.speed
        assert speed is not None

        def card(run: SpeedRun, language: str) -> Performance:
            return speed_performance(speed, render_speed(replace(run), language), mode=self.mode, language=language,
                                     cases_passed=True)

        return card

    def _restate(self, exercise: Exercise) -> Callable[[Performance, str, str], Performance | None]:
        """`say(card, said_in, language)`: a card of this exercise in another language, from the card
        itself (speed.restated)."""
        speed = exercise.spec.speed

        def say(card: Performance, said_in: str, other: str) -> Performance | None:
            return restated(card, speed, said_in=said_in, language=other) if speed is not None else None

        return say

    def _remember(self, exercise: Exercise, program: Program, run: RunResult, *, submission_id: str,
                  cases: list[CaseReport], diagnoses: list[Diagnosis], seeds: Seeds, environment: Environment,
                  performance: Performance | None = None, language: Language = "zh",
                  case_texts: dict[str, dict[str, CaseTexts]] | None = None,
                  given_outputs: dict[str, str] | None = None) -> str | None:
        """Store a run's code results if they are a property of the program alone: every phase
        ran to an answer (no crash, timeout or skipped case or speed phase, which may be the
        machine's doing). The speed figures go with them: same program, same device name."""
        key = self._memo_key(exercise, program, run.environment)
        memo = self.memo
        if key is None or memo is None:  # (a key exists only with a memo)
            return None
        # A timeout ended a deterministic run (run_program): the program's own result, memoised so
        # that resubmitting it costs nothing instead of another run to the time limit; but only
        # when the sandbox's CPU time over that phase, measured on the trusted side, shows the
        # program was running (sandbox/cpu_time.py): a timeout the machine made (a starved host)
        # is not stored, and the next identical submission runs again.
        stopped = ("timeout", "skipped") if run.ended_by_timeout and run.timeout_busy else ()
        settled = (run.given is None or run.given.status in ("passed", "failed", *stopped)) and \
            all(c.status in ("ok", "error", *stopped) for c in run.cases) and \
            (run.speed is None or run.speed.status in ("ok", "error", *stopped))
        if not settled:
            return None
        entry = MemoEntry(submission_id=submission_id, program_digest=program.digest, cases=cases, diagnoses=diagnoses,
                          given_status=run.given.status if run.given else "not_run",
                          given_output=run.given.output if run.given else "",
                          given_no_launch=bool(run.given and run.given.no_launch), seeds=seeds, environment=environment,
                          performance=performance, case_texts=case_texts or {}, given_outputs=given_outputs or {},
                          language=language)
        try:
            memo.put(key, entry, exercise_id=exercise.id, exercise_version=exercise.spec.version)
        except Exception:  # noqa: BLE001 - the memo is an optimisation: a failed write costs a re-run later
            log.exception("could not store the verdict memo entry for %s", submission_id)
            return None
        return key

    def _environment(self, run: RunResult | None) -> Environment:
        env = run.environment if run is not None else {}
        process_limit = ((run.process_limit if run is not None else "")
                         or self.runner.backend.process_limit(self.mode, self.device_index))
        return Environment(backend=self.mode.value, sandbox=self.runner.backend.name, device=env.get("device", ""),
                           torch=env.get("torch", ""), triton=env.get("triton", ""), python=env.get("python", ""),
                           process_limit=process_limit, memory_limit=run.memory_limit if run is not None else "",
                           sandbox_start=run.sandbox_start if run is not None else "")

    @staticmethod
    def _gap_message(gap: InterpreterGap) -> Callable[[str], str]:
        return lambda lang: render(gap.message, lang, triton=triton_version(),
                                   construct=render(f"grading.gap.{gap.code}", lang),
                                   instead=render(f"grading.gap.{gap.code}.instead", lang))

    def _not_gradable(self, exercise: Exercise, submission_id: str, run: RunResult | None, started: float,
                      language: Language, *, message: Callable[[str], str] | None = None) -> Report:
        spec = exercise.spec
        return not_gradable_report(
            submission_id=submission_id, exercise=ExerciseRef(id=exercise.id, version=spec.version),
            max_points=spec.max_points, pass_threshold=spec.pass_threshold, language=language,
            reason=(run.infra_error or "") if run is not None else "", message=message,
            environment=self._environment(run), timing=run_timing(run, started))


def _gap_shown(gaps: list[InterpreterGap], run: RunResult) -> InterpreterGap | None:
    """The first runtime gap whose interpreter error a case or the given check raised (the fill uses it): an
    exception of the chain that ended the phase is that error (the harness's `raised`, the exceptions' reprs).
    Not the words of the error or the output: a kernel prints or asserts them too (a tl.static_print of
    "ValueError('Unsupported data type')" beside an atomic_xchg that never runs made a wrong kernel
    not_gradable, "not an attempt")."""
    raised = [item for case in run.cases for item in case.raised] + (run.given.raised if run.given is not None else [])
    return next((gap for gap in gaps if gap.error is not None and gap.error in raised), None)


def _busy(performance: Performance | None, language: Language) -> bool:
    """A card not measured because too many phases were going on (speed.busy): not the program's
    answer, so it stays out of the memo (a reuse then says the figures are not in)."""
    return (performance is not None and performance.status == "not_measured"
            and performance.reason == render("speed.busy", language))


def _is_cases_item(item: Item, spec: ExerciseSpec) -> bool:
    return any(r.id == item.id and r.source == "cases" for r in spec.rubric)


def _mark_reused(item: Item, language: Language) -> Item:
    return item.model_copy(update={"feedback": f"{item.feedback}\n{render('grading.reused_note', language)}",
                                   "evidence": {**item.evidence, "reused": True}})
