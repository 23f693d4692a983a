"""Concept precision (issue #15 item 6): a concept is credited for its content, not for its keyword. Each
narrowed concept below has sentences that state it (they must still be found) and bare mentions that do
not (a generic "写回" is not "stored to sums + row"; the value "other = 0" is not why 0 is right; a block's
贡献 is not what the zero pads add; a bare 偏小 is not the old terms' overestimate; the name "Welford" is not
when or why to switch to it). Written from the concepts' labels in exercises/*/questions.yaml, not from the
calibration set's answers."""
from __future__ import annotations

import pytest

from service.config import REPO_ROOT
from service.exercises import ExerciseCatalog
from service.grading.freetext import score_answer

CATALOG = ExerciseCatalog(REPO_ROOT / "exercises")

# (exercise, question, concept, sentences that state it, bare mentions that do not)
FAMILIES: list[tuple[str, str, str, tuple[str, ...], tuple[str, ...]]] = [
    # Lesson 5 Q1, identity_zero: "other=0.0 is the identity of addition, so summing all lanes leaves the result unchanged"
    ("lesson05_row_sum", "q1", "identity_zero", (
        "other=0.0 不影响求和，因为 0 是加法单位元。",
        "padding 填 0，加进去不改变和。",
        "other = 0 does not change the sum of the row.",
    ), (
        "越界的 lane 直接取 other = 0。",
        "第 4 个 lane 填 0。",
        "The masked lane gets other=0.0 instead of loading.",
    )),
    # Lesson 5 Q1, output_store: "the row sum scalar is stored with tl.store to sums + row"
    ("lesson05_row_sum", "q1", "output_store", (
        "最后用 tl.store 把行和写到 sums + row。",
        "算出的行和写回 sums[row]。",
        "The row sum is stored to sums at index row.",
    ), (
        "算完以后写回。",
        "Then write it back.",
        "结果存回去就行。",
    )),
    # Long Softmax Q1, zero_effect: "reading 0 changes the max and adds exp(0 − m) to the sum"
    ("puzzle_long_softmax", "q1", "zero_effect", (
        "padding 读成 0 的话，每个 pad 都多加一个 exp(0 − m)。",
        "填 0 的 lane 会给 sum 贡献 exp(−m)。",
        "Each padded lane would contribute exp(0 − m) to the sum.",
    ), (
        "不缩放的话，前面几块的贡献就被高估了。",
        "每一块的贡献都要先乘上缩放因子再相加。",
        "旧的和多加了一些东西，所以结果偏大。",
    )),
    # Long Softmax Q1, overestimate: "without the rescale the earlier blocks are overestimated and the rows do not
    # sum to 1" (a bare 偏小 / wrong says something is off, not what the missing rescale does)
    ("puzzle_long_softmax", "q1", "overestimate", (
        "不乘这个因子的话，前面块的项就被高估了。",
        "Without the rescale the earlier blocks come out too large and the row no longer sums to 1.",
        "不缩放的话，旧的和还是按旧最大值算的，结果偏大。",
    ), (
        "分母变大，softmax 整体偏小。",
        "结果不对。",
        "With 0 padding every output is too small.",
    )),
    # Fused mean/var Q3, welford: "switch to Welford for near-constant data"
    ("fused_mean_var_atomic", "q3", "welford", (
        "数据接近常数时改用 Welford。",
        "For near-constant data, switch to Welford.",
        "Welford 用递推的偏差平方和，数值稳定，不会出现两个大数相减。",
    ), (
        "换成 Welford。",
        "Use Welford.",
        "大数相减 → 抵消 → 换 Welford",
    )),
]


def _found(exercise: str, question: str, text: str) -> set[str]:
    result = score_answer(CATALOG.get(exercise).question(question), text, 2.0)
    return {f["concept"] for f in result.found}


@pytest.mark.parametrize(("exercise", "question", "concept", "text"),
                         [(e, q, c, t) for e, q, c, stated, _ in FAMILIES for t in stated])
def test_a_concept_stated_with_its_content_is_found(exercise, question, concept, text):
    assert concept in _found(exercise, question, text)


@pytest.mark.parametrize(("exercise", "question", "concept", "text"),
                         [(e, q, c, t) for e, q, c, _, bare in FAMILIES for t in bare])
def test_a_bare_mention_is_not_the_concept(exercise, question, concept, text):
    assert concept not in _found(exercise, question, text)


def test_the_lane_walk_without_why_zero_or_where_stored_is_not_full():
    """Lesson 5 Q1 told as a walk of the lanes that takes other = 0 and 'writes back': the identity and the
    store's target are named by neither, so it is short of full; saying both makes it full."""
    question = CATALOG.get("lesson05_row_sum").question("q1")
    bare = ("cols = [0, 1, 2, 3]，mask = cols < 3 得到 [T, T, T, F]；最后一个 lane 不访问内存，直接取 other = 0；"
            "tl.sum 把四个 lane 加起来，然后写回。")
    told = ("cols = [0, 1, 2, 3]，mask = cols < 3 得到 [T, T, T, F]；最后一个 lane 不访问内存，取 other = 0，"
            "0 是加法单位元，所以 tl.sum 把四个 lane 加起来结果不变；最后 tl.store 写回 sums + row。")
    assert score_answer(question, bare, 2.0).points < 2.0
    assert score_answer(question, told, 2.0).points == 2.0


def _long_softmax_fills(other: str) -> list[str | None]:
    from service.grading.extract import extract

    exercise = CATALOG.get("puzzle_long_softmax")
    code = exercise.solution.replace('other=float("-inf")', f"other={other}")
    extraction = extract(exercise.template, code)
    assert extraction.error is None
    return extraction.fill_sources


@pytest.mark.parametrize("said", [
    "每个 program 处理 B0 行，两遍循环；越界的 lane 读成 −inf，它当不了最大值，exp 之后是 0。",
    "Two passes over the row; the out-of-range lanes are loaded as −inf, so they never win the max and add 0.",
])
def test_padding_said_to_be_neg_inf_must_be_the_fills_other(said):
    """Long Softmax's explanation: padding read as −inf is what the load's `other` must show (the running max
    starting at −inf is another thing); over a fill that loads 0.0 it describes another fill."""
    question = CATALOG.get("puzzle_long_softmax").question("explanation")
    kept = score_answer(question, said, 2.0, fills=_long_softmax_fills('float("-inf")'))
    other = score_answer(question, said, 2.0, fills=_long_softmax_fills("0.0"))
    assert [c["claim"] for c in kept.not_the_fill] == []
    assert [c["claim"] for c in other.not_the_fill] == ["neg_inf_padding"] and other.points == 0.0


def test_the_running_max_starting_at_neg_inf_is_not_the_padding():
    question = CATALOG.get("puzzle_long_softmax").question("explanation")
    said = "m 从 −inf 开始，每块更新最大值，旧的 s 乘 exp(m_old − m_new)。"
    assert score_answer(question, said, 2.0, fills=_long_softmax_fills("0.0")).not_the_fill == []
