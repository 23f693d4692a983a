"""The TA review pages in Chromium: sign in with a key, work through three flagged cases with the
keyboard (confirm a veto, dismiss a veto, override an item), then check through the API that the
reports were re-issued with history, the decisions audited, the webhook fired, and the CSV export.
Also: CSRF, the session cookie, another course's TA."""
from __future__ import annotations

import csv
import io
import re

import httpx
from playwright.sync_api import expect

from tests.api.support import wait_for
from tests.browser.conftest import TA_LABEL, sign_in


def test_ta_works_through_the_queue_with_the_keyboard(page, graded, service):
    base = service.url
    sign_in(page, base, graded.ta_key)
    ids = [graded.views[name]["id"] for name in graded.order]

    rows = page.locator("#queue tbody tr")
    expect(rows).to_have_count(3)
    assert [h.split("/review/cases/")[1].split("?")[0] for h in rows.evaluate_all("rs => rs.map(r => r.dataset.href)")] == ids
    expect(rows.nth(0)).to_have_class(re.compile("selected"))
    page.keyboard.press("j")
    expect(rows.nth(1)).to_have_class(re.compile("selected"))
    page.keyboard.press("k")
    expect(rows.nth(0)).to_have_class(re.compile("selected"))
    page.keyboard.press("Enter")

    # 1. coincidental_pass: the probe that failed next to the check that passed; confirm the veto.
    page.wait_for_url(re.compile(f"/review/cases/{ids[0]}"))
    veto = page.locator('article.veto[data-rule="coincidental_pass"]')
    expect(veto).to_contain_text("Probe that failed")
    expect(veto).to_contain_text("probe.zeros")
    expect(veto).to_contain_text("Check that passed")
    expect(page.locator("#code .diff mark.fill")).to_have_text("values != 0")
    expect(page.locator('article.item[data-id="q2"] blockquote.answer mark.concept').first).to_be_visible()
    page.keyboard.press("c")
    expect(veto.locator('input[value="confirm"]')).to_be_checked()
    page.keyboard.type("values != 0 按数值定义掩码，探针 zeros 证明推理是错的")
    page.keyboard.press("Control+Enter")
    expect(page.locator("#flash")).to_contain_text("veto:coincidental_pass")
    expect(veto).to_contain_text("confirmed")

    # 2. unverified_claim: the claimed output next to the real one; dismiss the veto.
    page.keyboard.press("n")
    page.wait_for_url(re.compile(f"/review/cases/{ids[1]}"))
    veto = page.locator('article.veto[data-rule="unverified_claim"]')
    expect(veto.locator("pre.claimed")).to_contain_text("AssertionError")
    expect(veto).to_contain_text("given check: passed")
    page.keyboard.press("d")
    expect(veto.locator('input[value="dismiss"]')).to_be_checked()
    page.keyboard.type("学生贴的是改对之前的输出，代码本身是对的，不算造假")
    page.keyboard.press("Control+Enter")
    expect(page.locator("#flash")).to_contain_text("veto:unverified_claim")

    # 3. low confidence: override q2's points.
    page.keyboard.press("n")
    page.wait_for_url(re.compile(f"/review/cases/{ids[2]}"))
    page.keyboard.press("o")
    points = page.locator('article.item[data-id="q2"] input[name="points"]')
    expect(points).to_be_focused()
    page.keyboard.type("1.5")
    page.keyboard.press("Tab")
    page.keyboard.type("因果链基本完整，缺少第一次求和为何安全")
    page.keyboard.press("Control+Enter")
    expect(page.locator("#flash")).to_contain_text("item:q2")
    expect(page.locator('article.item[data-id="q2"] .points')).to_have_text("1.5 / 2")
    expect(page.locator("#no-next")).to_be_visible()
    page.keyboard.press("q")
    page.wait_for_url(re.compile("/review"))
    expect(page.locator("#queue tbody tr")).to_have_count(1)  # the first case's q2 still waits

    # The API returns the re-issued reports, with history, and the audited decisions.
    api = graded.course.client("read")
    expected = {ids[0]: ("veto:coincidental_pass", {"status": "suspected"}, {"status": "confirmed"}),
                ids[1]: ("veto:unverified_claim", {"status": "suspected"}, {"status": "dismissed"}),
                ids[2]: ("item:q2", None, {"points": 1.5, "status": "partial"})}
    for sid, (target, before, after) in expected.items():
        view = api.get(f"/v1/submissions/{sid}").json()
        assert [(h["seq"], h["reason"], h["current"]) for h in view["history"]] == [(1, "initial", False), (2, "review", True)]
        (decision,) = api.get(f"/v1/submissions/{sid}/decisions").json()
        assert decision["target"] == target and decision["after"] == after
        assert before is None or decision["before"] == before
        assert TA_LABEL in decision["actor"] and len(decision["reason"]) > 3
    reports = {sid: api.get(f"/v1/submissions/{sid}/report").json() for sid in ids}
    assert reports[ids[0]]["vetoes"][0]["status"] == "confirmed" and not reports[ids[0]]["score"]["passed"]
    assert reports[ids[1]]["vetoes"][0]["status"] == "dismissed"
    q2 = next(i for i in reports[ids[2]]["items"] if i["id"] == "q2")
    assert q2["points"] == 1.5 and q2["evidence"]["ta_decision"]["by"].endswith(f"({TA_LABEL})")

    # The platform's webhook got the re-issued report of the case that had a callback.
    def reissued():
        bodies = [r.body for r in graded.receiver.snapshot()]
        return len(bodies) >= 2 and b'"dismissed"' in bodies[-1]
    wait_for(reissued, timeout=30, what="the webhook with the re-issued report")

    # The CSV export of the course's decisions, from the signed-in browser and with a key.
    export = page.request.get(f"{base}/review/export.csv?course={graded.course.id}")
    assert export.status == 200 and export.headers["content-type"].startswith("text/csv")
    rows_csv = list(csv.DictReader(io.StringIO(export.text())))
    assert [r["submission_id"] for r in rows_csv] == ids
    q2_before = next(i for i in graded.views["low_confidence"]["report"]["items"] if i["id"] == "q2")["points"]
    assert [(r["target"], r["action"], r["before"], r["after"]) for r in rows_csv] == [
        ("veto:coincidental_pass", "confirm", "suspected", "confirmed"),
        ("veto:unverified_claim", "dismiss", "suspected", "dismissed"),
        ("item:q2", "override", f"{q2_before:g}", "1.5")]
    assert all(TA_LABEL in r["who"] and r["reason"] and r["when"].endswith("Z") for r in rows_csv)
    keyed = httpx.get(f"{base}/review/export.csv", params={"course": graded.course.id},
                      headers={"Authorization": f"Bearer {graded.ta_key}"})
    assert keyed.status_code == 200 and keyed.text == export.text()
    assert httpx.get(f"{base}/review/export.csv", params={"course": graded.course.id},
                     headers={"Authorization": f"Bearer {graded.course.key('read')}"}).status_code == 401


def test_filters_narrow_the_queue(page, service):
    """Flag and age filters, in SQL, on a course of its own."""
    from tests.browser import scenario
    from tests.api.support import wait_final

    course = service.new_course()
    client = course.client("submit", "read")
    wait_final(client, client.post("/v1/submissions", json=scenario.low_confidence()).json()["id"])
    sign_in(page, service.url, course.key("review"))
    expect(page.locator("#queue tbody tr")).to_have_count(1)
    page.select_option('select[name="flag"]', "coincidental_pass")
    page.locator("#filters button[type=submit]").click()
    expect(page.locator("#empty")).to_be_visible()
    page.select_option('select[name="flag"]', "needs_review")
    page.select_option('select[name="age"]', "1d")
    page.locator("#filters button[type=submit]").click()
    expect(page.locator("#empty")).to_be_visible()  # graded seconds ago, not a day
    page.select_option('select[name="age"]', "")
    page.locator("#filters button[type=submit]").click()
    expect(page.locator("#queue tbody tr")).to_have_count(1)


def _signed_in_client(base: str, key: str) -> tuple[httpx.Client, str]:
    client = httpx.Client(base_url=base)
    form = client.get("/review/login")
    csrf = re.search(r'name="csrf" value="([^"]+)"', form.text).group(1)
    cookie = form.headers["set-cookie"].lower()
    assert "httponly" in cookie and "samesite=lax" in cookie and "path=/review" in cookie
    response = client.post("/review/login", data={"key": key, "csrf": csrf, "next": "/review"})
    assert response.status_code == 303, response.text
    page = client.get("/review")
    return client, re.search(r'name="csrf" value="([^"]+)"', page.text).group(1)


def test_forms_need_the_csrf_token_and_a_reason(service):
    course = service.new_course()
    submitter = course.client("submit", "read")
    from tests.browser import scenario
    from tests.api.support import wait_final

    sid = wait_final(submitter, submitter.post("/v1/submissions", json=scenario.low_confidence()).json()["id"])["id"]
    key = course.key("review")
    client, csrf = _signed_in_client(service.url, key)
    url = f"/review/cases/{sid}/decisions"
    decision = {"target": "item:q2", "points": "2", "reason": "complete answer"}

    assert client.post(url, data=decision).status_code == 403, "no token"
    assert client.post(url, data={**decision, "csrf": "forged"}).status_code == 403, "wrong token"
    stranger = httpx.Client(base_url=service.url)  # another browser: its own session, no sign-in
    assert stranger.post(url, data={**decision, "csrf": csrf}).status_code == 303  # sent to sign in
    assert client.post(url, data={**decision, "csrf": csrf, "reason": ""}).status_code == 422, "a reason is required"
    assert client.post(url, data={**decision, "csrf": csrf, "points": "3"}).status_code == 422, "at most max_points"
    assert submitter.get(f"/v1/submissions/{sid}/decisions").json() == [], "nothing was recorded"
    assert client.post(url, data={**decision, "csrf": csrf}).status_code == 303
    assert len(submitter.get(f"/v1/submissions/{sid}/decisions").json()) == 1

    # Sign-in itself needs the token, and a key with the review scope.
    fresh = httpx.Client(base_url=service.url)
    token = re.search(r'name="csrf" value="([^"]+)"', fresh.get("/review/login").text).group(1)
    assert fresh.post("/review/login", data={"key": key}).status_code == 403
    assert fresh.post("/review/login", data={"key": course.key("read"), "csrf": token}).status_code == 401
    assert fresh.post("/review/login", data={"key": key, "csrf": token, "next": "https://evil.example/"}).headers["location"] == "/review"


def test_another_courses_ta_sees_nothing(graded, service):
    other = service.new_course()
    client, _ = _signed_in_client(service.url, other.key("review"))
    sid = graded.views["coincidental_pass"]["id"]
    assert client.get(f"/review/cases/{sid}").status_code == 404
    assert sid not in client.get("/review").text
    assert client.get("/review/export.csv", params={"course": graded.course.id}).status_code == 404


def test_a_revoked_key_ends_the_session(service):
    from service.db import store

    course = service.new_course()
    key = course.key("review", name="short-lived")
    client, _ = _signed_in_client(service.url, key)
    assert client.get("/review").status_code == 200
    with service.sessions() as session:
        store.revoke_key(session, course.key_id("short-lived"))
    response = client.get("/review")
    assert response.status_code == 303 and response.headers["location"].startswith("/review/login")
