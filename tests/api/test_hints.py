"""The hint ladder through the API (issue 21): POST /v1/feedback/{token}/hints gives the next
level only (概念区域 → 具体方向 → 关键局部 → 完整答案), in the student's language, records it with
the course's cost, and the grades export carries it. Real server, real database, real sandbox."""
from __future__ import annotations

import csv
import io

import pytest

from service.config import REPO_ROOT
from service.hints import hints_of
from tests.api.support import template_body, wait_final

pytestmark = pytest.mark.sandbox
LADDERS = hints_of(REPO_ROOT / "exercises" / "lesson06_mean_var")


def _token(view: dict) -> str:
    return view["links"]["feedback"].rsplit("/", 1)[-1]


def test_the_ladder_gives_one_level_at_a_time_and_is_recorded(course, service):
    assert LADDERS is not None
    course.client("admin").put("/v1/course/policy", json={"hint_cost": 0.5}).raise_for_status()
    client = course.client("submit", "read")
    body = {**template_body("cols < BLOCK"), "assignment": "hw6", "student": {"id": "s1"}}  # the re-mask is missing
    view = wait_final(client, client.post("/v1/submissions", json=body).json()["id"])
    assert [d["id"] for d in view["report"]["diagnoses"]][:1] == ["missing_remask"]
    student = service.client()  # no key: the feedback token is the student's key
    url = f"/v1/feedback/{_token(view)}/hints"

    before = student.get(url).json()
    assert before["taken"] == [] and before["cost_per_level"] == 0.5
    assert before["ladders"][0] == {"diagnosis": "missing_remask", "levels": 4, "taken": 0, "next_level": 1}
    assert "tl.where(mask" not in str(before), "no level is shown before it is asked for"

    ladder = LADDERS.diagnoses["missing_remask"]
    for level in range(1, 5):
        answer = student.post(url, json={"diagnosis": "missing_remask"})
        assert answer.status_code == 201, answer.text
        given = answer.json()["taken"]
        assert [h["level"] for h in given] == list(range(1, level + 1))
        assert given[-1]["text"] == ladder[level - 1].zh and given[-1]["cost"] == 0.5
        assert "tl.where(mask" not in str(given) or level == 4, "the full answer only at level 4"
    assert given[0]["name"] == "概念区域" and given[3]["name"] == "完整答案"
    done = student.post(url, json={"diagnosis": "missing_remask"})
    assert done.status_code == 409
    assert student.get(url).json()["ladders"][0]["next_level"] is None

    english = student.get(url, params={"lang": "en"}).json()
    assert english["taken"][0]["text"] == ladder[0].en and english["taken"][0]["name"] == "concept area"
    wrong = student.post(url, json={"diagnosis": "not_a_diagnosis"})
    assert wrong.status_code == 422 and wrong.json()["detail"][0]["loc"] == ["body", "diagnosis"]
    assert student.post(url, json={"unknown": 1}).status_code == 422
    assert student.post("/v1/feedback/nope/hints", json={}).status_code == 404

    # The export: the levels taken and what they cost, taken off the points.
    book = client.get("/v1/grades").json()
    (row,) = [r for r in book["rows"] if r["student_id"] == "s1"]
    assert row["hints"] == [f"missing_remask:{n}" for n in range(1, 5)] and row["hint_cost"] == 2.0
    assert row["rule"] == "total" and row["points"] == max(0.0, row["raw_total"] - 2.0)
    text = client.get("/v1/grades", params={"format": "csv"}).text
    (csv_row,) = [r for r in csv.DictReader(io.StringIO(text)) if r["student_id"] == "s1"]
    assert csv_row["hints"].split() == row["hints"] and float(csv_row["hint_cost"]) == 2.0


def test_a_submission_not_graded_yet_offers_no_hint(course, service):
    row = service.block_queue(course)  # held as `running`
    student = service.client()
    url = f"/v1/feedback/{row.feedback_token}/hints"
    assert student.get(url).json()["ladders"] == []
    assert student.post(url).status_code == 409
