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


def test_every_export_takes_the_same_hint_cost_off(course, service):
    """A course charging 0.5 per level; a student takes three levels, then a TA's decisions give
    the attempt 9 points (capped at 7.5 by its confirmed veto). The gradebook, the Gradescope and
    PrairieLearn results and the webhook's grade all say 7.5 − 1.5 = 6, and why."""
    from tests.api.support import Receiver, cheap_body
    from tests.api.test_webhooks import delivered, standard_verify
    from tests.support.platform_specs import check_gradescope, check_prairielearn

    course.client("admin").put("/v1/course/policy", json={"hint_cost": 0.5}).raise_for_status()
    client = course.client("submit", "read", "review")
    with Receiver(fail_first=0) as receiver:
        body = {**cheap_body(), "callback_url": receiver.url, "assignment": "hw-hints", "student": {"id": "h1"}}
        view = wait_final(client, client.post("/v1/submissions", json=body).json()["id"])
        submission_id = view["id"]
        delivered(client, submission_id)
        student = service.client()
        for _ in range(3):
            assert student.post(f"/v1/feedback/{_token(view)}/hints", json={}).status_code == 201
        items = {"code.regular": 2, "q1": 2, "q2": 2, "q3": 2, "code.explanation": 1}
        for item, points in items.items():
            response = client.post(f"/v1/submissions/{submission_id}/decisions",
                                   json={"item": item, "points": points, "reason": "TA review"})
            assert response.status_code == 201, response.text
        delivered(client, submission_id, count=1 + len(items))
        last = standard_verify(course.webhook_secret, receiver.snapshot()[-1])

    (row,) = [r for r in client.get("/v1/grades").json()["rows"] if r["student_id"] == "h1"]
    assert (row["raw_total"], row["rule"], row["hint_cost"]) == (9, "capped", 1.5)
    assert row["points"] == 6.0 and len(row["hints"]) == 3

    gradescope = client.get(f"/v1/submissions/{submission_id}/report", params={"format": "gradescope"}).json()
    assert check_gradescope(gradescope) == row["points"]
    kg = gradescope["extra_data"]["kernelgrade"]
    assert (kg["counted"], kg["hint_cost"], kg["hints"]) == (6.0, 1.5, row["hints"])
    assert "提示扣分：1.5 分" in gradescope["output"] and " ".join(row["hints"][:1]) in gradescope["output"]
    prairielearn = client.get(f"/v1/submissions/{submission_id}/report", params={"format": "prairielearn"}).json()
    assert check_prairielearn(prairielearn) == row["points"] / 10
    assert "提示扣分：1.5 分" in prairielearn["message"]

    grade = last["data"]["grade"]
    assert last["type"] == "submission.decision_recorded"
    assert (grade["points"], grade["total"], grade["hint_cost"], grade["hints"]) == (6.0, 9, 1.5, row["hints"])
    assert grade["rule"] == "capped"


def test_free_hints_change_no_export(course, service):
    """hint_cost 0 (the default): levels are recorded, the points stay."""
    client = course.client("submit", "read")
    from tests.api.support import cheap_body

    view = wait_final(client, client.post("/v1/submissions", json={**cheap_body(), "assignment": "hw-free",
                                                                   "student": {"id": "f1"}}).json()["id"])
    assert service.client().post(f"/v1/feedback/{_token(view)}/hints", json={}).status_code == 201
    (row,) = [r for r in client.get("/v1/grades").json()["rows"] if r["student_id"] == "f1"]
    gradescope = client.get(f"/v1/submissions/{view['id']}/report", params={"format": "gradescope"}).json()
    assert row["hints"] and row["hint_cost"] == 0 and row["points"] == row["raw_total"] == gradescope["score"]
    assert gradescope["extra_data"]["kernelgrade"]["hint_cost"] == 0 and "提示扣分" not in gradescope["output"]
