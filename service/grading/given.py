"""Step 3b: the given check's verdict is recomputed on the trusted side.

The lesson's own check runs as written, inside the sandbox, in the submission's process: its
"passed" could be forged there (a patched assert_close, a forged frame). The harness records
each call of the entry point during the check (inputs before the call, outputs after) and the
check counts as passed only if every recorded output matches the float64 reference for those
inputs, within the exercise's tolerances, and the check made as many calls as it should.
Producing a record that passes means producing right outputs for the inputs recorded, which is
no forgery.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from sandbox.contract import GivenRun
from service.exercises import Exercise
from service.grading.compare import compare_outputs
from service.grading.sandbox_text import expand_marks, say
from service.messages import render


def verify_given(exercise: Exercise, given: GivenRun | None, *, language: str | None = None) -> GivenRun | None:
    """`given`, or a failed copy of it that says why its pass does not count (in `language`, else the exercise's).
    A check that failed in the sandbox gets a last line that says which of its calls was wrong, on which
    shape, by how much (its assert's own words name neither the shape nor, often, the output)."""
    spec = exercise.spec
    lang = language or spec.language
    if given is None or spec.backward is not None:
        return given  # a check with gradients is not recomputed (its upstream gradient is drawn inside)
    if given.status not in ("passed", "failed"):
        return given
    if given.status == "passed":
        expected_calls = spec.given_check.calls
        if not given.calls or (expected_calls is not None and len(given.calls) != expected_calls):
            return _failed(given, render("given.call_count_expected", lang, entry_point=spec.entry_point,
                                         calls=len(given.calls), expected=expected_calls) if expected_calls
                           else render("given.call_count", lang, entry_point=spec.entry_point,
                                       calls=len(given.calls)))
    wrong = _first_wrong_call(exercise, given, lang)
    if wrong is None:
        return given
    if isinstance(wrong, str):  # calls we cannot recompute: a failed check keeps its own words
        return given if given.status == "failed" else _failed(given, wrong)
    # Which call, which shape, by how much: under the check's own failure, or against its pass.
    index, shape, where = wrong
    key = "given.failed_where" if given.status == "failed" else "given.recomputed_wrong"
    return _failed(given, render(key, lang, index=index, entry_point=spec.entry_point, shape=shape, where=where))


def _first_wrong_call(exercise: Exercise, given: GivenRun, lang: str) -> tuple[int, str, str] | str | None:
    """The first recorded call whose outputs are not the float64 reference's for its inputs: (its
    number, its first input's shape, what was wrong); a sentence when a call cannot be recomputed;
    None when every recorded call is right."""
    spec = exercise.spec
    outputs = spec.forward_outputs
    for index, (args, outs) in enumerate(given.calls, start=1):
        if len(args) != len(spec.args) or len(outs) != len(outputs):
            return render("given.call_shape", lang, index=index, entry_point=spec.entry_point,
                          args=len(args), outs=len(outs), want_args=len(spec.args), want_outs=len(outputs))
        inputs = {name: np.asarray(a, dtype=np.float64) if np.asarray(a).dtype.kind == "f" else np.asarray(a)
                  for name, a in zip(spec.args, args)}
        try:
            expected = exercise.checks.reference(**inputs)
        except Exception as exc:  # noqa: BLE001 - the exercise's reference cannot take this call
            return render("given.reference_failed", lang, index=index, entry_point=spec.entry_point,
                          exception=type(exc).__name__)
        result = compare_outputs(dict(zip(outputs, outs)), {name: expected[name] for name in outputs}, spec.outputs,
                                 language=lang)
        if not result.passed:
            where = ""
            if (m := result.first_mismatch) is not None:
                observed = "NaN/inf" if m.observed is None else f"{m.observed:.6g}"
                where = render("given.where_mismatch", lang, output=m.output, index=str(m.index), observed=observed,
                               expected=m.expected, allowed=m.allowed_error)
            elif result.error:
                where = render("given.where_error", lang, error=result.error)
            shape = "×".join(map(str, np.asarray(args[0]).shape)) if args else "?"
            return index, shape, where
    return None


def given_output_in(exercise: Exercise, given: GivenRun | None, language: str) -> str:
    """The output of `given` (as the sandbox returned it, before `verify_given`) with our verdict on
    it, in `language`: the runner's own account said again, the recomputed check's words."""
    if given is None:
        return ""
    if given.said is not None:
        given = dataclasses.replace(given, output=say(given.said, language))
    elif given.raw_output is not None:  # its marks said in `language`, not the report's
        given = dataclasses.replace(given, output=expand_marks(given.raw_output, language))
    verified = verify_given(exercise, given, language=language)
    return verified.output if verified is not None else ""


def _failed(given: GivenRun, reason: str) -> GivenRun:
    output = (given.output + "\n" if given.output else "") + reason
    return dataclasses.replace(given, status="failed", output=output)
