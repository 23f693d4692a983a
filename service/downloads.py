"""CSV downloads (gradebook, dashboard, TA decisions): their Content-Disposition header, and cells
that a spreadsheet reads as text, never as a formula."""
from __future__ import annotations

import re
import unicodedata

_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]")


def csv_attachment(*parts: str) -> dict[str, str]:
    """`parts` joined by "-" as an ASCII file name: a header is latin-1, and course and assignment
    ids may hold any character (CJK, quotes), each of which becomes "_"."""
    return {"Content-Disposition": f'attachment; filename="{_UNSAFE.sub("_", "-".join(parts))}.csv"'}


# What makes a spreadsheet read a cell as a formula (or DDE), and their full-width forms, which
# spreadsheets with an East Asian input method take as the same (the names here are often CJK).
FORMULA_STARTS = frozenset("=+-@\uff1d\uff0b\uff0d\uff20")


# Where a spreadsheet may start a new cell inside one of ours: the list separator of its locale (`,`,
# or `;` where the decimal mark is a comma: German, French, Russian Excel), a tab (a tab-separated
# import), a line break. The CSV's own quoting does not stop it: a reader that splits on `;` sees
# our quotes only where one of its cells starts with one, so `x;=1+1` (unquoted: no comma in it)
# opens as `x` and `=1+1`, a formula; so would a cell after a line break inside a quoted cell.
SEPARATORS = frozenset(",;\t\r\n")


def _skipped(c: str) -> bool:
    """Before a formula character: blanks, line breaks, invisible characters, and the double quote
    (a quoted `"=1+1"` is still a formula to Excel)."""
    return c.isspace() or c == '"' or unicodedata.category(c) in ("Cc", "Cf")


def spreadsheet_safe(value: object) -> str:
    """`value` as a CSV cell that a spreadsheet must not read as a formula (a student's name, a TA's
    reason, a label), whatever separator it splits the line on: a leading quote where the cell
    starts with a formula character, also after blanks, line breaks, invisible characters or a
    double quote ("\n=HYPERLINK(...)", " =1+1", "\u200b@SUM(...)", '"=1+1'), and where it starts
    with a tab or a line break; and a quote after every separator (SEPARATORS) that the same is
    behind ("x;=1+1" -> "x;'=1+1", "a,\t-2" -> "a,'\t-2"), where a spreadsheet of another
    locale starts a cell. Honest text keeps its words; the quote shows where one was put."""
    text = "" if value is None else str(value)
    # formula[i]: the text from i on starts, past what is skipped, with a formula character (one pass,
    # from the end: a cell of many tabs or line breaks costs no more than its length).
    formula = [False] * (len(text) + 1)
    upcoming = ""
    for i in range(len(text) - 1, -1, -1):
        if not _skipped(text[i]):
            upcoming = text[i]
        formula[i] = upcoming in FORMULA_STARTS
    out = ["'"] if formula[0] or text[:1] in ("\t", "\r", "\n") else []
    for i, c in enumerate(text):
        out.append(c)
        if c in SEPARATORS and formula[i + 1]:
            out.append("'")
    return "".join(out)
