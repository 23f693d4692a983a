"""LTI 1.3 over real HTTP, against an LTI platform we did not write (lti1p3platform, served by
tests/support/lti_platform.py): registration, OIDC login, launch, deep linking, a graded
submission posted to the platform's gradebook (PendingManual, then FullyGraded after the TA's
decisions), the roster from NRPS, what each student sees, and every refusal with its page."""
from __future__ import annotations

import base64
import json
import re
from collections.abc import Iterator

import httpx
import pytest
from sqlalchemy import select

from service.db.lti_models import LtiMember, LtiScorePost, LtiSubmission, LtiToolKey
from service.db.models import Submission
from service.lti import keys
from service.web.i18n import LTI_REFUSALS, texts
from tests.api.support import EXERCISE, Course, Service, cheap_body, example_body, template_body, wait_final, wait_for
from tests.support.lti_platform import LEARNER, Browser, Link, Platform, User, forms

PARTIAL_Q2 = "减掉均值以后 padding 变成 -mean，平方以后是 mean^2，所以方差偏大。"


@pytest.fixture(scope="module")
def lti(start_service) -> Service:
    return start_service(lti_allowed_hosts=["127.0.0.1"], lti_score_backoff_s=[0.5, 0.5])


@pytest.fixture(scope="module")
def platform(lti) -> Iterator[Platform]:
    with Platform(lti.url) as p:
        yield p


@pytest.fixture(scope="module")
def registered(lti, platform) -> tuple[Course, dict]:
    """The platform registered for a course through the API, with deployment dep-1."""
    course = lti.new_course()
    response = course.client("admin").post("/v1/lti/platforms", json=platform.tool_registration())
    assert response.status_code == 201, response.text
    return course, response.json()


@pytest.fixture
def browser() -> Iterator[Browser]:
    b = Browser()
    yield b
    b.close()


@pytest.fixture(scope="module")
def linked(lti, platform, registered) -> Link:
    """The teacher adds lesson 6 through the platform's content picker (deep linking)."""
    b = Browser()
    try:
        page = b.launch(platform, user="teacher", hint="deeplink")
        assert page.status_code == 200, page.text[:1000]
        (pick,) = forms(page.text)
        assert EXERCISE in page.text and pick.action == "/lti/deep-link"
        returned = b.submit(pick, lti.url, exercise=EXERCISE)
        assert returned.status_code == 200, returned.text[:1000]
        (back,) = forms(returned.text)
        assert back.action == f"{platform.url}/deep-link-return" and set(back.fields) == {"JWT"}
        created = b.submit(back, lti.url)  # the platform checks the signature against the tool's JWKS
        assert created.status_code == 200, created.text
        return platform.state.links[created.json()["links"][0]]
    finally:
        b.close()


def refusal(response: httpx.Response, code: str) -> None:
    """A page that says why, in Chinese and in English."""
    assert response.headers["content-type"].startswith("text/html")
    assert f'data-code="{code}"' in response.text, response.text[:2000]
    for language in ("zh", "en"):
        fixed = re.split(r"\{[a-z_]+\}", LTI_REFUSALS[code][language])[0]  # the words before the first parameter
        assert fixed[:30] in response.text.replace("&#39;", "'"), (language, fixed[:30])


def lti_submissions(lti: Service, sub: str) -> list[Submission]:
    with lti.sessions() as session:
        return list(session.scalars(select(Submission).join(LtiSubmission, LtiSubmission.submission_id == Submission.id)
                                    .where(LtiSubmission.sub == sub).order_by(Submission.created_at)))


def submit(browser: Browser, lti: Service, page: httpx.Response, body: dict, **extra: str) -> httpx.Response:
    (form,) = [f for f in forms(page.text) if f.action == "/lti/submit"]
    answers = {f"answer_{k}": v for k, v in body.get("answers", {}).items()}
    return browser.submit(form, lti.url, code=body["code"], explanation=body.get("explanation", ""),
                          claimed_output=body.get("claimed_output", ""), **answers, **extra)


# --- registration ---------------------------------------------------------------------------------

def test_registration_api_stores_rotates_and_revokes(lti, platform, registered):
    course, view = registered
    admin = course.client("admin")
    assert view["tool"]["login_url"] == f"{lti.url}/lti/login" and view["tool"]["jwks_url"] == f"{lti.url}/lti/jwks"
    assert view["frame_origins"] == [platform.url] and [d["deployment_id"] for d in view["deployments"]] == ["dep-1"]
    assert [p["id"] for p in admin.get("/v1/lti/platforms").json()] == [view["id"]]

    again = admin.post("/v1/lti/platforms", json=platform.tool_registration())
    assert again.status_code == 422 and again.json()["detail"][0]["loc"] == ["body", "client_id"]
    internal = admin.post("/v1/lti/platforms", json={**platform.tool_registration(), "client_id": "other",
                                                     "auth_token_url": "http://10.0.0.8/token"})
    assert internal.status_code == 422 and internal.json()["detail"][0]["loc"] == ["body", "auth_token_url"]
    both = admin.post("/v1/lti/platforms", json={**platform.tool_registration(), "client_id": "x", "key_set": {"keys": [{}]}})
    assert both.status_code == 422
    assert course.client("read").get("/v1/lti/platforms").status_code == 403, "the admin scope only"
    assert lti.new_course().client("admin").get(f"/v1/lti/platforms/{view['id']}").status_code == 404

    # A deployment added and revoked; the platform's rotated key set URL replaces the cached keys.
    added = admin.post(f"/v1/lti/platforms/{view['id']}/deployments", json={"deployment_id": "dep-2"})
    assert added.status_code == 201 and {d["deployment_id"] for d in added.json()["deployments"]} == {"dep-1", "dep-2"}
    revoked = admin.delete(f"/v1/lti/platforms/{view['id']}/deployments/dep-2")
    assert [d["revoked_at"] is not None for d in revoked.json()["deployments"]] == [False, True]
    patched = admin.patch(f"/v1/lti/platforms/{view['id']}", json={"key_set_url": f"{platform.url}/jwks"})
    assert patched.status_code == 200 and not patched.json()["key_set_cached"]


# --- deep linking, launch, score -----------------------------------------------------------------

def test_deep_link_carries_the_exercise_and_its_line_item(lti, platform, linked):
    (items,) = platform.state.deep_link_items
    (item,) = items
    assert item["type"] == "ltiResourceLink" and item["url"] == f"{lti.url}/lti/launch"
    assert item["custom"] == {"exercise": EXERCISE, "pass_threshold": "8"}
    assert item["lineItem"] == {"scoreMaximum": 10, "label": item["title"], "resourceId": EXERCISE, "tag": "kernelgrade"}
    assert "8" in item["text"], "the pass line is said"
    assert platform.state.line_items[linked.line_item]["scoreMaximum"] == 10


def test_graded_submission_is_posted_and_a_ta_decision_reposts_it(lti, platform, registered, linked, browser):
    course, _ = registered
    page = browser.launch(platform, user="alice", hint=f"link:{linked.id}")
    assert page.status_code == 200, page.text[:1000]
    assert "Alice Liddell" in page.text and EXERCISE in page.text
    csp = page.headers["content-security-policy"]
    assert f"frame-ancestors 'self' {platform.url}" in csp and "x-frame-options" not in page.headers
    (form,) = [f for f in forms(page.text) if f.action == "/lti/submit"]
    assert set(form.fields) >= {"launch", "code", "explanation", "claimed_output", "answer_q1"}
    assert "answer_explanation" not in form.fields, "the explanation is its own field, asked once"
    assert not {"sub", "student", "user", "email"} & set(form.fields), "no identity in the form"

    body = {**template_body("values != 0"), "answers": {"q2": PARTIAL_Q2}}
    landed = submit(browser, lti, page, body, sub="bob", student="bob")  # typed identity is ignored
    assert landed.status_code == 200 and "/lti/feedback/" in str(landed.url)
    assert f"frame-ancestors 'self' {platform.url}" in landed.headers["content-security-policy"]
    (row,) = lti_submissions(lti, "alice")
    assert not lti_submissions(lti, "bob")
    admin = course.client("submit", "read", "review")
    graded = wait_final(admin, row.id)
    report = graded["report"]
    assert report["score"]["provisional"] and report["vetoes"][0]["status"] == "suspected"

    first = wait_for(lambda: platform.scores(linked) or None, timeout=60, what="the score at the platform")
    assert first[0] == {**first[0], "userId": "alice", "scoreGiven": report["score"]["total"], "scoreMaximum": 10,
                        "gradingProgress": "PendingManual", "activityProgress": "Submitted"}

    # The TA's queue shows the student's name.
    review = lti.client()
    login = review.get("/review/login")
    csrf = forms(login.text)[0].fields["csrf"]
    assert review.post("/review/login", data={"key": course.key("review"), "csrf": csrf}).status_code in (200, 303)
    queue = review.get(f"/review?course={course.id}")
    assert "Alice Liddell" in queue.text and row.id[:8] in queue.text

    for decision in ({"item": "q2", "points": 1.5, "reason": "因果链基本完整"},
                     {"veto": "coincidental_pass", "action": "dismiss", "reason": "探针失败另有原因"}):
        assert admin.post(f"/v1/submissions/{row.id}/decisions", json=decision).status_code == 201
    final = admin.get(f"/v1/submissions/{row.id}").json()
    assert not final["report"]["score"]["provisional"]
    posted = wait_for(lambda: (s := platform.scores(linked)) and s[-1]["gradingProgress"] == "FullyGraded" and s,
                      timeout=60, what="the re-posted score")
    assert posted[-1]["scoreGiven"] == final["report"]["score"]["total"] and posted[-1]["userId"] == "alice"
    assert [s["timestamp"] for s in posted] == sorted(s["timestamp"] for s in posted)
    wait_for(lambda: all(p["state"] in ("posted", "superseded") for p in admin.get(f"/v1/submissions/{row.id}")
                         .json()["lti_scores"]), timeout=30, what="every post settled")
    history = admin.get(f"/v1/submissions/{row.id}").json()["lti_scores"]
    assert history[-1]["state"] == "posted" and history[-1]["attempts"][-1]["ok"]
    assert all(p["attempts"] for p in history if p["state"] == "posted"), "every attempt is recorded"


def test_roster_comes_from_names_and_roles(lti, platform, linked, browser):
    assert browser.launch(platform, user="bob", hint=f"link:{linked.id}").status_code == 200

    def carol():
        with lti.sessions() as session:
            return session.scalar(select(LtiMember).where(LtiMember.sub == "carol"))

    member = wait_for(carol, timeout=30, what="the roster synchronised")
    assert member.name == "Carol Wu" and member.email == "carol@example.edu", "carol never launched: NRPS named her"


def test_students_see_only_their_own_work(lti, platform, linked, browser):
    bob = browser.launch(platform, user="bob", hint=f"link:{linked.id}")
    assert submit(browser, lti, bob, cheap_body("bob's")).status_code == 200
    (bobs,) = lti_submissions(lti, "bob")
    bob_page = Browser().launch(platform, user="bob", hint=f"link:{linked.id}").text
    alice_page = Browser().launch(platform, user="alice", hint=f"link:{linked.id}").text
    alice_rows = [s.feedback_token for s in lti_submissions(lti, "alice")]
    assert bobs.feedback_token in bob_page and not any(token in bob_page for token in alice_rows)
    assert bobs.feedback_token not in alice_page
    assert 'id="staff"' not in bob_page
    teacher_page = Browser().launch(platform, user="teacher", hint=f"link:{linked.id}").text
    assert 'id="staff"' in teacher_page and "Bob Chen" in teacher_page


# --- refusals ------------------------------------------------------------------------------------------

def _tamper(token: str) -> str:
    header, payload, signature = token.split(".")
    claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    claims["sub"] = "teacher"  # a student making themselves the instructor
    forged = base64.urlsafe_b64encode(json.dumps(claims).encode()).rstrip(b"=").decode()
    return f"{header}.{forged}.{signature}"


def test_bad_signature_is_refused(lti, platform, linked, browser):
    form = browser.launch_form(platform, user="alice", hint=f"link:{linked.id}")
    response = browser.submit(form, platform.url, id_token=_tamper(form.fields["id_token"]))
    assert response.status_code == 401
    refusal(response, "bad_signature")


def test_replayed_launch_is_refused(lti, platform, linked, browser):
    form = browser.launch_form(platform, user="alice", hint=f"link:{linked.id}")
    assert browser.submit(form, platform.url).status_code == 200
    again = browser.submit(form, platform.url)
    assert again.status_code == 401
    refusal(again, "replayed_nonce")


def test_unknown_deployment_is_refused(lti, platform, linked, browser):
    platform.deployment_id = "dep-elsewhere"
    try:
        response = browser.launch(platform, user="alice", hint=f"link:{linked.id}")
    finally:
        platform.deployment_id = "dep-1"
    assert response.status_code == 403
    refusal(response, "unknown_deployment")
    assert "dep-elsewhere" in response.text


def test_expired_token_is_refused(lti, platform, linked, browser):
    platform.id_token_expiration = -600
    try:
        response = browser.launch(platform, user="alice", hint=f"link:{linked.id}")
    finally:
        platform.id_token_expiration = 300
    assert response.status_code == 401
    refusal(response, "expired")


def test_launch_without_the_login_cookie_is_refused(lti, platform, linked, browser):
    form = browser.launch_form(platform, user="alice", hint=f"link:{linked.id}")
    stranger = Browser()
    try:
        response = stranger.submit(form, platform.url)
    finally:
        stranger.close()
    assert response.status_code == 401
    refusal(response, "bad_state")


def test_unregistered_and_revoked_platforms_are_refused(lti, registered, browser):
    with Platform(lti.url, client_id="not-registered") as stranger:
        response = browser.open(f"{stranger.url}/start?user=alice&hint=deeplink")
        assert response.status_code == 403
        refusal(response, "unknown_platform")
    with Platform(lti.url, client_id="soon-revoked") as revoked:
        course = lti.new_course()
        admin = course.client("admin")
        created = admin.post("/v1/lti/platforms", json={**revoked.tool_registration(), "client_id": "soon-revoked"})
        assert browser.launch(revoked, user="teacher", hint="deeplink").status_code == 200
        assert admin.delete(f"/v1/lti/platforms/{created.json()['id']}").json()["revoked_at"]
        response = browser.open(f"{revoked.url}/start?user=teacher&hint=deeplink")
        assert response.status_code == 403
        refusal(response, "platform_revoked")


def test_a_stale_or_forged_launch_id_cannot_submit(lti, browser):
    response = browser.http.post(f"{lti.url}/lti/submit", data={"launch": "lti1p3-launch-00000000-0000-0000-0000-000000000000",
                                                                "code": "x = 1"})
    assert response.status_code == 401
    refusal(response, "launch_expired")


# --- the tool's keys ----------------------------------------------------------------------------------

def test_tool_key_rotation_keeps_the_old_key_published(lti, platform, registered, browser):
    before = httpx.get(f"{lti.url}/lti/jwks").json()["keys"]
    with lti.sessions() as session:
        new = keys.rotate(session)
        retired = [k.kid for k in session.scalars(select(LtiToolKey).where(LtiToolKey.retired_at.is_not(None)))]
    after = httpx.get(f"{lti.url}/lti/jwks").json()["keys"]
    assert {k["kid"] for k in before} <= {k["kid"] for k in after} and new.kid in {k["kid"] for k in after}
    assert set(retired) >= {k["kid"] for k in before}
    # A deep-linking answer signed with the new key is accepted by the platform (which reads the JWKS).
    page = browser.launch(platform, user="teacher", hint="deeplink")
    (pick,) = forms(page.text)
    (back,) = forms(browser.submit(pick, lti.url, exercise=EXERCISE).text)
    header = json.loads(base64.urlsafe_b64decode(back.fields["JWT"].split(".")[0] + "=="))
    assert header["kid"] == new.kid
    assert browser.submit(back, lti.url).status_code == 200


def test_example_answer_full_marks_is_fully_graded(lti, platform, linked, browser):
    """A correct answer: posted once as FullyGraded with 10 points (no TA needed)."""
    page = browser.launch(platform, user="carol", hint=f"link:{linked.id}")
    assert submit(browser, lti, page, example_body()).status_code == 200
    (row,) = lti_submissions(lti, "carol")
    wait_for(lambda: lti.row(row.id).status == "graded", timeout=120, what="carol's grading")

    def carols():
        return [s for s in platform.scores(linked) if s["userId"] == "carol"] or None

    (score,) = wait_for(carols, timeout=60, what="carol's score")
    with lti.sessions() as session:
        report = session.get(Submission, row.id)
    assert score["gradingProgress"] == "FullyGraded" and score["activityProgress"] == "Completed"
    assert score["scoreGiven"] == 10 and report.status == "graded"

    def state():
        with lti.sessions() as session:
            return session.scalar(select(LtiScorePost.state).where(LtiScorePost.submission_id == row.id)) == "posted"

    wait_for(state, timeout=30, what="the post recorded as posted")  # recorded once the platform answered


def test_a_link_without_a_line_item_gets_one_created(lti, platform, registered, browser):
    """A link the LMS made by hand (custom exercise=..., no line item): kernelgrade creates the
    placement's line item through AGS at its first score, and posts there."""
    link = platform.add_link("made by hand", {"exercise": EXERCISE})
    page = browser.launch(platform, user="bob", hint=f"link:{link.id}")
    assert submit(browser, lti, page, cheap_body("by hand")).status_code == 200

    def created():
        return [i for i in platform.state.line_items.values() if i.get("resourceLinkId") == link.id] or None

    (item,) = wait_for(created, timeout=60, what="the line item kernelgrade creates")
    assert item["scoreMaximum"] == 10 and item["tag"] == "kernelgrade" and item["resourceId"] == EXERCISE
    link.line_item = item["id"].rsplit("/", 1)[-1]
    (score,) = wait_for(lambda: platform.scores(link) or None, timeout=60, what="bob's score on the new line item")
    assert score["userId"] == "bob" and score["gradingProgress"] == "FullyGraded"


def test_a_hint_that_costs_points_reposts_the_score_less_its_cost(lti, platform, registered, linked, browser):
    """The course charges 0.5 per hint level: the student's two levels re-post the score to the
    platform with 1 point off, the comment says so, and the gradebook has the same number."""
    course, _ = registered
    admin = course.client("admin", "read")
    admin.put("/v1/course/policy", json={"hint_cost": 0.5}).raise_for_status()
    platform.state.users["dora"] = User("dora", "Dora Ma", "dora@example.edu", [LEARNER])  # this test's own student
    try:
        page = browser.launch(platform, user="dora", hint=f"link:{linked.id}")
        assert submit(browser, lti, page, example_body()).status_code == 200
        (row,) = lti_submissions(lti, "dora")
        wait_for(lambda: lti.row(row.id).status == "graded", timeout=120, what="dora's grading")

        def doras(count: int):
            return lambda: (s := [s for s in platform.scores(linked) if s["userId"] == "dora"]) and len(s) >= count and s

        (first,) = wait_for(doras(1), timeout=60, what="dora's score")
        assert first["scoreGiven"] == 10
        student = lti.client()  # the feedback token is the student's key
        for _ in range(2):
            assert student.post(f"/v1/feedback/{row.feedback_token}/hints", json={}).status_code == 201
        def less_the_hints():
            scores = doras(2)()
            return scores if scores and scores[-1]["scoreGiven"] == 9.0 else None

        # Each level re-posts (a post still waiting is superseded by the next): the last one is 10 − 2 × 0.5.
        last = wait_for(less_the_hints, timeout=60, what="dora's score after the hints")[-1]
        assert last["scoreGiven"] == 9.0 and last["scoreMaximum"] == 10 and last["gradingProgress"] == "FullyGraded"
        assert "1" in last["comment"] and ("提示" in last["comment"] or "Hints" in last["comment"])
        assert last["timestamp"] > first["timestamp"]
        (book,) = [r for r in admin.get("/v1/grades").json()["rows"] if r["submission_id"] == row.id]
        assert book["points"] == last["scoreGiven"] and book["hint_cost"] == 1.0
        # Her activity page, and the instructor's, show the number the LMS has, not the rubric total:
        # with the total beside it and why, in the page's language.
        words = texts(lti.row(row.id).language)
        for user in ("dora", "teacher"):
            page = Browser().launch(platform, user=user, hint=f"link:{linked.id}").text
            shown = re.search(rf'data-submission="{row.id}">(.*?)</(li|tr)>', page, re.S)
            assert shown, page[:3000]
            assert '<strong class="counted">9 / 10</strong>' in shown[1] and 'class="counts"' in shown[1], shown[1]
            assert words["lti_raw_total"].format(total=10, max=10) in shown[1], shown[1]
            assert ("提示扣分：1 分" if words["lang"] == "zh-CN" else "Hints: 1 points off") in shown[1], shown[1]
        # So does the feedback page she lands on from the LMS, in either language: the score the LMS
        # has, not the rubric total, with the total beside it and why.
        for language, hints_line in (("zh", "提示扣分：1 分"), ("en", "Hints: 1 points off")):
            words = texts(language)
            page = student.get(f"/lti/feedback/{row.feedback_token}", params={"lang": language}).text
            counted = re.search(r'id="lms-grade">(.*?)<p class="muted small">', page, re.S)
            assert counted, page[:3000]
            assert '<strong class="counted">9 / 10</strong>' in counted[1] and 'class="counts"' in counted[1]
            assert words["lti_raw_total"].format(total=10, max=10) in counted[1] and hints_line in counted[1]
            assert re.search(r'<span class="big">9</span>', page), "the big number is the score that counts"
            assert 'id="lms-grade"' not in student.get(f"/feedback/{row.feedback_token}").text, \
                "the plain feedback page (no LMS) keeps the rubric's words"
    finally:
        admin.put("/v1/course/policy", json={"hint_cost": 0}).raise_for_status()
        del platform.state.users["dora"]


def test_a_policy_change_reposts_the_grade_it_changes(lti, platform, registered, linked, browser):
    """Erin's full-marks attempt, then a worse one: under `last` the platform has the worse grade.
    The course switches to `best`: the platform gets the full marks again, with no new report, and
    the gradebook says the same; switching back posts the later attempt's grade again."""
    course, _ = registered
    admin = course.client("admin", "read")
    platform.state.users["erin"] = User("erin", "Erin Wu", "erin@example.edu", [LEARNER])  # this test's own student
    try:
        def erins(count: int, points: float):
            def check():
                scores = [s for s in platform.scores(linked) if s["userId"] == "erin"]
                return scores if len(scores) >= count and scores[-1]["scoreGiven"] == points else None
            return check

        for body, count, points in ((example_body(), 1, 10), (cheap_body(), 2, 0)):
            page = browser.launch(platform, user="erin", hint=f"link:{linked.id}")
            assert submit(browser, lti, page, body).status_code == 200
            wait_for(erins(count, points), timeout=120, what=f"erin's score {points}")
        first, second = lti_submissions(lti, "erin")
        admin.put("/v1/course/policy", json={"grade_policy": "best"}).raise_for_status()
        wait_for(erins(3, 10), timeout=60, what="the best attempt's score after the policy change")
        (row,) = [r for r in admin.get("/v1/grades").json()["rows"] if r["student_id"] == "erin"]
        assert (row["submission_id"], row["points"]) == (first.id, 10)
        admin.put("/v1/course/policy", json={"grade_policy": "last"}).raise_for_status()
        wait_for(erins(4, 0), timeout=60, what="the last attempt's score again")
        assert lti.row(second.id).status == "graded"
        # The feedback page of each attempt says whether it is the one the LMS has (`last` now).
        student = lti.client()
        for attempt, counts in ((first, False), (second, True)):
            page = student.get(f"/lti/feedback/{attempt.feedback_token}", params={"lang": "en"}).text
            assert ('class="counts"' in page, 'class="not-counts"' in page) == (counts, not counts), page[:3000]
            assert texts("en")["lti_counts_last"] in page
    finally:
        admin.put("/v1/course/policy", json={"grade_policy": "last"}).raise_for_status()
        del platform.state.users["erin"]


@pytest.mark.timeout(60)
@pytest.mark.parametrize("mode", ["trickle", "endless"])
def test_a_platform_that_never_finishes_answering_is_cut_at_the_deadline(mode):
    """Every call to a platform (its key set, token, scores and roster endpoints) goes through
    BoundedSession, from the one LTI thread that posts every course's scores. requests' timeout
    bounds each read, so a status line sent a byte every 0.3 s never timed out and held that thread;
    now the whole call ends at `lti_http_timeout_s`. An endless body stops at the size cap."""
    from service.lti.http import MAX_RESPONSE_BYTES, BoundedSession, PlatformCallRefused
    from tests.api.support import Stalling

    with Stalling(mode) as stalling, BoundedSession(timeout_s=1.0, allowed_hosts=["127.0.0.1"]) as session:
        expected = "within 1 s" if mode == "trickle" else f"more than {MAX_RESPONSE_BYTES} bytes"
        with pytest.raises(PlatformCallRefused, match=expected):
            session.get(stalling.url)
    assert stalling.connections == 1
