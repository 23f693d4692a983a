"""Fill extraction and edit classification on the lesson-6 template (no sandbox needed)."""
from __future__ import annotations

import pytest

from service.config import REPO_ROOT
from service.grading.extract import BOUNDARY_CHECK_REMOVED, MODIFIED_OUTSIDE_BLANK, extract

TEMPLATE = (REPO_ROOT / "exercises/lesson06_mean_var/template.py").read_text(encoding="utf-8")
BLANK_LINE = "centered_sq = tl.where(______, (values - mean) * (values - mean), 0.0)  # TODO"


def filled(fill: str) -> str:
    return TEMPLATE.replace("______", fill, 1)


def test_fill_is_found_and_nothing_else_changed():
    result = extract(TEMPLATE, filled("mask"))
    assert result.error is None
    assert result.fill_sources == ["mask"]
    assert result.edits == []


def test_fill_is_canonicalised():
    result = extract(TEMPLATE, filled("(  cols<N )"))
    assert result.fill_sources == ["cols < N"]


def test_comments_whitespace_and_blank_lines_are_not_edits():
    code = filled("mask").replace("# TODO", "# re-mask here").replace("def mean_var(x):", "\n\n# helper\ndef mean_var(x):   ")
    result = extract(TEMPLATE, code)
    assert result.edits == [] and result.fill_sources == ["mask"]


def test_unfilled_blank_is_reported_as_its_own_fill():
    result = extract(TEMPLATE, TEMPLATE)
    assert result.error is None and result.fill_sources == ["______"]


@pytest.mark.parametrize(("old", "new", "rule"), [
    ("    assert x.ndim == 2 and x.stride(1) == 1\n", "", BOUNDARY_CHECK_REMOVED),
    ("atol=2e-4, rtol=2e-4", "atol=1e-2, rtol=2e-4", BOUNDARY_CHECK_REMOVED),
    ("mask=mask, other=0.0)", "other=0.0)", BOUNDARY_CHECK_REMOVED),
    ("    mask = cols < N\n", "    mask = cols < BLOCK\n", BOUNDARY_CHECK_REMOVED),
    ("    torch.testing.assert_close(m, x.mean(1), atol=1e-4, rtol=1e-4)\n", "", BOUNDARY_CHECK_REMOVED),
    ("mean = tl.sum(values, axis=0) / N", "mean = tl.sum(values, axis=0) / BLOCK", MODIFIED_OUTSIDE_BLANK),
    ("    return means, variances\n", "    print(means)\n    return means, variances\n", MODIFIED_OUTSIDE_BLANK),
])
def test_edits_outside_the_blank_raise_the_lesson_rule(old, new, rule):
    assert old in TEMPLATE
    result = extract(TEMPLATE, filled("mask").replace(old, new, 1))
    assert result.fill_sources == ["mask"], "the fill is still found next to other edits"
    assert [e.rule for e in result.edits] == [rule]


def test_tightened_tolerance_is_an_edit_but_not_a_removed_check():
    result = extract(TEMPLATE, filled("mask").replace("atol=2e-4, rtol=2e-4", "atol=1e-4, rtol=2e-4"))
    assert [e.rule for e in result.edits] == [MODIFIED_OUTSIDE_BLANK]


def test_edit_in_the_blank_line_outside_the_blank():
    code = filled("mask").replace("(values - mean) * (values - mean)", "(values - mean) ** 2")
    result = extract(TEMPLATE, code)
    assert result.fill_sources == ["mask"]
    assert [(e.kind, e.rule) for e in result.edits] == [("changed", MODIFIED_OUTSIDE_BLANK)]


def test_divide_by_block_edit_carries_a_hint():
    code = filled("mask").replace("mean = tl.sum(values, axis=0) / N", "mean = tl.sum(values, axis=0) / BLOCK")
    (edit,) = extract(TEMPLATE, code).edits
    assert "N/BLOCK" in edit.hint and edit.template_line == 12


def test_rewritten_blank_line_is_an_error_not_a_guess():
    code = TEMPLATE.replace(BLANK_LINE, "centered_sq = (values - mean) * (values - mean)")
    result = extract(TEMPLATE, code)
    assert result.error is not None and "______" in result.error


@pytest.mark.parametrize("code", ["def f(:\n", "x = 1\x00\n"])
def test_unparseable_code_is_an_error(code):
    result = extract(TEMPLATE, code)
    assert result.error is not None and result.fills == [None]


def test_a_byte_order_mark_and_windows_line_ends_are_not_code():
    result = extract(TEMPLATE, "\ufeff" + filled("mask").replace("\n", "\r\n"))
    assert result.error is None and result.fill_sources == ["mask"] and result.edits == []


@pytest.mark.parametrize("magic", ["%%time", "!pip install triton", "  %matplotlib inline"])
def test_a_notebook_magic_line_is_named_as_one(magic):
    result = extract(TEMPLATE, f"{magic}\n" + filled("mask"), language="en")
    assert result.error is not None and "Line 1" in result.error and magic.strip() in result.error
    assert "Jupyter" in result.error
    assert "魔法命令" in extract(TEMPLATE, f"{magic}\n" + filled("mask"), language="zh").error


BLOCK_TEMPLATE = '''import torch

def scale(x):
    """double it"""
    y = torch.empty_like(x)
    ______
    return y

print("check")
'''


def test_block_blank_takes_the_statements_between_its_neighbours():
    code = BLOCK_TEMPLATE.replace("    ______\n", "    for i in range(2):\n        y = x * 2  # loop\n    import os\n")
    result = extract(BLOCK_TEMPLATE, code)
    assert result.error is None and result.edits == []
    assert result.fill_sources == ["for i in range(2):\n    y = x * 2\nimport os"]


def test_block_blank_with_an_edit_around_it():
    code = BLOCK_TEMPLATE.replace("    ______\n", "    y = x * 2\n").replace("    return y\n", "    return y + 1\n")
    result = extract(BLOCK_TEMPLATE, code)
    assert result.fill_sources == ["y = x * 2"]
    assert [(e.kind, e.rule) for e in result.edits] == [("changed", MODIFIED_OUTSIDE_BLANK)]



@pytest.mark.parametrize("header", [
    '@triton.autotune(configs=[triton.Config({}, num_warps=4)], key=["N"])\n@triton.jit\ndef kernel(x, N):',
    '@triton.jit(do_not_specialize=["N"])\ndef kernel(x, N):',
    '@triton.jit\ndef kernel(x, N,\n           EVEN: tl.constexpr = False):  # a parameter added',
])
def test_a_changed_def_is_shown_by_its_header_not_by_the_fill_in_its_body(header):
    """A decorator or a parameter added to a kernel with a block blank: the edit shows the decorators and the
    signature on each side, not the def's first lines (its body: the student's fill, which this edit is not)."""
    template = "import triton\n\n@triton.jit\ndef kernel(x, N):\n    # TODO\n    ______\n\nprint(1)\n"
    body = "    total = x + N\n    other = total * 2\n"
    code = template.replace("@triton.jit\ndef kernel(x, N):", header).replace("    ______\n", body)
    result = extract(template, code, language="en")
    assert result.fill_sources == ["total = x + N\nother = total * 2"]
    [edit] = result.edits
    assert (edit.kind, edit.rule) == ("changed", MODIFIED_OUTSIDE_BLANK)
    assert edit.template_text == "@triton.jit\ndef kernel(x, N):" and edit.template_line == 3
    assert edit.submission_text == header
    assert edit.submission_line == 3
    assert "total" not in edit.submission_text + edit.template_text and "TODO" not in edit.template_text

def test_block_blank_assembles_with_the_blank_indentation():
    from service.grading.assemble import assemble

    program = assemble(BLOCK_TEMPLATE, ["for i in range(2):\n    y = x * 2"])
    assert "    for i in range(2):\n        y = x * 2\n    return y\n" in program.source


def test_removed_boundary_check_of_a_block_pointer_load_is_the_boundary_rule():
    exercise_dir = REPO_ROOT / "exercises/weighted_sum_fwd_bwd"
    template = (exercise_dir / "template.py").read_text()
    solution = (exercise_dir / "solution.py").read_text()
    old = 'weight = tl.load(weight_block_ptr, boundary_check=(0,), padding_option="zero")'
    assert old in template
    result = extract(template, solution.replace(old, 'weight = tl.load(weight_block_ptr, padding_option="zero")', 1))
    assert [e.rule for e in result.edits] == [BOUNDARY_CHECK_REMOVED]
    assert "boundary_check" in result.edits[0].reason


NEIGHBOUR_BLANKS = """\
def kernel(x, N):
    mask = ______
    other = ______
    return mask, other
"""


def test_neighbouring_blanks_with_long_fills_pair_with_their_lines():
    long_fill = "(tl.arange(0, 64) < N) & (tl.arange(0, 64) >= 0) & (tl.arange(0, 64) < N + 0)"
    submission = NEIGHBOUR_BLANKS.replace("______", long_fill, 1).replace("______", "0.0", 1)
    submission = submission.replace("    return mask, other\n", "    extra = 1\n    return mask, other\n")
    result = extract(NEIGHBOUR_BLANKS, submission)
    assert result.error is None
    assert result.fill_sources == [long_fill, "0.0"]
    assert [e.kind for e in result.edits] == ["inserted"]  # only the added line is an edit


EXPRESSION_BESIDE_BLOCK = """\
def kernel(x, N):
    scale = ______
    ______
    return scale
"""


def test_expression_blank_beside_a_block_blank():
    long_fill = "tl.sum(tl.load(x + tl.arange(0, 128), mask=tl.arange(0, 128) < N, other=0.0), axis=0)"
    submission = EXPRESSION_BESIDE_BLOCK.replace("______", long_fill, 1).replace("    ______\n", "    y = scale\n    z = y\n")
    result = extract(EXPRESSION_BESIDE_BLOCK, submission)
    assert result.error is None and result.edits == []
    assert result.fill_sources[0] == long_fill
    assert result.fill_sources[1] == "y = scale\nz = y"


def test_structure_keys_are_kept_for_statements_only():
    # An expression's key holds its subtree's: keeping every nested one would take memory quadratic
    # in a chain's length (`a+a+…+a`, a submission controls it); statements are what the matcher compares.
    import ast

    from service.grading.extract import _structure_keys

    tree = ast.parse("x = " + "+".join(["a"] * 300) + "\nfor i in range(3):\n    y = i * 2\n    if y:\n        pass\n")
    keys = _structure_keys(tree)
    statements = [n for n in ast.walk(tree) if isinstance(n, ast.stmt)]
    assert set(keys) == {id(tree), *map(id, statements)}
    assert sum(map(len, keys.values())) < 40 * len(keys[id(tree)])
    same = _structure_keys(ast.parse("x = " + "+".join(["a"] * 300) + "  # a comment\nfor i in range(3):\n"
                                     "    y = i*2\n    if y:  pass\n"))
    assert sorted(same.values()) == sorted(keys.values())  # no positions, no formatting: equal code, equal keys


def _depth(node, level=0) -> int:
    """The tree's depth, the plain recursive way (ast.iter_child_nodes): what deeper_than must agree with."""
    import ast

    return max([level, *(_depth(child, level + 1) for child in ast.iter_child_nodes(node))])


@pytest.mark.parametrize("source", [
    TEMPLATE, filled("mask"), "x = 1", "pass", "x = " + "-" * 150 + "1", "x = " + "-" * 180 + "y[0]",
    "def f(a, *, b=(1, [2, {3: -4}])):\n    return [i async for i in a if not -i]\n",
    "class A(B, metaclass=M):\n    @d\n    def g(self) -> list[int]:\n        with a as (b, c), d:\n            pass\n",
    "match p:\n    case [1, *rest] | {'k': v} if v:\n        pass\n", "x = " + "[" * 90 + "]" * 90,
    "lambda: " * 120 + "f'{a!r:>{w}}'",
])
def test_deeper_than_agrees_with_the_tree_depth_at_every_limit(source):
    """deeper_than reads each node's children itself (not through ast.iter_child_nodes' generators):
    at every limit around the tree's depth it says what the recursive depth says."""
    import ast

    from service.grading.extract import deeper_than

    tree = ast.parse(source)
    depth = _depth(tree)
    for limit in sorted({0, 1, 2, depth - 2, depth - 1, depth, depth + 1, 200}):
        if limit >= 0:
            assert deeper_than(tree, limit) is (depth > limit), (limit, depth)


# A blank that is a whole argument, keyword value, tuple element or subscript element, written as
# several (the student's text for it spans a comma): that whole span is the blank's fill, refused by
# fills.py, never an edit outside the blank (docs/grading.md, "Spilled fills").
SPILL_TEMPLATE = """\
import triton.language as tl

def kernel(x_ptr, ptrs, N, BLOCK, i):
    p = x_ptr.advance(______)
    for j in range(______):
        v = tl.load(ptrs, mask=______)
    t = (______, 0)
    w = x_ptr[i, ______]
    c = tl.where(______, v, 0.0)
    return p, t, w, c
"""
SPILL_FILLS = ["(0, BLOCK)", "N", "j < N", "1", "j", "v > 0"]


def spill_answer(index: int, fill: str) -> str:
    fills = [*SPILL_FILLS]
    fills[index] = fill
    code = SPILL_TEMPLATE
    for each in fills:
        code = code.replace("______", each, 1)
    return code


def test_the_spill_template_filled_one_expression_a_blank_is_no_spill():
    result = extract(SPILL_TEMPLATE, spill_answer(0, "(0, BLOCK)"))
    assert result.error is None and result.edits == [] and result.spills == {}
    assert result.fill_sources == SPILL_FILLS


@pytest.mark.parametrize(("index", "fill", "parts", "elements", "as_tuple"), [
    (0, "0, BLOCK", ("0", "BLOCK"), False, True),  # the blog's advance(0, D_TILE_SIZE)
    (1, "0, N, BLOCK", ("0", "N", "BLOCK"), False, True),  # range(______) as range(0, N, BLOCK)
    (2, "j < N, other=0.0", ("j < N", "other=0.0"), False, False),  # mask=______ with a keyword after it
    (3, "1, 2", ("1", "2"), True, False),  # a tuple's element
    (4, "j, j + 1", ("j", "j + 1"), True, False),  # a subscript's element
    (5, "v > 0, v", ("v > 0", "v"), False, True),  # a first argument, the rest of the call after it
])
def test_a_blank_written_as_several_items_is_one_spilled_fill_not_an_edit(index, fill, parts, elements, as_tuple):
    result = extract(SPILL_TEMPLATE, spill_answer(index, fill))
    assert result.error is None
    assert result.edits == [], "nothing outside the blank was edited: no veto"
    (spilled,) = result.spills.items()
    assert spilled[0] == index and spilled[1].parts == parts
    assert spilled[1].elements is elements and spilled[1].as_tuple is as_tuple
    sources = [*SPILL_FILLS]
    sources[index] = ", ".join(parts)
    assert result.fill_sources == sources, "the fill is the whole span, the other blanks' fills are found"


@pytest.mark.parametrize(("old", "new", "rule"), [
    # an argument away from the blank (a load with a mask blank: the classifier's mask rule)
    ("tl.load(ptrs, mask=j < N)", "tl.load(x_ptr, mask=j < N, other=0.0)", BOUNDARY_CHECK_REMOVED),
    ("t = (1, 0)", "t = (1, 2, 3)", MODIFIED_OUTSIDE_BLANK),  # the template's element beside the blank changed
    ("tl.where(v > 0, v, 0.0)", "tl.where(v > 0, v, v, 1.0)", MODIFIED_OUTSIDE_BLANK),  # one after it changed
    ("w = x_ptr[i, j]", "w = x_ptr[j, j, 0]", MODIFIED_OUTSIDE_BLANK),  # the element before the blank changed
    ("return p, t, w, c", "return p, t, w, c, N", MODIFIED_OUTSIDE_BLANK),  # added to a tuple without a blank
])
def test_an_edit_beside_a_blank_that_does_not_keep_the_template_is_still_an_edit(old, new, rule):
    code = spill_answer(0, "(0, BLOCK)")
    assert old in code
    result = extract(SPILL_TEMPLATE, code.replace(old, new, 1))
    assert result.spills == {}
    assert [e.rule for e in result.edits] == [rule]


def test_a_spill_beside_an_edit_elsewhere_is_both():
    code = spill_answer(0, "0, BLOCK").replace("return p, t, w, c", "return p, t, w, c, N", 1)
    result = extract(SPILL_TEMPLATE, code)
    assert result.spills[0].parts == ("0", "BLOCK") and [e.rule for e in result.edits] == [MODIFIED_OUTSIDE_BLANK]


def test_extra_arguments_to_another_function_than_the_template_s_are_an_edit_not_a_spill():
    code = spill_answer(0, "0, BLOCK").replace("x_ptr.advance(", "x_ptr.retreat(", 1)
    result = extract(SPILL_TEMPLATE, code)
    assert result.spills == {} and [e.rule for e in result.edits] == [MODIFIED_OUTSIDE_BLANK]


def test_a_whole_subscript_blank_written_with_a_comma_is_one_tuple_not_a_spill():
    template = "def f(x, i):\n    return x[______]\n"
    result = extract(template, "def f(x, i):\n    return x[i, 0]\n")
    assert result.spills == {} and result.edits == [] and result.fill_sources == ["(i, 0)"]


def test_a_long_spilled_fill_beside_an_inserted_line_still_pairs_with_its_line():
    long_fill = "tl.program_id(0) * BLOCK + tl.program_id(1) * BLOCK * BLOCK + tl.program_id(2) * N"
    code = spill_answer(0, f"{long_fill}, {long_fill}").replace("    t = (", "    extra = 1\n    t = (", 1)
    result = extract(SPILL_TEMPLATE, code)
    assert [e.kind for e in result.edits] == ["inserted"], "only the added line is an edit"
    assert result.spills[0].parts == (long_fill, long_fill)


def test_a_spilled_fill_is_refused_with_what_was_written_and_how_to_write_one():
    from service.grading.fills import spilled_message

    spill = extract(SPILL_TEMPLATE, spill_answer(0, "0, BLOCK")).spills[0]
    en = spilled_message(spill, blank_number=2, language="en")
    assert en.startswith("Blank 2 takes one expression; you wrote 2 arguments there: `0, BLOCK`")
    assert "write `(0, BLOCK)`" in en
    zh = spilled_message(spill, blank_number=2, language="zh")
    assert "第 2 个填空只能填一个表达式" in zh and "2 个参数" in zh and "`(0, BLOCK)`" in zh
    keyword = extract(SPILL_TEMPLATE, spill_answer(2, "j < N, other=0.0")).spills[2]
    assert "(j < N" not in spilled_message(keyword, blank_number=3, language="en"), "no tuple of a keyword"
    element = extract(SPILL_TEMPLATE, spill_answer(3, "1, 2")).spills[3]
    assert "2 elements there: `1, 2`" in spilled_message(element, blank_number=4, language="en")
    many = extract(SPILL_TEMPLATE, spill_answer(1, ", ".join(["N"] * 500))).spills[1]
    assert len(many.parts) == 500 and len(spilled_message(many, blank_number=2, language="en")) < 700


# A keyword argument written in a blank (issue: the message said "2 arguments"): on the exercises'
# own templates. It is the blank's (refused) fill, like any spill, not an edit outside the blank and
# not a fill: a blank holds one expression, and a keyword argument is none.
def _exercise(name: str) -> tuple[str, str]:
    folder = REPO_ROOT / "exercises" / name
    return (folder / "template.py").read_text(encoding="utf-8"), (folder / "solution.py").read_text(encoding="utf-8")


def _solution_with(name: str, old: str, new: str) -> tuple[str, str]:
    template, solution = _exercise(name)
    assert old in solution
    return template, solution.replace(old, new, 1)


ATOMIC_LINE = "tl.atomic_add(sumsqs + row, tl.sum(values * values, axis=0))"


@pytest.mark.parametrize(("name", "old", "new", "blank", "parts", "kinds"), [
    # a keyword after the blank's expression, in a positional blank
    ("fused_mean_var_atomic", ATOMIC_LINE, "tl.atomic_add(sumsqs + row, tl.sum(values * values, axis=0), sem='relaxed')",
     0, ("tl.sum(values * values, axis=0)", "sem='relaxed'"), ("expression", "keyword")),
    # the positional blank written as its keyword argument, alone or with another
    ("fused_mean_var_atomic", ATOMIC_LINE, "tl.atomic_add(sumsqs + row, val=tl.sum(values * values, axis=0))",
     0, ("val=tl.sum(values * values, axis=0)",), ("named",)),
    ("fused_mean_var_atomic", ATOMIC_LINE, "tl.atomic_add(sumsqs + row, val=tl.sum(values * values), sem='relaxed')",
     0, ("val=tl.sum(values * values)", "sem='relaxed'"), ("named", "keyword")),
    # a keyword blank (other=______) with another keyword after its value
    ("lesson07_softmax", 'other=-float("inf"))', 'other=-float("inf"), eviction_policy="evict_last")',
     0, ("-float('inf')", "eviction_policy='evict_last'"), ("expression", "keyword")),
    # mask=______ written with the other= that the template passes itself after it
    ("lesson05_row_sum", "mask=cols < N, other=0.0)", "mask=cols < N, other=0.0, other=0.0)",
     1, ("cols < N", "other=0.0"), ("expression", "repeated_keyword")),
])
def test_a_keyword_argument_in_a_blank_is_a_spill_with_each_part_named(name, old, new, blank, parts, kinds):
    template, code = _solution_with(name, old, new)
    result = extract(template, code)
    assert result.error is None and result.edits == [], "nothing outside the blank was edited: no veto"
    assert list(result.spills) == [blank]
    spill = result.spills[blank]
    assert spill.parts == parts and spill.kinds == kinds and spill.keywords and not spill.as_tuple
    assert result.fill_sources[blank] == ", ".join(parts), "the report's fill is the span as written"


def test_a_keyword_spill_is_worded_as_a_keyword_in_both_languages():
    from service.grading.fills import spilled_message

    template, code = _solution_with("fused_mean_var_atomic", ATOMIC_LINE,
                                    'tl.atomic_add(sumsqs + row, tl.sum(values * values), sem="relaxed")')
    spill = extract(template, code).spills[0]
    en = spilled_message(spill, blank_number=1, language="en")
    assert "2 arguments" not in en and "tuple" not in en
    assert en.startswith("Blank 1 takes one expression; you wrote `tl.sum(values * values), sem='relaxed'` there: "
                         "the expression `tl.sum(values * values)` followed by the keyword argument `sem='relaxed'`.")
    assert "(the template's call passes no `sem=`)" in en and en.endswith("Write only `tl.sum(values * values)` in the blank.")
    zh = spilled_message(spill, blank_number=1, language="zh")
    assert "2 个参数" not in zh and "元组" not in zh
    assert "表达式 `tl.sum(values * values)`，后面跟着关键字参数 `sem='relaxed'`" in zh
    assert "关键字参数不是表达式" in zh and "没有传 `sem=`" in zh and zh.endswith("空里只写 `tl.sum(values * values)`。")


def test_a_positional_blank_written_as_its_keyword_says_to_write_the_value():
    from service.grading.fills import spilled_message

    template, code = _solution_with("fused_mean_var_atomic", ATOMIC_LINE,
                                    "tl.atomic_add(sumsqs + row, val=tl.sum(values * values))")
    spill = extract(template, code).spills[0]
    en = spilled_message(spill, blank_number=1, language="en")
    assert "the keyword argument `val=tl.sum(values * values)`" in en and "passes no" not in en
    assert "write only the value, `tl.sum(values * values)`" in en
    zh = spilled_message(spill, blank_number=1, language="zh")
    assert "关键字参数 `val=tl.sum(values * values)`" in zh and "只写它的值 `tl.sum(values * values)`" in zh


def test_a_keyword_the_template_passes_after_the_blank_is_named_as_passed_twice():
    from service.grading.fills import spilled_message

    template, code = _solution_with("lesson05_row_sum", "mask=cols < N, other=0.0)", "mask=cols < N, other=0.0, other=0.0)")
    en = spilled_message(extract(template, code).spills[1], blank_number=2, language="en")
    assert "the keyword argument `other=0.0` (the template's call passes `other=` itself" in en and "passes no" not in en
    zh = spilled_message(extract(template, code).spills[1], blank_number=2, language="zh")
    assert "已经传了 `other=`" in zh


def test_many_keywords_in_a_blank_are_named_up_to_a_few():
    from service.grading.fills import spilled_message

    template, code = _solution_with("fused_mean_var_atomic", ATOMIC_LINE, "tl.atomic_add(sumsqs + row, v, "
                                    + ", ".join(f"k{i}={i}" for i in range(400)) + ")")
    spill = extract(template, code).spills[0]
    en = spilled_message(spill, blank_number=1, language="en")
    assert len(spill.parts) == 401 and "397 more" in en and len(en) < 900


def test_unpacked_keywords_where_a_positional_blank_is_stay_an_edit():
    template, code = _solution_with("fused_mean_var_atomic", ATOMIC_LINE, "tl.atomic_add(sumsqs + row, **opts)")
    result = extract(template, code)
    assert result.spills == {} and [e.rule for e in result.edits] == [MODIFIED_OUTSIDE_BLANK]
