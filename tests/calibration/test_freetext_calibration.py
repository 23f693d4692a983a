"""Calibration of the written-answer scorer on the nine exercises (tests/calibration/answers/, README
there): 304 answers in students' voices, each with the band of two blind readings. The scorer is
tuned on the tuning part only; the held-out part (first byte of sha256(id) < 86) measures it.
The floors below are the rates last measured (docs/grading.md, "Calibration"), not targets: a change
that lowers one fails here."""
from __future__ import annotations

import pytest

from service.config import REPO_ROOT
from service.grading.freetext import TextScore
from tests.calibration.calibration import CATALOG, Entry, by_style, grade, in_band, load

ALL_ENTRIES = load()
# The 64 answers of 2026-12-06 (`added_by: fresh6`): written blind to the scorer by one reader, read blind by
# another, split by the hash rule like the rest. Their figures have floors of their own (below): the floors
# of the older set stay on the answers they were measured on.
# The second such batch (`added_by: fresh7`, 64 more the same day, read the same way) has its own floors too.
FRESH = {batch: [e for e in ALL_ENTRIES if e.data.get("added_by") == batch] for batch in ("fresh6", "fresh7", "fresh8")}
ENTRIES = [e for e in ALL_ENTRIES if e.data.get("added_by") not in FRESH]
TUNING = [e for e in ENTRIES if not e.held_out]
HELD_OUT = [e for e in ENTRIES if e.held_out]
_GRADED: dict[str, TextScore] = {}


def graded(entry: Entry) -> TextScore:
    """The set's answers are graded once per session (the scorer is deterministic)."""
    if entry.id not in _GRADED:
        _GRADED[entry.id] = grade(entry)
    return _GRADED[entry.id]

# Measured 2026-12-03, misconception-recall pass (docs/grading.md, "Calibration"; 74/104 and 175/200
# after the fifth pass, 74/104 and 174/200 after the third and fourth on 2026-12-02, 72/104 and
# 160/200 on 2026-12-01, 69/104 and 122/200 before the work of issue 15). The scorer is
# deterministic: the floors are the measured figures. The tuning floor fell by one answer: Long
# Softmax's rescale_inverted pattern matched nothing before (doubled backslashes) and now finds a
# tuning answer that states the inverted factor; the readers flagged it, but its penalty takes it
# from 0.5 to 0.0, below their band (0.5–1.0). 2026-12-04 (scoped misconceptions and dismissals, the
# smallest unit for a correct fragment): 80/104 and 176/200; later that day (the exercises' own question
# data: seed notations, plain-word rules, narrower patterns): 82/104 and 182/200; the eighth pass
# (phrasings for all nine exercises, a known wrong mechanism of puzzle_outer_add): 83/104 and 183/200;
# the ninth pass (round 3, 2026-12-05) measured the same. Recall10 (2026-12-05): 38 answers added
# (fused_mean_var_atomic, puzzle_long_softmax; 28 tuning, 10 held out by the hash): on the original 304
# the figures stay 83/104 and 183/200; the grown set measures 89/114 held out and 204/228 tuning
# (205/228 on main before branch `partial`). Branch `partial` (2026-12-05: a short answer that leaves
# the question's other parts unsaid is not full; an A-not-A question denies nothing): 209/228 tuning;
# the held-out floor stays 89/114 (an earlier form of the rule measured 90/114; this form's exact
# held-out figure was not measured, docs/grading.md). Branch `terse` (2026-12-05: keyword stuffing read step by
# step, a terse chain is no keyword list; lists cut by any separator and repeated terms are): 209/228 tuning
# (unchanged), 90/114 held out (89/114 measured on main before it, the same run of the command each side).
# Branch `recallA` (2026-12-05: a part left unanswered, a cause told after 因为/because, "cannot", the fills
# named bare; fused_mean_var_atomic and puzzle_long_sum phrasings): 214/228 tuning, 91/114 held out.
# Branch `recallB` (2026-12-05: wrong mechanisms with their symptom, suppositions of a step left out, 其实,
# phrasings of Long Softmax, lesson 5-7): 210/228 tuning, 91/114 held out (measured once, at the end).
# Both merged (measured once on the merge): 215/228 tuning, 92/114 held out.
# Branch `recallC` (2026-12-05): four scoring rules fitted on the tuning part (a copy of the course text costs
# half a point, a misconception keeps half a point for a right half, a short half answer earns at most half, a
# label's difference order) took tuning to 222/228 on these answers but held out to 89/114 (measured once, at
# the end): all four are off, and the floors stay. It added 10 tuning answers (fused, Long Softmax: terse,
# arrow, partial, English; `added_by: recallC`, one reader's band): the tuning floor is kept on the 228 it was
# measured on, and the added ones have their own (6 of 10 in band, the rules off).
# Branches `para6` and `precise6` merged (2026-12-06, measured once on the merge): 94/114 held out; the fresh6
# answers' held-out part unchanged (7/18 in band, 2/6 flagged).
HELD_OUT_IN_BAND = 94 / 114
TUNING_IN_BAND = 217 / 228  # of the tuning answers before branch `recallC` (TUNING_BEFORE_RECALLC); 215 until misc11 (measured 217 on main too)
TUNING_ADDED_RECALLC_IN_BAND = 8  # of the 10 tuning answers branch `recallC` added (6 before branch `precise6`)
HELD_OUT_MISCONCEPTION_FLAGGED = 32  # of the held-out part's 35 misconception and keyword-stuffed answers (19, 25, 28, then 31 before)
# Held-out answers no reader flagged that the scorer flags (of 46; 1 on 2026-12-01): a TA looks at them.
HELD_OUT_FALSE_FLAGS = 3
# With the exercises' misconception patterns switched off, the generic signals alone (dismissal,
# waving a step away, a clause close to a misconception's label, keyword stuffing) flag this many of
# the tuning part's 46 misconception and stuffed answers (28 before the fourth pass, 31 after it, 33
# after the fifth), and this many of its 110 answers no reader flagged (2 throughout).
TUNING_GENERIC_FLAGGED = 33
TUNING_GENERIC_FALSE_FLAGS = 2
# Answers every reader flagged that the scorer flags (of 82 tuning, 55 held out), measured 2026-12-03
# after the misconception-recall pass: 74 and 39 with the copy flag (copied_text: the reference answer's
# or the course text's words), 66 and 31 before it.
TUNING_READER_FLAGGED = 95  # 77 before the question-data pass of 2026-12-04; 93 until misc11 (measured 95 on main too)
HELD_OUT_READER_FLAGGED = 46  # 42 before the question-data pass of 2026-12-04, 45 before branch `terse`


# fresh6, measured 2026-12-06 when they joined (the scorer as it was then): tuning 24/46 in band, 9 of its 14
# misconception and stuffed answers flagged; held out 7/18 in band, 2 of its 6 flagged. Far below the older
# set's figures: the honest measure of recall on answers nobody tuned the scorer's patterns against.
# Branch `para6` (misconceptions stated by their parts in a clause, a step linked to the sentence before only by a
# causal word): tuning 23/46 and 10/14 flagged (fmv-explanation-en-misconception-602 now flagged, its penalty
# taking the item to 0 where the readers give 0.5).
FRESH6_TUNING_IN_BAND = 35  # 35 with misc10 (a minor misconception costs its share of the right part); 34 with misc9 (a right part beside one misconception keeps half a point); 29 with partial8 and describes8 (2026-12-06, second session); 26 with branch `precise6`; 27 with branch `para7`'s clause rules (one out: wsum explanation now flagged, its penalty to 0)
FRESH6_TUNING_FLAGGED = 14  # 13 before misc9; 10 before branch `para7` (shift called approximate, range limit blamed, padding_option said to cover the columns)
FRESH6_HELD_OUT_IN_BAND = 8  # 7 when they joined; 8 with branch `para7` (measured once, on its merge)
FRESH6_HELD_OUT_FLAGGED = 2
# fresh7, measured when they joined (after para6 and precise6): tuning 27/47 in band, 11 of its 14 flagged; held
# out 12/17, 4 of its 4 flagged.
FRESH7_TUNING_IN_BAND = 36  # 27 when they joined; 31 with partial8 and describes8; 32 with recall9; 33 with misc9; 34 with misc10; 35 with misc11 (a first idea taken back), 36 (CHAIN_GAP)
FRESH7_TUNING_FLAGGED = 13  # 11 before misc9
FRESH7_HELD_OUT_IN_BAND = 13  # 12 before misc9 (measured once, at its end)
FRESH7_HELD_OUT_FLAGGED = 4
# fresh8, measured when they joined (main 6de5c61): tuning 19/43 in band, 9 of its 10 flagged; held out 7/21, 8 of
# its 8 flagged.
FRESH8_TUNING_IN_BAND = 26  # 19 when they joined; 21 with describes8; 23 with misc9; 24 with misc10; 25 with misc11 (LaTeX \frac), 26 (CHAIN_GAP)
FRESH8_TUNING_FLAGGED = 10  # 9 before misc9
FRESH8_HELD_OUT_IN_BAND = 9  # 7 when they joined; 8 with describes8 (measured once, on its merge); 9 with misc9 (once, at its end)
FRESH8_HELD_OUT_FLAGGED = 8
FRESH_FLOORS = {("fresh6", "tuning"): (FRESH6_TUNING_IN_BAND, FRESH6_TUNING_FLAGGED),
                ("fresh6", "held_out"): (FRESH6_HELD_OUT_IN_BAND, FRESH6_HELD_OUT_FLAGGED),
                ("fresh7", "tuning"): (FRESH7_TUNING_IN_BAND, FRESH7_TUNING_FLAGGED),
                ("fresh7", "held_out"): (FRESH7_HELD_OUT_IN_BAND, FRESH7_HELD_OUT_FLAGGED),
                ("fresh8", "tuning"): (FRESH8_TUNING_IN_BAND, FRESH8_TUNING_FLAGGED),
                ("fresh8", "held_out"): (FRESH8_HELD_OUT_IN_BAND, FRESH8_HELD_OUT_FLAGGED)}


def _misconception_or_stuffed(entries: list[Entry]) -> list[Entry]:
    return [e for e in entries if e.data["kind"] in ("misconception", "stuffed")]


def test_the_set_is_big_and_varied_enough():
    assert len(ALL_ENTRIES) >= 150 and len({e.exercise for e in ALL_ENTRIES}) == 9
    assert len({e.id for e in ALL_ENTRIES}) == len(ALL_ENTRIES)
    assert {e.data["kind"] for e in ALL_ENTRIES} >= {"full", "partial", "wrong", "misconception", "stuffed", "empty", "off_topic"}
    assert {e.data["lang"] for e in ALL_ENTRIES} >= {"zh", "en"}
    assert {e.data["style"] for e in ALL_ENTRIES} >= {"terse", "arrow", "numeric", "verbose", "copied"}
    held_out = [e for e in ALL_ENTRIES if e.held_out]
    assert 0.25 <= len(held_out) / len(ALL_ENTRIES) <= 0.42  # the README's rule holds out about a third
    for batch in FRESH.values():
        assert len(batch) == 64 and all(e.data.get("reading_2") and e.data.get("band") for e in batch)


@pytest.mark.parametrize(("batch", "part"), sorted(FRESH_FLOORS))
def test_fresh_batches_figures_do_not_fall(batch, part):
    """Aggregates only (the held-out answers are not named): in band, and misconception and stuffed answers flagged."""
    entries = [e for e in FRESH[batch] if e.held_out == (part == "held_out")]
    in_band_floor, flagged_floor = FRESH_FLOORS[(batch, part)]
    assert sum(in_band(e, graded(e)) for e in entries) >= in_band_floor
    assert sum(bool(graded(e).flags) for e in _misconception_or_stuffed(entries)) >= flagged_floor


def _rate(entries: list[Entry]) -> tuple[float, list[str]]:
    misses = []
    for entry in entries:
        result = graded(entry)
        if not in_band(entry, result):
            misses.append(f"{entry.id}: {result.points} not in {list(entry.band)}")
    return 1 - len(misses) / len(entries), misses


def test_held_out_in_band_rate_does_not_fall():
    share, misses = _rate(HELD_OUT)
    assert share >= HELD_OUT_IN_BAND - 1e-9, f"held-out {share:.1%} in band; misses:\n" + "\n".join(misses)


TUNING_BEFORE_RECALLC = [e for e in TUNING if e.data.get("added_by") != "recallC"]
TUNING_ADDED_RECALLC = [e for e in TUNING if e.data.get("added_by") == "recallC"]


def test_tuning_in_band_rate_does_not_fall():
    share, misses = _rate(TUNING_BEFORE_RECALLC)
    assert share >= TUNING_IN_BAND - 1e-9, f"tuning {share:.1%} in band; misses:\n" + "\n".join(misses)
    share, misses = _rate(TUNING_ADDED_RECALLC)
    assert len(TUNING_ADDED_RECALLC) == 10 and all(not e.held_out for e in TUNING_ADDED_RECALLC)
    assert round(share * len(TUNING_ADDED_RECALLC)) >= TUNING_ADDED_RECALLC_IN_BAND, "\n".join(misses)


@pytest.mark.parametrize("entry", _misconception_or_stuffed(TUNING), ids=lambda e: e.id)
def test_tuning_misconception_and_stuffed_answers_are_flagged(entry):
    result = graded(entry)
    assert result.flags, f"{entry.id} not flagged: {entry.data['reading_1']['why']}"
    assert result.confidence < 0.7, "a flagged answer goes to a TA"


def test_held_out_misconception_and_stuffed_answers_flagged_does_not_fall():
    """The target is every one; the held-out part is not tuned on, so the measured figure is the floor
    and the message names the ones still missed (the report lists them too)."""
    entries = _misconception_or_stuffed(HELD_OUT)
    missed = [e.id for e in entries if not graded(e).flags]
    assert len(entries) - len(missed) >= HELD_OUT_MISCONCEPTION_FLAGGED, f"not flagged: {missed}"


def test_answers_every_reader_flagged_are_flagged_does_not_fall():
    """Aggregates only: the held-out part's answers are not named."""
    for part, floor in (("tuning", TUNING_READER_FLAGGED), ("held-out", HELD_OUT_READER_FLAGGED)):
        entries = [e for e in (TUNING if part == "tuning" else HELD_OUT) if e.data.get("flag") is True]
        flagged = sum(1 for e in entries if graded(e).flags)
        assert flagged >= floor, f"{part}: {flagged} of {len(entries)} answers every reader flagged are flagged"


def test_held_out_answers_no_reader_flagged_stay_mostly_unflagged():
    flagged = [e.id for e in HELD_OUT if e.data.get("flag") is False and graded(e).flags]
    assert len(flagged) <= HELD_OUT_FALSE_FLAGS, flagged


@pytest.mark.parametrize("entry", [e for e in ALL_ENTRIES if e.data["kind"] in ("empty", "off_topic")], ids=lambda e: e.id)
def test_empty_and_off_topic_score_zero_without_a_flag(entry):
    result = graded(entry)
    assert result.points == 0 and not result.flags


@pytest.mark.parametrize("entry", [e for e in ENTRIES if "does not describe your code" in e.data["reading_1"].get("why", "")],
                         ids=lambda e: e.id)
def test_an_explanation_of_another_fill_earns_nothing_and_is_flagged(entry):
    result = graded(entry)
    assert result.points == 0 and "explanation_not_fill" in result.flags
    assert result.not_the_fill[0]["quote"] and result.not_the_fill[0]["fill"]


@pytest.mark.parametrize("answer", ["pad 0 → x−μ = −μ → μ² ≠ 0 → re-mask",
                                    "other=0 只对第一次 sum 安全 → 减 μ 后 pad = −μ → 平方 μ² → 第二次 sum 多 (BLOCK−N)μ² → tl.where 重新 mask"])
def test_terse_correct_arrow_answers_earn_their_points(answer):
    entry = Entry("lesson06_mean_var", {"id": "terse", "question": "q2", "answer": answer, "band": [1.5, 2.0]})
    result = grade(entry)
    assert result.points >= 1.5 and "keyword_stuffing" not in result.flags


def test_arrows_between_bare_names_are_still_keyword_stuffing():
    answer = "catastrophic cancellation -> two-pass -> float64 -> Welford -> Chan merge -> ulp limit"
    result = grade(Entry("lesson06_mean_var", {"id": "names", "question": "q3", "answer": answer, "band": [0, 1]}))
    assert "keyword_stuffing" in result.flags


@pytest.mark.parametrize("answer", ["other=0 已经把 padding 处理了，反正第二次求和前可以不加 tl.where",
                                    "The load uses other=0.0, so it is safe to skip the tl.where "
                                    "before the second sum: cleaner code."])
def test_a_step_called_skippable_is_flagged_for_a_ta(answer):
    result = grade(Entry("lesson06_mean_var", {"id": "skip", "question": "q2", "answer": answer, "band": [0, 2]}))
    assert result.flags and result.confidence < 0.7


def test_a_clause_close_to_a_misconception_label_is_flagged_without_its_patterns():
    """The label's own words, none of its patterns: flagged for a TA (no points taken), with a
    feedback line naming the misconception."""
    from service.exercises import Concept, Misconception, Question
    from service.grading.freetext import score_answer, score_text
    question = Question(id="q3", prompt="p", reference_answer="先减均值再平方。",
                        concepts=[Concept(id="mean", label="均值", patterns=["均值"])],
                        misconceptions=[Misconception(id="eps", label="以为加 eps 能解决抵消问题", patterns=["(?!)"])])
    said = "均值很大时，加一个 eps 就能解决抵消的问题。"
    result = score_answer(question, said, 2.0)
    assert result.flags == ["suspected_misconception"] and result.suspected[0]["label"] == "以为加 eps 能解决抵消问题"
    item = score_text(item_id="q3", title="Q3", max_points=2.0, question=question, answer=said)
    assert item.status == "needs_review" and "接近一个已知误区" in item.feedback
    denied = score_answer(question, "均值很大时，加 eps 不能解决抵消的问题。", 2.0)  # the clause is negated
    assert "suspected_misconception" not in denied.flags


def test_per_style_figures_cover_every_answer():
    table = by_style(ENTRIES, graded)
    for prefix in ("style:", "kind:", "lang:"):
        rows = [row for key, row in table.items() if key.startswith(prefix)]
        assert sum(r["held_out"][1] for r in rows if "held_out" in r) == len(HELD_OUT)


@pytest.mark.parametrize("exercise_id", sorted(p.name for p in (REPO_ROOT / "exercises").iterdir() if p.is_dir()))
def test_every_exercise_example_answer_is_scored_without_a_flag(exercise_id):
    """The example submissions' answers are right and written in a student's own words: graded as the
    pipeline's text step grades them (rubric.score_items, the fills read from the example's code, the
    exercise's course text given), every written item earns full points with no flag at all, none is a
    copy of the reference answer or of the course text (`copied_text`), and nothing makes the report
    provisional."""
    import json

    from service.grading import rubric
    from service.grading.extract import extract
    from service.submission import Submission
    exercise = CATALOG.get(exercise_id)
    path = REPO_ROOT / "exercises" / exercise_id / "example_submission.json"
    example = json.loads(path.read_text(encoding="utf-8"))
    submission = Submission(exercise=exercise_id, code=example["code"], answers=example["answers"],
                            explanation=example["explanation"], claimed_output=example.get("claimed_output", ""))
    items = rubric.score_items(exercise, submission, [], not_run_reason=None, diagnoses=[],
                               fills=extract(exercise.template, submission.code).fill_sources)
    text_ids = {i.id for i in exercise.spec.rubric if i.source == "text"}
    written = [i for i in items if i.id in text_ids]
    assert len(written) == len(text_ids) >= 1
    for item in written:
        evidence = item.evidence
        assert item.points == item.max_points and item.status == "pass", (item.id, item.points, item.status)
        assert evidence["flags"] == [], (item.id, evidence["flags"], evidence.get("suspected"))
        assert evidence["copied_text"] == [] and evidence["copied_reference"] is False, (item.id, evidence["copied_text"])
    assert not rubric.total_score(exercise, written, []).provisional


def test_a_question_with_two_parts_links_each_part():
    """Welford Q3 asks about n_b and about M2_b: an answer that explains only the M2_b half, with its
    chain, earns part of the points (it earned nothing while the question had one chain)."""
    answer = "M2_b 那里要 tl.where 一下：padding lane 减完 mean_b 是 −mean_b，所以平方是 mean_b²，不 mask 掉会加进 M2_b。"
    result = grade(Entry("welford_merge", {"id": "half", "question": "q3", "answer": answer, "band": [0.5, 1.5]}))
    assert ("padding_mean_sq", "remask") in {(link["from"], link["to"]) for link in result.links}
    assert 0.5 <= result.points < 2.0 and not result.flags


def test_more_chains_must_name_known_concepts():
    from pydantic import ValidationError

    from service.exercises import Concept, Question
    with pytest.raises(ValidationError, match="unknown concepts"):
        Question(id="q1", prompt="p", reference_answer="r", concepts=[Concept(id="a", label="a", patterns=["a"])],
                 chain=["a"], more_chains=[["a", "b"]])


@pytest.mark.parametrize("answer", [
    "N=3, BLOCK=4, row [1, 2, 3]: loaded [1, 2, 3, 0], sum 6, 6/3 = 2 = mean. Centred: [-1, 0, 1, -2], the pad 0 - 2 = -2, "
    "squared 4 = mean^2. where(mask) turns it back into 0: [1, 0, 1, 0], sum 2, 2/3 = 0.667 stored to variances[row].",
    "N=3、BLOCK=4，[1, 2, 3]：读进来 [1, 2, 3, 0]，补的 0 不影响和，6/3 = 2 = μ。减 μ 后补位 0 − 2 = −2，平方后是 4 = μ²，"
    "所以要 where(mask) 再清零：[1, 0, 1, 0]，和 2，/3 = 0.667，存到 variances[row]。"])
def test_a_numeric_worked_example_states_the_chain(answer):
    """Numbers carry the concepts: 0 − 2 = −2 is the pad becoming −μ, (−2)² = 4 its square."""
    result = grade(Entry("lesson06_mean_var", {"id": "worked", "question": "q1", "answer": answer, "band": [1.5, 2.0]}))
    assert {"padding_neg_mean", "mean_squared", "remask"} <= {f["concept"] for f in result.found}
    assert result.points >= 1.5 and not result.flags


def test_english_feedback_names_concepts_and_misconceptions_in_english():
    from service.grading.freetext import score_text
    exercise = CATALOG.get("lesson06_mean_var")
    said = "The load uses other=0.0 and we divide by BLOCK, so the padding is handled."
    item = score_text(item_id="q2", title="Q2", max_points=2.0, question=exercise.question("q2"), answer=said, language="en")
    assert "divide the sums by BLOCK" in item.feedback and "other=0.0 is the identity only for the first sum" in item.feedback
    assert "以为" not in item.feedback and "中心化" not in item.feedback


def test_a_clause_close_to_a_misconceptions_english_label_is_flagged():
    from service.exercises import Concept, Misconception, Question, Text
    from service.grading.freetext import score_answer
    question = Question(id="q3", prompt="p", reference_answer="先减均值再平方。",
                        concepts=[Concept(id="mean", label="均值", patterns=["mean"])],
                        misconceptions=[Misconception(
                            id="eps", patterns=["(?!)"],
                            label=Text(zh="以为加 eps 能解决抵消问题", en="adding a small epsilon solves the cancellation problem"))])
    result = score_answer(question, "When the mean is large, a small epsilon solves the cancellation problem.", 2.0)
    assert result.flags == ["suspected_misconception"] and result.suspected[0]["label_en"].startswith("adding a small")
    denied = score_answer(question, "When the mean is large, a small epsilon does not solve the cancellation problem.", 2.0)
    assert "suspected_misconception" not in denied.flags


def test_generic_signals_alone_flag_the_tuning_parts_misconceptions(monkeypatch):
    """What the signals tied to no exercise catch by themselves: the measure the fourth pass tuned
    (the exercises' own misconception patterns already flag all 46 of the tuning part)."""
    from service.grading import freetext
    monkeypatch.setattr(freetext, "_misconceptions", lambda question, text, spans, where=None, matches=None: [])
    flagged = [e.id for e in _misconception_or_stuffed(TUNING) if grade(e).flags]
    assert len(flagged) >= TUNING_GENERIC_FLAGGED
    false = [e.id for e in TUNING if e.data.get("flag") is False and grade(e).flags]
    assert len(false) <= TUNING_GENERIC_FALSE_FLAGS, false


@pytest.mark.parametrize("answer", [
    "The tl.where before the second sum is only a precaution: the load's other=0.0 covers the pads.",
    "Leaving the pads at -mean is fine because their effect is tiny next to the tolerance.",
    "第二次 mask 只是为了保险，load 的时候已经用 0 补过了。",
    "减完均值以后 padding lane 是 −μ，平方后 μ²，跟真实的方差比差别很小，所以可以不管它。"])
def test_waving_a_step_away_is_flagged_for_a_ta(answer, monkeypatch):
    """Written from the meaning (a step called a mere precaution, a deviation called too small to
    matter, a choice called fine because…), not from any calibration answer. The generic signal by
    itself: the exercise's own patterns (which now name some of these) are switched off."""
    from service.grading import freetext
    monkeypatch.setattr(freetext, "_misconceptions", lambda question, text, spans, where=None, matches=None: [])
    result = grade(Entry("lesson06_mean_var", {"id": "waved", "question": "q2", "answer": answer, "band": [0, 2]}))
    assert "dismissal" in result.flags and result.confidence < 0.7


def test_an_unknown_causal_link_is_worded_for_a_ta_when_switched_on(monkeypatch):
    """Off by default (it cost one held-out false flag); switched on, its note renders in both languages."""
    from service.grading import freetext
    monkeypatch.setattr(freetext, "UNKNOWN_LINK", True)
    monkeypatch.setattr(freetext, "UNKNOWN_LINK_CONCEPTS", 0.1)  # one of q2's five concepts named
    exercise = CATALOG.get("lesson06_mean_var")
    said = "The pads become -mean after centring, so the warp scheduler has to serialise the lanes."
    for language, words in (("en", "not in the question's mechanism"), ("zh", "不在本题的机制链里")):
        item = freetext.score_text(item_id="q2", title="Q2", max_points=2.0, question=exercise.question("q2"),
                                   answer=said, language=language)
        assert item.evidence["flags"] == ["unknown_link"] and words in item.feedback


def test_a_concept_named_only_in_a_question_is_not_stated():
    """An answer that asks the prompt's questions back states none of their concepts (fifth pass)."""
    asked = "只在 load 时 mask 的话，padding lane 减去均值后会不会变成 −μ？平方以后是不是 μ²？第二次求和会不会多出 (BLOCK−N)·μ²？"
    said = "只在 load 时 mask 的话，padding lane 减去均值后会变成 −μ。平方以后是 μ²。第二次求和多出 (BLOCK−N)·μ²。"
    for answer, points in ((asked, 0.0), (said, 2.0)):
        result = grade(Entry("lesson06_mean_var", {"id": "asked", "question": "q2", "answer": answer, "band": [0, 2]}))
        assert result.points == points and not result.flags


def test_a_question_mark_glued_to_what_follows_ends_no_sentence():
    """`bold?</b>`, `x?y`, a URL's query: no sentence ends there, so the concepts before it are stated
    (an answer with pasted markup kept its points before the fifth pass and keeps them)."""
    said = "减掉均值以后 padding 变成 -mean<b>bold?</b>，平方以后是 mean^2，所以方差偏大。"
    asked = "减掉均值以后 padding 变成 -mean 吗? 平方以后是 mean^2，所以方差偏大。"
    found = {}
    for name, answer in (("said", said), ("asked", asked)):
        result = grade(Entry("lesson06_mean_var", {"id": name, "question": "q2", "answer": answer, "band": [0, 2]}))
        found[name] = {f["concept"] for f in result.found}
    assert "padding_neg_mean" in found["said"] and "padding_neg_mean" not in found["asked"]


def test_arrows_and_dashes_of_any_shape_are_read_as_the_rubrics():
    """"⟶" is "→", and an en dash typed for a minus ("0 – 2 = –2") is a minus (fifth pass)."""
    arrows = "other=0 只对第一次 sum 安全 ⟶ 减 μ 后 pad = −μ ⟶ 平方 μ² ⟶ 第二次 sum 多 (BLOCK−N)μ² ⟶ tl.where 重新 mask"
    result = grade(Entry("lesson06_mean_var", {"id": "arrows", "question": "q2", "answer": arrows, "band": [2, 2]}))
    assert len(result.links) == 4 and "keyword_stuffing" not in result.flags
    dashes = ("N=3, BLOCK=4, row [1, 2, 3]: loaded [1, 2, 3, 0], sum 6, 6/3 = 2 = mean. Centred: [–1, 0, 1, –2], the pad "
              "0 – 2 = –2, squared 4 = mean^2. where(mask) turns it back into 0: [1, 0, 1, 0], sum 2, 2/3 = 0.667 stored.")
    result = grade(Entry("lesson06_mean_var", {"id": "dashes", "question": "q1", "answer": dashes, "band": [2, 2]}))
    assert "padding_neg_mean" in {f["concept"] for f in result.found} and result.points == 2.0
    from service.grading.freetext import _Text
    text = _Text.of("pad 0 – 2 ⟶ x")
    assert text == "pad 0 - 2 → x" and text.original[text.offsets[10]] == "⟶"  # quotes still show the student's own signs


def test_a_step_waved_away_in_words_the_rubric_lacks_is_flagged_not_off_topic():
    """An answer naming none of the concepts is off topic, unless it is about the question (a term of
    its prompt, reference or labels) and waves a step away: then a TA looks (fifth pass)."""
    from service.exercises import Concept, Question
    from service.grading.freetext import score_answer
    question = Question(id="q2", prompt="为什么 padding 必须填 -inf？", reference_answer="max 的单位元是 −inf。",
                        concepts=[Concept(id="neg_inf", label="−inf 是 max 的单位元", patterns=["(?!)"])])
    waved = score_answer(question, "I don't think it has to be -inf: 0.0 works just as well, the store is masked.", 2.0)
    assert waved.flags == ["dismissal"] and waved.points == 0 and waved.confidence < 0.7
    chat = score_answer(question, "Anyway, the warp size is 32 and two threads in a warp can conflict.", 2.0)
    assert chat.kind == "off_topic" and not chat.flags


def test_a_worked_example_may_compute_with_infinities_and_times_signs():
    """"exp(1000) = inf", "inf/inf = nan", "15 × 1.0" are computations of a worked example (fifth pass)."""
    from service.grading.freetext import _worked_example
    assert _worked_example("exp(1000) = inf, so the sum is inf and inf/inf = nan; exp(−1000) = 0.")
    assert _worked_example("15 × 1.0 extra, 17 · 2 lanes, 15 × 1.0 = 15")
    assert not _worked_example("the sum overflows to inf and the result is nan")


def test_a_deviation_called_negligible_in_english_is_flagged_like_in_chinese():
    """The English side of "差别很小，所以可以…": a deviation called small *and* waved away (fifth pass);
    a small error stated as a fact is not."""
    waved = "Without the tl.where the pads add a bias, but the bias is negligible next to the tolerance."
    result = grade(Entry("lesson06_mean_var", {"id": "tiny", "question": "q2", "answer": waved, "band": [0, 2]}))
    assert "dismissal" in result.flags
    fact = "Centre first, then square: with the two-pass formula the rounding error is small."
    result = grade(Entry("lesson06_mean_var", {"id": "fact", "question": "q3", "answer": fact, "band": [0, 2]}))
    assert not result.flags


def test_a_link_across_sentences_needs_the_later_sentence_to_say_how_it_follows():
    """Consecutive sentences link two steps when the consequence's sentence carries the linking word
    ("So each squares to …"), not when only the earlier one does (fifth pass)."""
    def links(answer: str) -> set[tuple[str, str]]:
        result = grade(Entry("lesson06_mean_var", {"id": "told", "question": "q2", "answer": answer, "band": [0, 2]}))
        return {(link["from"], link["to"]) for link in result.links}
    assert links("After centring, the pads hold -mean. So each of them squares to mean^2.") == {
        ("padding_neg_mean", "mean_squared")}
    assert links("So after centring, the pads hold -mean. Their squares: mean^2 each.") == set()


def _q(question: str, answer: str, exercise: str = "lesson06_mean_var") -> TextScore:
    return grade(Entry(exercise, {"id": "sweep", "question": question, "answer": answer, "band": [0, 2]}))


@pytest.mark.parametrize("plain", [
    "After centring each pad is -mean.\nThen we square every lane.\nSo a pad becomes mean^2.\n"
    "Then the second sum picks up (BLOCK-N)*mean^2.",
    "load 时补位是 0，第一次 sum 没问题。\n减完均值补位都是 -μ。\n再平方一下。\n平方后是 μ²，白白加进平方和。"])
def test_a_numbered_list_keeps_the_links_of_its_lines(plain):
    """"1." at a line's start numbers a step and ends no sentence: numbered, steps two lines apart are
    still two sentences apart and linked (phrasing sweep: 2.0 → 1.5 before)."""
    numbered = "\n".join(f"{i}. {line}" for i, line in enumerate(plain.split("\n"), 1))
    assert _q("q2", numbered).points == _q("q2", plain).points == 2.0


def test_latex_signs_are_the_rubrics_signs():
    """`$0 - \\mu = -\\mu$`, `$\\mu^{2}$` say 0 − μ = −μ and μ² (phrasing sweep: 2.0 → 0.0 before); the
    quote keeps the student's LaTeX."""
    plain = _q("q2", "After centring each pad is 0 − μ = −μ, so squared it is μ², so tl.where must zero it again.")
    latex = _q("q2", "After centring each pad is $0 - \\mu = -\\mu$, so squared it is $\\mu^{2}$, so tl.where must zero it again.")
    assert latex.points == plain.points == 2.0
    assert {f["concept"] for f in latex.found} == {"padding_neg_mean", "mean_squared", "remask"}
    assert "\\mu" in latex.found[0]["quote"]


def test_a_dash_run_before_a_greater_sign_is_an_arrow():
    """"——>" (a Chinese input method's dash) and "—>" are "→": a chain told with them is linked, not
    a keyword list (phrasing sweep: 0.5 and flagged as stuffing before)."""
    for arrow in ("→", "——>", "—>"):
        result = _q("q2", f"padding 0 {arrow} 减均值后 −μ {arrow} 平方 μ² {arrow} 方差偏大")
        assert result.points == 2.0 and not result.flags, arrow


def test_a_list_marker_is_not_a_minus():
    """"- mean = sum / N" is a bullet, not −mean (phrasing sweep: it earned padding_neg_mean and
    1.0 instead of 0.5 before)."""
    bullets = _q("q1", "- mean = sum / N\n- var = sum(sq) / N, stored with tl.store")
    assert "padding_neg_mean" not in {f["concept"] for f in bullets.found} and bullets.points == 0.5
    minus = _q("q2", "- pads: 0 - mean\n- so -mean each")  # a minus after the marker still is one
    assert "padding_neg_mean" in {f["concept"] for f in minus.found}


@pytest.mark.parametrize("aside", [
    "other=0.0 is only the identity for the first sum (why? adding 0 changes nothing). After centring the pads "
    "become -mean, so squared they are mean^2.",
    "After centring the pads become -mean, so squared they are mean^2 (not 0?!), so the variance is too large.",
    "After centring the pads become -mean, so squared they are mean^2, so `sq = mask ? sq : 0` must set them back to 0.",
    "other=0.0 只对第一次求和是单位元（为什么？加 0 不改变和）。中心化后 padding 变成 −μ，所以平方后是 μ²。"])
def test_a_question_mark_in_an_aside_asks_nothing_of_the_sentence(aside):
    """A ? inside brackets or a code span the sentence opened is the aside's: the sentence's concepts
    stand (phrasing sweep: 1.0, 0.0, 0.0 and 1.0 before)."""
    assert _q("q2", aside).points == 2.0


@pytest.mark.parametrize("answer", [
    "Why is the variance too large? Because after centring the pads become -mean, so squared they are mean^2.",
    "为什么方差偏大？因为中心化后 padding 变成 −μ，所以平方后是 μ²。"])
def test_a_question_answered_by_the_next_sentence_is_rhetorical(answer):
    """"Why …? Because …" takes what it asks as given: it scores as "the variance is too large, because …"
    (phrasing sweep: 1.0 instead of 1.5 before); questions left unanswered still state nothing
    (test_a_concept_named_only_in_a_question_is_not_stated)."""
    stated = _q("q2", "The variance is too large, because after centring the pads become -mean, so squared they are mean^2.")
    result = _q("q2", answer)
    assert "excess" in {f["concept"] for f in result.found} and result.points == stated.points == 1.5
    unanswered = _q("q2", "Why is the variance too large? After centring the pads become -mean, so squared they are mean^2.")
    assert "excess" not in {f["concept"] for f in unanswered.found}


@pytest.mark.parametrize("marked", [
    "After centring the pads become -mean, so squared they are mean^2, so we must **mask** them again before the second sum.",
    "After centring the pads become -mean, so squared they are mean^2, so we must `mask` them again before the second sum.",
    "After centring the pads become -**mean**, so squared they are **mean**^2, so we must mask them again before the second sum.",
    "After centring the pads become -mean, so squared they are mean**2, so we must mask them again before the second sum."])
def test_emphasis_and_code_marks_are_no_part_of_a_phrase(marked):
    """`**mask** them again`, `` `mask` them again ``, `-**mean**`: the marks go, the phrase stays (phrasing
    sweep: 1.0 and 0.0 instead of 2.0 before); a `**` between operands is still a power. Quotes show them."""
    plain = "After centring the pads become -mean, so squared they are mean^2, so we must mask them again before the second sum."
    result = _q("q2", marked)
    assert result.points == _q("q2", plain).points == 2.0
    assert {f["concept"] for f in result.found} == {"padding_neg_mean", "mean_squared", "remask"}
    mark = "`" if "`" in marked else "**"
    assert any(mark in found["quote"] for found in result.found)  # the student's own text, marks and all
    zh = _q("q2", "padding 减去均值后变成 −μ，平方后是 μ²，所以要在第二次求和前**重新** `mask`。")
    assert "remask" in {f["concept"] for f in zh.found}
