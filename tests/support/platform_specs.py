"""The result formats of Gradescope and PrairieLearn, as their published specifications define
them, written as checks the tests run on everything kernelgrade exports or a kit writes.

- Gradescope, "Autograder Specifications" (gradescope-autograders.readthedocs.io/en/latest/specs/,
  source gradescope/autograder_samples docs/specs.md): top-level score (optional when every test
  has one; overrides the tests' total), execution_time, output, output_format, test_output_format,
  test_name_format, visibility, stdout_visibility, extra_data, tests, leaderboard; per test: score,
  max_score, status (passed|failed), name, name_format, number, output, output_format, tags,
  visibility, extra_data. Formats: text, html, simple_format, md, ansi. Visibility: hidden,
  after_due_date, after_published, visible.
- PrairieLearn, "External Grading" (prairielearn.readthedocs.io, docs/externalGrading.md):
  `score` in [0, 1] is the one mandatory field of a gradable result; `gradable: false` marks an
  invalid submission (no points awarded or lost, no attempt used) with optional `format_errors`
  (a string or a list of strings); message, output, images, and tests of name, description,
  points, max_points, message, output, images. The whole file at most 1 MB.
"""
from __future__ import annotations

import json
from numbers import Real
from typing import Any

FORMATS = {"text", "html", "simple_format", "md", "ansi"}
VISIBILITY = {"hidden", "after_due_date", "after_published", "visible"}


def _number(value: Any) -> bool:
    return isinstance(value, Real) and not isinstance(value, bool)


def _check(obj: dict[str, Any], rules: dict[str, Any], where: str) -> None:
    unknown = set(obj) - set(rules)
    assert not unknown, f"{where}: fields the specification does not define: {sorted(unknown)}"
    for key, rule in rules.items():
        if key not in obj:
            continue
        value = obj[key]
        if isinstance(rule, set):
            assert value in rule, f"{where}.{key} = {value!r} is not one of {sorted(rule)}"
        else:
            assert rule(value), f"{where}.{key} = {value!r} has the wrong type"


GRADESCOPE_TOP = {"score": _number, "execution_time": _number, "output": lambda v: isinstance(v, str),
                  "output_format": FORMATS, "test_output_format": FORMATS, "test_name_format": FORMATS,
                  "visibility": VISIBILITY, "stdout_visibility": VISIBILITY, "extra_data": lambda v: isinstance(v, dict),
                  "tests": lambda v: isinstance(v, list), "leaderboard": lambda v: isinstance(v, list)}
GRADESCOPE_TEST = {"score": _number, "max_score": _number, "status": {"passed", "failed"},
                   "name": lambda v: isinstance(v, str), "name_format": FORMATS, "number": lambda v: isinstance(v, str),
                   "output": lambda v: isinstance(v, str), "output_format": FORMATS,
                   "tags": lambda v: isinstance(v, list) and all(isinstance(t, str) for t in v),
                   "visibility": VISIBILITY, "extra_data": lambda v: isinstance(v, dict)}


def check_gradescope(results: dict[str, Any]) -> float | None:
    """Check a results.json against the specification; returns the score Gradescope records (None: no score)."""
    _check(results, GRADESCOPE_TOP, "results")
    for index, test in enumerate(results.get("tests", [])):
        _check(test, GRADESCOPE_TEST, f"results.tests[{index}]")
    if "score" in results:
        return float(results["score"])
    scored = [t for t in results.get("tests", []) if "score" in t]
    return sum(t["score"] for t in scored) if scored else None


PRAIRIELEARN_TOP = {"gradable": lambda v: isinstance(v, bool), "score": _number, "message": lambda v: isinstance(v, str),
                    "output": lambda v: isinstance(v, str),
                    "format_errors": lambda v: isinstance(v, str) or (isinstance(v, list) and all(isinstance(e, str) for e in v)),
                    "images": lambda v: isinstance(v, list), "tests": lambda v: isinstance(v, list)}
PRAIRIELEARN_TEST = {"name": lambda v: isinstance(v, str), "description": lambda v: isinstance(v, str),
                     "points": _number, "max_points": _number, "message": lambda v: isinstance(v, str),
                     "output": lambda v: isinstance(v, str), "images": lambda v: isinstance(v, list)}


def check_prairielearn(results: dict[str, Any]) -> float | None:
    """Check a PrairieLearn result; returns its score, or None when it is not gradable."""
    assert len(json.dumps(results).encode()) <= 1_000_000, "PrairieLearn limits results.json to 1 MB"
    _check(results, PRAIRIELEARN_TOP, "results")
    for index, test in enumerate(results.get("tests", [])):
        _check(test, PRAIRIELEARN_TEST, f"results.tests[{index}]")
    if results.get("gradable") is False:
        assert "score" not in results, "a result that is not gradable carries no score"
        return None
    assert "score" in results and 0.0 <= results["score"] <= 1.0, "a gradable result needs a score in [0, 1]"
    return float(results["score"])
