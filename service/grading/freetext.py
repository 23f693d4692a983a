"""Provisional scoring of written answers: which of the question's concepts appear, quoted.

This is a placeholder until the free-text grader lands (issue #4): it never decides alone. Any
non-empty answer is `needs_review` with provisional points, so the score stays provisional
until a TA confirms it. Empty answers score 0 and need no review.
"""
from __future__ import annotations

import math
import re

from service.exercises import Question
from service.report import Item

_QUOTE_CONTEXT = 24


def score_text(*, item_id: str, title: str, max_points: float, question: Question, answer: str) -> Item:
    text = answer.replace("\x00", "").strip()
    if not text:
        return Item(id=item_id, title=title, points=0.0, max_points=max_points, status="fail",
                    feedback="未作答。", evidence={"answer_chars": 0})
    found, missing = [], []
    for concept in question.concepts:
        match = next((m for p in concept.patterns if (m := re.search(p, text, re.IGNORECASE))), None)
        if match:
            start, end = max(0, match.start() - _QUOTE_CONTEXT), min(len(text), match.end() + _QUOTE_CONTEXT)
            found.append({"concept": concept.id, "label": concept.label, "quote": text[start:end]})
        else:
            missing.append({"concept": concept.id, "label": concept.label})
    coverage = len(found) / len(question.concepts)
    points = math.floor(coverage * max_points * 2) / 2
    lines = ["自动初评，待助教复核（暂定分数）。"]
    if found:
        lines.append("提到的概念：" + "；".join(f["label"] for f in found) + "。")
    if missing:
        lines.append("没有找到：" + "；".join(m["label"] for m in missing) + "。请说明因果链，而不是只列术语。")
    return Item(id=item_id, title=title, points=points, max_points=max_points, status="needs_review",
                feedback="\n".join(lines),
                evidence={"found": found, "missing": missing, "coverage": coverage, "confidence": 0.3,
                          "method": "concept patterns (provisional)"})
