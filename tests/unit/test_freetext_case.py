"""The rubric's patterns are matched without IGNORECASE where that finds exactly the same matches
(freetext._rubric): on lower-case answers whose characters, and the pattern's, are their own lower
case and none that IGNORECASE equates with another lower-case letter. Every pattern of the catalog,
over calibration answers and the same answers with such characters put in, must match where the
flag matches."""
from __future__ import annotations

import random
import re

from service.config import REPO_ROOT
from service.exercises import ExerciseCatalog
from service.grading.freetext import _rubric, _Text
from tests.calibration.calibration import load

CATALOG = ExerciseCatalog(REPO_ROOT / "exercises")
# Characters that case-insensitive matching equates with another lower-case one, upper case that
# the fold lower-cases, and signs and markup the fold rewrites.
SPECIAL = "ıſςµϐϑKİIΣSMASKÅßﬅͅΐ–⟶÷`**$\\mu^{2}"


def _patterns() -> list[str]:
    found: set[str] = set()
    for exercise_id in sorted(p.parent.name for p in (REPO_ROOT / "exercises").glob("*/exercise.yaml")):
        exercise = CATALOG.get(exercise_id)
        for item in exercise.spec.rubric:
            if item.source != "text" or item.question is None:
                continue
            question = exercise.question(item.question)
            for concept in question.concepts:
                found.update(concept.patterns)
            for wrong in question.misconceptions:
                found.update(wrong.patterns)
            for claim in question.describes:
                found.update(claim.says)
    return sorted(found)


def test_the_rubric_patterns_match_as_with_ignorecase():
    rng = random.Random(11)
    patterns = _patterns()
    answers = [e.data.get("answer") or "" for e in load()]
    texts = rng.sample(answers, 8)
    for answer in rng.sample(answers, 8):
        chars = list(answer)
        for _ in range(3):
            if chars:
                chars[rng.randrange(len(chars))] = rng.choice(SPECIAL)
        texts.append("".join(chars))
    texts += ["mısk σς ſum", "MASK other=0 ΣΑ µ"]
    unflagged = 0
    for answer in texts:
        text = _Text.of(answer)
        compiled = _rubric(patterns, text)
        unflagged += sum(not p.flags & re.IGNORECASE for p in compiled)
        for pattern, mine in zip(patterns, compiled):
            assert [m.span() for m in mine.finditer(text)] == \
                [m.span() for m in re.finditer(pattern, text, re.IGNORECASE)], (pattern, answer)
    assert unflagged > 0  # the fast path is taken


def test_characters_that_ignorecase_equates_keep_the_flag():
    for answer in ("mısk", "σς", "ᲀ"):  # (ſ and µ the NFKC fold already makes s and μ)
        text = _Text.of(answer)
        assert not text.lower_only
        assert all(p.flags & re.IGNORECASE for p in _rubric(["mask", "σ", "sum", "ι"], text))
    assert _Text.of("Mask → 0, mean 均值").lower_only
    # A pattern naming an upper-case character keeps the flag on any text.
    (pattern,) = _rubric([r"[A-Z]ask"], _Text.of("mask"))
    assert pattern.flags & re.IGNORECASE and pattern.search("mask")


def test_the_link_index_finds_the_same_links_on_lower_case_text():
    """_LinkIndex scans a _lower_only answer without the flag: the same link starts, ends and prose."""
    from service.grading.freetext import _LinkIndex, _sentences

    rng = random.Random(3)
    alphabet = list("因为所以导致使得变成为就会后是即 thus so if then is isn't ->→=⇒\n。，;ab") + ["THUS", "ı", "ς"]
    for _ in range(300):
        text = _Text.of("".join(rng.choice(alphabet) for _ in range(rng.randint(3, 80))))
        spans = _sentences(text)
        fast, slow = _LinkIndex(text, spans), _LinkIndex(str(text), spans)
        assert (fast.starts, fast.min_end) == (slow.starts, slow.min_end), text
        assert [fast.prose(i) for i in range(len(spans))] == [slow.prose(i) for i in range(len(spans))], text
