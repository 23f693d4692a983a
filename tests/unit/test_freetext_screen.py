"""A rubric pattern is not scanned over an answer that lacks a literal string every match of it must
contain (freetext._screened, _needs_of): the screen must never skip a pattern that would match. Every
pattern of the catalog and the module's own expressions, over calibration answers, the same answers
with characters put in, and texts made of each pattern's own words with one of them left out."""
from __future__ import annotations

import random
import re

from service.grading import freetext
from service.grading.freetext import _needs_of, _rubric, _scan, _screened, _screened_groups, _Text
from tests.calibration.calibration import load
from tests.unit.test_freetext_case import SPECIAL, _patterns

MODULE = [freetext._DISMISSAL, freetext._HARMLESS, freetext._WAVED_OFF, freetext._RETRACTED, freetext._HEDGED]


def _texts(rng: random.Random, patterns: list[str]) -> list[str]:
    answers = [e.data.get("answer") or "" for e in load()]
    texts = rng.sample(answers, 12)
    for answer in rng.sample(answers, 8):
        chars = list(answer)
        for _ in range(3):
            if chars:
                chars[rng.randrange(len(chars))] = rng.choice(SPECIAL)
        texts.append("".join(chars))
    # Each pattern's own required words, joined as a pattern would see them, one set sometimes left out.
    for pattern in rng.sample(patterns, 60):
        needs = _needs_of(re.compile(pattern))
        words = [rng.choice(alternatives) for alternatives in needs]
        if words and rng.random() < 0.5:
            words.pop(rng.randrange(len(words)))
        texts.append(rng.choice([" ", "", " = ", "，"]).join(words))
    return texts


def test_a_screened_out_pattern_matches_nothing():
    rng = random.Random(17)
    patterns = _patterns()
    flagged = [re.compile(p, re.IGNORECASE) for p in patterns]  # as the rubric means them
    screened_out = 0
    for answer in _texts(rng, patterns):
        text = _Text.of(answer)
        kept = {id(p) for p in _screened(patterns, text)}
        for reference, regex in zip(flagged, _rubric(patterns, text)):
            if id(regex) not in kept:
                screened_out += 1
                assert reference.search(text) is None, (reference.pattern, answer)
        for regex in MODULE:
            if not _scan(regex, text):
                assert regex.search(text) is None, (regex.pattern[:60], answer)
        groups = [patterns[i:i + 9] for i in range(0, len(patterns), 9)]  # screened together, the same
        assert [[r.pattern for r in kept] for kept in _screened_groups(groups, text)] == \
            [[r.pattern for r in _screened(group, text)] for group in groups]
    assert screened_out > 0  # the screen is taken


def test_what_a_match_needs():
    def needs(pattern: str) -> tuple[tuple[str, ...], ...]:
        return _needs_of(re.compile(pattern))

    assert needs(r"(分母|denominator)\s*(是|is)?\s*block\b") == (("分母", "denominator"), ("block",))
    assert needs(r"x+y{2}(ab)+") == (("x",), ("y",), ("ab",))
    assert needs(r"(a|)b") == (("b",),)  # a branch that needs nothing: the alternation needs nothing
    assert needs(r"a(?i:bc)d") == (("a",), ("d",))  # a group that changes the flags: nothing read in it
    assert needs(r"(?i)abc") == () and _needs_of(re.compile("abc", re.IGNORECASE)) == ()
    assert needs(r"[ab]c?|d") == ()
