"""Where a grading would block, as values: `Grader.steps` yields them and its driver decides.

`Grader.grade` answers them in its own thread (a sandbox run, a wait for an identical program in
flight); the service's workers (service/worker/lanes.py, celery_app.py) hand a RunStep to a
sandbox lane and park a grading on a ParkStep without holding any thread, so the cheap part of
every other grading (memo hits, refused fills, written answers, the report) never waits behind runs.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from collections.abc import Callable

    from service.exercises import Exercise
    from service.exercises.spec import CaseSpec
    from service.grading.assemble import Program
    from service.grading.compile_parallel import ParallelCompile
    from service.messages import Language


@dataclass
class RunStep:
    """Run `program` in a sandbox (Grader.run_step on any lane); send back its RunResult."""

    exercise: Exercise
    program: Program
    arrays: dict[str, dict[str, np.ndarray]]
    cases: list[CaseSpec]
    language: Language
    with_speed: bool = True  # False: no speed phase (a second run of the same grading: host_blanks.py)
    compiled_first: ParallelCompile | None = None  # set by run_step: the parallel compile before the run (GPU)
    meanwhile: Callable[[], None] | None = None  # the grading's own work while the sandbox runs (its written answers)


@dataclass(frozen=True)
class ParkStep:
    """An identical program holds the memo claim on `key`: send None once that claim is gone
    (released, or expired: at most `timeout_s`), and the grading looks at the memo again."""

    key: str
    timeout_s: float


Step = RunStep | ParkStep
