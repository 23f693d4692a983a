"""Terse honest answers against keyword lists (issue 15 item 6, branch `terse`). A terse answer drops the
linking words ("所以", "so", "is") but still relates its terms: arrows between computations, verbs, comparisons,
=/≠, numbers, causal words. A keyword list names terms with no relation between them (commas, slashes,
periods or arrows between bare names, headings, the same words repeated). Written for this change from the
exercises' questions, rubrics and seeds, in zh and en, for several exercises; not from the calibration set."""
from __future__ import annotations

import pytest

from service.config import REPO_ROOT
from service.exercises import ExerciseCatalog
from service.grading import freetext
from service.grading.folding import normalise
from service.grading.freetext import TextScore, score_answer

CATALOG = ExerciseCatalog(REPO_ROOT / "exercises")


def _scored(exercise: str, question: str, answer: str) -> tuple[TextScore, float]:
    ex = CATALOG.get(exercise)
    points = next(item.points for item in ex.spec.rubric if item.source == "text" and item.question == question)
    return score_answer(ex.question(question), answer, points, course_text=ex.spec.course_text), points


HONEST = [
    # the known false flag's kind: three questions answered in turn, linking words dropped
    ("weighted_sum_fwd_bwd", "q3", "分块：行独立，一个 program 一个行块。输入：x 的这些行 + 整个 w。连续：x 沿 D 连续，advance 前进；"
                                   "w 广播到每行，复用。"),
    ("weighted_sum_fwd_bwd", "q3", "Tiling: rows independent, one program per row tile. Inputs: those rows of x, whole w. "
                                   "Loads: x contiguous along D, block pointer advances tile by tile; w broadcast to "
                                   "every row, reused."),
    ("weighted_sum_fwd_bwd", "q3", "一、y 每行互相独立，按行分块，每个 program 算一个行块。二、需要 x 的这些行、全部 w。三、x 行块沿 D "
                                   "连续，用 block pointer 逐个 tile 加载；w 的 tile 广播给所有行复用。"),
    ("weighted_sum_fwd_bwd", "q1", "Needs base, shape, strides, offsets, block_shape, order. D not a multiple of the tile: "
                                   "last tile runs past the row end, reads the next row. (0,) checks rows only. "
                                   "Contiguous x: extra columns times zero weight, hidden. Next row holds nan: "
                                   "0 × nan = nan, wrong."),
    # arrows between computations, and a numeric worked example
    ("lesson06_mean_var", "q2", "pad 0 → x−μ = −μ → μ² ≠ 0 → var 多了 (BLOCK−N)·μ² → re-mask"),
    ("lesson06_mean_var", "q2", "N=3, BLOCK=4, x=[1,2,3], pad 0. mean 2. pad − mean = −2, square 4. sum of squares "
                                "2 + 4 = 6, /3 = 2 not 2/3. re-mask with tl.where."),
    ("lesson05_row_sum", "q1", "mask = [T,T,T,F]；lane 3 不读，other=0.0 填 0；tl.sum → x0+x1+x2+0 = 行和；"
                               "tl.store 写一个标量到 out[row]。"),
    ("lesson07_softmax", "q1", "logits≈1000 → exp(1000) = inf → inf/inf = nan。≈−1000 → exp 下溢为 0 → 0/0 = nan。"
                               "softmax(x−c) = softmax(x)，减 max 后指数 ≤ 0，exp ≤ 1，分母 ≥ 1。"),
    ("puzzle_long_softmax", "q1", "Old sum is relative to m_old. New max bigger: rescale by exp(m_old - m_new) < 1. "
                                  "Skip it: sum too large. Pad with -inf: exp(-inf) = 0. Pad with 0: adds exp(-m) "
                                  "per lane, overestimate."),
    ("puzzle_long_sum", "q1", "T=10, B1=4: one block too small, loop cdiv(10,4)=3 times. Last block cols 8..11; 10, 11 "
                              "past the row, read the next row's values, sum too big. Mask cols < T."),
    ("puzzle_outer_add", "q1", "x、y 两个方向独立 → 二维 grid，pid0 管行，pid1 管列。N0=5,B0=4：第二块行 5..7 越界；列同理。"
                               "只 mask 行 → 列尾写出界。load mask 不管 store，store 也要 mask_y[:,None] & mask_x[None,:]。"),
    ("welford_merge", "q1", "x near 1e4, x² near 1e8, float32 spacing at 1e8 is 8. True variance 1e-4 ≪ 8: "
                            "E[x²] − E[x]² all rounding error. Two passes: x − μ ≈ 1e-2, square 1e-4, no big terms."),
    ("welford_merge", "q1", "x ≈ 1e4 → x² ≈ 1e8 → fp32 间距 8 → 方差 1e-4 远小于 8 → 相减全是舍入误差。两遍：x−μ ≈ 1e-2，"
                            "平方 1e-4，精度够。"),
    # short sentences, the linking words dropped
    ("fused_mean_var_atomic", "q1", "方差非线性：两块方差相加 ≠ 合并方差，少了块间项。Σx、Σx² 线性 → atomic_add 顺序无关 → "
                                    "host 上再算 mean、var。"),
    ("fused_mean_var_atomic", "q2", "atomic_add 累加，不清零 → 上次的和还在 → 第二次 Σx 翻倍 → 均值、方差错。第一次 buffer "
                                    "新分配是 0 → 看不出。两个都要清零。"),
    ("fused_mean_var_atomic", "q2", "atomic_add adds onto what is there. No zeroing: last call's sums remain, second call "
                                    "Σx doubled, mean doubled, var off. First call: fresh zeros, passes. Zero both, "
                                    "every launch."),
    ("fused_mean_var_atomic", "q3", "Mean 1e4, spread 1e-2: E[x²] ≈ 1e8, fp32 ulp 8, variance 1e-4 lost in cancellation. "
                                    "Article: loose tolerance, Welford for real use."),
]

STUFFED = [
    # commas, 、 and slashes between bare names
    ("weighted_sum_fwd_bwd", "q3", "自然分块，相互独立，行块，需要 x 和 w，连续，advance，广播，复用"),
    ("weighted_sum_fwd_bwd", "q3", "natural tiling, independent rows, row tile, needs x and w, contiguous, advance, "
                                   "broadcast, reuse"),
    ("weighted_sum_fwd_bwd", "q1", "block pointer; boundary_check=(0,1); padding_option zero; not divisible; next row; "
                                   "NaN; zero weight; OOB"),
    ("lesson06_mean_var", "q2", "masked load, other=0.0, identity, -mean, mean^2, (BLOCK-N)*mean^2, re-mask, tl.where, "
                                "population variance"),
    ("lesson05_row_sum", "q1", "lanes, mask, cols < N, other=0.0, identity, tl.sum, tl.store, padding"),
    ("lesson07_softmax", "q1", "overflow，underflow，NaN，shift invariance，减 max，exp，数值稳定，1000，−1000"),
    ("puzzle_long_softmax", "q1", "online softmax / running max / rescale / exp(m_old − m_new) / −inf padding / "
                                  "overestimate / 数值稳定"),
    ("puzzle_long_sum", "q1", "for 循环，cdiv，B1，下一行，越界，mask，other=0，结果错误"),
    ("welford_merge", "q2", "Chan 公式、δ²、均值差、权重 n_a·n_b/(n_a+n_b)、M2 相加、偏小、合并"),
    ("fused_mean_var_atomic", "q2", "atomic_add accumulate, leftover, drift, first call passes, zero both buffers, "
                                    "every launch"),
    # arrows between bare names
    ("weighted_sum_fwd_bwd", "q3", "自然分块 → 相互独立 → 行块 → 连续 → advance → 广播 → 复用"),
    ("lesson06_mean_var", "q3", "catastrophic cancellation -> two-pass -> fp64 -> Welford -> Chan merge"),
    ("puzzle_outer_add", "q1", "2D grid → tail lanes → 越界 → mask2d → mask_y & mask_x → store mask"),
    ("fused_mean_var_atomic", "q1", "non-linear variance → between-block term → linear Σx → atomic_add → host combine"),
    # copied headings, one term a sentence
    ("weighted_sum_fwd_bwd", "q3", "问题一：输出的自然分块。问题二：需要哪些输入。问题三：连续加载与复用。关键词：行块、广播、advance。"),
    ("weighted_sum_fwd_bwd", "q3", "Natural tiling. Inputs needed. Contiguous loads. Reuse. Broadcast. Advance. Row tile."),
    ("lesson07_softmax", "q1", "Overflow. Underflow. Shift invariance. Max trick. Numerical stability. exp(1000). "
                               "exp(-1000)."),
    # the same terms repeated
    ("weighted_sum_fwd_bwd", "q3", "行块 行块 广播 广播 复用 复用 连续 连续 advance advance 独立"),
    ("lesson06_mean_var", "q2", "mask mask mask, −μ −μ, μ² μ², re-mask re-mask, tl.where tl.where"),
    # no separator at all
    ("welford_merge", "q1", "1e4 1e-2 float32 ulp spacing cancellation two-pass precision E[x²] − E[x]²"),
]


@pytest.mark.parametrize(("exercise", "question", "answer"), HONEST)
def test_a_terse_honest_answer_is_no_keyword_list(exercise, question, answer):
    result, points = _scored(exercise, question, answer)
    assert "keyword_stuffing" not in result.flags, (result.flags, result.points)
    assert result.points > points / 4, (result.points, result.flags)  # more than a keyword list can earn


@pytest.mark.parametrize(("exercise", "question", "answer"), STUFFED)
def test_a_keyword_list_in_any_shape_is_flagged(exercise, question, answer):
    result, points = _scored(exercise, question, answer)
    assert "keyword_stuffing" in result.flags, (result.flags, result.points)
    assert result.points <= points / 4, result.points


@pytest.mark.parametrize(("text", "chain"), [
    ("pad 0 → x−μ = −μ → μ² ≠ 0 → re-mask", True),
    ("x 沿 D 连续，advance 前进；w 广播到每行，复用。", True),
    ("one-pass formula → catastrophic cancellation → two-pass → Welford", False),
    ("accumulates, leftover sums, mean doubled, first call passes, both buffers, zero before every launch", False),
    ("灾难性抵消 / 24 位尾数 / ulp = 8 / 两遍法 / Welford / Chan 合并", False),
])
def test_steps_that_relate_make_a_chain_and_names_do_not(text, chain):
    assert freetext._read_steps(normalise(text)).chain is chain


@pytest.mark.parametrize(("step", "earned"), [
    ("x−μ = −μ", 1.0), ("exp(1000) = inf", 1.0), ("1e-4 ≪ 8", 1.0), ("lane 3 不读", 1.0), ("w 广播到每行", 1.0),
    ("mean doubled", 0.5), ("ulp = 8", 0.5), ("cols < n", 0.5), ("other=0.0", 0.5),
    ("re-mask", 0.0), ("catastrophic cancellation", 0.0), ("tl.where", 0.0), ("复用", 0.0),
])
def test_what_a_step_earns(step, earned):
    assert freetext._step_points(normalise(step)) == earned


def test_headings_numbering_and_questions_count_for_nothing():
    steps = freetext._read_steps(normalise("1) Tiling: rows independent. 2) 需要哪些输入？x 的这些行。"))
    assert steps.steps == 2  # "rows independent", "x 的这些行"


def test_brackets_hold_their_commas():
    pieces = freetext._step_pieces(normalise("mask = [T,T,T,F], cdiv(10, 4) = 3"))
    assert len(pieces) == 2


def test_switched_off_the_linking_word_readings_decide_alone(monkeypatch):
    monkeypatch.setattr(freetext, "TERSE_CHAIN", None)
    exercise, question, answer = HONEST[0]
    assert "keyword_stuffing" in _scored(exercise, question, answer)[0].flags  # the false flag of before
    exercise, question, answer = STUFFED[-3]
    assert "keyword_stuffing" not in _scored(exercise, question, answer)[0].flags  # repeated terms: not read before
