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
                                    "cols.to(tl.float32) < N", "values.sum(axis=0) != 0", "cols.to(tl.int64) < N",
                                    # the program's index, as the template reads it (row = tl.program_id(0))
                                    "tl.program_id(0) >= 0", "cols < N + 0 * tl.num_programs(0)"])
def test_allowed(source):
    assert verdict(source) is None


# A tensor method on a call's result or an operator's, from the same list, recursively (issue 15).
@pytest.mark.parametrize("source", [
    "(cols < N).to(tl.int1)",
    "tl.minimum(N - row, BLOCK).to(tl.float32) > 0",
    "tl.arange(0, BLOCK).reshape(BLOCK) < N",
    "cols.to(tl.float32).to(tl.int32) < N",
    "(cols + 1).to(tl.float32) <= N",
    "-(cols - N).to(tl.float32) > 0",
    "tl.where(mask, values, 0.0).sum(axis=0).to(tl.float64) != 0",
    "(mask if N > 0 else cols < N).to(tl.int1)",
    "(mask & (cols >= 0)).to(tl.int8).to(tl.int1)",
    "values.exp().log().abs().sqrt() >= 0",
])
def test_methods_on_results_are_allowed(source):
    assert verdict(source) is None


@pytest.mark.parametrize(("source", "words"), [
    # a method off the list, on a call's result or an operator's: named, with the list
    ("tl.arange(0, BLOCK).data_ptr() < N", ".data_ptr"),
    ("(cols < N).tolist() == 0", ".tolist"),
    ("cols.to(tl.float32).item() < N", ".item"),
    ("tl.core.builtins.exec(tl.core.builtins.bytes((112,))) == None", ".exec"),
    # dunders and other attributes of a result
    ("(cols < N).__class__", "下划线"),
    ("tl.arange(0, BLOCK).to.__self__ < N", "下划线"),
    ("(cols < N).to(tl.int1).__class__.__subclasses__()", "下划线"),
    ("tl.minimum(cols, N).to(tl.float32).__getattribute__('handle')", "下划线"),
    ("(cols < N).handle", "(cols < N).handle"),
    ("tl.minimum(cols, N).to(tl.float32).handle.data", "handle"),
    ("(cols < N).to < 1", "tl.*"),
    # a listed method on what is not a tensor: dtypes, functions, modules, constants, tuples
    ("tl.float32.to(tl.int1)", "不是张量"),
    ("tl.sum.to(cols) < N", "不是张量"),
    ("tl.core.to(cols)", "不是张量"),
    ("(1).to(tl.int1)", "不是张量"),
    ("(BLOCK,).reshape(1)", "不是张量"),
    ('float("inf").to(tl.int1)', "不是张量"),
    ("(mask if N > 0 else tl).to(tl.int1)", "不是张量"),
    ("(mask or tl.float32).to(tl.int1)", "不是张量"),
    # the receiver and the arguments are held to every rule
    ("(cols < secret).to(tl.int1)", "secret"),
    ("(cols < N).to(eval('1'))", "eval"),
    ("print(cols).to(tl.int1)", "print"),
    ("(lambda: mask)().to(tl.int1)", "lambda"),
    ("torch.ones(1).to(tl.int1)", "tl.*"),
    ("(cols < N).to(tl.int1, _semantic=mask)", "_semantic"),
    ("tl.where(mask, 1, 0, _builder=mask) != 0", "_builder"),
    # the bounds hold for chains
    ("cols" + ".to(tl.int32)" * 30 + " < N", "太"),
])
def test_methods_on_results_refused_with_a_reason(source, words):
    message = verdict(source)
    assert message is not None and words in message, message


# Third-party spellings of allowed functions (docs/benchmarks.md, sixteenth day): tl.cast is .to as a
# function, tl.math.<f> the same element-wise functions as tl.<f>. Only one level under tl.math, from a list.
@pytest.mark.parametrize("source", [
    "tl.cast(cols, tl.int64) < N",
    "tl.cast(cols, tl.float32, bitcast=False) < N",
    "tl.math.rsqrt(values * values + 1.0) > 0",
    "tl.math.fma(values, values, 0.0) >= 0",
    "tl.math.exp2(values - mean) > 0",
    "tl.math.sqrt_rn(values * values) >= 0",
    "tl.math.rsqrt(values + 2.0).to(tl.float32) > 0",
])
def test_third_party_spellings_are_allowed(source):
    assert verdict(source) is None


# A shape written as a list, as the Triton tutorials (`tl.zeros([BLOCK_M, BLOCK_N], ...)`) and TorchInductor's
# generated kernels (`tl.full([XBLOCK, RBLOCK], 0, tl.float32)`, `tl.broadcast_to(tmp0, [XBLOCK, RBLOCK])`)
# write it (docs/benchmarks.md, third-party kernels, round 3): a list is a tuple with brackets, so it is
# allowed where a tuple is (a call's argument) and refused where a tuple is (an operand).
@pytest.mark.parametrize("source", [
    "tl.broadcast_to(mask, [BLOCK])",
    "tl.where(mask, tl.full([BLOCK], 1.0, tl.float32), 0.0) > 0",
    "cols < tl.full([], N, tl.int64)",
    "tl.zeros([BLOCK], dtype=tl.float32) == 0",
    "cols.reshape([BLOCK]) < N",
])
def test_a_shape_may_be_a_list(source):
    assert verdict(source) is None


@pytest.mark.parametrize(("source", "words"), [
    ("cols < N if [0] * (1 << 33) else cols < N", "元组或列表"),
    ("mask if [mask] == [mask] else mask", "元组或列表"),
    ("[BLOCK].reshape(1)", "不是张量"),
    ("tl.full([BLOCK], 1, tl.int1) if [c for c in cols] else mask", "推导式"),
    ("tl.full([secret], 1, tl.int1)", "secret"),
])
def test_a_list_is_held_to_the_tuple_rules(source, words):
    message = verdict(source)
    assert message is not None and words in message, message


# Python's min/max, which Triton's compiler reads as builtin_min/builtin_max (element-wise on tensors): a CUDA
# port's `min(N - start, BLOCK)` (docs/benchmarks.md, third-party kernels, round 3). By name, two or more
# positional arguments, each held to every rule; nothing else of Python's builtins.
@pytest.mark.parametrize("source", [
    "cols < min(N, BLOCK)",
    "min(cols, N - 1) < N",
    "max(cols, 0) < min(N, BLOCK, N + 1)",
    "min(cols, N).to(tl.float32) < N",
])
def test_min_and_max_by_name(source):
    assert verdict(source) is None


@pytest.mark.parametrize(("source", "words"), [
    ("min(cols) < N", "min"),
    ("min(cols, N, key=abs) < N", "min"),
    ("min(*cols) < N", "min"),
    ("sorted(cols, N) < N", "sorted"),
    ("min(cols, secret) < N", "secret"),
    ("min.__self__", "下划线"),
    ("min < N", "min"),
    ("min(cols, eval('1')) < N", "eval"),
])
def test_other_builtin_calls_stay_refused(source, words):
    message = verdict(source)
    assert message is not None and words in message, message


@pytest.mark.parametrize(("source", "words"), [
    ("tl.math(1) == 0", "`tl.math`"),
    ("tl.math.core.builtins.exec(1) == None", ".exec"),
    ("tl.math.wraps(cols) == 0", ".wraps"),
    ("tl.math.exp.__globals__", "下划线"),
    ("tl.math.rsqrt.to(tl.float32) < N", "不是张量"),
    ("tl.extra.math.rsqrt(values) > 0", "tl.*"),
    ("math.rsqrt(values) > 0", "math"),
])
def test_only_the_listed_math_functions(source, words):
    message = verdict(source)
    assert message is not None and words in message, message


def test_method_refusals_are_said_in_english_too():
    def english(source: str) -> str | None:
        return check_fill(ast.parse(source, mode="eval").body, source, allowed_names=SCOPE, language="en")

    assert "may not call the method .data_ptr" in english("tl.arange(0, BLOCK).data_ptr() < N")
    assert "`tl.float32` is not a tensor" in english("tl.float32.to(tl.int1)")
    assert "`_semantic=`" in english("(cols < N).to(tl.int1, _semantic=mask)")
    assert "(cols < N).to(tl.int1)" in english("cols[0] < N")  # the rule names the new form


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
    # Tensor methods: from a fixed list, on a name in scope (not tl) or a result (above).
    ("cols.__class__ == 0", "下划线"),
    ("cols.to.__self__ < N", "下划线"),
    ("cols.handle.data[0] > 0", "下标"),
    ("cols.handle < N", "tl.*"),
    ("torch.sum(cols) > 0", "tl.*"),
    ("secret.to(tl.float32) < N", "tl.*"),
    ("tl.to(tl.float32) < N", "tl.*"),
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


# Two grading threads that ask at once, each the process's first import of triton (a fresh process).
_AT_ONCE = """
import sys, threading
sys.setswitchinterval(1e-6)  # switch threads often: without the import lock this failed 10 runs of 10
from service.grading import fills
barrier, got = threading.Barrier(2), {}
def removed():
    barrier.wait()
    got["removed"] = fills.block_pointers_removed()
def source():
    barrier.wait()
    got["source"] = len(fills._interpreter_source()) > 0
threads = [threading.Thread(target=removed), threading.Thread(target=source)]
[t.start() for t in threads]
[t.join() for t in threads]
print(got.get("removed"), got.get("source"))
"""
_ALONE = """
from service.grading import fills
print(fills.block_pointers_removed(), len(fills._interpreter_source()) > 0)
"""


def test_the_installed_triton_is_read_right_from_threads_at_once():
    """A failed first import was cached for the process: a block-pointer kernel then scored 0 on the
    interpreter instead of being not gradable there (docs/benchmarks.md, sixteenth day)."""
    import subprocess
    import sys

    def run(code: str) -> str:
        done = subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True, timeout=120,
                              env={"PYTHONPATH": str(REPO_ROOT), "PATH": "/usr/bin:/bin"})
        assert done.returncode == 0, done.stderr[-2000:]
        return done.stdout.strip()

    alone = run(_ALONE)
    for _ in range(3):
        assert run(_AT_ONCE) == alone


# A tensor's or a pointer's dtype (third-party kernels: `tl.zeros([BLOCK], dtype=x.dtype.element_ty)`,
# sixth probe batch, `l5_6.right.numpy_zeros_block_other`): `name.dtype` and `name.dtype.element_ty` only.
@pytest.mark.parametrize("source", [
    "tl.zeros([BLOCK], dtype=x.dtype.element_ty) == 0",
    "cols.to(x.dtype.element_ty) < N",
    "tl.full([BLOCK], 1, values.dtype) > 0",
])
def test_dtype_of_a_name_in_scope(source):
    assert verdict(source) is None


@pytest.mark.parametrize(("source", "words"), [
    ("x.dtype.element_ty(1) == 0", "x.dtype.element_ty"),
    ("x.dtype.element_ty.name == 0", "x.dtype.element_ty.name"),
    ("x.dtype.element_ty.to(tl.int1)", "不是张量"),
    ("x.dtype.__class__ == 0", "下划线"),
    ("secret.dtype == 0", "secret"),
    ("tl.dtype == 0", "tl.dtype"),
    ("x.shape == 0", "x.shape"),
])
def test_other_dtype_walks_stay_refused(source, words):
    message = verdict(source)
    assert message is not None and words in message, message


def test_a_module_function_is_not_called_a_method():
    message = check_fill(ast.parse(source := "tl.extra.cuda.libdevice.pow(values, 2.0) > 0", mode="eval").body,
                         source, allowed_names=SCOPE, language="en")
    assert message is not None and "`tl.extra.cuda.libdevice.pow` is not allowed" in message, message
    assert "the method" not in message
