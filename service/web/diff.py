"""The student's code against the template, line by line, for the TA: the fill of each blank
highlighted inside its line, edits outside the blanks marked (with the extractor's rule and
reason where it reported one), and changes to comments or whitespace shown as not edits.

The extractor (service/grading/extract.py) decides what is an edit, on syntax trees; this only
lays the two texts side by side so a person can see it."""
from __future__ import annotations

import difflib
import io
import tokenize
from dataclasses import dataclass, field

from service.grading.extract import BLANK


@dataclass
class Segment:
    text: str
    fill: bool = False


@dataclass
class DiffLine:
    kind: str  # same | fill | edit | cosmetic
    side: str  # both | template | submission
    template_no: int | None
    submission_no: int | None
    segments: list[Segment] = field(default_factory=list)
    note: str = ""  # the extractor's rule and reason, for an edit


def _code_part(line: str) -> str:
    """The line without its comment (a `#` inside a string stays)."""
    try:
        for token in tokenize.generate_tokens(io.StringIO(line).readline):
            if token.type == tokenize.COMMENT:
                return line[:token.start[1]].rstrip()
    except (tokenize.TokenError, IndentationError, SyntaxError):
        pass
    return line.rstrip()


def _squash(line: str) -> str:
    return " ".join(_code_part(line).split())


def _fill_segments(template_line: str, line: str) -> list[Segment] | None:
    """The submission line split into text and fills, if it is the template line with its blanks
    filled (whitespace anywhere does not count). Linear in the line's length: the template's text
    around the blanks is matched as literals on the line without its whitespace (a backtracking
    regular expression took 72 s on a fill of 6 400 spaces, with the whole process frozen)."""
    code = _code_part(line)
    parts = _code_part(template_line).strip().split(BLANK)
    if len(parts) < 2:
        return None
    where = [i for i, char in enumerate(code) if not char.isspace()]  # index in the line of each kept char
    squeezed = "".join(code[i] for i in where)
    literals = ["".join(p.split()) for p in parts]
    last = len(squeezed) - len(literals[-1])  # where the text after the last blank starts
    if not squeezed.startswith(literals[0]) or not squeezed.endswith(literals[-1]) or last <= len(literals[0]):
        return None
    fills, cursor = [], len(literals[0])
    for literal in literals[1:-1]:  # the leftmost occurrence after a non-empty fill leaves the most room
        found = squeezed.find(literal, cursor + 1, last)
        if found < 0:
            return None
        fills.append((cursor, found))
        cursor = found + len(literal)
    if last <= cursor:
        return None
    fills.append((cursor, last))
    segments, position = [], 0
    for first, end in fills:  # squeezed positions -> the line's, the fill without the spaces around it
        start, stop = where[first], where[end - 1] + 1
        segments += [Segment(line[position:start]), Segment(line[start:stop], fill=True)]
        position = stop
    segments.append(Segment(line[position:]))
    return [s for s in segments if s.text]


def code_diff(template: str, submission: str, edits: list[dict] | None = None) -> list[DiffLine]:
    t_lines, s_lines = template.splitlines(), submission.splitlines()
    notes_t, notes_s = {}, {}
    for edit in edits or []:
        note = f"{edit.get('rule', '')}: {edit.get('reason', '')}".strip(": ")
        if edit.get("template_line"):
            notes_t[edit["template_line"]] = note
        if edit.get("submission_line"):
            notes_s[edit["submission_line"]] = note

    out: list[DiffLine] = []

    def removed(i: int) -> None:
        note = notes_t.get(i + 1, "")
        kind = "edit" if note or _squash(t_lines[i]) else "cosmetic"
        out.append(DiffLine(kind, "template", i + 1, None, [Segment(t_lines[i])], note))

    def added(j: int, *, fill: bool = False) -> None:
        note = notes_s.get(j + 1, "")
        kind = "fill" if fill else ("edit" if note or _squash(s_lines[j]) else "cosmetic")
        out.append(DiffLine(kind, "submission", None, j + 1, [Segment(s_lines[j], fill=fill)], note))

    matcher = difflib.SequenceMatcher(None, [_squash(x) for x in t_lines], [_squash(x) for x in s_lines],
                                      autojunk=False)
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "equal":
            for i, j in zip(range(i1, i2), range(j1, j2)):
                same = t_lines[i].rstrip() == s_lines[j].rstrip()
                out.append(DiffLine("same" if same else "cosmetic", "both", i + 1, j + 1, [Segment(s_lines[j])]))
            continue
        block_blank = [i for i in range(i1, i2) if t_lines[i].strip() == BLANK]
        if block_blank and op in ("replace", "delete"):  # a whole body as the fill
            for i in range(i1, i2):
                if i not in block_blank:
                    removed(i)
            for j in range(j1, j2):
                added(j, fill=True)
            continue
        pairs = list(zip(range(i1, i2), range(j1, j2))) if op == "replace" else []
        for i, j in pairs:
            segments = _fill_segments(t_lines[i], s_lines[j]) if BLANK in t_lines[i] else None
            if segments is not None:
                out.append(DiffLine("fill", "both", i + 1, j + 1, segments, notes_s.get(j + 1, "")))
            else:
                removed(i)
                added(j)
        for i in range(i1 + len(pairs), i2):
            removed(i)
        for j in range(j1 + len(pairs), j2):
            added(j)
    return out
