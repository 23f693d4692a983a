"""Concept recognition by n-gram similarity to a concept's reference phrasings (no patterns).

The rubric's regular expressions recognise the ways students were seen to say a concept; this
recognises the ways they were not: an answer clause that holds most of the character bigrams
(Chinese) and content words (English, code names, symbols) of one of the concept's *reference
phrasings* states it. A concept's phrasings come from the exercise's own data, never from
answers: the parts of its label, and the clauses of the question's reference answer in which the
concept's patterns match (the reference says each concept once, in the lesson's words).
"""
from __future__ import annotations

import itertools
import re
from collections.abc import Iterable
from dataclasses import dataclass

from service.exercises import Concept, Question

# A clause states a phrasing when it holds this share of the phrasing's grams (containment), and
# the phrasing has at least MIN_GRAMS of them (shorter ones match by chance).
CONTAINMENT = 0.7
MIN_GRAMS = 4

_TOKEN = re.compile(r"[a-z_][a-z0-9_.]*|\d+(?:\.\d+)?|[\u3400-\u9fff]+|[μσ²<>≠≈]")
_CJK = re.compile(r"[\u3400-\u9fff]+")
_CLAUSE = re.compile(r"[。；;，,！？!?\n：:（）()]|(?<=\D)\.(?=\s|$)|→|->|=>|⇒")
_LABEL_SPLIT = re.compile(r"[（）()：:，,；;、/]|例如|即|\bor\b|或")
# Function words and characters that carry no concept.
_EN_STOP = frozenset({
    "the", "a", "an", "of", "to", "in", "on", "at", "by", "for", "and", "or", "but", "is", "are", "was", "were",
    "be", "been", "it", "its", "this", "that", "these", "those", "with", "as", "from", "into", "onto", "than",
    "then", "so", "we", "you", "they", "i", "not", "no", "do", "does", "did", "can", "could", "will", "would",
    "should", "must", "may", "might", "have", "has", "had", "which", "what", "when", "where", "why", "how", "all",
    "any", "each", "every", "one", "two", "only", "also", "just", "very", "more", "most",
})
_ZH_STOP = frozenset("的了是在就把被和与及也都而又还这那个们之其有为以所着过得地么吗呢吧啊")


def _stem(word: str) -> str:
    for suffix in ("ing", "ed", "es", "s"):
        if len(word) > len(suffix) + 3 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word


def grams(text: str) -> frozenset[str]:
    """Character bigrams of Chinese runs (function characters dropped), stemmed English content
    words, code names and numbers, and math symbols."""
    out: set[str] = set()
    for token in _TOKEN.findall(text):
        if _CJK.fullmatch(token):
            chars = [c for c in token if c not in _ZH_STOP]
            out.update(a + b for a, b in itertools.pairwise(chars))
            if len(chars) == 1:
                out.add(chars[0])
        elif token[0].isalpha() or token[0] == "_":
            if token not in _EN_STOP and len(token) > 1:
                out.add(_stem(token))
        else:
            out.add(token)
    return frozenset(out)


def clauses(text: str, split: re.Pattern[str] = _CLAUSE) -> list[tuple[int, int]]:
    """(start, end) of the clauses of `text`: split at punctuation and arrows (or at `split`'s matches)."""
    spans, start = [], 0
    for m in split.finditer(text):
        if m.start() > start:
            spans.append((start, m.start()))
        start = m.end()
    if start < len(text):
        spans.append((start, len(text)))
    return spans


@dataclass(frozen=True)
class Phrasing:
    text: str
    grams: frozenset[str]


def phrasings(question: Question, concept: Concept, lesson: Iterable[str] = ()) -> list[Phrasing]:
    """The concept's reference phrasings: the parts of its label, and the reference answer's (and
    the lesson's) clauses that the concept's patterns match."""
    labels = (concept.label.lesson, concept.label.en or "")  # both languages: answers come in either
    pieces = [p.strip() for label in labels for p in _LABEL_SPLIT.split(label.lower())]
    for source in (question.reference_answer.lower(), *(t.lower() for t in lesson)):
        for a, b in clauses(source):
            clause = source[a:b]
            if any(re.search(p, clause, re.IGNORECASE) for p in concept.patterns):
                pieces.append(clause.strip())
    seen, out = set(), []
    for piece in pieces:
        g = grams(piece)
        if len(g) >= MIN_GRAMS and g not in seen:
            seen.add(g)
            out.append(Phrasing(piece, g))
    return out


def phrasings_of_label(label: str) -> list[Phrasing]:
    """The parts of a misconception's label as phrasings: what comes before its first parenthesis
    (the parenthesis states the correction, "（应除以真实元素数 N）", not the misconception)."""
    out = []
    wrong = re.split(r"[（(]", label.lower(), maxsplit=1)[0]
    for piece in _LABEL_SPLIT.split(wrong):
        g = grams(piece.strip())
        if len(g) >= MIN_GRAMS:
            out.append(Phrasing(piece.strip(), g))
    return out


Window = tuple[int, int, frozenset[str]]


def windows(text: str, spans: list[tuple[int, int]], only: frozenset[str] | None = None) -> list[Window]:
    """Each clause and each pair of adjacent clauses, with its grams: computed once per answer.
    `only`: the grams of the phrasings it will be compared with; each window keeps just those (a
    share of one of them is the same), and one left with none is dropped (best_window skips it)."""
    clause_grams = [grams(text[a:b]) for a, b in spans]
    if only is not None:
        clause_grams = [g & only for g in clause_grams]
    out = [(spans[i][0], spans[i][1], clause_grams[i]) for i in range(len(spans))]
    out += [(spans[i][0], spans[i + 1][1], clause_grams[i] | clause_grams[i + 1]) for i in range(len(spans) - 1)]
    return out if only is None else [w for w in out if w[2]]


def best_clause(text: str, spans: list[tuple[int, int]], phrases: list[Phrasing],
                containment: float | None = None) -> tuple[int, int, float] | None:
    """The answer clause (or pair of adjacent clauses) that holds the largest share of one phrasing's
    grams, with that share, when it reaches CONTAINMENT."""
    return best_window(windows(text, spans), phrases, containment)


def best_window(wins: list[Window], phrases: list[Phrasing],
                containment: float | None = None) -> tuple[int, int, float] | None:
    """best_clause over an answer's windows(), computed once for many phrasings."""
    best: tuple[int, int, float] | None = None
    threshold = CONTAINMENT if containment is None else containment
    if not phrases:
        return None
    fewest = min(len(phrase.grams) for phrase in phrases)
    for start, end, mine in wins:
        # A share is at most len(mine) / len(phrase.grams) (the same division, so the same rounding):
        # a window or phrasing that cannot reach the threshold is not intersected.
        if not mine or len(mine) / fewest < threshold:
            continue
        for phrase in phrases:
            if len(mine) / len(phrase.grams) < threshold:
                continue
            share = len(phrase.grams & mine) / len(phrase.grams)
            if share >= threshold and (best is None or share > best[2]):
                best = (start, end, share)
    return best
