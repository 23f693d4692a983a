"""Exports that tell the truth, over real HTTP on SQLite and PostgreSQL, each result checked
against the platform's published specification (tests/support/platform_specs.py): a veto never
exports a passing score (capped below the pass line, or zero by the course's policy) and says why,
a provisional score is marked pending and changes when a TA decides, not_gradable is never a zero."""
from __future__ import annotations

import pytest

from tests.api.support import cheap_body, template_body, wait_final
from tests.support.platform_specs import check_gradescope, check_prairielearn

pytestmark = pytest.mark.sandbox

FULL = {"code.regular": 2, "q1": 2, "q2": 2, "q3": 2, "code.explanation": 1}  # 9 of 10 by TA decisions


def decide(client, submission_id: str, **body) -> dict:
    response = client.post(f"/v1/submissions/{submission_id}/decisions", json={"reason": "TA review", **body})
    assert response.status_code == 201, response.text
    return response.json()["submission"]


def exports(client, submission_id: str) -> tuple[dict, dict]:
    gs = client.get(f"/v1/submissions/{submission_id}/report", params={"format": "gradescope"})
    pl = client.get(f"/v1/submissions/{submission_id}/report", params={"format": "prairielearn"})
    assert gs.status_code == 200 and pl.status_code == 200, (gs.text, pl.text)
    return gs.json(), pl.json()


def test_a_confirmed_veto_never_exports_a_passing_score(course):
    client = course.client()
    admin = course.client("admin")
    submission_id = client.post("/v1/submissions", json=cheap_body()).json()["id"]
    report = wait_final(client, submission_id)["report"]
    assert {v["status"] for v in report["vetoes"]} == {"confirmed"}, "code edited outside the blank: confirmed vetoes"
    for item, points in FULL.items():
        view = decide(client, submission_id, item=item, points=points)
    assert view["report"]["score"]["total"] == 9 and not view["report"]["score"]["passed"]

    gradescope, prairielearn = exports(client, submission_id)
    assert check_gradescope(gradescope) == 7.5, "capped half a point below the pass line of 8"
    assert check_prairielearn(prairielearn) == 0.75
    assert "7.5" in gradescope["output"] and "boundary_check_removed" in gradescope["output"]
    assert gradescope["extra_data"]["kernelgrade"]["rule"] == "capped"
    assert sum(t["score"] for t in gradescope["tests"] if "score" in t) == 9, "the items keep their points"
    vetoes = [t for t in gradescope["tests"] if "score" not in t]
    assert vetoes and all(t["status"] == "failed" for t in vetoes), "each veto is an informational failed test"
    assert any("boundary_check_removed" in t["name"] for t in prairielearn["tests"])

    admin.put("/v1/course/policy", json={"veto_policy": "zero"})
    gradescope, prairielearn = exports(client, submission_id)
    assert check_gradescope(gradescope) == 0 and check_prairielearn(prairielearn) == 0
    assert gradescope["extra_data"]["kernelgrade"]["rule"] == "zero"
    book = client.get("/v1/grades").json()
    assert book["rows"] == [], "no identity: in no gradebook row"


def test_not_gradable_is_never_a_zero(service, course):
    row = service.interrupted(course, attempts=service.settings.max_attempts)
    client = course.client()
    assert wait_final(client, row.id)["status"] == "not_gradable"
    gradescope, prairielearn = exports(client, row.id)
    assert check_gradescope(gradescope) is None, "no score at all on Gradescope"
    assert "score" not in gradescope and all("score" not in t for t in gradescope["tests"])
    assert check_prairielearn(prairielearn) is None and prairielearn["gradable"] is False
    for text in (gradescope["output"], prairielearn["message"], prairielearn["format_errors"][0]):
        assert "不是你的问题" in text, "it says the failure is ours, not the student's"


@pytest.fixture(scope="module")
def suspected(service):
    """A real grading: `values != 0` passes the lesson's check but fails the zeros probe (suspected
    coincidental_pass); TA decisions then lift the items to 9 points."""
    course = service.new_course()
    client = course.client("submit", "read", "review")
    # The pass rule's text requirements hold (a static review stated, a boundary and a trade-off
    # named), so once a TA lifts the items and dismisses the veto nothing else holds the pass back.
    body = {**template_body("values != 0"), "claimed_output": "仅静态审查",
            "explanation": "N < BLOCK 时 padding lane 要重新 mask；片上两遍只读一次 HBM。"}
    submission_id = client.post("/v1/submissions", json=body).json()["id"]
    view = wait_final(client, submission_id)
    assert {v["rule"]: v["status"] for v in view["report"]["vetoes"]} == {"coincidental_pass": "suspected"}
    return course, client, submission_id


def test_a_suspected_veto_is_pending_and_capped_until_a_ta_decides(suspected):
    course, client, submission_id = suspected
    for item, points in FULL.items():
        decide(client, submission_id, item=item, points=points)
    gradescope, prairielearn = exports(client, submission_id)
    assert check_gradescope(gradescope) == 7.5 and check_prairielearn(prairielearn) == 0.75
    kernelgrade = gradescope["extra_data"]["kernelgrade"]
    assert kernelgrade["provisional"] and "veto:coincidental_pass" in kernelgrade["pending"]
    for text in (gradescope["output"], prairielearn["message"]):
        assert "暂定" in text and "coincidental_pass" in text, "marked pending, and why"

    decide(client, submission_id, veto="coincidental_pass", action="dismiss")
    gradescope, prairielearn = exports(client, submission_id)
    assert check_gradescope(gradescope) == 9 and check_prairielearn(prairielearn) == 0.9, "dismissed: the full score"
    assert not gradescope["extra_data"]["kernelgrade"]["provisional"] and "暂定" not in gradescope["output"]


def test_items_waiting_for_a_ta_are_named_pending(course):
    client = course.client()
    body = {**cheap_body(), "answers": {"q2": "减掉均值以后 padding 变成 -mean。"}}
    view = wait_final(client, client.post("/v1/submissions", json=body).json()["id"])
    pending = [i["id"] for i in view["report"]["items"] if i["status"] == "needs_review"]
    assert pending == ["q2"], "a partial causal chain waits for a TA (as in test_review.py)"
    gradescope, prairielearn = exports(client, view["id"])
    check_gradescope(gradescope)
    check_prairielearn(prairielearn)
    names = [t["name"] for t in gradescope["tests"] if t["name"].startswith(pending[0])]
    assert names and "待助教复核" in names[0]


def test_a_vetoed_total_between_the_cap_and_the_pass_line_exports_the_cap(course):
    """A TA's quarter points put a vetoed attempt at 7.75 of a pass line of 8: above the cap (7.5),
    below the line. Every export says the cap, as for a total at or above the line, and why."""
    client = course.client()
    body = {**cheap_body(), "assignment": "hw-cap", "student": {"id": "q1"}}
    submission_id = client.post("/v1/submissions", json=body).json()["id"]
    wait_final(client, submission_id)
    for item, points in {"code.regular": 2, "q1": 2, "q2": 2, "q3": 1.75}.items():
        view = decide(client, submission_id, item=item, points=points)
    assert view["report"]["score"]["total"] == 7.75 and not view["report"]["score"]["passed"]

    gradescope, prairielearn = exports(client, submission_id)
    assert check_gradescope(gradescope) == 7.5 and check_prairielearn(prairielearn) == 0.75
    assert gradescope["extra_data"]["kernelgrade"]["rule"] == "capped" and "7.75" in gradescope["output"]
    (row,) = client.get("/v1/grades", params={"assignment": "hw-cap"}).json()["rows"]
    assert (row["points"], row["raw_total"], row["rule"]) == (7.5, 7.75, "capped")


def test_a_tas_tenths_that_make_the_pass_line_pass(course):
    """A TA's tenths add up to 8 (1.7 + 0.6 + 0.8 + 1.2 + 1.9 + 1.8): the report's total is 8 and the
    attempt passes, every export says 8. Float addition made it 7.999999999999999, short of the line."""
    client = course.client()
    body = {**template_body("values != 0"), "claimed_output": "仅静态审查", "assignment": "hw-tenths",
            "student": {"id": "t1"}, "explanation": "N < BLOCK 时 padding lane 要重新 mask；片上两遍只读一次 HBM。"}
    submission_id = client.post("/v1/submissions", json=body).json()["id"]
    wait_final(client, submission_id)
    decide(client, submission_id, veto="coincidental_pass", action="dismiss")
    tenths = {"code.regular": 1.7, "code.boundary": 0.6, "code.explanation": 0.8, "q1": 1.2, "q2": 1.9, "q3": 1.8}
    for item, points in tenths.items():
        view = decide(client, submission_id, item=item, points=points)
    score = view["report"]["score"]
    assert score["total"] == 8 and {r["id"]: r["met"] for r in score["requirements"]}["total"]
    assert score["passed"], [r["id"] for r in score["requirements"] if not r["met"]]
    gradescope, prairielearn = exports(client, submission_id)
    assert check_gradescope(gradescope) == 8 and check_prairielearn(prairielearn) == 0.8
    (row,) = client.get("/v1/grades", params={"assignment": "hw-tenths"}).json()["rows"]
    assert (row["points"], row["passed"], row["rule"]) == (8, True, "total")
