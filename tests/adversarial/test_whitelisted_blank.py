"""lesson06's blank takes only a whitelisted expression (names in scope, tl.* calls, operators,
numbers): every attack here must be refused before anything runs (`report.program.ran is False`,
no sandbox started, no points)."""
from __future__ import annotations

import pytest

from sandbox.contract import Limits
from service.bootstrap import build_grader
from service.config import REPO_ROOT, Settings
from service.submission import Submission
from tests.adversarial.kit import QUICK, SECRET_SEED, assert_graded_normally

# bwrap only: every attack here is refused before a sandbox starts, so the backend plays no part
# (the other files of the suite run under docker too).
pytestmark = [pytest.mark.sandbox, pytest.mark.adversarial, pytest.mark.sandbox_backends("bwrap")]

LESSON = "lesson06_mean_var"
TEMPLATE = (REPO_ROOT / "exercises" / LESSON / "template.py").read_text(encoding="utf-8")
SOLUTION = (REPO_ROOT / "exercises" / LESSON / "solution.py").read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def lesson_grader():
    return build_grader(Settings(limits=Limits(**QUICK)))


def fill(expression: str) -> str:
    assert TEMPLATE.count("______") == 1
    return TEMPLATE.replace("______", expression, 1)


def grade_lesson(grader, code: str):
    return grader.grade(Submission(exercise=LESSON, code=code), secret_seed=SECRET_SEED)


def assert_refused_before_running(report, *, reason: str = "") -> None:
    assert report.status == "graded"
    assert report.program.ran is False, f"the fill ran: {report.program.fills}"
    assert report.program.not_run_reason and reason in report.program.not_run_reason, report.program.not_run_reason
    assert report.environment.torch == "" and "sandbox_s" not in report.timing, "a sandbox was started"
    assert all(not c.passed and c.error == "未运行" for c in report.cases)
    code_items = [i for i in report.items if i.id.startswith("code.") and i.id != "code.explanation"]
    assert code_items and all(i.points == 0 for i in code_items)
    assert not report.score.passed


# (id, fill, a word of the refusal). Each would run arbitrary code or reach outside the lesson's names.
REFUSED = [
    ("dunder-import", "__import__('os').system('id') == 0", "__import__"),
    ("attribute-walk", "().__class__.__bases__[0].__subclasses__()", "下划线"),
    ("tl-dunder", "tl.__dict__", "下划线"),
    ("tl-private", "tl.core._unwrap_if_constexpr(cols < N)", "下划线"),
    ("lambda", "(lambda: cols < N)()", "lambda"),
    ("walrus", "(m := cols < N)", "海象"),
    ("comprehension", "[c < N for c in cols]", "推导式"),
    ("subscript", "cols[0] < N", "下标"),
    ("f-string", "f'{cols}' == 0", "f-string"),
    ("string-constant", "tl.where(mask, 'x', 0) != 0", "str"),
    ("eval-name", "eval(cols < N)", "eval"),
    ("builtin-open", "open(0) == None", "open"),
    ("starred", "tl.where(*cols)", "星号"),
    ("double-star", "tl.full(**mask)", "**"),
    # a method outside the tensor methods (cols.to(tl.float32) is allowed since issue 15: tests/unit/test_fills.py)
    ("method-not-a-tensor-method", "cols.data_ptr() < N", "只允许 tl.*"),
    # A tensor method on a call's result is allowed (issue 15, item 4: below); anything else on one is not.
    ("method-off-the-list-on-a-call-result", "tl.arange(0, BLOCK).data_ptr() < N", "不允许调用方法 .data_ptr"),
    ("method-off-the-list-on-a-comparison", "(cols < N).tolist() == 0", "不允许调用方法 .tolist"),
    ("dunder-on-a-call-result", "tl.arange(0, BLOCK).__class__.__subclasses__() == 0", "下划线"),
    ("dunder-on-a-method-result", "(cols < N).to(tl.int1).__class__ == 0", "下划线"),
    ("frame-through-a-bound-method", "(cols < N).to.__func__.__globals__ == 0", "下划线"),
    ("attribute-of-a-result", "tl.minimum(cols, N).to(tl.float32).handle.data == 0", "handle"),
    ("listed-method-on-a-dtype", "tl.float32.to(tl.int1) == (cols < N)", "不是张量"),
    ("listed-method-on-a-function", "tl.sum.to(cols) < N", "不是张量"),
    ("listed-method-on-a-module", "tl.core.to(cols) < N", "不是张量"),
    ("stdlib-through-a-module-chain", "tl.core.inspect.os.getpid() > 0", "不允许 `tl.core.inspect.os.getpid`"),
    ("torch-call-on-a-result", "(cols < N).to(tl.int1) == torch.ones(1)", "torch"),
    ("builtin-in-a-method-argument", "(cols < N).to(eval('tl.int1'))", "eval"),
    ("private-keyword-to-a-method", "(cols < N).to(tl.int1, _semantic=mask)", "_semantic"),
    ("long-method-chain", "cols" + ".to(tl.int32)" * 30 + " < N", "太"),
    # (flat: `+ 0` 110 times nests 110 deep, past extract.MAX_FILL_NESTING, refused for that first since red team 10)
    ("too-long", "(cols < N)" + " & (cols < N)" * 40, "太长"),
    ("too-many-nodes", " & ".join(["(cols < N)"] * 30), "太复杂"),
    ("too-deep", "-" * 40 + "(cols < N)", "嵌套太深"),
    ("nul-byte", "cols < N\x00", "NUL"),
    ("fullwidth-eval", "ｅｖａｌ(cols < N)", "eval"),  # NFKC: the parser reads `eval`
    ("math-bold-open", "𝐨𝐩𝐞𝐧(0) == None", "open"),  # NFKC again: `open`
    ("cyrillic-homoglyph", "сols < N", "сols"),  # U+0441, not the scope's `cols`
    ("zero-width-space", "cols\u200b < N", "语法错误"),
    ("bidi-override", "cols < N \u202e", "语法错误"),
    ("bom-inside", "cols <\ufeff N", "语法错误"),
]


@pytest.mark.parametrize("expression, reason", [(f, r) for _, f, r in REFUSED], ids=[i for i, _, _ in REFUSED])
def test_hostile_fill_is_refused_before_running(lesson_grader, host, expression, reason):
    report = grade_lesson(lesson_grader, fill(expression))
    assert_refused_before_running(report, reason=reason)
    host.assert_untouched()


def as_bytes_tuple(text: str) -> str:
    return "(" + ",".join(str(b) for b in text.encode()) + ",)"



BYPASSES = [
    ("tl-core-builtins-exec",
     "cols < N if tl.core.builtins.exec(tl.core.builtins.bytes(" + as_bytes_tuple("raise SystemError('KGBYPASS')")
     + ")) == None else cols < N"),
    ("tl-core-inspect-os-kill", "cols < N if tl.core.inspect.os.kill(tl.core.inspect.os.getpid(), 9) == None else cols < N"),
]


@pytest.mark.parametrize("expression", [f for _, f in BYPASSES], ids=[i for i, _ in BYPASSES])
def test_stdlib_reached_through_tl_attributes_is_refused(lesson_grader, host, expression):
    assert len(expression) <= 400
    report = grade_lesson(lesson_grader, fill(expression))
    host.assert_untouched()
    assert not report.score.passed
    assert_refused_before_running(report)


@pytest.mark.parametrize("expression", ["cols.to(tl.float32) < N", "cols.to(tl.int64) < N"])
def test_a_tensor_method_of_a_name_in_scope_is_accepted_and_graded_correct(lesson_grader, host, expression):
    """Published vendor guidance spells the mask `cols.to(tl.float32) < N` (exactly `cols < N`):
    a method call on a name in scope, from a fixed list, is allowed, runs, and earns every code point."""
    report = grade_lesson(lesson_grader, fill(expression))
    assert report.status == "graded" and report.program.ran, report.program.not_run_reason
    assert report.program.fills and expression in report.program.fills[0], report.program.fills
    assert all(c.passed for c in report.cases), [(c.id, c.error) for c in report.cases if not c.passed]
    code = [i for i in report.items if i.id in ("code.regular", "code.boundary")]
    assert code and all(i.points == i.max_points for i in code), [(i.id, i.points) for i in code]
    host.assert_untouched()


# Issue 15, item 4: the same tensor methods on a call's result or a parenthesised operation,
# recursively; each is the lesson's `cols < N`.
RESULT_METHODS = [
    "(cols < N).to(tl.int1)",
    "tl.arange(0, BLOCK).reshape(BLOCK) < N",
    "tl.minimum(cols, N).to(tl.float32) < N",
    "cols.to(tl.float32).to(tl.int64) < N",
    "(mask & (cols >= 0)).to(tl.int8) != 0",
]


@pytest.mark.parametrize("expression", RESULT_METHODS)
def test_a_tensor_method_of_a_result_is_accepted_and_graded_correct(lesson_grader, host, expression):
    report = grade_lesson(lesson_grader, fill(expression))
    assert report.status == "graded" and report.program.ran, report.program.not_run_reason
    assert report.program.fills and expression in report.program.fills[0], report.program.fills
    assert all(c.passed for c in report.cases), [(c.id, c.error) for c in report.cases if not c.passed]
    code = [i for i in report.items if i.id in ("code.regular", "code.boundary")]
    assert code and all(i.points == i.max_points for i in code), [(i.id, i.points) for i in code]
    host.assert_untouched()


def test_a_wrong_fill_with_a_method_of_a_result_runs_and_fails(lesson_grader, host):
    """Allowed is not right: the mask that keeps every lane (`cols >= 0`, spelt with a method of a
    result) runs and loses the boundary cases' points."""
    report = grade_lesson(lesson_grader, fill("(cols >= 0).to(tl.int1)"))
    assert report.status == "graded" and report.program.ran, report.program.not_run_reason
    assert not all(c.passed for c in report.cases)
    assert not report.score.passed
    host.assert_untouched()


def test_zz_next_submissions_are_graded_normally(lesson_grader, host):
    report = grade_lesson(lesson_grader, SOLUTION)
    assert report.status == "graded" and report.program.ran
    assert all(c.passed for c in report.cases), [c.id for c in report.cases if not c.passed]
    code = {i.id: i for i in report.items if i.id in ("code.regular", "code.boundary")}
    assert all(i.points == i.max_points for i in code.values())
    assert_graded_normally()
    host.assert_untouched()
