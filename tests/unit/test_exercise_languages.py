"""Every text an exercise author wrote for a student or a TA (rubric titles, case descriptions and
targets, concept and misconception labels, requirement labels, prompts, the speed section) is in
Chinese and English, for all nine exercises: an English report can only be as English as these, and
uses them (the pass rule's requirements name concepts and misconceptions in the report's language)."""
from __future__ import annotations

from collections.abc import Iterator

import pytest
from pydantic import BaseModel

from service.config import REPO_ROOT
from service.exercises import Concept, ExerciseCatalog, Misconception, Text
from service.grading.freetext import score_text
from service.grading.passrule import chain_requirement
from tests.calibration import calibration
from tests.support.english import CJK

CATALOG = ExerciseCatalog(REPO_ROOT / "exercises")


def texts(node: object, path: str = "") -> Iterator[tuple[str, Text]]:
    """Every Text in a spec, with where it is (`rubric[0].title`)."""
    if isinstance(node, Text):
        yield path, node
    elif isinstance(node, BaseModel):
        for name in type(node).model_fields:
            yield from texts(getattr(node, name), f"{path}.{name}" if path else name)
    elif isinstance(node, (list, tuple)):
        for index, value in enumerate(node):
            yield from texts(value, f"{path}[{index}]")
    elif isinstance(node, dict):
        for key, value in node.items():
            yield from texts(value, f"{path}[{key}]")


def test_all_nine_exercises_are_here():
    assert len(CATALOG.ids()) == 9


@pytest.mark.parametrize("exercise_id", CATALOG.ids())
def test_every_authored_text_has_english_without_chinese(exercise_id):
    spec = CATALOG.get(exercise_id).spec
    found = list(texts(spec))
    assert len(found) >= 15, "titles, cases, labels, prompts: an exercise has many"
    assert [where for where, text in found if not text.en or CJK.search(text.en)] == []
    # The lesson's own words stay: a Chinese text kept its Chinese (an English-only quote is the same in both).
    assert [where for where, text in found if not text.zh] == []
    assert [where for where, text in found if CJK.search(text.zh or "") and text.en == text.zh] == []


@pytest.mark.parametrize("exercise_id", CATALOG.ids())
def test_every_concept_and_misconception_has_its_label_in_both_languages(exercise_id):
    """Concepts and misconceptions are labelled like every other text (`label: {zh: …, en: …}`): the
    free-text scorer matches an answer against both (service/grading/freetext.py, similarity.py)."""
    spec = CATALOG.get(exercise_id).spec
    labelled = [(f"{q.id}:{x.id}", x.label) for q in spec.questions for x in (*q.concepts, *q.misconceptions)]
    assert labelled and [where for where, label in labelled
                         if not label.zh or not label.en or CJK.search(label.en)] == []


def test_the_old_label_en_form_still_loads():
    """An exercise folder written before labels became Texts (`label` beside `label_en`) reads the same."""
    old = {"id": "eps", "label": "以为加 eps 能解决抵消问题", "label_en": "adding eps solves cancellation", "patterns": ["x"]}
    assert Misconception.model_validate(old).label == Text(zh=old["label"], en=old["label_en"])
    assert Concept.model_validate({**old, "label_en": None}).label == Text.model_validate(old["label"])
    with pytest.raises(ValueError, match="label_en"):  # beside a Text it would be a second English label
        Concept.model_validate({**old, "label": {"zh": "均值"}})


def test_chain_requirements_name_labels_in_the_reports_language():
    """The pass rule's causal-chain requirement names the links an answer misses and the misconceptions it
    states: by their English labels in an English report (message and evidence hold no Chinese), by the
    lesson's in a Chinese one. The nine exercises' English answers of the calibration set (tuning part),
    through the real scorer."""
    seen = {"missing_links": 0, "named_missing": 0, "named_misconceptions": 0}
    for entry in (e for e in calibration.load() if not e.held_out and e.data["lang"] == "en"):
        exercise = CATALOG.get(entry.exercise)
        rule, question = exercise.spec.pass_rule, entry.data["question"]
        if rule is None or question not in rule.causal_chains:
            continue
        item = score_text(item_id=question, title=question, max_points=calibration._points(exercise, question),
                          question=exercise.question(question), answer=entry.data.get("answer") or "", language="en")
        english, chinese = (chain_requirement(item, question_id=question, share=rule.chain_share, language=language)
                            for language in ("en", "zh"))
        assert not CJK.search(english.message) and not CJK.search(" ".join(english.evidence.get("missing_links", [])))
        loose = ({(link["from"], link["to"]) for link in item.evidence["loose_links"]}  # counted as told
                 if item.points >= item.max_points / 2 else set())
        wrong = item.evidence["misconceptions"]
        missing = [link for link in item.evidence["missing_links"] if (link["from"], link["to"]) not in loose][:8]
        if item.evidence["kind"] == "scored":
            seen["missing_links"] += bool(missing)
            assert english.evidence["missing_links"] == [link["label_en"] for link in missing]
            assert chinese.evidence["missing_links"] == [link["label"] for link in missing]
        named = wrong or (missing if not chinese.met and "keyword_stuffing" not in item.evidence["flags"] else [])
        for report, key in ((english, "label_en"), (chinese, "label")):  # the message names them
            assert all(x[key] in report.message for x in named), (report.message, named)
        seen["named_misconceptions" if wrong else "named_missing"] += bool(named)
    # Measured 2026-12-02: 10 answers miss links, 2 messages list them, 11 name misconceptions.
    assert seen["missing_links"] >= 5 and seen["named_missing"] >= 1 and seen["named_misconceptions"] >= 5, seen


@pytest.mark.parametrize("exercise_id", CATALOG.ids())
def test_drawn_case_descriptions_are_filled_in_both_languages(exercise_id):
    spec = CATALOG.get(exercise_id).spec
    for case in spec.cases_for(20261202):
        for description in (case.description.zh, case.description.en):
            assert description and "{" not in description, (case.id, description)
        if case.draw is not None:
            assert str(case.cols) in case.description.en


def test_text_reads_the_old_plain_form_and_falls_back():
    plain = Text.model_validate("N = 1")
    assert plain.in_("zh") == plain.in_("en") == plain.lesson == "N = 1"
    only_zh = Text.model_validate({"zh": "宽度 32"})
    assert only_zh.in_("en") == "宽度 32" and only_zh.lesson == "宽度 32"  # nothing better to show
    both = Text.model_validate({"zh": "宽度 {cols}", "en": "width {cols}"}).filled(cols=33)
    assert (both.in_("zh"), both.in_("en"), both.lesson) == ("宽度 33", "width 33", "宽度 33")
    with pytest.raises(ValueError):
        Text.model_validate({})
    with pytest.raises(ValueError):
        Text.model_validate({"zh": "x", "fr": "y"})
