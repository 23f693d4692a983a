"""`kernelgrade exercises validate`: the solution earns every code point with margin, and every
mutant gets exactly the verdict its author wrote down. A mutant that escapes is a hole in the cases."""
from __future__ import annotations

import json
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from service.exercises import Exercise, Mutant
from service.grading.pipeline import Grader
from service.report import Report
from service.submission import Submission

CORRECT_MAX_ERROR_RATIO = 0.1  # a correct kernel's error stays within a tenth of the tolerance
BUG_MIN_ERROR_RATIO = 100.0  # a probe that targets a bug misses by a hundred tolerances or more


@dataclass
class Outcome:
    name: str
    report: Report
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


def code_points(report: Report, exercise: Exercise) -> float:
    case_items = {i.id for i in exercise.spec.rubric if i.source == "cases"}
    return sum(i.points for i in report.items if i.id in case_items)


def solution_submission(exercise: Exercise) -> tuple[Submission, bool]:
    """The reference solution, with the written answers, explanation and claimed output of the
    exercise's example submission when it has one (True): then its pass rule must be met in full."""
    path = exercise.root / "example_submission.json"
    if not path.is_file():
        return Submission(exercise=exercise.id, code=exercise.solution), False
    example = json.loads(path.read_text(encoding="utf-8"))
    return Submission(exercise=exercise.id, code=exercise.solution, answers=example.get("answers") or {},
                      explanation=example.get("explanation") or "",
                      claimed_output=example.get("claimed_output") or ""), True


def check_solution(exercise: Exercise, report: Report, *, with_answers: bool = False) -> list[str]:
    """`with_answers`: graded with the example's written answers, so every pass requirement must hold."""
    problems = []
    if report.status != "graded":
        return [f"solution not graded: {report.message}"]
    if with_answers:
        problems += [f"solution with the example's answers: pass requirement {r.id} not met ({r.message})"
                     for r in report.score.requirements if not r.met]
    full = sum(i.points for i in exercise.spec.rubric if i.source == "cases")
    if (got := code_points(report, exercise)) != full:
        problems.append(f"solution earns {got}/{full} code points")
    problems += [f"solution raises veto {v.rule}" for v in report.vetoes]
    for case in report.cases:
        if not case.passed:
            problems.append(f"solution fails case {case.id}: {case.error or case.first_mismatch}")
        elif case.error_ratio is not None and case.error_ratio > CORRECT_MAX_ERROR_RATIO:
            problems.append(f"solution's error on {case.id} is {case.error_ratio:.3g} of the tolerance (> "
                            f"{CORRECT_MAX_ERROR_RATIO})")
    return problems


def check_mutant(exercise: Exercise, mutant: Mutant, report: Report) -> list[str]:
    expect = mutant.expect
    if report.status != "graded":
        return [f"not graded: {report.message}"]
    problems = []
    got = code_points(report, exercise)
    low = expect.code_points if expect.code_points_min is None else expect.code_points_min
    if not low <= got <= expect.code_points:
        span = expect.code_points if low == expect.code_points else f"{low} to {expect.code_points}"
        problems.append(f"code points {got}, expected {span}")
    rules = sorted(v.rule for v in report.vetoes)
    if sorted(r for r in rules if r not in expect.vetoes_may) != sorted(expect.vetoes):
        may = f" (and maybe {sorted(expect.vetoes_may)})" if expect.vetoes_may else ""
        problems.append(f"vetoes {rules}, expected {sorted(expect.vetoes)}{may}")
    found = {d.id for d in report.diagnoses}
    if missing := [d for d in expect.diagnoses if d not in found]:
        problems.append(f"diagnoses {sorted(found)} lack {missing}")
    if wrong := sorted(found & set(expect.not_diagnosed)):
        problems.append(f"diagnoses {wrong} reported, expected none of {sorted(expect.not_diagnosed)}")
    ran = report.program is not None and report.program.ran
    if expect.rejected == ran:
        reason = report.program.not_run_reason if report.program is not None else "no program in the report"
        problems.append("was run, expected to be refused" if ran else f"was refused: {reason}")
    for wanted in expect.failing_cases:
        chosen = [c for c in report.cases if c.id == wanted or c.kind == wanted]
        if not chosen:
            problems.append(f"no case {wanted!r}")
        for case in chosen:
            if case.passed:
                problems.append(f"case {case.id} passes, expected it to fail")
            elif case.kind == "probe" and case.error is None and (case.error_ratio or 0) < BUG_MIN_ERROR_RATIO:
                problems.append(f"probe {case.id} misses by only {case.error_ratio:.3g} tolerances (< "
                                f"{BUG_MIN_ERROR_RATIO:g})")
    full = sum(i.points for i in exercise.spec.rubric if i.source == "cases")
    if ran and expect.code_points == full:  # a correct answer: every case passes
        problems += [f"case {c.id} fails: {c.error or c.first_mismatch}" for c in report.cases if not c.passed]
    return problems


@dataclass
class Summary:
    """One exercise's line of the validate table."""

    exercise: str
    solution_ok: bool
    caught: int
    mutants: int
    worst_correct_ratio: float | None  # the solution's largest error / tolerance (<= 0.1 holds)
    # the smallest error / tolerance of a wrong answer on a case it must fail (>= 100 holds)
    worst_bug_ratio: float | None
    refused: str | None = None  # the exercise cannot be graded in this mode (the not_gradable reason)


def summarize(exercise: Exercise, outcomes: list[Outcome]) -> Summary:
    solution, mutants = outcomes[0], outcomes[1:]
    if solution.report.status == "not_gradable" and exercise.spec.requires_gpu:
        return Summary(exercise.id, False, 0, len(exercise.mutants), None, None, refused=solution.report.message)
    correct = [c.error_ratio for c in solution.report.cases if c.error_ratio is not None]
    bugs = []
    by_id = {m.id: m for m in exercise.mutants}
    for outcome in mutants:
        wanted = by_id[outcome.name].expect.failing_cases
        for case in outcome.report.cases:
            if not case.passed and case.error is None and case.error_ratio is not None and \
                    (case.id in wanted or case.kind in wanted) and case.kind == "probe":
                bugs.append(case.error_ratio)
    return Summary(exercise.id, solution.ok, sum(o.ok for o in mutants), len(mutants),
                   max(correct) if correct else None, min(bugs) if bugs else None)


def validate_exercise(grader: Grader, exercise: Exercise, *, secret_seed: int, jobs: int = 1,
                      on_result: Callable[[Outcome], None] = lambda _: None) -> list[Outcome]:
    """The solution's outcome, then the mutants' in the catalog's order. `jobs`: mutants graded at
    once (the grader is shared as the service's threads share it); `on_result` hears each as it lands."""
    submission, with_answers = solution_submission(exercise)
    report = grader.grade(submission, secret_seed=secret_seed)
    solution = Outcome("solution", report, check_solution(exercise, report, with_answers=with_answers))
    on_result(solution)
    if report.status == "not_gradable" and exercise.spec.requires_gpu:
        solution.problems.clear()  # refused on purpose, with its reason: nothing more to run here
        return [solution]
    lock = threading.Lock()

    def grade(mutant: Mutant) -> Outcome:
        report = grader.grade(Submission(exercise=exercise.id, code=exercise.mutant_code(mutant)),
                              secret_seed=secret_seed)
        outcome = Outcome(mutant.id, report, check_mutant(exercise, mutant, report))
        with lock:
            on_result(outcome)
        return outcome

    with ThreadPoolExecutor(max(1, jobs), thread_name_prefix="validate") as pool:
        return [solution, *pool.map(grade, exercise.mutants)]
