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
