"""What the first grading in a process pays once, paid at the grader's start instead (issue #20).

A new program's first grading in a worker process was 0.6-0.8 s slower than the next on the CPU machine
(0.255 s more inside its run on an H100, `phase_meanwhile_s`): the written-answer scorer's first use of
each exercise (its questions' patterns compiled, freetext's caches filled: about 0.55 s for lesson 6 here),
the service's message catalogue read from its YAML files (0.6 s here, at the first report's speed card), the
pass rule's named ideas' patterns and the exercise's own messages (0.15 s), and on the interpreter Triton's
import for the interpreter's gaps (0.2 s). `Grader.start` runs `warm_first_use`
in a daemon thread of its own: the student who comes first no longer pays it, nor waits for it (a grading
meanwhile does what it needs itself; the caches are the same functools caches). Bounded: at most
`budget_s`, the exercises one after the other, stopped by `stop` (the grader's close); whatever fails is
logged and skipped, never the start's failure. Nothing is graded or stored.
"""
from __future__ import annotations

import json
import logging
import threading
import time

from sandbox.contract import DeviceMode
from service.exercises import ExerciseCatalog
from service.grading import passrule, rubric
from service.grading.extract import extract
from service.grading.fills import interpreter_gaps
from service.messages import report_language
from service.messages.catalogue import service_catalogue
from service.submission import Submission

log = logging.getLogger("kernelgrade.grader")

WARM_BUDGET_S = 60.0  # the most the start's warm-up runs (the whole catalogue takes about 1.5 s here)


def warm_first_use(catalog: ExerciseCatalog, *, mode: DeviceMode, stop: threading.Event | None = None,
                   budget_s: float = WARM_BUDGET_S) -> list[str]:
    """Pay the first-use costs of a grading's trusted side; returns what was warmed (its names, in order)."""
    deadline = time.monotonic() + budget_s
    warmed: list[str] = []

    def step(name: str, work) -> bool:
        if (stop is not None and stop.is_set()) or time.monotonic() >= deadline:
            return False
        try:
            work()
            warmed.append(name)
        except Exception:  # noqa: BLE001 - a warm-up only: the grading that needs it does it itself
            log.exception("warming %s at the start failed (the first grading pays it instead)", name)
        return True

    if not step("messages", service_catalogue):
        return warmed
    if mode is DeviceMode.interpreter and not step("interpreter_gaps", interpreter_gaps):
        return warmed
    for exercise_id in catalog.ids():
        if not step(f"answers:{exercise_id}", lambda exercise_id=exercise_id: _score_example(catalog, exercise_id)):
            break
    return warmed


def _score_example(catalog: ExerciseCatalog, exercise_id: str) -> None:
    """The exercise's example submission's written answers, scored as a new program's are during its run."""
    exercise = catalog.get(exercise_id)
    path = exercise.root / "example_submission.json"
    if not path.is_file():
        return
    example = json.loads(path.read_text(encoding="utf-8"))
    submission = Submission(exercise=exercise_id, code=example["code"], answers=example["answers"],
                            explanation=example.get("explanation", ""),
                            claimed_output=example.get("claimed_output", ""))
    extraction = extract(exercise.template, submission.code)
    rubric.score_answers_ahead(exercise, submission, extraction.fill_sources, rubric.AnswersAhead(),
                               spilled=tuple(extraction.spills))
    # The pass rule's named ideas (their patterns compiled: named._regex) and the diagnoses' messages
    written = "\n".join([submission.explanation, *submission.answers.values()])
    rule = exercise.spec.pass_rule
    language = report_language(None, exercise.spec.language, [written])
    for kind in ("correctness_boundary", "performance_tradeoff"):
        idea = getattr(rule, kind, None) if rule is not None else None
        if idea is not None:
            passrule.named_requirement(kind, idea, items=[], written=written, language=language)
    exercise.messages  # noqa: B018 - a cached property: the exercise's messages.yaml read


def start_warming(catalog: ExerciseCatalog, *, mode: DeviceMode, stop: threading.Event,
                  budget_s: float = WARM_BUDGET_S) -> threading.Thread:
    """`warm_first_use` in a daemon thread (the process's exit never waits for it)."""
    thread = threading.Thread(target=warm_first_use, args=(catalog,), kwargs={"mode": mode, "stop": stop,
                                                                               "budget_s": budget_s},
                              name="kernelgrade-warm-first-use", daemon=True)
    thread.start()
    return thread
