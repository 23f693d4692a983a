"""Probes of the written-answer scorer, branch `recallA` (issue 15 item 6, 2026-12-05): answers written
from the prompts, reference answers and seeds (not from the calibration set) for fused_mean_var_atomic,
welford_merge and puzzle_long_sum. What a TA gives them: a question part left wholly unanswered is not
full (UNANSWERED_PART); a causal word before the cause links it to the effect after the comma
(CAUSE_FIRST); "cannot" negates; the fills named blank by blank are an incomplete answer, not a keyword
list (BLANK_FILLS); and the phrasing families of the three exercises' rubrics."""
from __future__ import annotations

import pytest

from service.config import REPO_ROOT
from service.exercises import ExerciseCatalog
from service.grading import freetext
from service.grading.freetext import score_answer

CATALOG = ExerciseCatalog(REPO_ROOT / "exercises")


def _scored(exercise: str, question: str, answer: str) -> freetext.TextScore:
    ex = CATALOG.get(exercise)
    points = next(i.points for i in ex.spec.rubric if i.source == "text" and i.question == question)
    return score_answer(ex.question(question), answer, points, course_text=ex.spec.course_text)


def _found(result: freetext.TextScore) -> set[str]:
    return {f["concept"] for f in result.found}


def _links(result: freetext.TextScore) -> set[tuple[str, str]]:
    return {(link["from"], link["to"]) for link in result.links}


# --- a question part left unanswered (UNANSWERED_PART) ---

# Welford Q3 asks about n_b and about M2_b (`more_chains`): each of these answers one half, well.
WELFORD_HALF = [
    "最后一块只有 N − start 个有效元素，n_b 要用有效个数而不是 BLOCK，否则 mean_b 的分母就错了，合并权重也错。",
    "The padding lanes become −mean_b after centring and add mean_b² each, so M2_b needs tl.where(mask, d, 0.0) "
    "before the sum.",
]


@pytest.mark.parametrize("answer", WELFORD_HALF)
def test_half_of_a_two_part_question_is_not_full(answer):
    result = _scored("welford_merge", "q3", answer)
    assert result.points == 1.0 and result.flags == [], (result.points, result.flags)


def test_both_parts_answered_keep_full_points():
    answer = ("The last chunk has only N − start valid lanes, so n_b must count those, not BLOCK, otherwise the "
              "denominator of mean_b and the merge weights are wrong. In M2_b the pads become −mean_b after "
              "centring, which squares to mean_b², so re-mask with tl.where before summing.")
    result = _scored("welford_merge", "q3", answer)
    assert result.points == 2.0 and result.flags == [], (result.points, result.flags)


def test_long_softmax_rescale_half_alone_is_not_full():
    # The rescale chain told completely; nothing on the padding value (the question's other half).
    answer = "因为旧的 s 是按旧最大值 m_old 算的，要乘 exp(m_old − m_new) 换到新最大值下，不然前面的块就算大了。"
    result = _scored("puzzle_long_softmax", "q1", answer)
    assert 1.5 <= result.points <= 2.0, (result.points, _found(result))


FUSED_Q2_NO_FIRST_CALL = ("atomic_add 是在原来的值上累加的，不清零的话缓冲区里还留着上一次调用的和，第二次调用 Σx 就翻倍了，"
                          "均值也翻倍，之后每次都继续漂移，所以每次 launch 之前都要把两个缓冲区清零，launch 完再在 host 上"
                          "除以 N 套用方差公式。")


def test_fused_q2_without_the_first_call_part_is_not_full(monkeypatch):
    # Verbose and right, but "why does the first call not show it" is never answered.
    result = _scored("fused_mean_var_atomic", "q2", FUSED_Q2_NO_FIRST_CALL)
    assert result.points == 1.5 and result.flags == [], (result.points, result.flags)
    monkeypatch.setattr(freetext, "UNANSWERED_PART", False)  # the share rule alone paid it in full
    assert _scored("fused_mean_var_atomic", "q2", FUSED_Q2_NO_FIRST_CALL).points == 2.0


def test_fused_q2_with_the_first_call_part_is_full():
    answer = ("atomic_add accumulates onto the old value, so without zeroing the previous call's sums are still "
              "there and the second call doubles Σx and the mean. The first call passes because the buffers are "
              "freshly allocated zeros, so a single test never sees it. Zero both buffers before every launch.")
    result = _scored("fused_mean_var_atomic", "q2", answer)
    assert result.points == 2.0 and result.flags == [], (result.points, result.flags)


# --- a causal word before the cause (CAUSE_FIRST) ---

@pytest.mark.parametrize("answer", [
    "因为 B1 比 T 小，要循环 cdiv(T, B1) 次。",
    "Since B1 < T, it takes cdiv(T, B1) iterations.",
])
def test_a_cause_told_after_because_links_to_the_effect(answer, monkeypatch):
    result = _scored("puzzle_long_sum", "q1", answer)
    assert ("block_too_small", "cdiv_count") in _links(result), _links(result)
    monkeypatch.setattr(freetext, "CAUSE_FIRST", False)
    assert ("block_too_small", "cdiv_count") not in _links(_scored("puzzle_long_sum", "q1", answer))


def test_a_keyword_list_after_because_is_still_stuffing():
    result = _scored("fused_mean_var_atomic", "q2", "because atomic_add accumulates, leftover, drift, doubled, "
                                                    "first call passes, both buffers, zero before every launch")
    assert "keyword_stuffing" in result.flags and result.points <= 0.5, (result.flags, result.points)


def test_long_sum_full_answer_with_a_leading_because():
    answer = ("因为 B1 比 T 小，一个块装不下一行，要循环 cdiv(T, B1) 次。最后一块不加 mask 的话会读到下一行开头的数据，"
              "加进行和，结果就错了，所以要用 cols < T 的 mask。")
    result = _scored("puzzle_long_sum", "q1", answer)
    assert result.points == 3.0 and result.flags == [], (result.points, result.flags)


def test_long_sum_overrun_as_garbage_keeps_the_loop_part():
    # Loop and count right (linked), the overrun's mechanism wrong: flagged, some credit kept.
    answer = "因为 B1 比 T 小，要循环 cdiv(T, B1) 次。最后一块不加 mask 会读到未初始化的内存，是随机值，所以结果是 NaN。"
    result = _scored("puzzle_long_sum", "q1", answer)
    assert "misconception" in result.flags and 0.5 <= result.points <= 1.5, (result.flags, result.points)


# --- "cannot" negates ---

def test_cannot_is_a_negation_of_the_misconception_label():
    # add_variances' label: "the per-program variances can be added …"; this says they cannot.
    answer = ("Per-program variances cannot be added: each one is measured around its own chunk mean, and the chunk "
              "means differ, so the between-chunk term is lost. Sums are linear, so atomic_add of Σx and Σx² is "
              "exact in any order, and the host computes E[x²] − mean² after the kernel.")
    result = _scored("fused_mean_var_atomic", "q1", answer)
    assert result.flags == [] and result.points == 2.0, (result.flags, result.points, result.suspected)


def test_variances_that_can_be_added_are_still_the_misconception():
    result = _scored("fused_mean_var_atomic", "q1", "Each program can compute its own block variance and atomic_add "
                                                    "it, the total variance is the sum of the block variances.")
    assert result.flags and result.points <= 0.5, (result.flags, result.points)


# --- the fills named blank by blank (BLANK_FILLS) ---

@pytest.mark.parametrize("answer", [
    "空1 平方和，空2 清零，空3 E[x²] − mean²。",
    "blank 1: tl.sum(values * values, axis=0); blank 2: sums.zero_() and sumsqs.zero_(); "
    "blank 3: sumsqs / N - mean * mean",
])
def test_the_fills_named_without_reasons_are_half_a_point(answer):
    result = _scored("fused_mean_var_atomic", "explanation", answer)
    assert result.points == 0.5 and result.flags == [], (result.points, result.flags)


def test_a_term_list_behind_blank_markers_is_still_stuffing():
    result = _scored("fused_mean_var_atomic", "explanation", "空1 linear, atomic_add, host, welford，空2 zero_, 累加, 上一次, 残留")
    assert "keyword_stuffing" in result.flags, result.flags


# --- phrasing families of the three rubrics ---

@pytest.mark.parametrize("answer", [
    "E[x²] 和 mean² 是两个几乎相等的大数，相减就是灾难性抵消。",
    "E[x²] and mean² are two big nearly-equal numbers: subtracting them cancels catastrophically.",
])
def test_fused_q3_nearly_equal_large_numbers(answer):
    result = _scored("fused_mean_var_atomic", "q3", answer)
    assert {"variance_small", "cancellation"} <= _found(result), _found(result)
    # the "what the article says" part (tolerance, Welford) is missing: half the points
    assert result.points == 1.0, result.points


@pytest.mark.parametrize("answer", [
    "每行有 T 个元素，但一个块只有 B1 列，所以要沿 T 循环累加。",
    "Each row has T elements but a block only covers B1 columns, so we loop along the row.",
    "B1 比 T 小，一次读不完一行。",
])
def test_long_sum_block_narrower_than_the_row(answer):
    result = _scored("puzzle_long_sum", "q1", answer)
    assert "block_too_small" in _found(result) and result.points == 0.5, (_found(result), result.points)


def test_long_sum_b1_less_than_t_is_not_the_tail_mask():
    assert "tail_mask" not in _found(_scored("puzzle_long_sum", "q1", "由于 B1 < T，需要 for 循环。"))


def test_fused_q2_both_sums_written_by_atomics_is_not_zeroing_both():
    result = _scored("fused_mean_var_atomic", "q2", "sums 和 sumsqs 用的都是 atomic_add，会加到上一次的结果上。")
    assert "both_buffers" not in _found(result), _found(result)
    result = _scored("fused_mean_var_atomic", "q2", "每次 launch 之前 sums 和 sumsqs 都要清零。")
    assert "both_buffers" in _found(result), _found(result)


def test_fused_q1_sums_add_up_and_the_host_finishes():
    answer = ("Variance is not additive, so per-program variances cannot be summed across programs: each is taken "
              "about its own chunk mean. Only Σx and Σx² add up, so the atomics accumulate those and the host "
              "finishes E[x²] − mean².")
    result = _scored("fused_mean_var_atomic", "q1", answer)
    assert {"linear", "host_combine"} <= _found(result) and result.points == 2.0, (_found(result), result.points)
