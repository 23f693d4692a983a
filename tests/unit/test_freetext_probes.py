"""Probes of the written-answer scorer (service/grading/freetext.py) written from lesson 6's Q2, its
reference answer, rubric and the lesson seed, not from the calibration set: a correct answer written
with invisible characters, homoglyphs, stacked accents or emoji scores as the plain one; a keyword list
or a copy so disguised is still flagged; every concept said with "not" in front earns nothing; a
misconception that the answer attributes to others and refutes, denies or only asks about is not the
student's."""
from __future__ import annotations

import pytest

from service.config import REPO_ROOT
from service.exercises import ExerciseCatalog
from service.grading import folding, freetext
from service.grading.folding import normalise
from service.grading.freetext import score_answer

LESSON = ExerciseCatalog(REPO_ROOT / "exercises").get("lesson06_mean_var")
Q2 = LESSON.question("q2")
POINTS = 2.0

PLAIN = {
    "zh": "load 时 other=0.0 只保证第一次求和时 padding 是单位元。中心化后 padding lane 变成 0 − μ = −μ，平方后是 μ²，"
          "所以第二次 tl.sum 多加了 (BLOCK − N)μ²，方差偏大。因此要用 tl.where 重新 mask。",
    "en": "other=0.0 only makes the padding the identity for the first sum. After centring, the padding lanes become "
          "0 - mean = -mean, so squared they become mean^2; the second sum therefore adds (BLOCK - N)*mean^2 and the "
          "variance is too large. So we must re-mask with tl.where before the second sum.",
}
STUFFED = "other=0.0, 单位元, −μ, μ², (BLOCK − N)μ², 偏大, tl.where, 重新 mask"


def score(answer: str) -> freetext.TextScore:
    return score_answer(Q2, answer, POINTS, course_text=LESSON.spec.course_text)


def outcome(answer: str) -> tuple[float, list[str], list[str]]:
    result = score(answer)
    return result.points, sorted(result.flags), sorted(f["concept"] for f in result.found)


CYRILLIC = str.maketrans({"a": "а", "e": "е", "o": "о", "c": "с", "p": "р", "x": "х"})
DISGUISES = {
    "a zero-width space between every character": lambda s: "\u200b".join(s),
    "zero-width joiners and word joiners inside words": lambda s: s.replace("mask", "ma\u200dsk").replace(
        "padding", "pad\u2060ding").replace("mean", "me\ufeffan").replace("μ", "μ\u200c"),
    "soft hyphens inside words": lambda s: s.replace("mask", "ma\u00adsk").replace("mean", "me\u00adan").replace(
        "padding", "pad\u00adding"),
    "direction marks around words": lambda s: s.replace("mean", "\u202emean\u202c").replace("μ", "\u200eμ\u200f"),
    "accents stacked on letters": lambda s: "".join(c + "\u0301" if c in "aeo" else c for c in s),
    "Latin-looking Cyrillic letters": lambda s: s.translate(CYRILLIC),
    "emoji between and after words": lambda s: s.replace(" so ", " 🤔 so ").replace("mean", "mean✨").replace(
        "μ", "μ🙂"),
    "variation selectors": lambda s: s.replace("μ", "μ\ufe0f").replace("mask", "mask\ufe0e"),
}


@pytest.mark.parametrize("lang", sorted(PLAIN))
@pytest.mark.parametrize("disguise", sorted(DISGUISES))
def test_a_disguised_correct_answer_scores_as_the_plain_one(disguise, lang):
    plain = outcome(PLAIN[lang])
    assert plain == (POINTS, [], sorted(c.id for c in Q2.concepts))
    assert outcome(DISGUISES[disguise](PLAIN[lang])) == plain


@pytest.mark.parametrize("disguise", ["a zero-width space between every character", "Latin-looking Cyrillic letters",
                                      "soft hyphens inside words"])
def test_a_disguised_keyword_list_is_still_flagged(disguise):
    assert outcome(STUFFED)[1] == ["keyword_stuffing"]
    result = score(DISGUISES[disguise](STUFFED))
    assert result.flags == ["keyword_stuffing"] and result.points <= POINTS / 4


@pytest.mark.parametrize("disguise", ["a zero-width space between every character", "Latin-looking Cyrillic letters"])
def test_a_disguised_copy_of_the_reference_is_still_a_copy(disguise):
    result = score(DISGUISES[disguise](Q2.reference_answer))
    assert "copied_text" in result.flags and result.copied_share >= 0.9


def test_a_quote_shows_the_students_own_characters():
    disguised = PLAIN["en"].translate(CYRILLIC)
    quotes = [f["quote"] for f in score(disguised).found]
    assert quotes and all(q.strip("…") in disguised for q in quotes)
    assert any("е" in q for q in quotes)  # the Cyrillic letters, as written


def test_cyrillic_text_and_the_rubrics_signs_keep_their_letters():
    assert normalise("Маска обнуляет паддинг") == "маска обнуляет паддинг"  # Russian: not a disguise
    assert normalise("μ ≠ 0, σ², ε, δ") == "μ ≠ 0, σ2, ε, δ"
    assert normalise("x\u0338") == "x\u0338"  # the stroke of a decomposed ≠ is kept


@pytest.mark.parametrize("answer", [
    "It is not the identity for the first sum, the padding does not become -mean, it is not mean^2, the second "
    "sum does not gain (BLOCK - N)*mean^2, and we do not need tl.where to re-mask.",
    "other=0.0 不是单位元，padding 不会变成 −μ，平方后不是 μ²，第二次求和不会多出 (BLOCK − N)μ²，也不会偏大。",
])
def test_every_concept_stated_as_false_earns_nothing(answer):
    result = score(answer)
    assert result.points == 0
    assert not {f["concept"] for f in result.found} & {"padding_neg_mean", "excess"}


@pytest.mark.parametrize("answer", [
    "如果不重新 mask，中心化后 padding 变成 −μ，平方后是 μ²，方差就会偏大，所以要用 tl.where 重新 mask。",
    "If we didn't re-mask, the padding lanes would become -mean after centring, so squared they are mean^2 and the "
    "variance is too large.",
    "不重新 mask 就会偏大：中心化后 padding 不是 0 而是 −μ，平方后是 μ²，所以方差偏大。",
    "别忘了用 tl.where 重新 mask：中心化后 padding 变成 −μ，平方后是 μ²，所以方差偏大。",
    "Don't forget to re-mask with tl.where: after centring the padding becomes -mean, so squared it is mean^2 and "
    "the variance is too large.",
])
def test_a_negated_step_that_is_a_condition_or_a_contrast_still_counts(answer):
    found = {f["concept"] for f in score(answer).found}
    assert {"padding_neg_mean", "mean_squared", "excess", "remask"} <= found


CORRECT_TAIL = {
    "en": " After centring the padding becomes -mean, so squared it is mean^2 and the variance is too large; so we "
          "re-mask with tl.where.",
    "zh": "中心化后 padding 变成 −μ，平方后是 μ²，所以方差偏大，要用 tl.where 重新 mask。",
}


@pytest.mark.parametrize("lead,lang", [
    ("Some think the second mask is not needed; that's wrong.", "en"),
    ("A common mistake is to believe that other=0.0 is enough.", "en"),
    ("It's tempting to think the padding lanes stay zero so they add nothing to the variance, but that is false.",
     "en"),
    ("Is it because tl.sum skips the masked lanes? No: every lane is summed.", "en"),
    ("It is not true that the second mask is not needed.", "en"),
    ("有人认为 other=0.0 就够了，这是错的。", "zh"),
    ("常见误区是以为 tl.sum 会跳过被 mask 的 lane。", "zh"),
    ("很多人以为 padding 是 0 所以不影响方差，其实不然。", "zh"),
    ("是因为 tl.sum 会跳过被 mask 的 lane 吗？不是，所有 lane 都会被加。", "zh"),
    ("并不是不需要第二次 mask。", "zh"),
    ("You might think tl.sum skips the masked lanes, but every lane is summed.", "en"),
    ("I used to think other=0.0 is enough, but it is not.", "en"),
    ("一开始我以为 other=0.0 就够了，但其实不够。", "zh"),
])
def test_a_misconception_reported_refuted_or_asked_is_not_the_students(lead, lang):
    result = score(lead + CORRECT_TAIL[lang])
    assert result.misconceptions == [] and result.flags == []
    assert result.points >= 1.5


@pytest.mark.parametrize("answer", [
    "Some people think tl.sum skips the masked lanes.",  # attributed, never refuted: said
    "Does tl.sum skip the masked lanes? Yes, so other does not matter.",  # asked and answered yes
    "tl.sum skips the masked lanes, some people think, and they are right.",
    "我觉得 tl.sum 会跳过被 mask 的 lane，所以 other 填什么都行。",
    "We think tl.sum skips the masked lanes, so other can be anything.",
])
def test_a_misconception_the_student_holds_is_still_flagged(answer):
    assert "misconception" in score(answer).flags


def test_the_switches_restore_the_old_readings(monkeypatch):
    monkeypatch.setattr(folding, "INVISIBLE_FOLD", False)
    assert score("\u200b".join(PLAIN["en"])).points == 0
    monkeypatch.setattr(freetext, "REPORTED_NOT_STATED", False)
    assert "misconception" in score("有人认为 other=0.0 就够了，这是错的。" + CORRECT_TAIL["zh"]).flags


@pytest.mark.parametrize("answer", [
    "tl.where causes identity because -mean. mean^2 is re-mask so (BLOCK - N) leads to first sum.",
    "tl.where 导致单位元，因为 −μ。μ² 是重新 mask，所以 (BLOCK − N) 会变成第一次求和。",
    "The identity leads to -mean, which causes mean^2, so it gives (BLOCK - N) that means re-mask.",
])
def test_terms_in_a_sentence_frame_are_keyword_stuffing(answer):
    result = score(answer)
    assert "keyword_stuffing" in result.flags and result.points <= POINTS / 4


@pytest.mark.parametrize("answer", [
    "pad: 0 → 0−μ = −μ → 平方 μ² → 第二次 sum 多 (BLOCK−N)μ² → 方差偏大 → tl.where 重新 mask",
    "pad 0 → 0 − mean = −mean → squared = mean² → 2nd sum gains (BLOCK−N)·mean² → var too large → tl.where re-mask",
    "N=3, BLOCK=4, x=[1,2,3]: other=0 第一次求和 6/3=2 正确；中心化 0−2=−2，平方 4，第二次求和 1+0+1+4=6，方差 6/3=2 "
    "而不是 2/3，偏大。所以要 tl.where(mask, d*d, 0) 重新 mask。",
    "pad: 0 - μ = -μ ⇒ (-μ)^2 = μ^2 ≠ 0 ⇒ var += (BLOCK-N)μ^2/N (too large) ⇒ tl.where(mask, diff^2, 0)",
    *PLAIN.values(),
])
def test_terse_arrowed_and_worked_answers_keep_full_points(answer):
    result = score(answer)
    assert result.points == POINTS and result.flags == []


@pytest.mark.parametrize("answer", [
    PLAIN["en"] + " Just kidding, all of that is wrong.",
    PLAIN["en"] + " Actually none of this is true.",
    PLAIN["zh"] + "开玩笑的，以上说的全都是错的。",
    PLAIN["zh"] + "以上都不对。",
])
def test_an_answer_that_takes_itself_back_goes_to_a_ta(answer):
    result = score(answer)
    assert result.flags == ["retracted"] and result.confidence < freetext.REVIEW_THRESHOLD


def test_claims_listed_and_refuted_are_no_retraction():
    answer = "有人说 tl.sum 会跳过 padding，有人说要把 BLOCK 调大，以上都不对，其实" + CORRECT_TAIL["zh"]
    result = score(answer)
    assert result.flags == [] and result.points == POINTS


@pytest.mark.parametrize("answer", [
    "Le other=0.0 ne garantit l'élément neutre que pour la première somme. Après le centrage, les lanes de padding "
    "deviennent 0 − μ = −μ, puis μ² au carré ; la deuxième somme ajoute donc (BLOCK − N)μ² et la variance est trop "
    "grande. Il faut donc re-masquer avec tl.where.",
    "other=0.0 ist nur für die erste Summe das neutrale Element. Nach dem Zentrieren werden die Padding-Lanes zu "
    "0 − μ = −μ, quadriert also μ²; die zweite Summe addiert daher (BLOCK − N)μ² und die Varianz ist zu groß.",
    "Паддинг после центрирования становится −μ, в квадрате μ², поэтому дисперсия завышена; нужен tl.where.",
    "Le padding ne devient pas négatif et la variance ne change pas, donc pas besoin de masque.",
])
def test_an_answer_in_another_language_goes_to_a_ta(answer):
    result = score(answer)
    assert "other_language" in result.flags and result.confidence < freetext.REVIEW_THRESHOLD


def test_english_with_code_and_chinese_with_english_terms_are_no_other_language():
    for answer in (PLAIN["en"], PLAIN["zh"], "del x; as the pad is non-zero per lane, y = mean - 0, do re-mask",
                   "Le" + "x" * 3):
        assert "other_language" not in score(answer).flags


@pytest.mark.parametrize("answer", [
    "Either because the padding becomes -mean after centring so squared it is mean^2 and the variance is too large, "
    "or because of rounding in the hardware; so we re-mask with tl.where.",
    "可能是中心化后 padding 变成 −μ，平方后是 μ²，导致方差偏大；也可能是 GPU 的硬件舍入误差。"
    "所以用 tl.where 重新 mask。",
    "Maybe the padding becomes -mean so squared it gives mean^2 and the variance is too large, or maybe it's just "
    "float noise. Re-mask with tl.where.",
    "It could be that the pads become -mean and square to mean^2, or it could be a race between threads; re-mask.",
])
def test_causes_offered_as_alternatives_go_to_a_ta(answer):
    result = score(answer)
    assert "hedged" in result.flags and result.confidence < freetext.REVIEW_THRESHOLD


def test_alternative_fixes_are_no_hedge():
    answer = PLAIN["en"] + " Either tl.where or multiplying by the mask works, and float64 or Welford helps too."
    assert "hedged" not in score(answer).flags


def test_a_step_named_as_what_is_prevented_is_stated():
    softmax = ExerciseCatalog(REPO_ROOT / "exercises").get("lesson07_softmax").question("q1")
    for answer in ("Subtracting the max avoids overflow: exp(1000) = inf and inf/inf = NaN.",
                   "减去最大值是为了避免 exp(1000) 溢出成 inf，inf/inf = NaN。"):
        assert "overflow" in {f["concept"] for f in score_answer(softmax, answer, 2.0).found}


@pytest.mark.parametrize("answer", [
    "只在 load 时 mask 为什么仍会污染方差？因为 −μ、μ²、(BLOCK − N)、tl.where、重新 mask、单位元。",
    "Why does masking only the load still pollute the variance? Because -mean, mean^2, (BLOCK-N), tl.where, re-mask, "
    "identity.",
])
def test_a_keyword_list_after_the_question_restated_is_keyword_stuffing(answer):
    result = score(answer)
    assert "keyword_stuffing" in result.flags and result.points <= POINTS / 4


# A clause in the reference answer's own words says what the reference says, although a misconception's
# label shares its words (the reference refutes that misconception next to it): no suspected misconception.
# The misconception itself, stated, is still found.
def _scored(exercise: str, question: str, answer: str) -> freetext.TextScore:
    ex = ExerciseCatalog(REPO_ROOT / "exercises").get(exercise)
    points = next(i.points for i in ex.spec.rubric if i.source == "text" and i.question == question)
    return score_answer(ex.question(question), answer, points, course_text=ex.spec.course_text)


@pytest.mark.parametrize(("exercise", "question", "answer"), [
    ("lesson06_mean_var", "q3", "E[x²]−E[x]² 这种一遍公式在均值大、方差小的时候两个大数相减，会发生灾难性抵消；"
                                "本课的两遍算法先减均值再平方，已避开这一问题。还可以用 fp64 累加或者 Welford。"),
    ("welford_merge", "q2", "合并时要加上 δ²·n_a·n_b/n 这一项，漏了它方差偏小；权重写成 n_b 或 n_a·n_b 都会错。"),
])
def test_a_clause_in_the_references_words_is_no_suspected_misconception(exercise, question, answer):
    result = _scored(exercise, question, answer)
    assert not result.suspected and "suspected_misconception" not in result.flags, result.suspected


@pytest.mark.parametrize(("exercise", "question", "answer", "misconception"), [
    ("lesson06_mean_var", "q3", "本课的两遍算法也同样会发生灾难性抵消，因为还是大数相减，所以要改成 Welford。",
     "two_pass_also_cancels"),
    ("welford_merge", "q2", "合并项的权重写成 n_b 就可以了，δ² 乘 n_b 加到 M2 上。", "wrong_weight"),
])
def test_the_misconception_the_reference_refutes_is_still_found(exercise, question, answer, misconception):
    result = _scored(exercise, question, answer)
    assert misconception in [m["misconception"] for m in result.misconceptions]


def test_no_reference_answer_is_flagged_a_suspected_misconception():
    catalog = ExerciseCatalog(REPO_ROOT / "exercises")
    for exercise_id in catalog.ids():
        exercise = catalog.get(exercise_id)
        for item in (i for i in exercise.spec.rubric if i.source == "text"):
            question = exercise.question(item.question)
            result = score_answer(question, question.reference_answer, item.points,
                                  course_text=exercise.spec.course_text)
            assert not result.suspected and not result.misconceptions, (exercise_id, item.question, result.suspected)


def test_a_clause_in_a_misconceptions_own_words_costs_its_points_for_a_ta():
    """No pattern finds this English statement of `two_pass_also_cancels`; its clause is the label's words
    with the label's polarity: flagged for a TA and scored as the pattern-found statement is."""
    said = _scored("lesson06_mean_var", "q3",
                   "The two-pass algorithm suffers the same catastrophic cancellation, so switch to Welford.")
    found = _scored("lesson06_mean_var", "q3",
                    "本课的两遍算法也同样会发生灾难性抵消，因为还是大数相减，所以要改成 Welford。")
    assert [s["misconception"] for s in said.suspected] == ["two_pass_also_cancels"]
    assert "suspected_misconception" in said.flags and said.points == found.points < 2.0


def test_a_misconception_that_is_the_answers_mechanism_leaves_nothing_to_keep():
    """MISCONCEPTION_SCOPE: the concepts named only in the sentences that state the misconception (here
    overflow instead of cancellation) earn nothing; a right mechanism said apart from it keeps a share."""
    wrong = _scored("welford_merge", "q1", "因为 x² 大概是 1e8，超过了 float32 能表示的范围，overflow 了变成 inf，"
                                          "inf − inf = NaN。两遍法先减 mean，数变小了就不会 overflow。")
    assert wrong.points == 0 and "misconception" in wrong.flags
    apart = _scored("welford_merge", "q1", "E[x²] 和 E[x]² 都是 1e8 左右的大数，相减时有效数字被抵消掉，这就是灾难性抵消。"
                                          "两遍法先减 mean，再平方求和，就没有两个大数相减。另外 x² 会 overflow 变成 inf。")
    assert 0 < apart.points < 2 and "misconception" in apart.flags


def test_a_correct_fragment_earns_the_smallest_unit():
    """MIN_CREDIT: two of five concepts named right, no link, no misconception: half a point, not 0."""
    fragment = _scored("lesson07_softmax", "explanation", "空1 填负无穷，空2 减最大值，防止 exp 溢出。")
    assert fragment.points == 0.5 and not fragment.flags
    nothing = _scored("lesson07_softmax", "explanation", "我按照模板把两个空填好了，测试通过。")
    assert nothing.points == 0


def test_the_sentence_that_waves_a_step_away_earns_nothing():
    """DISMISSAL_SCOPE: −μ and μ² named on the way to "so it can be ignored" are not credited."""
    waved = _scored("lesson06_mean_var", "q2", "other=0.0 让 padding lane 读进来是 0，第一次求和没问题。减完均值以后 padding "
                                                "lane 是 −μ，平方后 μ²，跟真实的方差比差别很小，所以可以不管它。")
    assert "dismissal" in waved.flags and waved.points <= 0.5


# Honest probes, round 2 (2026-12-04): correct submissions written as students write them, graded
# through the pipeline; each phrasing below lost points, was flagged or failed the pass rule.

def _misconception_ids(result: freetext.TextScore) -> list[str]:
    return [m["misconception"] for m in result.misconceptions] + \
        [s.get("misconception", s["kind"]) for s in result.suspected]


# (a) A dismissal said before the misconception's words is the same dismissal as one said after them.
@pytest.mark.parametrize("answer", [
    "输入：load 时 other=0.0，padding 是 0。状态：均值要除以真实的 N，错误的做法是除以 BLOCK；减均值后 padding 变成 -mean，"
    "平方成 mean²，所以要 tl.where 再 mask。输出：store 均值和方差。",
    "Input: load with other=0.0. State: the mean divides by the real N, it would be wrong to divide by BLOCK. After "
    "centring the pads become -mean, squared mean^2, so tl.where re-masks them. Output: store mean and variance.",
    "Input: load with other=0.0. State: the mean divides by the real N; dividing by BLOCK would be wrong. After "
    "centring the pads become -mean, squared mean^2, so tl.where re-masks them. Output: store mean and variance.",
])
def test_a_misconception_called_wrong_before_or_after_it_is_not_stated(answer):
    result = _scored("lesson06_mean_var", "q1", answer)
    assert not _misconception_ids(result) and result.points == 2.0, (result.misconceptions, result.points)


@pytest.mark.parametrize("answer", [
    "输入：load 时 other=0.0，padding 是 0。状态：均值是 tl.sum 除以 BLOCK；减均值后 padding 变成 -mean，平方成 mean²，"
    "所以要 tl.where 再 mask。输出：store 均值和方差。",
    "Input: load with other=0.0. State: the right way is to divide by BLOCK. After centring the pads become -mean, "
    "squared mean^2, so tl.where re-masks them. Output: store mean and variance.",
])
def test_a_misconception_stated_plainly_is_still_found(answer):
    result = _scored("lesson06_mean_var", "q1", answer)
    assert "divide_by_block" in _misconception_ids(result) and result.points < 2.0


# (b) Operand order: `N > cols` is `cols < N` for the rubric's patterns; a difference turned around
# ("exp(m_old - m_new)") is not the label's ("exp(m_new − m_old)").
def test_a_comparison_with_its_operands_swapped_is_the_same_concept():
    question = ExerciseCatalog(REPO_ROOT / "exercises").get("lesson05_row_sum").question("explanation")
    honest = "空1 stride_m（行距，视图时 stride > N）；空2 N > cols，只让前 N 个 lane 读内存，防止越界；空3 0.0，加法单位元，不改变和。"
    result = score_answer(question, honest, 1.0, fills=["stride_m", "N > cols", "0.0"])
    assert "position_mask" in [f["concept"] for f in result.found] and result.points == 1.0
    assert "N > cols" in next(f["quote"] for f in result.found if f["concept"] == "position_mask")
    # the comparison the wrong way round is no position mask
    wrong = score_answer(question, honest.replace("N > cols", "N < cols"), 1.0, fills=["stride_m", "N < cols", "0.0"])
    assert "position_mask" not in [f["concept"] for f in wrong.found] and wrong.points < 1.0


ONLINE = ("Every term already in the running sum is exp(x - m_old), i.e. relative to the old maximum. Once the "
          "maximum becomes m_new, the same term should be exp(x - m_new) = exp(x - m_old) * exp(m_old - m_new). So "
          "the whole old sum must be multiplied by exp({factor}) to move it to the new reference; without that the "
          "old terms are overestimated and the final probabilities come out too small. Padding lanes should be read "
          "as -inf: they can never become the maximum and exp(-inf) = 0 adds nothing. If they are read as 0, then in "
          "an all-negative row 0 becomes the row maximum, and every padding lane adds exp(0 - m) to the sum.")


def test_a_difference_turned_around_is_not_the_inverted_rescale():
    honest = _scored("puzzle_long_softmax", "q1", ONLINE.format(factor="m_old - m_new"))
    assert not _misconception_ids(honest) and honest.points == 3.0, (honest.suspected, honest.points)
    inverted = _scored("puzzle_long_softmax", "q1", ONLINE.format(factor="m_new - m_old"))
    assert "rescale_inverted" in _misconception_ids(inverted) and inverted.points < 3.0


# (c) A terse answer dense in terms whose links are told in words of its own is no keyword list.
@pytest.mark.parametrize(("exercise", "question", "answer"), [
    ("fused_mean_var_atomic", "q2",
     "- atomic_add accumulates onto the old contents (it doesn't overwrite).\n"
     "- First call: buffers are freshly zeroed by the caller → correct.\n"
     "- Second call: leftover sums from the last call → Σx doubled → mean doubled, variance drifts.\n"
     "- Only one zeroed → still wrong.\n- So zero both buffers before every launch."),
    ("lesson06_mean_var", "q3", "单遍公式 E[x²]-E[x]² 大均值时灾难性抵消，所以用两遍（先减均值），或者 fp64 累加 / Welford。"),
    ("lesson07_softmax", "q3", "unfused: ~5 reads + 3 writes → ~8MN elements of HBM traffic. fused: row in registers → "
                               "1 read + 1 write → 2MN. memory-bound → time ∝ bytes → ~4x faster. cost: the whole row "
                               "must fit in registers."),
])
def test_a_terse_answer_with_worded_links_is_no_keyword_list(exercise, question, answer):
    result = _scored(exercise, question, answer)
    assert "keyword_stuffing" not in result.flags and result.points == 2.0, (result.flags, result.points)


@pytest.mark.parametrize(("exercise", "question", "answer"), [
    ("lesson06_mean_var", "q3", "one-pass formula → catastrophic cancellation → two-pass → fp64 → Welford"),
    ("fused_mean_var_atomic", "q2", "atomic_add → leftover → drift → zero_each_launch → first call passes → both buffers"),
    ("fused_mean_var_atomic", "q2", "accumulates, leftover sums, mean doubled, first call passes, both buffers, "
                                    "zero before every launch"),
])
def test_names_strung_with_arrows_or_commas_are_still_keyword_stuffing(exercise, question, answer):
    result = _scored(exercise, question, answer)
    assert "keyword_stuffing" in result.flags and result.points <= 0.5, (result.flags, result.points)


def test_the_switches_of_round_two_restore_the_old_readings(monkeypatch):
    monkeypatch.setattr(freetext, "REFUTED_BEFORE", False)
    monkeypatch.setattr(freetext, "SWAPPED_COMPARISONS", False)
    monkeypatch.setattr(freetext, "WORDED_LINK_WORDS", None)
    monkeypatch.setattr(freetext, "TERSE_CHAIN", None)  # the step reading (branch `terse`) would read it as a chain
    wrong_before = _scored("lesson06_mean_var", "q1", "State: the mean divides by the real N, it would be wrong to "
                                                      "divide by BLOCK. Pads become -mean, squared mean^2, so re-mask.")
    assert "divide_by_block" in _misconception_ids(wrong_before)
    assert "rescale_inverted" in _misconception_ids(_scored("puzzle_long_softmax", "q1",
                                                            ONLINE.format(factor="m_old - m_new")))
    terse = _scored("lesson06_mean_var", "q3", "单遍公式 E[x²]-E[x]² 大均值时灾难性抵消，所以用两遍（先减均值），或者 fp64 累加 / Welford。")
    assert "keyword_stuffing" in terse.flags


# (d) "的话" and "else" close a condition as 否则 and otherwise do: the consequence after them is linked.
@pytest.mark.parametrize("answer", [
    "最后一块只有 N - start 个有效元素。n_b 要用有效元素个数，写成 BLOCK 的话 mean_b 分母错，合并权重也错。M2_b 里 padding lane "
    "减 mean_b 之后是 -mean_b，平方是 mean_b²，要先用 tl.where(mask, ..., 0.0) 清零，否则 M2 偏大。",
    "last chunk: n_b = N − start valid elements, not BLOCK (else mean_b and the weights are wrong); M2_b: pads become "
    "−mean_b → mean_b² → mask them with tl.where.",
])
def test_a_consequence_after_de_hua_or_else_is_a_link_and_meets_the_chain(answer):
    from service.grading.passrule import chain_requirement
    ex = ExerciseCatalog(REPO_ROOT / "exercises").get("welford_merge")
    result = _scored("welford_merge", "q3", answer)
    assert ("valid_count", "count_effect") in [(link["from"], link["to"]) for link in result.links]
    item = freetext.score_text(item_id="q3", title="Q3", max_points=2.0, question=ex.question("q3"), answer=answer,
                               result=result)
    assert chain_requirement(item, question_id="q3", share=ex.spec.pass_rule.chain_share, language="zh").met


@pytest.mark.parametrize(("answer", "misconception"), [
    ("最后一块 n_b 就是 BLOCK，mean_b = sum / BLOCK 的话均值正确；M2_b 里 padding 减 mean_b 后是 -mean_b，要用 tl.where 清零。",
     "block_count"),
    ("The last chunk still has BLOCK lanes, so n_b = BLOCK is right, else the merge weights would be off; the pads "
     "become -mean_b so mask them with tl.where.", "block_count"),
])
def test_a_misconception_before_de_hua_or_else_is_still_found(answer, misconception):
    result = _scored("welford_merge", "q3", answer)
    assert misconception in _misconception_ids(result) and result.points <= 0.5, result.misconceptions


def test_a_keyword_list_with_else_is_still_keyword_stuffing():
    result = _scored("welford_merge", "q3", "最后一块, N - start, 有效元素个数, BLOCK, 分母, 权重, -mean_b, mean_b², tl.where, else")
    assert "keyword_stuffing" in result.flags and result.points <= 0.5


# (e) A belief the student reports giving up ("一开始以为 …") is refuted by its failed check or by what they
# found out later, not only by "但 / 其实 / but".
@pytest.mark.parametrize("answer", [
    "我一开始以为 other=0.0 就够了，空里填的是 True，结果 given check 的方差 assert 没过。后来想明白了：other=0.0 只保证第一次"
    "求和时 padding 是单位元；中心化后 padding 变成 0 - mean = -mean，平方成 mean^2，第二次求和多加了 (BLOCK - N) * mean^2，"
    "所以方差偏大。改成 mask 之后就过了。",
    "I first thought other=0.0 was enough, so I filled the blank with True and the variance assert failed. Later I "
    "realised other=0.0 only makes the pads the identity for the first sum: after centring they are -mean, squared "
    "mean^2, so the second sum gains (BLOCK - N)*mean^2 and the variance is too large. Re-masking with tl.where fixed it.",
])
def test_a_belief_given_up_after_a_failed_check_is_not_stated(answer):
    result = _scored("lesson06_mean_var", "q2", answer)
    assert not _misconception_ids(result) and result.points == 2.0, (result.misconceptions, result.points)


@pytest.mark.parametrize("answer", [
    "我一开始以为 other=0.0 就够了，现在也这么认为：padding 已经是 0，所以第二次求和不会受影响。",
    "other=0.0 就够了，padding 已经是 0，后来的求和也不会受影响。",
    "other=0.0 is enough: the pads are 0, so the later sums are unaffected.",
])
def test_a_belief_kept_is_still_the_students_misconception(answer):
    result = _scored("lesson06_mean_var", "q2", answer)
    assert "other_is_enough" in _misconception_ids(result) and result.points < 1.0, result.misconceptions


# (f) A clause found by similarity to a misconception's label must hold a word of the label besides the
# words of the concepts its sentence states ("softmax is shift-invariant → subtract the max").
TERSE_SHIFT = ("no shift → logits ≈ 1000 → exp(1000) = inf → inf/inf = NaN; logits ≈ -1000 → exp underflows to 0 → "
               "0/0 = NaN. {middle} → exponents ≤ 0 → largest term exp(0) = 1 → no overflow, denominator ≥ 1.")


def test_a_clause_in_the_words_of_the_concepts_it_states_is_no_suspected_misconception():
    result = _scored("lesson07_softmax", "q1", TERSE_SHIFT.format(middle="softmax is shift-invariant → subtract the max"))
    assert not _misconception_ids(result) and result.points == 2.0, (result.suspected, result.points)


@pytest.mark.parametrize("answer", [
    TERSE_SHIFT.format(middle="subtracting the max → the softmax result is changed a little"),
    "logits 约 1000 时 exp(1000) = inf，inf/inf = NaN。减去最大值之后 softmax 的结果会有一点改变，但是指数都 ≤ 0，最大项是 1，不会溢出。",
])
def test_the_claim_in_the_labels_own_words_is_still_suspected(answer):
    result = _scored("lesson07_softmax", "q1", answer)
    assert "shift_changes_result" in _misconception_ids(result) and result.points < 2.0, result.suspected


# (g) A dismissal's words that are a concept ("顺序无所谓": addition is order-free), "多余的行" (the extra
# rows) and "跟 Σx 一样可以线性相加" (like Σx) wave no step away.
@pytest.mark.parametrize(("exercise", "question", "answer"), [
    ("fused_mean_var_atomic", "q1", "方差不能跨 program 相加：方差是非线性的，每块的方差以本块均值为中心，各块均值不同，相加就少了块间项。"
                                    "Σx、Σx² 是线性的，和的和就是总和，atomic_add 的顺序无所谓，所以 kernel 只 atomic_add 这两个量，"
                                    "最后在 host 上算方差。"),
    ("fused_mean_var_atomic", "q1", "Variance is not linear: each block's variance is around its own mean, so adding them "
                                    "misses the between-block term. Σx and Σx² are linear, so the atomic_add order doesn't "
                                    "matter, and the host combines them afterwards."),
    ("puzzle_long_sum", "explanation", "每个 program 负责 B0 行，acc 初始化为 0。for 循环步长 B1，每次读一块 [B0, B1]，按 axis=1 "
                                       "求和加到 acc。mask 是 rows < N0 和 cols < T 的与：前者挡住多余的行，后者挡住最后一块超出行尾"
                                       "的列，被挡的位置填 0.0 不影响求和。最后 store 时用 rows < N0，避免写出 z 的范围。"),
    ("fused_mean_var_atomic", "explanation", "空1：tl.sum(values * values, 0)，本块的平方和，跟 Σx 一样可以线性相加。空2：sumsqs / N - "
                                             "mean ** 2，在 host 上所有 program 合并完之后才算方差。空3：launch 前 sums.zero_() 和 "
                                             "sumsqs.zero_()，因为 atomic_add 是累加。"),
])
def test_words_that_only_look_like_a_dismissal_are_none(exercise, question, answer):
    result = _scored(exercise, question, answer)
    assert "dismissal" not in result.flags and not result.suspected, result.suspected


@pytest.mark.parametrize("answer", [
    "other=0.0 只对第一次求和是单位元。填 True 和填 mask 一样可以。",
    "padding 的值无所谓，反正第二次求和会处理。",
    "other=0.0 只对第一次求和是单位元，第二次 mask 其实是多余的。",
])
def test_a_step_waved_away_is_still_a_dismissal(answer):
    result = _scored("lesson06_mean_var", "q2", answer)
    assert result.flags and ("dismissal" in result.flags or result.misconceptions), result.flags


# (h) Lesson 5 Q2: the value told before its reduction ("0 for sum, -inf for max") and lanes that "still join"
# the sum are the concepts; "0 for max" so told is the misconception.
def test_the_identity_told_value_first_is_the_concept():
    answer = ("masked lanes still join tl.sum with the other value → so other must be the identity → 0 for sum, -inf "
              "for max → a wrong value (1.0) adds (BLOCK - N) * 1.0 to every row sum.")
    result = _scored("lesson05_row_sum", "q2", answer)
    assert {"padding_joins", "sum_zero", "max_neg_inf"} <= {f["concept"] for f in result.found} and result.points == 2.0


def test_zero_for_max_told_value_first_is_the_misconception():
    result = _scored("lesson05_row_sum", "q2", "Padding lanes still join the sum with the other value, so other must be "
                                               "the identity: 0 for max, and -inf for sum.")
    assert "max_zero" in _misconception_ids(result) and result.points < 2.0
    refuted = _scored("lesson05_row_sum", "q2", "Padding lanes still join the sum, so other must be the identity: 0 for "
                                                "the sum, -inf for the max; 0 for max would be wrong for an all-negative row.")
    assert not _misconception_ids(refuted)


def test_the_later_switches_of_round_two_restore_the_old_readings(monkeypatch):
    monkeypatch.setattr(freetext, "TOPIC_WORDS", False)
    monkeypatch.setattr(freetext, "DISMISSAL_IN_CONCEPT", False)
    shifted = _scored("lesson07_softmax", "q1", TERSE_SHIFT.format(middle="softmax is shift-invariant → subtract the max"))
    assert "shift_changes_result" in _misconception_ids(shifted)
    ordered = _scored("fused_mean_var_atomic", "q1", "Σx and Σx² are linear, so the atomic_add order doesn't matter, and "
                                                     "the host combines them afterwards.")
    assert "dismissal" in ordered.flags
