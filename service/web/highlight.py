"""A written answer with what the rubric found in it marked: the concepts it states and the
misconceptions. The rubric's own patterns run on the normalised text (NFKC, lower case), as
service/grading/freetext.py runs them; each match is mapped back onto the student's original
characters, so the TA reads the answer exactly as written. Every piece is escaped."""
from __future__ import annotations

import re
from dataclasses import dataclass

from markupsafe import Markup, escape

from service.exercises import Question
from service.grading.folding import fold_char, fold_white_space, reads_homoglyphs


@dataclass(frozen=True)
class Span:
    start: int
    end: int
    kind: str  # concept | misconception
    label: str


def _normalised_with_origin(text: str) -> tuple[str, list[int]]:
    """The text as the rubric sees it, and for each of its characters the original index."""
    chars, origin = [], []
    homoglyphs = reads_homoglyphs(text)
    for index, char in enumerate(text):
        if char == "\x00":
            continue
        folded = fold_char(char, homoglyphs)  # one character as the rubric reads it (invisible ones: none)
        chars.append(folded)
        origin.extend([index] * len(folded))
    # runs of white space as the scorer reads them: "mask" then 16 000 spaces held the review page 4 s a question
    return fold_white_space("".join(chars), origin)


def find_spans(question: Question, answer: str, *, concepts: set[str], misconceptions: set[str],
               language: str = "zh") -> list[Span]:
    """Non-overlapping spans (in the original answer) of the concepts and misconceptions the rubric reported,
    labelled in `language` (the report's)."""
    normalised, origin = _normalised_with_origin(answer)
    found: list[Span] = []
    rules = [("concept", c.id, c.label.in_(language), c.patterns) for c in question.concepts if c.id in concepts]
    rules += [("misconception", m.id, m.label.in_(language), m.patterns)
              for m in question.misconceptions if m.id in misconceptions]
    for kind, _id, label, patterns in rules:
        for pattern in patterns:
            for m in re.finditer(pattern, normalised, re.IGNORECASE):
                if m.end() > m.start():
                    found.append(Span(origin[m.start()], origin[m.end() - 1] + 1, kind, label))
    found.sort(key=lambda s: (s.start, -(s.end - s.start)))
    kept, end = [], -1
    for span in found:
        if span.start >= end:
            kept.append(span)
            end = span.end
    return kept


def highlighted(answer: str, spans: list[Span]) -> Markup:
    parts, cursor = [], 0
    for span in spans:
        parts.append(escape(answer[cursor:span.start]))
        parts.append(Markup('<mark class="{}" title="{}">{}</mark>').format(span.kind, span.label,
                                                                            answer[span.start:span.end]))
        cursor = span.end
    parts.append(escape(answer[cursor:]))
    return Markup("").join(parts)
