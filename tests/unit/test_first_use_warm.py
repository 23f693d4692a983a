"""What a first grading paid once per process, paid at the grader's start in a thread of its own
(service/grading/warm.py, `Grader.start`; issue #20): the message catalogue, the interpreter's gaps, every
exercise's written-answer scorer and pass-rule patterns. Bounded, stoppable, never the start's failure."""
from __future__ import annotations

import json
import threading

from sandbox.contract import DeviceMode
from service.bootstrap import build_grader
from service.config import Settings
from service.exercises import ExerciseCatalog
from service.grading import freetext, named, rubric
from service.grading.extract import extract
from service.grading.fills import interpreter_gaps
from service.grading.warm import warm_first_use
from service.messages.catalogue import service_catalogue
from service.submission import Submission


def _example(catalog: ExerciseCatalog, exercise_id: str) -> Submission:
    exercise = catalog.get(exercise_id)
    example = json.loads((exercise.root / "example_submission.json").read_text(encoding="utf-8"))
    return Submission(exercise=exercise_id, code=example["code"], answers=example["answers"],
                      explanation=example["explanation"], claimed_output=example.get("claimed_output", ""))


def test_every_exercise_is_warmed_and_a_grading_then_finds_the_caches_full(tmp_path):
    catalog = build_grader(Settings(device="interpreter", data_dir=tmp_path)).catalog
    warmed = warm_first_use(catalog, mode=DeviceMode.interpreter)
    assert warmed == ["messages", "interpreter_gaps", *(f"answers:{i}" for i in catalog.ids())]
    assert service_catalogue.cache_info().currsize == 1 and interpreter_gaps.cache_info().currsize == 1
    assert named._regex.cache_info().currsize > 0
    # A student's grading of lesson 6 now scores its answers from what the warm-up compiled: no new pattern.
    exercise = catalog.get("lesson06_mean_var")
    submission = _example(catalog, "lesson06_mean_var")
    submission = submission.model_copy(update={"answers": {q: a + " 另外。" for q, a in submission.answers.items()}})
    extraction = extract(exercise.template, submission.code)
    compiled = [freetext._compiled.cache_info().currsize, freetext._compiled_lower.cache_info().currsize]
    rubric.score_answers_ahead(exercise, submission, extraction.fill_sources, rubric.AnswersAhead(),
                               spilled=tuple(extraction.spills))
    assert [freetext._compiled.cache_info().currsize, freetext._compiled_lower.cache_info().currsize] == compiled


def test_bounded_and_stoppable(tmp_path):
    catalog = build_grader(Settings(device="interpreter", data_dir=tmp_path)).catalog
    assert warm_first_use(catalog, mode=DeviceMode.gpu, budget_s=0.0) == []
    stop = threading.Event()
    stop.set()
    assert warm_first_use(catalog, mode=DeviceMode.gpu, stop=stop) == []
    assert "interpreter_gaps" not in warm_first_use(catalog, mode=DeviceMode.gpu)[:2]  # a GPU grading never asks


class _WithAMissingExercise:
    """The real catalogue, with an id before its own whose exercise cannot be read."""

    def __init__(self, catalog: ExerciseCatalog) -> None:
        self.catalog = catalog

    def ids(self) -> list[str]:
        return ["no_such_exercise", *self.catalog.ids()]

    def get(self, exercise_id: str):
        return self.catalog.get(exercise_id)


def test_what_fails_is_logged_and_skipped(tmp_path, caplog):
    catalog = build_grader(Settings(device="interpreter", data_dir=tmp_path)).catalog
    warmed = warm_first_use(_WithAMissingExercise(catalog), mode=DeviceMode.interpreter)  # type: ignore[arg-type]
    assert "answers:no_such_exercise" not in warmed
    assert warmed[-len(catalog.ids()):] == [f"answers:{i}" for i in catalog.ids()]
    assert "warming answers:no_such_exercise at the start failed" in caplog.text


def test_the_grader_start_warms_in_a_thread_of_its_own_and_close_stops_it(tmp_path):
    grader = build_grader(Settings(device="interpreter", data_dir=tmp_path, warm_pool=0))
    assert grader.warming is None
    grader.start()
    try:
        assert grader.warming is not None and grader.warming.daemon
        grader.warming.join(300)
        assert not grader.warming.is_alive()
        grader.start()  # a second start warms nothing again
    finally:
        grader.close()
    assert grader._stop_warming.is_set()
    one_off = build_grader(Settings(device="interpreter", data_dir=tmp_path / "other", warm_pool=0))
    one_off.warm_first_use = False
    one_off.start()
    assert one_off.warming is None
    one_off.close()
