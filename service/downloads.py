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


def spreadsheet_safe(value: object) -> str:
    """`value` as a CSV cell that a spreadsheet must not read as a formula (a student's name, a TA's
    reason, a label): a leading quote where the cell starts with a formula character, also after
    blanks, line breaks or invisible characters ("\n=HYPERLINK(...)", " =1+1", "\u200b@SUM(...)",
    which a check of the first character let through), and where it starts with a tab or a line break."""
    text = "" if value is None else str(value)
    first = next((c for c in text if not (c.isspace() or unicodedata.category(c) in ("Cc", "Cf"))), "")
    return "'" + text if first in FORMULA_STARTS or text[:1] in ("\t", "\r", "\n") else text
