"""The fill an explanation says it wrote, against the fill submitted (issue 15, item 3;
freetext._stated_not_the_fill, STATED_FILL): read over the real exercises' templates and fills."""
from __future__ import annotations

import json

import pytest

from service.config import REPO_ROOT
from service.exercises import ExerciseCatalog
from service.grading import freetext, rubric, stated_fill
from service.grading.extract import extract
from service.grading.freetext import NOT_THE_FILL, score_answer
from service.grading.stated_fill import STATED_FILL_CLAIM, fill_scope
from service.submission import Submission

CATALOG = ExerciseCatalog(REPO_ROOT / "exercises")
L6 = "lesson06_mean_var"
# a right causal chain: the explanation earns its point unless the fill it gives is not the submitted one
CHAIN_ZH = "因为 padding lane 减去 mean 后变成 −mean，平方后是 mean²，所以第二次求和前要用 tl.where 重新清零。"
CHAIN_EN = ("After centring, the padding lanes become -mean, squared they are mean², so they must be zeroed "
            "again with tl.where before the second sum.")


def _stated(exercise_id: str, explanation: str, fills: list[str | None],
            reference: list[str | None] | None = None) -> list[dict]:
    scope = fill_scope(CATALOG.get(exercise_id).template)
    assert scope is not None
    return freetext._stated_not_the_fill(explanation, fills, reference, scope)


def _scored(exercise_id: str, explanation: str, fills: list[str | None], reference: list[str | None] | None = None):
    exercise = CATALOG.get(exercise_id)
    points = next(i.points for i in exercise.spec.rubric if i.question == "explanation")
    return score_answer(exercise.question("explanation"), explanation, points, fills=fills,
                        reference_fills=reference, scope=fill_scope(exercise.template))


# ---- a different fill stated: flagged, both quoted --------------------------------------------------------

@pytest.mark.parametrize(("explanation", "fill", "stated"), [
    ("我填的是 `cols < BLOCK`。" + CHAIN_ZH, "mask", "cols < BLOCK"),
    ("我填的是 cols < BLOCK，" + CHAIN_ZH, "mask", "cols < BLOCK"),
    ("空里是 `offs < N`。" + CHAIN_ZH, "mask", "offs < N"),
    ("The fill is `offs < N`. " + CHAIN_EN, "mask", "offs < N"),
    ("I filled in `cols < BLOCK`. " + CHAIN_EN, "mask", "cols < BLOCK"),
    ("The blank is True. " + CHAIN_EN, "mask", "True"),
    ("我填的是 mask。" + CHAIN_ZH, "True", "mask"),  # the template's own name, given as the fill
    ("`cols < N`\n" + CHAIN_ZH, "True", "cols < N"),  # the first line, code alone
    ("我写的是 `tl.where(cols < BLOCK, d * d, 0.0)`。" + CHAIN_ZH, "mask", "cols < BLOCK"),  # in the blank's place
    ("centered_sq = tl.where(cols < BLOCK, (values - mean) * (values - mean), 0.0)\n" + CHAIN_ZH, "mask",
     "cols < BLOCK"),
])
def test_an_explanation_giving_another_fill_earns_nothing_and_quotes_both(explanation, fill, stated):
    result = _scored(L6, explanation, [fill])
    assert result.points == 0 and NOT_THE_FILL in result.flags and result.confidence <= 0.4
    assert len(result.not_the_fill) == 1  # the lesson's `describes` claim, when it says the mask over `True`
    (mismatch,) = _stated(L6, explanation, [fill])
    assert mismatch["claim"] == STATED_FILL_CLAIM and mismatch["fill"] == fill
    assert stated in mismatch["quote"] and stated in mismatch["stated"]
    assert stated in mismatch["label"] and stated in mismatch["label_en"]


def test_the_feedback_says_it_in_the_reports_language_with_both_quoted():
    exercise = CATALOG.get(L6)
    code = exercise.template.replace("______", "mask", 1)
    submission = Submission(exercise=L6, code=code, explanation="The fill is `offs < N`. " + CHAIN_EN,
                            answers={}, claimed_output="static review only")
    for language, head in (("en", "Your explanation does not describe your code"), ("zh", "你的解释与你提交的代码不符")):
        items = rubric.score_items(exercise, submission, [], not_run_reason=None, diagnoses=[],
                                   fills=extract(exercise.template, code).fill_sources, language=language)
        item = next(i for i in items if i.id == "code.explanation")
        assert item.points == 0 and item.status == "needs_review", item.feedback
        assert head in item.feedback and "offs < N" in item.feedback and "`mask`" in item.feedback
        assert item.evidence["not_the_fill"][0]["claim"] == STATED_FILL_CLAIM


# ---- the submitted fill, however it is spelt: no flag ------------------------------------------------------

@pytest.mark.parametrize(("explanation", "fill"), [
    ("我填的是 mask。" + CHAIN_ZH, "mask"),
    ("我填的是 `cols < N`。" + CHAIN_ZH, "mask"),  # the template's `mask = cols < N`
    ("我填的是 `tl.arange(0, BLOCK) < N`。" + CHAIN_ZH, "mask"),  # ... and `cols = tl.arange(0, BLOCK)`
    ("我填的是 mask。" + CHAIN_ZH, "cols < N"),
    ("我填的是 `N > cols`。" + CHAIN_ZH, "cols < N"),  # mirrored
    ("我填的是 `(cols < N)`。" + CHAIN_ZH, "cols < N"),  # parentheses
    ("The fill is `(cols >= 0) & (cols < N)`. " + CHAIN_EN, "(cols < N) & (cols >= 0)"),  # operand order
    ("mask\n" + CHAIN_ZH, "mask"),
])
def test_the_submitted_fill_spelt_otherwise_is_no_mismatch(explanation, fill):
    result = _scored(L6, explanation, [fill])
    assert result.not_the_fill == [] and NOT_THE_FILL not in result.flags


def test_the_reference_fill_counts_only_where_the_submitted_one_behaves_as_it():
    said = "我填的是 `cols < N`。" + CHAIN_ZH
    assert _stated(L6, said, ["~(cols >= N)"], reference=["mask"]) == []  # every case passed as the reference's
    assert _stated(L6, said, ["~(cols >= N)"])  # not known to behave alike: another expression


def test_numbers_are_read_by_value():
    fills = ["-float('inf')", "tl.max(logits, axis=0)"]
    for said in ("padding lane 填的是 `float('-inf')`，这样 max 不受影响。", "我填的是 -inf。", "I filled in `-math.inf`."):
        assert _stated("lesson07_softmax", said, fills) == [], said
    assert _stated("lesson07_softmax", "我填的是 `0.0`。", fills)
    assert _stated("lesson05_row_sum", "other 我填的是 0，mask 填 `cols < N`。", ["stride_m", "cols < N", "0.0"]) == []


def test_several_blanks_each_blank_in_its_place():
    fills = ["stride_m", "cols < N", "0.0"]
    assert _stated("lesson05_row_sum", "我写的是 `tl.load(row_start + cols, mask=cols < N, other=0.0)`。", fills) == []
    (mismatch,) = _stated("lesson05_row_sum", "我写的是 `tl.load(row_start + cols, mask=offs < N, other=0.0)`。", fills)
    assert mismatch["blank"] == 2 and mismatch["fill"] == "cols < N"
    welford = extract(CATALOG.get("welford_merge").template, CATALOG.get("welford_merge").solution).fill_sources
    (mismatch,) = _stated("welford_merge", "n_b = BLOCK\n因为每块有 BLOCK 个元素。", welford)
    assert mismatch["blank"] == 1 and mismatch["stated"] == "n_b = BLOCK"


# ---- not a statement of the fill ---------------------------------------------------------------------------

@pytest.mark.parametrize("explanation", [
    "一开始填的是 True，后来改成 mask。" + CHAIN_ZH,
    "我第一次填的是 `cols < BLOCK`，没通过。" + CHAIN_ZH,
    "At first I wrote cols < BLOCK, then I changed it to mask. " + CHAIN_EN,
    "I filled in `True` at first but then switched to mask. " + CHAIN_EN,
    "如果填 True 就会把 padding 算进去。" + CHAIN_ZH,
    "If the blank is True, the padding lanes count. " + CHAIN_EN,
    "not `True` but `mask`. " + CHAIN_EN,
    "不要写成 cols < BLOCK，" + CHAIN_ZH,
    "我填的不是 True，" + CHAIN_ZH,
    "也可以写成 `~(cols >= N)`。" + CHAIN_ZH,
    "假如填 `cols < BLOCK`，所有 lane 都有效。" + CHAIN_ZH,
])
def test_narratives_negations_and_conditions_are_no_statement(explanation):
    assert _stated(L6, explanation, ["mask"]) == []


@pytest.mark.parametrize("explanation", [
    "padding lane 填 0.0，第一次求和不受影响；`x - mean` 在 padding lane 上是 −mean。" + CHAIN_ZH,  # the template's load
    "我用 `tl.where(mask, d * d, 0.0)` 清零。" + CHAIN_ZH,  # the code around the fill, told
    "我在这里写了 `tl.where`。" + CHAIN_ZH,  # a function the template calls
    "`(values - mean) * (values - mean)` 在 padding lane 上是 mean²。" + CHAIN_ZH,  # a formula of the template
    "The fill is correct because the padding lanes are zeroed again.",  # English words are no code
    "I filled in mask and it zeroes the padding lanes again.",  # `mask`, not `mask and it`
    "`cols < BLOCK` 恒为真，所以不能用它。" + CHAIN_ZH,  # talked about, not given as the fill
])
def test_parts_and_talk_are_no_statement(explanation):
    assert _stated(L6, explanation, ["mask"]) == []


def test_a_part_of_the_submitted_fill_is_no_statement():
    assert _stated(L6, "我填的是 `cols < N`。" + CHAIN_ZH, ["(cols < N) & (cols >= 0)"]) == []


def test_block_blanks_are_compared_only_where_an_expression_blank_is():
    puzzle = CATALOG.get("puzzle_long_sum")
    fills = extract(puzzle.template, puzzle.solution).fill_sources
    assert _stated("puzzle_long_sum", "我写的是 `acc + 1`。", fills) == []  # a body: never compared
    fused = CATALOG.get("fused_mean_var_atomic")
    fills = extract(fused.template, fused.solution).fill_sources
    assert _stated("fused_mean_var_atomic", "第三个空我写的是 `sums.zero_()`。", fills) == []  # in the block fill


@pytest.mark.parametrize("exercise_id", CATALOG.ids())
def test_the_catalogs_own_explanations_state_their_fills(exercise_id):
    """The reference explanation over the solution, and the example submission's over its own code."""
    exercise = CATALOG.get(exercise_id)
    reference = exercise.question("explanation").reference_answer
    fills = extract(exercise.template, exercise.solution).fill_sources
    assert _stated(exercise_id, reference, fills) == [], reference
    example = json.loads((REPO_ROOT / "exercises" / exercise_id / "example_submission.json").read_text("utf-8"))
    assert _stated(exercise_id, example["explanation"], extract(exercise.template, example["code"]).fill_sources) == []


# ---- bounded: the student's text decides how much is read --------------------------------------------------

def test_hostile_explanations_are_read_within_bounds():
    many = "我填的是 `cols < BLOCK`。" * 5000
    assert len(stated_fill._stated_candidates(many)) <= stated_fill._STATED_CANDIDATES_MAX + 1
    assert _stated(L6, many, ["mask"])  # still read: the first is a statement
    for said in ("我填的是 " + "(" * 5000 + "x" + ")" * 5000, "我填的是 `" + "a+" * 50_000 + "a`",
                 "我填的是 `" + "-" * 200 + "`", "The fill is " + "not " * 3000 + "mask",
                 "填" * 100_000, "`" * 100_000, "我填的是 `" + "[" * 200 + "`"):
        assert _stated(L6, said, ["mask"]) == [], said[:40]
    # a fill far longer than any explanation's code: compared whole, never read through definitions
    long_fill = " & ".join(["(cols < N)"] * 2000)
    assert _stated(L6, "我填的是 `cols < N`。", [long_fill]) == []
