"""The grading pipeline: extract -> assemble -> run -> compare -> diagnose -> score -> report.

`Grader.grade` returns a report in every case; failures of the service become `not_gradable`
reports (costing the student nothing), failures of the submission become graded reports.
"""
from __future__ import annotations

import ast
import secrets
import threading
import time
import uuid
import logging
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import TYPE_CHECKING

import numpy as np

from sandbox.contract import CaseJob, DeviceMode, GradJob, RunResult, TensorArg
from sandbox.runner import SandboxRunner
from service.exercises import CaseSpec, Exercise, ExerciseCatalog, ExerciseSpec
from service.grading import bounds, passrule, rubric
from service.grading.assemble import Program, assemble
from service.grading.claims import parse_claim, unverified_claim
from service.grading.compare import compare_outputs
from service.grading.given import verify_given
from service.grading.diagnose import CaseEvidence
from service.grading.extract import Extraction, extract
from service.grading.fills import check_block_fill, check_fill
from service.grading.inputs import case_seed, storage
from service.grading.overwrite import changed_input, diagnosis as overwrite_diagnosis
from service.grading.memo import MemoEntry, VerdictMemo, memo_key, memoisable
from service.grading.speed import performance as speed_performance, speed_inputs, speed_job
from service.grading.model_assist import ModelAssist
from service.report import (
    CaseReport, Diagnosis, Environment, ExerciseRef, GivenCheckReport, Item, OutOfBounds, Performance, ProgramReport,
    Report, Score, Seeds,
)
from service.submission import Submission

if TYPE_CHECKING:
    from service.grading.compile_warm import CompileWarmer

GIVEN_CASE_ID = "given"
log = logging.getLogger("kernelgrade.grader")

_REUSED_NOTE = {
    "zh": "（这些代码结果复用自此前对逐字节相同程序的一次评分：同一练习版本、同一组用例、同一设备与 Triton 版本。"
          "报告里的种子是那次运行实际用的种子。书面回答每次都重新评分。）",
    "en": "(These code results were reused from an earlier grading of a byte-identical program: same exercise "
          "version, case set, device and Triton version. The seeds in this report are the ones that run used. "
          "Written answers are always scored afresh.)",
}


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
    compile_cache: "CompileWarmer | None" = None  # fills the shared Triton cache (GPU); None: each sandbox compiles alone
    prewarm: bool = False  # start(): queue every exercise's solution and mutants for the compile cache
    _environment_seen: dict[str, str] | None = field(default=None, repr=False)  # the last sandbox's hello
    counts: GradeCounts = field(default_factory=GradeCounts, repr=False)

    def start(self) -> None:
        """Start the warm sandbox pool (the service's workers; one-off graders never do)."""
        if self.compile_cache is not None:
            self.compile_cache.start()
            if self.prewarm:
                self.compile_cache.submit_catalog(self.catalog)
        pool = self.runner.start_pool(mode=self.mode, device_index=self.device_index, size=self.warm_pool)
        if pool is not None and pool.environment and self._environment_seen is None:
            self._environment_seen = dict(pool.environment)

    def max_grading_s(self) -> float:
        """The longest one grading may take: the sandbox's run budget, a wait for an identical
        program in flight (at most a claim's lifetime), and a margin for the rest (inputs,
        comparison, written answers: each bounded by the submission's size caps)."""
        run_s = self.runner.limits.run_timeout_s
        return run_s + (run_s + CLAIM_MARGIN_S) + GRADING_MARGIN_S

    def close(self) -> None:
        """Kill the waiting sandboxes."""
        self.runner.close()
        if self.compile_cache is not None:
            self.compile_cache.close()

    def grade(self, submission: Submission, *, submission_id: str | None = None, secret_seed: int | None = None,
              reuse: bool = True) -> Report:
        """`reuse=False` (a regrade) runs the program even when the memo holds its results, and
        never waits for an identical program in flight (`_lookup`)."""
        claims: list[tuple[str, str]] = []  # the memo claim this grading holds: released however it ends
        try:
            return self._grade(submission, submission_id=submission_id, secret_seed=secret_seed, reuse=reuse,
                               claims=claims)
        finally:
            self._release(claims)

    def _grade(self, submission: Submission, *, submission_id: str | None, secret_seed: int | None, reuse: bool,
               claims: list[tuple[str, str]]) -> Report:
        started = time.monotonic()
        exercise = self.catalog.get(submission.exercise)
        submission_id = submission_id or uuid.uuid4().hex
        secret_seed = secrets.randbits(63) if secret_seed is None else secret_seed
        spec = exercise.spec

        if self.mode is DeviceMode.interpreter and spec.requires_gpu:
            return self._not_gradable(exercise, submission_id, None, started, message=(
                "这个练习只能在 GPU 上评分，本服务现在用的是 Triton 解释器（没有 GPU）：这次提交不计分，也不算一次尝试。"
                f"原因：{spec.requires_gpu}"))

        extraction = extract(exercise.template, submission.code)
        not_run_reason = extraction.error or _rejected_fill(exercise, extraction)
        graded = spec.cases_for(secret_seed)  # drawn shapes resolved: replay with the seed gives the same
        seeds = Seeds(secret=secret_seed, given=spec.given_check.seed,
                      cases={c.id: case_seed(c, secret_seed) for c in graded})

        program: Program | None = None
        run: RunResult | None = None
        memo_key: str | None = None
        reused: MemoEntry | None = None
        waited_s: float | None = None  # spent waiting for an identical program in flight
        cases: list[CaseReport] = []
        diagnoses: list[Diagnosis] = []
        given_status, given_output = "not_run", ""
        performance: Performance | None = None  # exercises with `speed:` only
        environment = self._environment(None)
        if not_run_reason is None:
            program = assemble(exercise.template, extraction.fill_sources)
            memo_key = self._memo_key(exercise, program, self._environment_seen or self._pool_environment())
            if memo_key is not None and reuse:
                reused, waited_s = self._lookup(memo_key, submission_id, claims)
            if reused is not None:
                cases, diagnoses, seeds = reused.cases, reused.diagnoses, reused.seeds
                if reused.performance is not None:  # measured with the code results, on that run
                    performance = reused.performance.model_copy(update={"reused": True})
                given_status, given_output, environment = reused.given_status, reused.given_output, reused.environment
            else:
                arrays = {c.id: exercise.make_inputs(c, seeds.cases[c.id]) for c in graded}
                self.counts.add(sandbox_runs=1, ran_after_wait=int(waited_s is not None))
                run = run_program(self.runner, exercise, program, arrays, mode=self.mode, device_index=self.device_index,
                                  cases=graded)
                if run.infra_error is not None:
                    return self._not_gradable(exercise, submission_id, run, started)
                self._environment_seen = dict(run.environment)
                if self.compile_cache is not None:
                    self.compile_cache.submit(exercise, program, secret_seed)  # the next student with this fill compiles little
                run.given = verify_given(exercise, run.given)
                cases, evidence = self._cases(exercise, run, arrays, seeds.cases, graded)
                diagnoses = exercise.diagnose(evidence, language=spec.language)
                if (overwritten := _overwritten_inputs(spec, graded, arrays, run)) is not None:
                    diagnoses.append(overwritten)  # on every exercise: inputs compared bit for bit
                if run.given is not None:
                    given_status, given_output = run.given.status, run.given.output
                environment = self._environment(run)
                performance = self._performance(exercise, run, cases)
                memo_key = self._remember(exercise, program, run, submission_id=submission_id, cases=cases,
                                          diagnoses=diagnoses, seeds=seeds, environment=environment,
                                          performance=performance)
                self._release(claims)  # stored (or not storable): the waiting gradings go on now
        else:
            arrays = {c.id: exercise.make_inputs(c, seeds.cases[c.id]) for c in graded}
            cases, _ = self._cases(exercise, None, arrays, seeds.cases, graded)
            performance = self._performance(exercise, None, cases)

        items = rubric.score_items(exercise, submission, cases, not_run_reason=not_run_reason, diagnoses=diagnoses,
                                   assist=self.assist, fills=extraction.fill_sources)
        if reused is not None:
            items = [_mark_reused(item, spec) if _is_cases_item(item, spec) else item for item in items]
        vetoes = rubric.edit_vetoes(extraction.edits)
        coincidental = rubric.coincidental_pass_veto(cases, diagnoses) or rubric.wrong_chain_veto(cases, items)
        claim = unverified_claim(claimed_output=submission.claimed_output, program_ran=program is not None,
                                 given_status=None if given_status == "not_run" else given_status, real_output=given_output,
                                 not_run_reason=not_run_reason, language=spec.language)
        vetoes += [v for v in (coincidental, claim) if v is not None]
        score = rubric.total_score(exercise, items, vetoes)
        requirements = passrule.requirements(
            spec.pass_rule, items=items, vetoes=vetoes, threshold=spec.pass_threshold, given_status=given_status,
            given_output=given_output, not_run_reason=not_run_reason,
            claim_kind=parse_claim(submission.claimed_output).kind, claimed_output=submission.claimed_output,
            written="\n".join([submission.explanation, *submission.answers.values()]), language=spec.language)
        score = score.model_copy(update={"requirements": requirements, "passed": all(r.met for r in requirements)})
        timing = _timing(run, started)
        if reused is not None:
            timing["reused"] = 1.0
        if waited_s is not None:
            timing["memo_wait_s"] = waited_s
        return Report(
            submission_id=submission_id,
            exercise=ExerciseRef(id=exercise.id, version=spec.version),
            status="graded",
            language=spec.language,
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
            created_at=datetime.now(timezone.utc),
        )

    def _pool_environment(self) -> dict[str, str] | None:
        pool = self.runner.pools.get((self.mode, self.device_index))
        return dict(pool.environment) if pool is not None and pool.environment else None

    def _memo_key(self, exercise: Exercise, program: Program, environment: dict[str, str] | None) -> str | None:
        """The memo key of this program here, or None when nothing may be reused: no memo, an
        exercise that opts out, or no sandbox has told us its device and Triton version yet."""
        if self.memo is None or not memoisable(exercise) or not environment:
            return None
        if environment.get("mode") != self.mode.value or not environment.get("triton"):
            return None
        return memo_key(program_digest=program.digest, exercise=exercise, mode=self.mode.value,
                        device=environment.get("device", ""), triton=environment["triton"])

    def _lookup(self, key: str, owner: str, claims: list[tuple[str, str]]) -> tuple[MemoEntry | None, float | None]:
        """The memo's entry for `key`, or None: then this grading runs the program. In-flight
        de-duplication (service/grading/memo.py): with no entry yet, claim the key; the grading
        that gets the claim runs the program (the claim goes into `claims`, released once the
        result is stored); the others wait until that claim is gone (released, or expired because
        its holder died: at most the run's time budget), then look again, and run the program
        themselves if nothing was stored. Second: the seconds spent waiting (None: no wait)."""
        entry, waited_s = self.memo.get(key), None
        if entry is None and callable(getattr(self.memo, "claim", None)):
            ttl_s = self.runner.limits.run_timeout_s + CLAIM_MARGIN_S
            try:
                if self.memo.claim(key, owner=owner, ttl_s=ttl_s):
                    claims.append((key, owner))
                    entry = self.memo.get(key)  # stored between the first look and the claim
                else:
                    waiting = time.monotonic()
                    self.memo.wait_released(key, timeout_s=ttl_s)
                    waited_s = time.monotonic() - waiting
                    entry = self.memo.get(key)
            except Exception:  # noqa: BLE001 - de-duplication is an optimisation: run the program
                log.exception("memo claim or wait on %s failed; running the program", key[:12])
        if entry is not None:
            self._release(claims)
            self.counts.add(reused=1, reused_after_wait=int(waited_s is not None))
        return entry, waited_s

    def _release(self, claims: list[tuple[str, str]]) -> None:
        while claims:
            key, owner = claims.pop()
            try:
                self.memo.release(key, owner=owner)
            except Exception:  # noqa: BLE001 - the claim expires by itself; waiters then run the program
                log.exception("could not release the memo claim on %s", key[:12])

    def _performance(self, exercise: Exercise, run: RunResult | None, cases: list[CaseReport]) -> Performance | None:
        """The report's `performance` (None for an exercise without `speed:`); never points."""
        spec = exercise.spec
        if spec.speed is None:
            return None
        return speed_performance(spec.speed, run.speed if run is not None else None, mode=self.mode,
                                 language=spec.language, cases_passed=all(c.passed for c in cases) if cases else None)

    def _remember(self, exercise: Exercise, program: Program, run: RunResult, *, submission_id: str,
                  cases: list[CaseReport], diagnoses: list[Diagnosis], seeds: Seeds, environment: Environment,
                  performance: Performance | None = None) -> str | None:
        """Store a run's code results if they are a property of the program alone: every phase
        ran to an answer (no crash, timeout or skipped case or speed phase, which may be the
        machine's doing). The speed figures go with them: same program, same device name."""
        key = self._memo_key(exercise, program, run.environment)
        if key is None:
            return None
        # A timeout ended a deterministic run (run_program): the program's own result, memoised so
        # that resubmitting it costs nothing instead of another run to the time limit.
        stopped = ("timeout", "skipped") if run.ended_by_timeout else ()
        settled = (run.given is None or run.given.status in ("passed", "failed", *stopped)) and \
            all(c.status in ("ok", "error", *stopped) for c in run.cases) and \
            (run.speed is None or run.speed.status in ("ok", "error", *stopped))
        if not settled:
            return None
        entry = MemoEntry(submission_id=submission_id, program_digest=program.digest, cases=cases, diagnoses=diagnoses,
                          given_status=run.given.status if run.given else "not_run",
                          given_output=run.given.output if run.given else "", seeds=seeds, environment=environment,
                          performance=performance)
        try:
            self.memo.put(key, entry, exercise_id=exercise.id, exercise_version=exercise.spec.version)
        except Exception:  # noqa: BLE001 - the memo is an optimisation: a failed write costs a re-run later
            log.exception("could not store the verdict memo entry for %s", submission_id)
            return None
        return key

    def _cases(self, exercise: Exercise, run: RunResult | None, arrays: dict[str, dict[str, np.ndarray]],
               seeds: dict[str, int], graded: list[CaseSpec]) -> tuple[list[CaseReport], list[CaseEvidence]]:
        spec = exercise.spec
        tolerance = {name: t.model_dump() for name, t in spec.outputs.items()}
        reports: list[CaseReport] = []
        if run is not None:
            given = run.given
            reports.append(CaseReport(
                id=GIVEN_CASE_ID, kind="given", description=spec.given_check.description, shape=[], seed=spec.given_check.seed,
                passed=given is not None and given.status == "passed", tolerance=tolerance,
                error=None if given is None or given.status == "passed" else (given.output or given.status),
                elapsed_s=given.elapsed_s if given else None,
            ))
        runs = {c.id: c for c in run.cases} if run is not None else {}
        evidence = []
        for case in graded:
            inputs64 = {name: a.astype(np.float64) if a.dtype.kind == "f" else a for name, a in arrays[case.id].items()}
            primary = inputs64[spec.args[0]]
            base = dict(id=case.id, kind=case.kind, description=case.description, shape=list(primary.shape),
                        stride=case.stride, seed=seeds[case.id], tolerance=tolerance, targets=case.targets,
                        drawn=case.draw.family if case.draw is not None and case.secret else None)
            outcome = runs.get(case.id)
            if outcome is None or outcome.status != "ok":
                error = "未运行" if outcome is None else (outcome.error or outcome.status)
                breaches = [OutOfBounds(**b) for b in outcome.out_of_bounds] if outcome is not None else []
                if breaches:
                    error = bounds.describe(breaches, language=spec.language, entry_point=spec.entry_point)
                reports.append(CaseReport(**base, passed=False, error=error, out_of_bounds=breaches,
                                          elapsed_s=outcome.elapsed_s if outcome else None))
                if outcome is not None:
                    evidence.append(CaseEvidence(case, primary, None, {}, False, inputs64, error=error,
                                                 out_of_bounds=list(outcome.out_of_bounds),
                                                 allocations=list(outcome.allocations)))
                continue
            expected = exercise.checks.reference(**inputs64)
            result = compare_outputs(outcome.outputs, expected, spec.outputs)
            reports.append(CaseReport(**base, passed=result.passed, max_abs_err=result.max_abs_err,
                                      max_rel_err=result.max_rel_err, error_ratio=result.error_ratio,
                                      first_mismatch=result.first_mismatch, error=result.error,
                                      elapsed_s=outcome.elapsed_s))
            observed = outcome.outputs if result.error is None else None
            evidence.append(CaseEvidence(case, primary, observed, expected, result.passed, inputs64))
        return reports, evidence

    def _environment(self, run: RunResult | None) -> Environment:
        env = run.environment if run is not None else {}
        process_limit = ((run.process_limit if run is not None else "")
                         or self.runner.backend.process_limit(self.mode, self.device_index))
        return Environment(backend=self.mode.value, sandbox=self.runner.backend.name, device=env.get("device", ""),
                           torch=env.get("torch", ""), triton=env.get("triton", ""), python=env.get("python", ""),
                           process_limit=process_limit, memory_limit=run.memory_limit if run is not None else "")

    def _not_gradable(self, exercise: Exercise, submission_id: str, run: RunResult | None, started: float, *,
                      message: str | None = None) -> Report:
        return Report(
            submission_id=submission_id,
            exercise=ExerciseRef(id=exercise.id, version=exercise.spec.version),
            status="not_gradable",
            language=exercise.spec.language,
            message=message or ("评分服务自身出错，这不是你的问题：这次提交不计分，也不算一次尝试，请稍后重试或联系助教。"
                                f"（内部原因：{(run.infra_error if run else '')[:2000]}）"),
            score=Score(total=0.0, max=exercise.spec.max_points, pass_threshold=exercise.spec.pass_threshold,
                        passed=False, provisional=False),
            environment=self._environment(run),
            timing=_timing(run, started),
            created_at=datetime.now(timezone.utc),
        )


def _is_cases_item(item: Item, spec: ExerciseSpec) -> bool:
    return any(r.id == item.id and r.source == "cases" for r in spec.rubric)


def _mark_reused(item: Item, spec: ExerciseSpec) -> Item:
    return item.model_copy(update={"feedback": f"{item.feedback}\n{_REUSED_NOTE[spec.language]}",
                                   "evidence": {**item.evidence, "reused": True}})


def _rejected_fill(exercise: Exercise, extraction: Extraction) -> str | None:
    for index, (fill, source) in enumerate(zip(extraction.fills, extraction.fill_sources)):
        if isinstance(fill, list):
            if exercise.spec.fill_policy != "any":
                return f"第 {index + 1} 个填空应是一个表达式，不是一段语句"
            message = check_block_fill(fill, source, blank_number=index + 1)
        elif exercise.spec.fill_policy == "any":
            message = None if not (isinstance(fill, ast.Name) and fill.id == "______") else f"第 {index + 1} 个填空还没有填写"
        else:
            message = check_fill(fill, source, allowed_names=exercise.blank_scopes[index], blank_number=index + 1)
        if message is not None:
            return message
    return None


def run_program(runner: SandboxRunner, exercise: Exercise, program: Program, arrays: dict[str, dict[str, np.ndarray]], *,
                mode: DeviceMode, device_index: int, cases: list[CaseSpec] | None = None) -> RunResult:
    """One sandbox run of `program`: the given check, every case on its drawn inputs (`arrays`,
    by case id), and on a GPU the speed phase of an exercise with `speed:` (its input drawn here,
    on the trusted side). The grader and the compile-cache warmer both run programs this way."""
    spec = exercise.spec
    cases = spec.cases if cases is None else cases  # the cases as graded (drawn shapes resolved)
    speed, speed_in = None, {}
    if mode is DeviceMode.gpu and spec.speed is not None:
        speed, speed_in = speed_job(spec), speed_inputs(exercise.make_inputs(spec.speed.case(), spec.speed.seed))
    return runner.run(program=program.module, given_check=program.given_check, given_seed=spec.given_check.seed,
                      entry_point=spec.entry_point, cases=[_case_job(spec, c) for c in cases],
                      inputs={**_sandbox_inputs(cases, spec, arrays), **speed_in}, mode=mode, device_index=device_index,
                      speed=speed, deterministic=memoisable(exercise))


def _case_job(spec: ExerciseSpec, case: CaseSpec) -> CaseJob:
    grads = spec.backward.grads if spec.backward else {}
    args = [TensorArg(key=f"{case.id}.{name}", columns=case.cols if case.stride and index == 0 else None,
                      requires_grad=name in grads) for index, name in enumerate(spec.args)]
    backward = None
    if spec.backward is not None:
        backward = GradJob(grad_outputs={out: f"{case.id}.{name}" for out, name in spec.backward.grad_outputs.items()},
                           grads={f"{case.id}.{arg}": out for arg, out in grads.items()})
    return CaseJob(id=case.id, args=args, kwargs=dict(case.kwargs), outputs=spec.forward_outputs, calls=case.calls,
                   backward=backward)


def _sandbox_inputs(graded: list[CaseSpec], spec: ExerciseSpec,
                    arrays: dict[str, dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """Every case's inputs under `case.name`; a strided case's first argument inside its wider buffer."""
    cases = {c.id: c for c in graded}
    stored = {}
    for case_id, named in arrays.items():
        for name, array in named.items():
            stored[f"{case_id}.{name}"] = storage(cases[case_id], array) if name == spec.args[0] else array
    return stored


def _overwritten_inputs(spec: ExerciseSpec, graded: list[CaseSpec], arrays: dict[str, dict[str, np.ndarray]],
                        run: RunResult) -> Diagnosis | None:
    """The `input_overwritten` diagnosis when an input (not in `written_args`) came back from the
    sandbox changed in any bit, on any case that returned; None otherwise."""
    sent = _sandbox_inputs(graded, spec, arrays)
    by_id = {c.id: c for c in graded}
    found = []
    for outcome in run.cases:
        case = by_id.get(outcome.id)
        if case is None or not outcome.inputs_after:
            continue
        for index, name in enumerate(spec.args):
            key = f"{case.id}.{name}"
            if name in spec.written_args or key not in sent:
                continue
            columns = case.cols if index == 0 and case.stride else None
            change = changed_input(case.id, name, sent[key], outcome.inputs_after.get(key), columns=columns)
            if change is not None:
                found.append(change)
    return overwrite_diagnosis(found[:16], language=spec.language)


def _timing(run: RunResult | None, started: float) -> dict[str, float]:
    timing = {"total_s": time.monotonic() - started}
    if run is not None:
        timing["sandbox_s"] = run.elapsed_s
        timing["attempts"] = float(run.attempts)
        if run.startup_s:
            timing["startup_s"] = sum(run.startup_s)
        case_times = [c.elapsed_s for c in run.cases if c.elapsed_s is not None]
        if case_times:
            timing["cases_s"] = sum(case_times)
        if run.given is not None and run.given.elapsed_s is not None:
            timing["given_check_s"] = run.given.elapsed_s
        if run.speed is not None and run.speed.elapsed_s is not None:
            timing["speed_s"] = run.speed.elapsed_s  # the speed phase (GPU, exercises with `speed:`)
        for name, count in run.triton_cache.items():  # kernels_shared_hits, kernels_compiled, kernels_gpu_compile_checks
            timing[f"kernels_{name}"] = float(count)
        if run.gpu_compile_s:
            timing["gpu_compile_check_s"] = run.gpu_compile_s
    return timing


def build_grader(settings, *, sessions=None) -> Grader:
    """A grader wired from settings (sandbox backend, limits, device). With `sessions` (the
    service's database) and `settings.verdict_memo`, code results are memoised in the database."""
    from sandbox.backends import make_backend
    from service.config import UNSAFE_LOCAL_CONSENT

    backend = make_backend(settings.sandbox, python=settings.sandbox_python, hidden_paths=settings.hidden_paths(),
                           allow_unsafe_local=settings.allow_unsafe_local_sandbox == UNSAFE_LOCAL_CONSENT)
    assist = None
    if settings.model_assist_url:
        assist = ModelAssist(base_url=settings.model_assist_url, model=settings.model_assist_model,
                             api_key=settings.model_assist_api_key)
    memo = None
    if sessions is not None and settings.verdict_memo:
        from service.grading.memo import DbMemo

        memo = DbMemo(sessions)
    mode = settings.device_mode()
    warmer = None
    if settings.compile_cache and mode is DeviceMode.gpu and hasattr(backend, "with_triton_cache"):
        from sandbox.backends.base import TritonCacheMount
        from sandbox.compile_cache import SharedCompileCache, default_root
        from service.grading.compile_warm import CompileWarmer

        cache = SharedCompileCache(settings.compile_cache_dir or default_root(settings.data_dir.resolve() / "triton-shared"))
        backend = backend.with_triton_cache(TritonCacheMount(cache.root))
        warmer = CompileWarmer(cache=cache, backend=backend, limits=settings.limits, device_index=settings.gpu_index,
                               threads=settings.compile_cache_threads)
    return Grader(catalog=ExerciseCatalog(settings.exercises_dir), runner=SandboxRunner(backend=backend, limits=settings.limits),
                  mode=mode, device_index=settings.gpu_index, assist=assist, memo=memo,
                  warm_pool=settings.warm_pool, compile_cache=warmer, prewarm=settings.compile_cache_prewarm)
