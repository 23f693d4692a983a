"""An honest answer that accounts for something item by item ("max 读 MN，减法读 MN 写 MN，…") is
comma-separated short pieces, but it also says why ("…，所以融合后大约快 4 倍"): prose, not a keyword
list. Written from lesson 7's Q3 and the lesson's own figures, not from the calibration set."""
from __future__ import annotations

from service.config import REPO_ROOT
from service.exercises import ExerciseCatalog
from service.grading.freetext import score_answer

LESSON = ExerciseCatalog(REPO_ROOT / "exercises").get("lesson07_softmax")
POINTS = 2.0

TRAFFIC = ("非融合实现：max 读 x 写 max（读 MN），减法读 x 和 max 写 MN，exp 读 MN 写 MN，sum 读 MN，除法读 MN 写 MN，"
           "总共大约读 5MN、写 3MN。融合 kernel 只读一次 x（MN）、写一次 y（MN），中间结果留在寄存器/SRAM 里。"
           "softmax 是访存密集（memory-bound）的算子，计算量很小，时间主要花在 HBM 读写上，所以融合后大约快 4 倍。")
LIST = "HBM, 读一次, 写一次, 寄存器, SRAM, memory-bound, 带宽, 4 倍"


def test_an_item_by_item_account_that_says_why_is_not_keyword_stuffing() -> None:
    result = score_answer(LESSON.question("q3"), TRAFFIC, POINTS, course_text=LESSON.spec.course_text)
    assert "keyword_stuffing" not in result.flags
    assert result.points == POINTS


def test_the_same_terms_as_a_bare_list_still_are() -> None:
    result = score_answer(LESSON.question("q3"), LIST, POINTS, course_text=LESSON.spec.course_text)
    assert "keyword_stuffing" in result.flags and result.points <= POINTS / 4


def test_a_short_explanation_linked_by_zheyang_is_not_keyword_stuffing() -> None:
    # "这样" (so that) links the fill to what it does, as 所以 does: a terse honest explanation of both blanks.
    answer = ("填空 1：other=-float(\"inf\")，这样 padding lane 在 max 里永远输，exp 之后是 0，不影响分母。"
              "填空 2：减去 tl.max(logits, axis=0)（行最大值），exp 的参数 ≤ 0，不会 overflow。")
    result = score_answer(LESSON.question("explanation"), answer, 1.0, course_text=LESSON.spec.course_text)
    assert "keyword_stuffing" not in result.flags
    assert result.points >= 0.5


def test_a_terse_explanation_that_states_every_link_is_not_keyword_stuffing() -> None:
    # Every link of the chain is stated (=, "adds nothing", "so"), though the terms cover most of the text.
    answer = "-inf pads: max unaffected, exp(-inf)=0 adds nothing; minus tl.max: exponent <= 0, exp(0) = 1, so no inf, no 0/0"
    result = score_answer(LESSON.question("explanation"), answer, 1.0, course_text=LESSON.spec.course_text)
    assert "keyword_stuffing" not in result.flags
    assert result.points == 1.0
