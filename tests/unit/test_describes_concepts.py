"""The explanation against the fill, by the question's own concepts (freetext.DESCRIBES_BY_CONCEPTS,
a `describes` claim's `said_by`), and the claims' `shown_by` against every exercise's known fills: a
right fill written otherwise is still shown; the known wrong fills a claim is about are not."""
from __future__ import annotations

import pytest

from service.config import REPO_ROOT
from service.exercises import ExerciseCatalog
from service.exercises.spec import Question
from service.grading import freetext
from service.grading.extract import extract
from service.grading.freetext import NOT_THE_FILL, _claim_shown, _compiled, score_answer

CATALOG = ExerciseCatalog(REPO_ROOT / "exercises")

# A claim about another way to write the fill, which the reference solution does not take.
ALTERNATIVE_WAYS = {("puzzle_outer_add", "block_pointer")}


def _fills(exercise_id: str, code: str) -> list[str | None]:
    extraction = extract(CATALOG.get(exercise_id).template, code)
    assert extraction.error is None
    return extraction.fill_sources


def _claim_code(claim, fills: list[str | None]) -> str | None:
    if claim.blank is not None:
        return fills[claim.blank - 1]
    return None if any(f is None for f in fills) else "\n".join(fills)


def _shown(claim, fills: list[str | None]) -> bool:
    code = _claim_code(claim, fills)
    return code is not None and _claim_shown(claim, _compiled(tuple(claim.shown_by), 0), code)


def _mutant_fills(exercise_id: str, prefix: str) -> list[tuple[str, list[str | None]]]:
    exercise = CATALOG.get(exercise_id)
    found = []
    for mutant in exercise.mutants:
        if not mutant.id.startswith(prefix):
            continue
        extraction = extract(exercise.template, exercise.mutant_code(mutant))
        if extraction.error is None and not extraction.edits:
            found.append((mutant.id, extraction.fill_sources))
    return found


@pytest.mark.parametrize("exercise_id", CATALOG.ids())
def test_every_claim_is_shown_by_the_solution_and_every_correct_fill(exercise_id):
    """Checked on the fill itself (no reference fill alongside): a right fill written otherwise, which
    the pipeline may not know to be right, must still show what a right explanation says of it."""
    exercise = CATALOG.get(exercise_id)
    claims = exercise.question("explanation").describes
    solution = _fills(exercise_id, exercise.solution)
    for claim in claims:
        if (exercise_id, claim.id) in ALTERNATIVE_WAYS:
            assert not _shown(claim, solution)
            continue
        assert _shown(claim, solution), claim.id
        for mutant_id, fills in _mutant_fills(exercise_id, "correct."):
            assert _shown(claim, fills), (claim.id, mutant_id, _claim_code(claim, fills))


# The known wrong fills (mutants.yaml) of the blanks a claim is about: none shows the claim, so an
# explanation of the right fill over them is caught.
NOT_SHOWN = [
    ("lesson05_row_sum", "position_mask", ["wrong.mask_uses_stride", "wrong.hardcoded_17", "wrong.drops_last_lane"]),
    ("lesson05_row_sum", "other_zero", ["wrong.other_one", "wrong.other_nan", "wrong.other_neg_inf_float_call"]),
    ("lesson06_mean_var", "position_mask", [m for m, _ in _mutant_fills("lesson06_mean_var", "wrong.")
                                            if m != "wrong.unfilled"]),
    ("fused_mean_var_atomic", "zero_both", ["wrong.no_zero", "wrong.zero_sums_only", "wrong.zero_sumsqs_only"]),
    ("puzzle_long_sum", "col_mask", ["wrong.no_col_mask", "wrong.col_mask_le"]),
    ("puzzle_long_sum", "other_zero", ["wrong.other_one"]),
    ("puzzle_long_sum", "store_row_mask", ["wrong.no_store_mask"]),
    ("puzzle_long_softmax", "neg_inf_padding", ["wrong.zero_padding"]),
    ("puzzle_long_softmax", "load_mask_both", ["wrong.tail_mask_short"]),
    ("puzzle_long_softmax", "store_mask_both", ["wrong.tail_mask_short", "wrong.store_mask_cols_only",
                                                "wrong.store_mask_rows_only"]),
    ("puzzle_outer_add", "mask2d_store", ["wrong.store_mask_x_only", "wrong.store_mask_y_only", "wrong.mask_y_bound_n0"]),
    ("fused_mean_var_atomic", "population_var", ["wrong.mean_not_squared", "wrong.bessel", "wrong.std_not_var",
                                                 "wrong.sums_squared_undivided", "wrong.squared_sum_divided_once",
                                                 "wrong.mean_sq_divided", "wrong.combine_reads_global_x"]),
    ("welford_merge", "m2_chunk_mean", ["wrong.m2_about_running_mean", "wrong.m2_not_centred"]),
    ("welford_merge", "m2_remasked", ["wrong.naive_chunk_m2", "wrong.m2_not_remasked"]),
    ("weighted_sum_fwd_bwd", "both_dims", ["wrong.boundary_check_rows_only", "wrong.boundary_check_removed"]),
]


@pytest.mark.parametrize(("exercise_id", "claim_id", "mutant_ids"), NOT_SHOWN)
def test_the_known_wrong_fills_do_not_show_the_claim(exercise_id, claim_id, mutant_ids):
    claim = next(c for c in CATALOG.get(exercise_id).question("explanation").describes if c.id == claim_id)
    wrong = dict(_mutant_fills(exercise_id, "wrong.") + _mutant_fills(exercise_id, "cheat."))
    assert mutant_ids
    for mutant_id in mutant_ids:
        assert not _shown(claim, wrong[mutant_id]), mutant_id


def _explain(exercise_id: str, answer: str, fills: list[str], known_correct: bool = False,
             spilled: tuple[int, ...] = ()):
    exercise = CATALOG.get(exercise_id)
    question = exercise.question("explanation")
    points = next(i.points for i in exercise.spec.rubric if i.source == "text" and i.question == "explanation")
    reference = _fills(exercise_id, exercise.solution) if known_correct else None
    return score_answer(question, answer, points, fills=fills, reference_fills=reference, spilled=spilled)


def _l06(fill: str) -> list[str]:
    return [fill]


# The right fill's explanation, in words no `says` pattern holds.
RIGHT_FILL_WORDS = [
    "My condition for the tl.where keeps only the lanes that are real elements of the row, and sets everything "
    "past N to 0.0, because after centring the padding lanes hold -mean and squared they are mean^2.",
    "The condition keeps the padding lanes out of the variance sum: centred, they are -mean, and mean^2 once squared.",
    "我的条件在第二次求和前把越界的 lane 清零：中心化后它们是 −mean，平方后是 mean²，会多出 (BLOCK − N)·mean²。",
    "这样只有前 N 个真实元素参与方差的求和；padding lane 减去均值后是 −mean，平方是 mean²。",
]


@pytest.mark.parametrize("answer", RIGHT_FILL_WORDS)
@pytest.mark.parametrize("fill", ["cols >= 0", "values != 0.0", "cols < BLOCK", "True"])
def test_lesson6_the_right_fills_words_over_a_wrong_fill_describe_a_different_fill(answer, fill):
    result = _explain("lesson06_mean_var", answer, _l06(fill))
    assert NOT_THE_FILL in result.flags and result.points == 0
    assert result.not_the_fill[0]["claim"] == "position_mask"


@pytest.mark.parametrize("answer", RIGHT_FILL_WORDS)
@pytest.mark.parametrize(("fill", "known"), [("mask", True), ("cols < N", True), ("N > cols", False),
                                             ("mask & (cols >= 0)", True), ("tl.arange(0, BLOCK) <= N - 1", False)])
def test_lesson6_the_right_fills_words_over_a_right_fill_stand(answer, fill, known):
    result = _explain("lesson06_mean_var", answer, _l06(fill), known_correct=known)
    assert result.not_the_fill == [] and NOT_THE_FILL not in result.flags


# What the wrong fill really does, a condition or "without …": not the right fill's description.
HONEST = [
    ("values != 0.0", "I wrote values != 0.0 so that only the real elements count; the where keeps only the "
                      "nonzero lanes and sets the rest to 0."),
    ("cols < BLOCK", "cols < BLOCK keeps only the lanes that belong to the block, so only the N real lanes "
                     "count toward the variance."),
    ("cols >= 0", "我填的是 cols >= 0：只有前 N 个真实元素参与求和，越界的 lane 清零。"),
    ("True", "Without the where, the padding lanes would count toward the variance: each adds mean^2."),
    ("True", "如果不把 padding 清零，平方后会多出 mean²。"),
    ("True", "Lanes past N are padding; if they were not zeroed again they would be counted in the sum."),
    ("cols >= 0", "The padding lanes become -mean after centring and mean^2 once squared."),
]


@pytest.mark.parametrize(("fill", "answer"), HONEST)
def test_lesson6_what_the_wrong_fill_does_or_a_condition_is_not_flagged(fill, answer):
    result = _explain("lesson06_mean_var", answer, _l06(fill))
    assert result.not_the_fill == [] and NOT_THE_FILL not in result.flags


@pytest.mark.parametrize("answer", RIGHT_FILL_WORDS)
def test_lesson6_the_concepts_claim_nothing_of_a_spilled_fill(answer):
    """`mask, 0.0` in `tl.where(______, …)` spilled past its blank (refused before it ran): the concepts'
    words cannot tell which part they describe (the rehearsal of 2026-12-06: its explanation's points as
    written fell to 0)."""
    template = CATALOG.get("lesson06_mean_var").template
    extraction = extract(template, template.replace("______", "mask, 0.0"))
    assert list(extraction.spills) == [0]  # the extraction's own spills, as the pipeline passes them
    result = _explain("lesson06_mean_var", answer, extraction.fill_sources, spilled=tuple(extraction.spills))
    assert result.not_the_fill == [] and NOT_THE_FILL not in result.flags


@pytest.mark.parametrize("answer", RIGHT_FILL_WORDS[:1])
def test_lesson6_a_fill_not_spilled_is_read_by_the_concepts(answer):
    """Without the extraction's spills the same words claim the fill (`said_by`): `_spilled` reads the
    blanks the extraction found spilled, it does not guess from the fill's text."""
    result = _explain("lesson06_mean_var", answer, ["mask, 0.0"])
    assert NOT_THE_FILL in result.flags


def test_lesson6_the_switch_off_reads_the_says_patterns_only(monkeypatch):
    monkeypatch.setattr(freetext, "DESCRIBES_BY_CONCEPTS", False)
    result = _explain("lesson06_mean_var", RIGHT_FILL_WORDS[0], _l06("cols >= 0"))
    assert result.not_the_fill == []


def test_a_concept_that_names_only_code_does_not_say_the_claim():
    # `tl.where` (a remask match) names the code the template already holds; it says nothing of the fill.
    result = _explain("lesson06_mean_var", "The tl.where keeps what my condition keeps; "
                                           "after centring the padding is -mean, squared mean^2.", _l06("cols >= 0"))
    assert result.not_the_fill == []


FUSED_ZERO_SUMS_ONLY = ["tl.sum(values * values, axis=0)", "sumsqs / N - mean * mean", "sums.zero_()"]
FUSED_RIGHT = ["tl.sum(values * values, axis=0)", "sumsqs / N - mean * mean", "sums.zero_()\nsumsqs.zero_()"]


@pytest.mark.parametrize("answer", ["Before launching I zero both scratch buffers, because atomic_add adds on top.",
                                    "launch 前 sums 和 sumsqs 都清零，因为 atomic_add 是在原值上累加。"])
def test_fused_zeroing_both_over_a_fill_that_zeroes_one(answer):
    assert NOT_THE_FILL in _explain("fused_mean_var_atomic", answer, FUSED_ZERO_SUMS_ONLY).flags
    assert NOT_THE_FILL not in _explain("fused_mean_var_atomic", answer, FUSED_RIGHT).flags


@pytest.mark.parametrize("answer", ["I zero sums before the launch because atomic_add adds on top of it.",
                                    "If you don't zero both buffers, the second call drifts.",
                                    "只清零了 sums，没有把两个缓冲区都清零。"])
def test_fused_what_the_one_buffer_fill_does_is_not_flagged(answer):
    assert NOT_THE_FILL not in _explain("fused_mean_var_atomic", answer, FUSED_ZERO_SUMS_ONLY).flags


def _long_sum(column: str) -> list[str]:
    solution = _fills("puzzle_long_sum", CATALOG.get("puzzle_long_sum").solution)
    return [solution[0].replace("cols[None, :] < T", column)]


@pytest.mark.parametrize("answer", ["每一块用二维 mask：行方向 rows < N0，列方向 cols < T，越过行尾的列被挡住。",
                                    "The load mask is rows < N0 and cols < T, so the last block stops at the row end."])
def test_long_sum_a_column_mask_the_kernel_lacks(answer):
    assert NOT_THE_FILL in _explain("puzzle_long_sum", answer, _long_sum("cols[None, :] >= 0")).flags
    assert NOT_THE_FILL in _explain("puzzle_long_sum", answer, _long_sum("cols[None, :] <= T")).flags
    assert NOT_THE_FILL not in _explain("puzzle_long_sum", answer, _long_sum("cols[None, :] < T")).flags
    assert NOT_THE_FILL not in _explain("puzzle_long_sum", answer, _long_sum("T > cols[None, :]")).flags


@pytest.mark.parametrize("answer", ["列方向我写的是 cols <= T，行方向 rows < N0。",
                                    "列方向没有用 cols < T，只用了 rows < N0。",
                                    "The column mask is cols < T - 1 and the row mask rows < N0."])
def test_long_sum_a_column_mask_told_as_it_is_is_not_flagged(answer):
    fills = _long_sum("cols[None, :] <= T") if "<=" in answer else _long_sum("cols[None, :] >= 0")
    if "T - 1" in answer:
        fills = _long_sum("cols[None, :] < T - 1")
    assert NOT_THE_FILL not in _explain("puzzle_long_sum", answer, fills).flags


def test_lesson5_the_position_mask_over_a_wrong_mask():
    answer = "stride_m 是行距；mask 是 cols < N，只有前 N 个 lane 是这一行的；other 填 0.0 不改变求和。"
    assert NOT_THE_FILL in _explain("lesson05_row_sum", answer, ["stride_m", "cols < 17", "0.0"]).flags
    assert NOT_THE_FILL not in _explain("lesson05_row_sum", answer, ["stride_m", "cols < N", "0.0"]).flags
    told = "stride_m 是行距；mask 是 cols < N - 1；other 填 0.0 不改变求和。"
    assert NOT_THE_FILL not in _explain("lesson05_row_sum", told, ["stride_m", "cols < N - 1", "0.0"]).flags


def test_said_by_names_the_questions_concepts():
    question = CATALOG.get("lesson06_mean_var").question("explanation")
    data = question.model_dump()
    data["describes"][0]["said_by"] = ["no_such_concept"]
    with pytest.raises(ValueError, match="said_by"):
        Question.model_validate(data)


def _mutant(exercise_id: str, mutant_id: str) -> list[str | None]:
    return dict(_mutant_fills(exercise_id, mutant_id))[mutant_id]


# Long Softmax: the blank is the whole kernel body, so a claim says where it must hold (fill_sites.py):
# each load's `other`, each load's and store's mask.
LONG_SOFTMAX_WRONG = [
    ("wrong.zero_padding", "padding 读成 -inf：它不会成为最大值，exp(-inf - m) = 0 不进入求和。"),
    ("wrong.zero_padding", "The out-of-range lanes are read as -inf, so they never win the max."),
    ("wrong.tail_mask_short", "load 和 store 的 mask 都是 (rows < N0) & (cols < T)。"),
    ("wrong.tail_mask_short", "Both passes mask with rows < N0 and cols < T."),
    ("wrong.store_mask_cols_only", "第二遍 tl.store 带同样的 mask，越界的行列都不写。"),
    ("wrong.store_mask_rows_only", "The store uses the same mask, so nothing past the row end is written."),
]


@pytest.mark.parametrize(("mutant_id", "answer"), LONG_SOFTMAX_WRONG)
def test_long_softmax_what_one_load_or_store_lacks(mutant_id, answer):
    assert NOT_THE_FILL in _explain("puzzle_long_softmax", answer, _mutant("puzzle_long_softmax", mutant_id)).flags
    solution = _fills("puzzle_long_softmax", CATALOG.get("puzzle_long_softmax").solution)
    assert NOT_THE_FILL not in _explain("puzzle_long_softmax", answer, solution).flags


LONG_SOFTMAX_HONEST = [
    ("wrong.zero_padding", "第一遍的 load 用 other=0.0，第二遍用 -inf。"),
    ("wrong.zero_padding", "If the padding were not read as -inf, a 0 could become the max."),
    ("wrong.zero_padding", "如果不读成 -inf，0 会成为最大值。"),
    ("wrong.tail_mask_short", "第二遍的 mask 是 cols2 < T - 1。"),
    ("wrong.store_mask_cols_only", "The store is masked by columns only: cols2 < T."),
    ("wrong.store_mask_rows_only", "store 没有用同样的 mask，只有行方向的 row_mask。"),
]


@pytest.mark.parametrize(("mutant_id", "answer"), LONG_SOFTMAX_HONEST)
def test_long_softmax_what_the_kernel_really_does_is_not_flagged(mutant_id, answer):
    assert NOT_THE_FILL not in _explain("puzzle_long_softmax", answer, _mutant("puzzle_long_softmax", mutant_id)).flags


def test_long_softmax_a_where_after_a_zero_load_reads_minus_inf():
    body = _fills("puzzle_long_softmax", CATALOG.get("puzzle_long_softmax").solution)[0]
    load = "x = tl.load(x_ptr + rows[:, None] * T + cols[None, :], mask=mask, other=float('-inf'))"
    assert load in body
    indent = body[:body.index(load)].rsplit("\n", 1)[1]
    body = body.replace(load, load.replace("other=float('-inf')", "other=0.0")
                        + f'\n{indent}x = tl.where(mask, x, float("-inf"))')
    assert NOT_THE_FILL not in _explain("puzzle_long_softmax", "padding 读成 -inf。", [body]).flags


@pytest.mark.parametrize("answer", ["The store is masked by rows and columns: mask_y[:, None] & mask_x[None, :].",
                                    "store 用二维 mask，行和列都挡住。"])
def test_outer_add_a_store_mask_bounding_one_direction(answer):
    for mutant_id in ("wrong.store_mask_x_only", "wrong.mask_y_bound_n0"):
        assert NOT_THE_FILL in _explain("puzzle_outer_add", answer, _mutant("puzzle_outer_add", mutant_id)).flags
    solution = _fills("puzzle_outer_add", CATALOG.get("puzzle_outer_add").solution)
    assert NOT_THE_FILL not in _explain("puzzle_outer_add", answer, solution).flags


FUSED_VAR = ["var = Σx²/N − mean², the population variance over N.", "host 上 sumsqs / N - mean * mean 得到总体方差。"]


@pytest.mark.parametrize("answer", FUSED_VAR)
@pytest.mark.parametrize("mutant_id", ["wrong.mean_not_squared", "wrong.bessel", "wrong.std_not_var"])
def test_fused_the_host_variance_over_a_wrong_formula(answer, mutant_id):
    result = _explain("fused_mean_var_atomic", answer, _mutant("fused_mean_var_atomic", mutant_id))
    assert NOT_THE_FILL in result.flags and result.not_the_fill[0]["claim"] == "population_var"


@pytest.mark.parametrize("answer", FUSED_VAR)
@pytest.mark.parametrize("mutant_id", ["correct.fill_and_centered_combine", "correct.split_divides_in_kernel"])
def test_fused_the_host_variance_over_a_right_formula(answer, mutant_id):
    result = _explain("fused_mean_var_atomic", answer, _mutant("fused_mean_var_atomic", mutant_id))
    assert NOT_THE_FILL not in result.flags


@pytest.mark.parametrize(("mutant_id", "answer"), [
    ("wrong.bessel", "I divide (sumsqs - sums*mean) by N - 1 for the unbiased variance, not sumsqs / N - mean²."),
    ("wrong.mean_not_squared", "var = sumsqs / N - mean，直接减去均值。"),
    ("wrong.std_not_var", "如果不开根号就是 sumsqs / N - mean * mean，我开了根号。"),
])
def test_fused_the_host_formula_told_as_it_is_is_not_flagged(mutant_id, answer):
    assert NOT_THE_FILL not in _explain("fused_mean_var_atomic", answer, _mutant("fused_mean_var_atomic", mutant_id)).flags


WELFORD_CHUNK = ["M2_b is Σ(x − mean_b)², each value minus the chunk's own mean, squared, padding zeroed by tl.where.",
                 "M2_b 先减去本块的均值 mean_b 再平方求和（values - mean_b），padding 用 tl.where 清零。"]


@pytest.mark.parametrize("answer", WELFORD_CHUNK)
@pytest.mark.parametrize("mutant_id", ["wrong.m2_about_running_mean", "wrong.m2_not_centred"])
def test_welford_m2_about_the_chunk_mean_over_a_fill_that_is_not(answer, mutant_id):
    result = _explain("welford_merge", answer, _mutant("welford_merge", mutant_id))
    assert NOT_THE_FILL in result.flags and result.not_the_fill[0]["claim"] == "m2_chunk_mean"
    solution = _fills("welford_merge", CATALOG.get("welford_merge").solution)
    assert NOT_THE_FILL not in _explain("welford_merge", answer, solution).flags


@pytest.mark.parametrize(("mutant_id", "answer"), [
    ("wrong.m2_about_running_mean", "M2_b subtracts the running mean, not the chunk mean, before squaring."),
    ("wrong.m2_about_running_mean", "M2_b 用的是 values - mean（当前的累计均值），没有减 mean_b。"),
    ("wrong.m2_not_centred", "M2_b just sums values * values under tl.where; without subtracting mean_b first."),
])
def test_welford_what_the_m2_fill_does_is_not_flagged(mutant_id, answer):
    assert NOT_THE_FILL not in _explain("welford_merge", answer, _mutant("welford_merge", mutant_id)).flags


@pytest.mark.parametrize("answer", ["I wrote values!=0 so only the real elements count; the padding lanes are zeroed.",
                                    "我写的是 (values!=0)，只有前 N 个真实元素参与求和。"])
def test_a_quote_of_the_own_fill_in_another_spelling(answer):
    assert NOT_THE_FILL not in _explain("lesson06_mean_var", answer, _l06("values != 0.0")).flags


def test_the_switches_off_read_the_whole_body_and_exact_quotes(monkeypatch):
    monkeypatch.setattr(freetext, "CLAIM_SITES", False)
    answer = LONG_SOFTMAX_WRONG[0][1]
    assert NOT_THE_FILL not in _explain("puzzle_long_softmax", answer, _mutant("puzzle_long_softmax",
                                                                                "wrong.zero_padding")).flags


# An explanation that quotes what the failing call has (fill_sites.failing_parts) describes its own fill.
@pytest.mark.parametrize(("mutant_id", "answer"), [
    ("wrong.zero_padding", "第二遍 padding 读成 -inf；第一遍的 load 写的是 other=0.0。"),
    ("wrong.zero_padding", "The out-of-range lanes are read as -inf in the output pass, other=0.0 in the first."),
    ("wrong.tail_mask_short", "第一遍 mask 是 (rows < N0) & (cols < T)，第二遍用 cols2 < T - 1。"),
    ("wrong.tail_mask_short", "The first pass masks rows < N0 and cols < T; the second pass uses cols2 < T - 1."),
])
def test_long_softmax_the_failing_call_quoted_is_not_flagged(mutant_id, answer):
    assert NOT_THE_FILL not in _explain("puzzle_long_softmax", answer, _mutant("puzzle_long_softmax", mutant_id)).flags


def test_long_softmax_what_other_calls_hold_excuses_no_store():
    # `rows < N0` is the loads' (their masks hold it); the store's row_mask-only mask is not quoted by it
    answer = "mask = (rows < N0) & (cols < T)；tl.store 带同样的 mask，越界的行和列都不会写。"
    fills = _mutant("puzzle_long_softmax", "wrong.store_mask_rows_only")
    result = _explain("puzzle_long_softmax", answer, fills)
    assert NOT_THE_FILL in result.flags and result.not_the_fill[0]["claim"] == "store_mask_both"


def test_fill_sites_reads_positional_arguments_and_falls_back_on_unreadable_code():
    from service.grading.fill_sites import claim_shown
    minus_inf = _compiled(("^float\\('-inf'\\)$",), 0)
    assert claim_shown(minus_inf, "x = tl.load(p, m, float('-inf'))", "tl.load", "other")
    assert not claim_shown(minus_inf, "NEG = 0.0\nx = tl.load(p, mask=m, other=NEG)", "tl.load", "other")
    assert claim_shown(minus_inf, "NEG = float('-inf')\nx = tl.load(p, mask=m, other=NEG)", "tl.load", "other")
    # no such call, or code that does not parse: the whole fill searched, as without in_each
    assert claim_shown(_compiled(("inf",), 0), "y = float('-inf')", "tl.load", "other")
    assert claim_shown(_compiled(("inf",), 0), "x = tl.load(p, other=-inf", "tl.load", "other")


def test_fill_sites_a_name_from_outside_the_fill_and_a_converted_load():
    from service.grading.fill_sites import claim_shown
    minus_inf = _compiled(("^float\\('-inf'\\)$", "tl\\.where\\(.*float\\('-inf'\\)"), 0)
    # NEG_INF: a constexpr parameter or a global, not the fill's: not read, so not held against it
    assert claim_shown(minus_inf, "x = tl.load(p, mask=m, other=NEG_INF)", "tl.load", "other")
    converted = "x = tl.load(p, mask=m, other=0.0).to(tl.float32)\nx = tl.where(m, x, float('-inf'))"
    assert claim_shown(minus_inf, converted, "tl.load", "other")
