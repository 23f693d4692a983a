"""Which fills may run."""
from __future__ import annotations

import ast

import pytest

from service.config import REPO_ROOT
from service.exercises.blanks import names_in_scope
from service.grading.fills import check_fill, interpreter_gaps

TEMPLATE = ast.parse((REPO_ROOT / "exercises/lesson06_mean_var/template.py").read_text(encoding="utf-8"))
SCOPE = names_in_scope(TEMPLATE)


def verdict(source: str) -> str | None:
    return check_fill(ast.parse(source, mode="eval").body, source, allowed_names=SCOPE)


def test_scope_is_the_kernel_before_the_blank():
    assert {"mask", "cols", "N", "BLOCK", "values", "mean", "row", "x", "tl"} <= SCOPE
    assert "var" not in SCOPE and "torch" not in SCOPE and "mean_var" not in SCOPE


@pytest.mark.parametrize("source", ["mask", "cols < N", "mask & (cols >= 0)", "values != 0", "True",
                                    "tl.full((BLOCK,), 1, tl.int1)", "(cols < N) if N > 0 else mask",
                                    "cols.to(tl.float32) < N", "values.sum(axis=0) != 0", "cols.to(tl.int64) < N"])
def test_allowed(source):
    assert verdict(source) is None


@pytest.mark.parametrize(("source", "words"), [
    ("__import__('os').system('id')", "tl.*"),
    ("().__class__.__bases__", "下划线"),
    ("(lambda: mask)()", "lambda"),
    ("(m := mask)", "海象"),
    ("[c for c in cols]", "推导式"),
    ("values[0] > 0", "下标"),
    ("'mask'", "str"),
    ("open('/etc/passwd')", "tl.*"),
    ("tl.sum.__globals__", "下划线"),
    ("torch.ones(1)", "tl.*"),
    ("cols < N if tl.core.builtins.exec(tl.core.builtins.bytes((112, 97, 115, 115))) == None else cols < N", "tl.*"),
    ("tl.core.inspect.os.kill(tl.core.inspect.os.getpid(), 9) == None", "tl.*"),
    ("tl.load(values) > 0", "tl.*"),
    ("tl.static_print(mask)", "tl.*"),
    # Tensor methods: on a name in scope only, from a fixed list, one level.
    ("cols.__class__ == 0", "下划线"),
    ("cols.to.__self__ < N", "下划线"),
    ("cols.handle.data[0] > 0", "下标"),
    ("cols.handle < N", "tl.*"),
    ("cols.to(tl.float32).to(tl.int32) < N", "tl.*"),
    ("torch.sum(cols) > 0", "tl.*"),
    ("secret.to(tl.float32) < N", "tl.*"),
    ("tl.to(tl.float32) < N", "tl.*"),
    ("(cols + 1).to(tl.float32) < N", "tl.*"),
    ("cols.to < N", "tl.*"),
    ("mask" + " & mask" * 80, "太"),
    ("(" * 30 + "mask" + ")" * 30 + " & " + "~" * 30 + "mask", "嵌套"),
])
def test_refused_with_a_reason(source, words):
    message = verdict(source)
    assert message is not None and words in message, message


def test_unfilled_blank_is_named():
    assert "还没有填写" in verdict("______")


def test_names_out_of_scope_are_listed():
    message = verdict("secret_value > 0")
    assert "secret_value" in message and "mask" in message


@pytest.mark.parametrize("source", ['-float("inf")', "float('-inf')", 'tl.where(mask, values, float("nan"))'])
def test_float_literals_count_as_numbers(source):
    assert verdict(source) is None


@pytest.mark.parametrize("source", ['float("1e308")', "float(values)", 'float("inf", 1)', "float(*'x')",
                                    'float(x="inf")', 'float.__call__("inf")'])
def test_other_float_calls_are_refused(source):
    assert verdict(source) is not None


def test_exercise_blank_scopes_are_computed_once_per_exercise():
    """The pipeline reads each blank's names from the loaded exercise (parsed once), not from a
    fresh parse of the template for every submission."""
    from service.exercises import ExerciseCatalog

    catalog = ExerciseCatalog(REPO_ROOT / "exercises")
    for exercise_id in catalog.ids():
        exercise = catalog.get(exercise_id)
        tree = ast.parse(exercise.template)
        scopes = exercise.blank_scopes
        assert scopes is exercise.blank_scopes
        assert len(scopes) == exercise.template.count("______")
        assert list(scopes) == [names_in_scope(tree, i) for i in range(len(scopes))]
    assert catalog.get("lesson06_mean_var").blank_scopes == (SCOPE,)


def test_the_interpreters_gaps_are_read_once_per_process():
    """Every grading on the interpreter asks for them; the interpreter's source is searched once."""
    assert interpreter_gaps() is interpreter_gaps()
    assert {gap.code for gap in interpreter_gaps()} >= {"atomic_xchg_float", "cpu_device"}
