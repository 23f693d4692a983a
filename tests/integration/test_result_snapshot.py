"""The Gradescope and PrairieLearn results (`GET /v1/submissions/{id}/report?format=…`, what the
platform kits in service/kits/ fetch) and the student's feedback (the pages `/feedback/{token}` and
`/lti/feedback/{token}`, and `GET /v1/feedback/{token}/hints`) are each the database at one moment,
on a real database (SQLite and PostgreSQL) behind a real uvicorn server: each reads the submission,
its report, the course's policy and the hint levels taken in separate statements, and an admin's
policy change and a student's hint level can both commit between them. The changes go through the
service's own functions (store.set_course_policy, hints.take_next), committed in other sessions at
the moment the request first reads the hints (as tests/integration/test_webhook_grade_snapshot.py
does for the webhook and the gradebook export)."""
from __future__ import annotations

import re
from collections.abc import Iterator

import httpx
import pytest
from sqlalchemy import event

from service.db import store
from service.db.models import Submission
from service.grades.policy import PolicyUpdate
from service.hints import take_next
from service.web.i18n import texts
from tests.api.support import api_settings
from tests.integration.test_webhook_grade_snapshot import HINTS, graded_with_confirmed_veto
from tests.support.servers import LiveServer, migrated_sessions


@pytest.fixture(params=[pytest.param("sqlite", id="sqlite"),
                        pytest.param("postgresql", id="postgresql", marks=pytest.mark.postgres)])
def served(request, tmp_path) -> Iterator[tuple]:
    """(the test's own sessions, the live server, alice's graded attempt with a confirmed veto: 9 of
    10, 7.5 under `capped`; the course charges 1 point a hint level), the attempt stored before the
    server starts so that no worker of it takes anything."""
    with migrated_sessions(request.param, tmp_path) as sessions:
        with sessions() as session:
            store.create_course(session, "c1", "course one")
            store.set_course_policy(session, "c1", PolicyUpdate(veto_policy="capped", hint_cost=1))
        submission_id = graded_with_confirmed_veto(sessions, None)
        url = sessions.kw["bind"].url.render_as_string(hide_password=False)
        with LiveServer(api_settings(url, tmp_path / "data")) as server:
            yield sessions, server, submission_id


def landing_at_the_first_hints_read(sessions, submission_id: str, change: PolicyUpdate):
    """A listener that commits `change` to the policy, then alice's next hint level, just before the
    first statement that reads `hints_taken` (in the test's own sessions); `landed` says whether it ran."""
    landed: list[str] = []

    def changes_land(_conn, _cursor, statement, *_args) -> None:  # noqa: ANN001
        if landed or "hints_taken" not in statement:
            return
        landed.append(statement)
        with sessions() as admin:
            store.set_course_policy(admin, "c1", change)
        with sessions() as student:
            take_next(student, student.get_one(Submission, submission_id), HINTS, ["general"], None, "en")

    return changes_land, landed


def while_both_land(server, sessions, submission_id: str, change: PolicyUpdate, call):  # noqa: ANN001
    engine = server.sessions.kw["bind"]  # the server's own engine: its request's statements
    changes_land, landed = landing_at_the_first_hints_read(sessions, submission_id, change)
    event.listen(engine, "before_cursor_execute", changes_land)
    try:
        response = call()
    finally:
        event.remove(engine, "before_cursor_execute", changes_land)
    assert landed, "the request read the hints taken, and both changes landed then"
    assert response.status_code == 200, response.text
    return response


def platform_score(response: httpx.Response, format: str) -> float:
    return response.json()["score"] * (10 if format == "prairielearn" else 1)


@pytest.mark.parametrize("format", ["gradescope", "prairielearn"])
def test_a_policy_change_and_a_hint_during_a_platform_result_do_not_mix_in_its_score(served, format):
    """The admin sets `zero` (7.5 -> 0), then alice takes a level costing 1 point (0 stays 0): the
    gradebook went 7.5, 0. A result that read the policy before both and the hints after both said
    6.5 (`capped` less the hint; 0.65 on PrairieLearn's scale), a grade no moment had."""
    sessions, server, submission_id = served
    with sessions() as session:
        _, key = store.create_key(session, course_id="c1", scopes=["read"], label="kit")
    with httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {key}"}, timeout=60) as kit:
        def result() -> httpx.Response:
            return kit.get(f"/v1/submissions/{submission_id}/report", params={"format": format})

        before = platform_score(result(), format)
        during = platform_score(while_both_land(server, sessions, submission_id, PolicyUpdate(veto_policy="zero"),
                                                result), format)
        after = platform_score(result(), format)
    assert (before, after) == (7.5, 0.0)
    assert during in (before, after), (
        f"the {format} result said {during:g} points: the course had {before:g} before the policy change and "
        f"the hint, {after:g} after, never {during:g}")


def page_state(html: str) -> tuple[bool, int]:
    """What the feedback page says of the hints: whether a level costs a point, and how many levels it shows."""
    return texts("en")["hint_cost"].format(cost="1") in html, len(re.findall(r'<li class="hint"', html))


@pytest.mark.parametrize("page_path", ["/feedback/", "/lti/feedback/"], ids=["plain", "lti"])
def test_a_policy_change_and_a_hint_during_the_feedback_page_do_not_mix_on_it(served, page_path):
    """The admin makes hints free (1 point -> 0), then alice takes a level (costing 0): the page
    said "1 point a level, none taken", then "free, one taken", never "1 point a level" beside the
    level that cost nothing. The same for the page an LMS frames (its own route, its own snapshot)."""
    sessions, server, submission_id = served
    with sessions() as session:
        token = session.get_one(Submission, submission_id).feedback_token
    with httpx.Client(base_url=server.url, timeout=60) as student:
        def page() -> httpx.Response:
            return student.get(f"{page_path}{token}", params={"lang": "en"})

        before = page_state(page().text)
        during = page_state(while_both_land(server, sessions, submission_id, PolicyUpdate(hint_cost=0), page).text)
        after = page_state(page().text)
    assert (before, after) == ((True, 0), (False, 1))
    assert during in (before, after), f"the page said (charges 1 point, levels shown) = {during}: never the state"


def test_a_policy_change_and_a_hint_during_the_hints_json_do_not_mix_in_it(served):
    """The same two changes while `GET /v1/feedback/{token}/hints` reads: its cost per level and its
    levels taken are both before (1, none) or both after (free, one costing 0)."""
    sessions, server, submission_id = served
    with sessions() as session:
        token = session.get_one(Submission, submission_id).feedback_token
    with httpx.Client(base_url=server.url, timeout=60) as student:
        def hints() -> httpx.Response:
            return student.get(f"/v1/feedback/{token}/hints", params={"lang": "en"})

        def state(response: httpx.Response) -> tuple:
            view = response.json()
            return view["cost_per_level"] or 0.0, [level["cost"] for level in view["taken"]]

        before = state(hints())
        during = state(while_both_land(server, sessions, submission_id, PolicyUpdate(hint_cost=0), hints))
        after = state(hints())
    assert (before, after) == ((1.0, []), (0.0, [0.0]))
    assert during in (before, after), f"the hints said (cost per level, levels' costs) = {during}: never the state"
