"""The language a student writes in, read from their written answers. One rule for the grader (a report
is written in it when the submission declares none: `report_language`) and for the student page
(service/student_view.py), so that the page and the report it shows agree."""
from __future__ import annotations

import re
from collections.abc import Iterable

from service.messages.catalogue import LANGUAGES, Language

_CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")
_LATIN = re.compile(r"[A-Za-z]")
# Code words in a Chinese answer (mask, padding, tl.where, mean) are many letters but a minority of
# its characters: English needs this share of the letters and Chinese characters together.
ENGLISH_SHARE = 0.8


def written_language(texts: Iterable[str]) -> Language | None:
    """en when the texts are mostly ASCII letters, zh when Chinese is written, None when nothing is
    (no letters and no Chinese: an empty or code-only answer says nothing of the student's language).
    Each text is bounded by the submission schema (MAX_TEXT_CHARS), so this is linear in what was sent."""
    latin = cjk = 0
    for text in texts:
        if isinstance(text, str):
            latin += len(_LATIN.findall(text))
            cjk += len(_CJK.findall(text))
    if latin + cjk == 0:
        return None
    return "en" if latin >= ENGLISH_SHARE * (latin + cjk) else "zh"


def report_language(declared: str | None, exercise_language: str, written: Iterable[str] = ()) -> Language:
    """The language a report is written in: the submission's declared language when it gives one, else
    the one its written answers are in (`written`: the answers and the explanation), else the exercise's.
    A student who writes `"language": "en"`, or answers in English, reads English feedback on a Chinese
    lesson."""
    for choice in (declared, written_language(written), exercise_language):
        for known in LANGUAGES:
            if known == choice:
                return known
    return "zh"
