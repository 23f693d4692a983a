"""The Content-Disposition header of a CSV download (gradebook, dashboard, TA decisions)."""
from __future__ import annotations

import re

_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]")


def csv_attachment(*parts: str) -> dict[str, str]:
    """`parts` joined by "-" as an ASCII file name: a header is latin-1, and course and assignment
    ids may hold any character (CJK, quotes), each of which becomes "_"."""
    return {"Content-Disposition": f'attachment; filename="{_UNSAFE.sub("_", "-".join(parts))}.csv"'}
