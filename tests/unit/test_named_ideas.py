"""The pass rule's named correctness boundary and performance trade-off (issue 15.1, docs/grading.md
"The pass rule"): for each of the nine exercises, written answers that name a real boundary (what
breaks at it, or what must be done) and a real trade-off (what it buys and what it costs) meet them;
answers whose only candidate sentences are a plain description, one side of a trade-off, a condition
with no effect, a negation or a misconception do not, and the message says why, in zh and en. The
written answers are scored by the real scorer (service/grading/freetext.py) as in a grading."""
from __future__ import annotations

import json

import pytest

from service.config import REPO_ROOT
from service.exercises import ExerciseCatalog
from service.grading.freetext import score_text
from service.grading.passrule import named_requirement
from service.report import Item

CATALOG = ExerciseCatalog(REPO_ROOT / "exercises")
EXERCISES = sorted(p.name for p in (REPO_ROOT / "exercises").iterdir() if (p / "exercise.yaml").exists())
BOUNDARY, TRADEOFF = "correctness_boundary", "performance_tradeoff"


def graded(exercise_id: str, answers: dict[str, str], explanation: str = "",
           language: str = "zh") -> dict[str, object]:
    """Both named requirements of a submission with these written answers (the others empty)."""
    exercise = CATALOG.get(exercise_id)
    items: list[Item] = []
    for item in exercise.spec.rubric:
        if item.source != "text":
            continue
        answer = explanation if item.question == "explanation" else answers.get(item.question, "")
        items.append(score_text(item_id=item.id, title=item.id, max_points=item.points,
                                question=exercise.question(item.question), answer=answer, language=language))
    written = "\n".join([explanation, *answers.values()])
    rule = exercise.spec.pass_rule
    return {kind: named_requirement(kind, getattr(rule, kind), items=items, written=written, language=language)
            for kind in (BOUNDARY, TRADEOFF)}


# (boundary, trade-off) named for real, per exercise, in Chinese and in English.
GOOD = {
    "fused_mean_var_atomic": [
        ("第二次调用时缓冲区里还留着上一次的和，不清零的话均值会翻倍。",
         "一个 kernel 用 atomic 累加 Σx 和 Σx²，x 只读一次；代价是 atomic 流量翻倍，好在这些地址都在 L2 里。"),
        ("On the second call the buffers still hold the previous sums, so without zeroing them the mean doubles.",
         "One fused kernel reads x once instead of once per kernel, at the cost of twice the atomic traffic."),
    ],
    "lesson05_row_sum": [
        ("N < BLOCK 时 padding lane 必须填单位元 0，否则行和会多出 (BLOCK - N) * other。",
         "一行一个 program，整行只读一次；代价是 BLOCK 取 2 的幂，多出来的 padding lane 白白占着寄存器。"),
        ("When N < BLOCK the padding lanes must hold the identity 0, otherwise the row sum is off by "
         "(BLOCK - N) * other.",
         "One program per row reads the row once, at the cost of a power-of-two BLOCK whose padding lanes are wasted."),
    ],
    "lesson06_mean_var": [
        ("N < BLOCK 且均值不为 0 时，不重施 mask 方差会偏大 (BLOCK - N) * mean^2 / N。",
         "两遍都在片上做，只读一次矩阵，比 x.mean() 加 x.var() 少一半显存流量；"
         "代价是整行要放进一个 program 的寄存器。"),
        ("When N < BLOCK and the mean is not zero, the variance comes out too large by (BLOCK - N) * mean^2 / N "
         "without the second mask.",
         "Both passes run on chip and read the matrix once, half the memory traffic of x.mean() plus x.var(), at the "
         "cost that a whole row must fit in one program's registers."),
    ],
    "lesson07_softmax": [
        ("不减最大值时 exp(1000) 溢出成 inf，inf/inf 得到 NaN。",
         "融合后只读一次 x、写一次 y，代价是整行要放进寄存器。"),
        ("Without subtracting the maximum, exp(1000) overflows to inf and inf/inf gives NaN.",
         "Fused, x is read once and y written once, at the cost that a whole row must fit in registers."),
    ],
    "puzzle_long_softmax": [
        ("padding 读成 0 的话，全负的行里 0 会成为最大值，分母多加 exp(0 - m)。",
         "online softmax 把求 max 和求 sum 合成一遍，少读一遍 x；代价是每块多一次缩放。"),
        ("Read as 0, the padding becomes the maximum of an all-negative row and adds exp(0 - m) to the sum.",
         "Online softmax merges the max pass and the sum pass and reads x in one fewer pass, at the cost of one extra "
         "rescale per block."),
    ],
    "puzzle_long_sum": [
        ("T 不是 B1 的整数倍时，最后一块会越过行尾读到下一行的数据，所以要用 cols < T 做 mask。",
         "沿 T 循环分块累加，寄存器只占 B0 × B1 个；代价是要循环 cdiv(T, B1) 轮。"),
        ("When T is not a multiple of B1 the last block runs past the end of the row into the next row, so it needs "
         "the cols < T mask.",
         "Looping along T keeps the registers bounded for any T, at the cost of cdiv(T, B1) loop trips."),
    ],
    "puzzle_outer_add": [
        ("N0 不是 B0 的整数倍时，最后一块有越界的列，所以 store 必须带上两个方向的 mask，否则会写进下一行。",
         "每个 program 只加载 B0 + B1 个数就算出 B0 × B1 个结果；代价是块越大占的寄存器越多。"),
        ("When N0 is not a multiple of B0, the last block has out-of-bounds columns and an unmasked store writes into "
         "the next row.",
         "A larger block means fewer programs, but more registers per program."),
    ],
    "weighted_sum_fwd_bwd": [
        ("D 不能被 D_TILE_SIZE 整除时最后一个 tile 会越界，读到下一行的数，所以两个维度都要 boundary_check。",
         "grad_w 先写进 partial buffer，避免了跨 program 同步和 atomic；代价是多占一块显存，kernel 外还要再求和一次。"),
        ("When D is not a multiple of D_TILE_SIZE the last tile goes out of bounds and reads the next row, so both "
         "dimensions need boundary_check.",
         "Writing grad_w to a partial buffer avoids atomics and synchronisation across programs, at the cost of an "
         "extra buffer and a second reduction after the kernel."),
    ],
    "welford_merge": [
        ("最后一块只有 N - start 个有效 lane，n_b 写成 BLOCK 的话 mean_b 的分母就错了。",
         "整行放不进一个 BLOCK 时分块单遍流式处理，每块只读一次；代价是每次合并多一次除法和修正项。"),
        ("The last block has only N - start valid lanes; counting BLOCK makes the denominator of mean_b wrong.",
         "Streaming the row block by block in one pass reads each block once, at the cost of a division and a "
         "correction term per merge."),
    ],
}


@pytest.mark.parametrize("exercise_id", EXERCISES)
@pytest.mark.parametrize("language", ["zh", "en"])
def test_a_real_boundary_and_a_real_tradeoff_are_met(exercise_id, language):
    boundary, tradeoff = GOOD[exercise_id][0 if language == "zh" else 1]
    found = graded(exercise_id, {"q1": f"{boundary}\n{tradeoff}"}, language=language)
    assert found[BOUNDARY].met, found[BOUNDARY].message
    assert found[TRADEOFF].met, found[TRADEOFF].message
    sides = found[TRADEOFF].evidence["sides"]
    assert sides["gain"] and sides["cost"] and sides["gain"] in tradeoff and sides["cost"] in tradeoff, sides
    assert found[BOUNDARY].evidence["sides"]["effect"] in boundary
    assert found[TRADEOFF].evidence["quote"] in found[TRADEOFF].message


def test_every_exercise_has_both_ideas_with_examples_above():
    assert set(GOOD) == set(EXERCISES) and len(EXERCISES) == 9
    for exercise_id in EXERCISES:
        rule = CATALOG.get(exercise_id).spec.pass_rule
        assert rule is not None and rule.correctness_boundary is not None and rule.performance_tradeoff is not None


@pytest.mark.parametrize("exercise_id", EXERCISES)
def test_each_example_submission_names_both(exercise_id):
    example = json.loads((REPO_ROOT / "exercises" / exercise_id / "example_submission.json").read_text("utf-8"))
    found = graded(exercise_id, example["answers"], example["explanation"])
    assert found[BOUNDARY].met and found[TRADEOFF].met, (found[BOUNDARY].message, found[TRADEOFF].message)


# Sentences that are the only candidates and name no trade-off: (exercise, question, text, why).
NOT_A_TRADEOFF = [
    # the audit: outer add's trade-off met by a plain sentence about the 2-D grid
    ("puzzle_outer_add", "q1",
     "这里启动的是二维 grid，pid_0 沿 x 方向，pid_1 沿 y 方向，x[None, :] + y[:, None] 广播成一个小块。", "one_sided"),
    ("puzzle_outer_add", "q1", "It launches a 2-D grid with two program ids, and x and y are broadcast into a tile.",
     "one_sided"),
    # the audit: welford's trade-off met by a sentence about numerical stability
    ("welford_merge", "q1", "两遍算法先减均值，平方的是 1e-2 量级的小数，所以没有大数相减，数值上是稳定的。", None),
    ("welford_merge", "q1", "The two-pass algorithm subtracts the mean first, so it squares small numbers and never "
                            "subtracts two large ones.", None),
    # one side only: the gain
    ("lesson07_softmax", "q3", "融合 kernel 只读一次 x、写一次 y，中间结果留在寄存器里。", "no_cost"),
    ("lesson07_softmax", "q3", "The fused kernel reads x once and writes y once, keeping intermediates in registers.",
     "no_cost"),
    ("lesson06_mean_var", "q3", "两个 pass 都在片上完成，只读一次矩阵。", None),
    ("puzzle_long_softmax", "q1", "online softmax 少读一遍 x。", "no_cost"),
    ("weighted_sum_fwd_bwd", "q3", "w 的 tile 广播给本块的每一行，读一次就被所有行复用。", "no_cost"),
    ("weighted_sum_fwd_bwd", "q3", "The w tile is broadcast to every row of the block and reused by all of them.",
     "no_cost"),
    # one side only: the cost, a constraint with nothing bought
    ("puzzle_long_sum", "q1", "B1 < T，一个块装不下一整行，所以要用 for 循环沿 T 逐块累加。", "no_gain"),
    ("puzzle_long_sum", "q1", "B1 < T, so one block does not fit a whole row and a loop accumulates block by block.",
     "no_gain"),
    # negated sides: nothing bought, nothing paid
    ("fused_mean_var_atomic", "q3", "融合并不会减少显存流量，也没有额外开销。", None),
    ("lesson05_row_sum", "q1", "一行一个 program 并不能少读显存，也没有什么代价。", None),
    ("lesson05_row_sum", "q1", "One program per row does not save any memory traffic and has no cost either.", None),
    ("lesson07_softmax", "q3", "The fused kernel reads x once, without any extra cost.", "no_cost"),
    ("lesson07_softmax", "q3", "融合后只读一次 x，代价为零。", "no_cost"),
    # precision raised is no speed bought, and the two-pass algorithm's name is no second pass paid (NAMES_NOT_SIDES)
    ("lesson06_mean_var", "q3", "还可以把累加提升到 float64，精度提高以后抵消就小了；两遍法先减均值，所以数值稳定。", None),
    ("welford_merge", "q1", "两遍算法数值稳定，把累加器提高到双精度也能缓解抵消。", None),
]


@pytest.mark.parametrize("exercise_id,question,text,why", NOT_A_TRADEOFF)
def test_sentences_that_are_not_a_tradeoff_leave_it_unmet(exercise_id, question, text, why):
    language = "zh" if any("\u4e00" <= ch <= "\u9fff" for ch in text) else "en"
    found = graded(exercise_id, {question: text}, language=language)[TRADEOFF]
    assert not found.met, found.message
    label = CATALOG.get(exercise_id).spec.pass_rule.performance_tradeoff.label.in_(language)
    assert label in found.message and found.evidence["looked_for"] == label
    if why is not None:
        assert found.evidence["rejected"][0]["why"] == why, found.evidence
        assert found.evidence["rejected"][0]["quote"] in found.message


# Sentences that name no boundary: (exercise, question, text, why).
NOT_A_BOUNDARY = [
    # the audit: lesson 6's boundary met by a sentence stating a misconception
    ("lesson06_mean_var", "q2", "tl.sum 会自动跳过被 mask 的 lane，所以 N < BLOCK 时不会出错。", "misconception"),
    ("lesson06_mean_var", "q2", "The second sum reads out-of-bounds memory, so the variance comes out too large.",
     "misconception"),
    ("lesson06_mean_var", "q2", "N < BLOCK 时只要把 BLOCK 调大，padding 就不会污染方差。", "misconception"),
    # negated: "it does not happen here"
    ("puzzle_outer_add", "q1", "这里不会越界。", "negated"),
    ("puzzle_long_sum", "q1", "There is no out-of-bounds access here.", "negated"),
    ("lesson06_mean_var", "q1", "When N < BLOCK nothing goes wrong.", "no_effect"),
    ("lesson06_mean_var", "q1", "N < BLOCK 时不会出错。", "no_effect"),
    # the condition named, nothing said about what breaks at it
    ("lesson05_row_sum", "q3", "stride 是 x.stride(0)。", "no_effect"),
    ("lesson06_mean_var", "q1", "padding lane 的个数是 BLOCK - N。", "no_effect"),
    ("weighted_sum_fwd_bwd", "q1", "The block pointer is built with boundary_check=(0, 1).", "no_effect"),
    # a dismissal: no effect stated ("不需要" negates the need)
    ("lesson06_mean_var", "q1", "N < BLOCK 时也不需要再处理。", None),
]


@pytest.mark.parametrize("exercise_id,question,text,why", NOT_A_BOUNDARY)
def test_sentences_that_are_not_a_boundary_leave_it_unmet(exercise_id, question, text, why):
    language = "zh" if any("\u4e00" <= ch <= "\u9fff" for ch in text) else "en"
    found = graded(exercise_id, {question: text}, language=language)[BOUNDARY]
    assert not found.met, found.message
    assert found.evidence["looked_for"] in found.message
    if why is not None:
        assert [r["why"] for r in found.evidence["rejected"]] == [why], found.evidence
        said = {"misconception": ("误区", "misconception"), "negated": ("否定", "does not happen"),
                "no_effect": ("只提到了条件", "condition only")}[why]
        assert said[0 if language == "zh" else 1] in found.message


def test_a_misconception_sentence_does_not_count_but_a_right_one_beside_it_does():
    wrong = "The second sum reads out-of-bounds memory, so the variance comes out too large."
    right = "When N < BLOCK and the mean is not zero, the variance is too large by (BLOCK - N) * mean^2 / N."
    found = graded("lesson06_mean_var", {"q2": f"{wrong} {right}"}, language="en")[BOUNDARY]
    assert found.met and found.evidence["quote"].startswith("When N < BLOCK"), found.evidence


def test_the_other_side_may_open_the_next_sentence():
    found = graded("lesson07_softmax", {"q3": "融合后只读一次 x、写一次 y。代价是整行要放进寄存器。"})[TRADEOFF]
    assert found.met and found.evidence["sides"]["cost"].startswith("代价是整行要放进寄存器")
    alone = graded("lesson07_softmax", {"q3": "融合后只读一次 x、写一次 y。整行放在寄存器里。"})[TRADEOFF]
    assert not alone.met


@pytest.mark.parametrize("exercise_id,question,text,language", [
    ("lesson07_softmax", "q3", "融合后只读一次 x、写一次 y。整行要放进寄存器，寄存器压力变大。", "zh"),
    ("lesson07_softmax", "q3", "The fused kernel reads x once and writes y once. A whole row must fit in registers.", "en"),
    ("puzzle_long_softmax", "q1", "online softmax 把求 max 和求 sum 合成一遍，少读一遍 x。每块要多一次缩放。", "zh"),
])
def test_the_other_side_may_be_the_next_sentence_without_a_link_word(exercise_id, question, text, language):
    found = graded(exercise_id, {question: text}, language=language)[TRADEOFF]
    assert found.met, found.message
    assert found.evidence["sides"]["gain"] and found.evidence["sides"]["cost"]


@pytest.mark.parametrize("exercise_id,question,text,kind", [
    ("puzzle_long_softmax", "q1", "online softmax、少读一遍 x、额外缩放、−inf padding、exp2、越界", TRADEOFF),
    ("puzzle_long_softmax", "q1", "online softmax、少读一遍 x、额外缩放、−inf padding、exp2、越界", BOUNDARY),
    ("lesson07_softmax", "q3", "fused kernel, read once, extra registers, spill, bandwidth bound, overflow, -inf padding",
     TRADEOFF),
    ("lesson06_mean_var", "q2", "mask, other=0, −μ, μ², tl.where, 偏大, 越界, 单位元", BOUNDARY),
])
def test_a_keyword_list_names_no_idea(exercise_id, question, text, kind):
    language = "zh" if any("\u4e00" <= ch <= "\u9fff" for ch in text) else "en"
    found = graded(exercise_id, {question: text}, language=language)[kind]
    assert not found.met, found.message
    assert [r["why"] for r in found.evidence["rejected"]] == ["stuffing"], found.evidence
    assert ("罗列" if language == "zh" else "list of terms") in found.message


@pytest.mark.parametrize("text", ["融合以后吞吐提升了一倍，代价是要读两遍显存。",
                                  "片上两遍只读一次矩阵，省一半显存流量；两遍法的代价是整行要放进寄存器。"])
def test_speed_raised_and_two_passes_paid_are_still_a_tradeoff(text):
    assert graded("lesson06_mean_var", {"q3": text})[TRADEOFF].met
