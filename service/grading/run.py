"""One sandbox run of an assembled program (cases, given check, speed phase) and what it cost.

The grader and the compile-cache warmer (compile_warm.py) both run programs through `run_program`.
"""
from __future__ import annotations

import functools
import time
from collections.abc import Callable

import numpy as np

from sandbox.contract import CaseJob, DeviceMode, GradJob, RunResult, StridedView, TensorArg
from sandbox.runner import SandboxRunner
from service.exercises import CaseSpec, Exercise, ExerciseSpec
from service.grading.assemble import Program
from service.grading.inputs import laid_out, layout_view, storage
from service.grading.memo import memoisable
from service.grading.sandbox_text import render_run
from service.grading.speed import speed_inputs, speed_job


def run_program(runner: SandboxRunner, exercise: Exercise, program: Program,
                arrays: dict[str, dict[str, np.ndarray]], *, mode: DeviceMode, device_index: int,
                cases: list[CaseSpec] | None = None, language: str | None = None, with_given: bool = True,
                with_speed: bool = True, detach_speed: bool = False, cpu_timer: bool = False,
                meanwhile: Callable[[], None] | None = None) -> RunResult:
    """One sandbox run of `program`: the given check, every case on its drawn inputs (`arrays`,
    by case id), and on a GPU the speed phase of an exercise with `speed:` (its input drawn here,
    on the trusted side). The grader and the compile-cache warmer both run programs this way. The
    runner's message codes come back said in `language` (default: the exercise's). `with_given`,
    `with_speed`: False leaves that phase out (a parallel compile run of some of the cases, compile_parallel.py).
    `detach_speed`: the speed phase comes back unread in `speed_pending` (service/grading/speed_card.py);
    `cpu_timer` (tests only): the interpreter runs it too, with a plain clock. `meanwhile`: the caller's
    work done while the sandbox runs (SandboxRunner.run)."""
    spec = exercise.spec
    cases = spec.cases if cases is None else cases  # the cases as graded (drawn shapes resolved)
    speed, speed_in = None, {}
    if with_speed and (mode is DeviceMode.gpu or cpu_timer) and spec.speed is not None:
        speed, speed_in = speed_job(spec), speed_inputs(speed_arrays(exercise))
        speed.cpu_timer = cpu_timer
    given_check = program.given_check if with_given else None
    run = runner.run(program=program.module, given_check=given_check, given_seed=spec.given_check.seed,
                     entry_point=spec.entry_point, cases=[_case_job(spec, c, arrays[c.id]) for c in cases],
                     inputs={**sandbox_inputs(cases, spec, arrays), **speed_in}, mode=mode, device_index=device_index,
                     speed=speed, deterministic=memoisable(exercise), detach_speed=detach_speed and speed is not None,
                     meanwhile=meanwhile)
    return render_run(run, language or spec.language)  # the runner's codes in words (grading/sandbox_text.py)


SPEED_INPUTS_KEPT = 16  # exercises whose speed input one process keeps (8 MiB each in the catalogue)


def speed_arrays(exercise: Exercise) -> dict[str, np.ndarray]:
    """The speed phase's input: drawn from the exercise's fixed public seed (never the secret one), so
    the same for every run; drawn once per process and kept read-only. Drawing it cost 25-45 ms of
    every new program's GPU grading before its sandbox could start (cProfile on an H100, 2026-12-06;
    lesson 6: 512 x 4096 rows). Keyed by the exercise and its speed spec: an edited exercise draws anew."""
    assert exercise.spec.speed is not None
    return _speed_draw(exercise, exercise.spec.speed.model_dump_json())


@functools.lru_cache(maxsize=SPEED_INPUTS_KEPT)
def _speed_draw(exercise: Exercise, speed_spec: str) -> dict[str, np.ndarray]:
    speed = exercise.spec.speed
    assert speed is not None
    drawn = exercise.make_inputs(speed.case(), speed.seed)
    for array in drawn.values():
        array.setflags(write=False)  # shared by every run: nothing may change it
    return drawn


def _case_job(spec: ExerciseSpec, case: CaseSpec, arrays: dict[str, np.ndarray]) -> CaseJob:
    grads = spec.backward.grads if spec.backward else {}
    args = [TensorArg(key=f"{case.id}.{name}", columns=case.cols if case.stride and index == 0 else None,
                      view=_view(case, name, arrays), requires_grad=name in grads)
            for index, name in enumerate(spec.args)]
    backward = None
    if spec.backward is not None:
        backward = GradJob(grad_outputs={out: f"{case.id}.{name}" for out, name in spec.backward.grad_outputs.items()},
                           grads={f"{case.id}.{arg}": out for arg, out in grads.items()})
    return CaseJob(id=case.id, args=args, kwargs=dict(case.kwargs), outputs=spec.forward_outputs, calls=case.calls,
                   backward=backward)


def _view(case: CaseSpec, name: str, arrays: dict[str, np.ndarray]) -> StridedView | None:
    """The strided view the entry point gets of input `name` (a case's `layout`), else None."""
    layout = case.layout.get(name)
    return None if layout is None else StridedView.model_validate(layout_view(layout, arrays[name].shape))


def sandbox_inputs(graded: list[CaseSpec], spec: ExerciseSpec,
                   arrays: dict[str, dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """Every case's inputs under `case.name`; a strided case's first argument inside its wider buffer,
    an input with a `layout` as the 1-D storage its view lies in."""
    cases = {c.id: c for c in graded}
    stored = {}
    for case_id, named in arrays.items():
        case = cases[case_id]
        for name, array in named.items():
            if name in case.layout:
                stored[f"{case_id}.{name}"] = laid_out(case.layout[name], array)[0]
            else:
                stored[f"{case_id}.{name}"] = storage(case, array) if name == spec.args[0] else array
    return stored


def run_timing(run: RunResult | None, started: float) -> dict[str, float]:
    """The report's `timing`: the whole grading since `started` (monotonic), and the run's phases."""
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
        # kernels_shared_hits, kernels_compiled, kernels_gpu_compile_checks
        for name, count in run.triton_cache.items():
            timing[f"kernels_{name}"] = float(count)
        if run.gpu_compile_s:
            timing["gpu_compile_check_s"] = run.gpu_compile_s
        # where the run's time went: the trusted side's phases, and the harness's own split (told, never graded)
        for name, seconds in run.phases.items():
            timing[f"phase_{name}_s"] = seconds
        for name, seconds in run.split.items():
            timing[f"harness_{name}_s"] = seconds
    return timing
