"""The assignment dashboard in Chromium, desktop and phone width: reached from the review pages by
keyboard alone, its charts drawn (SVG, no script), its numbers the API's, its example links
opening the case, its CSV downloadable with the session, and nothing wider than a phone."""
from __future__ import annotations

import csv
import io
import re
from pathlib import Path

from playwright.sync_api import expect

from tests.browser.conftest import PHONE, sign_in


def _tab_to(page, selector: str, limit: int = 60) -> None:
    """Press Tab until the element matching `selector` has the focus."""
    for _ in range(limit):
        page.keyboard.press("Tab")
        if page.evaluate(f"document.activeElement && document.activeElement.matches({selector!r})"):
            return
    raise AssertionError(f"Tab never reached {selector}")


def _take_hints(service, taught) -> None:
    """A few students ask for hint levels through the API (the feedback token is their key), once."""
    from sqlalchemy import select

    from service.db.models import Submission

    board = service.client(taught.ta_key).get("/v1/dashboard", params={"assignment": "hw6"}).json()
    if board["hints"]["taken"]:
        return
    with service.sessions() as session:
        tokens = list(session.scalars(select(Submission.feedback_token).where(
            Submission.course_id == taught.course.id, Submission.status == "graded").order_by(Submission.id).limit(6)))
    student = service.client()
    for n, token in enumerate(tokens):
        for _ in range(n % 4 + 1):  # 1, 2, 3, 4, 1, 2 levels of the first ladder offered
            assert student.post(f"/v1/feedback/{token}/hints", json={}).status_code == 201


def test_dashboard_by_keyboard_with_the_api_numbers(page, taught, service):
    _take_hints(service, taught)
    board = service.client(taught.ta_key).get("/v1/dashboard", params={"assignment": "hw6"}).json()
    sign_in(page, service.url, taught.ta_key)
    _tab_to(page, 'a[href="/review/dashboard"]')
    page.keyboard.press("Enter")
    page.wait_for_url(re.compile("/review/dashboard"))
    expect(page.locator("#assignments")).to_contain_text("hw6")
    _tab_to(page, '#assignments a')
    page.keyboard.press("Enter")
    page.wait_for_url(re.compile(r"/review/dashboard\?.*assignment=hw6"))

    o = board["overview"]
    expect(page.locator("#pass-rate")).to_have_text(f"{o['pass_rate'] * 100:.0f}%")
    expect(page.locator("#students")).to_have_text(str(o["students"]))
    expect(page.locator("#submissions")).to_have_text(str(o["submissions"]))
    # The histogram: one bar per bin with students, the pass line, the picture named in words.
    histogram = page.locator("#scores svg.chart.histogram")
    expect(histogram).to_have_attribute("role", "img")
    expect(histogram.locator("line.pass-line")).to_have_count(1)
    assert histogram.locator("rect.bar:not(.passed)").count() == sum(1 for b in board["scores"] if b["students"])
    expect(page.locator("#time svg.chart.hourly")).to_have_count(2)
    # Diagnoses ranked by students, in the lesson's words, with example links that open the case.
    rows = page.locator("li.diagnosis-row")
    expect(rows).to_have_count(len(board["diagnoses"]))
    for i, d in enumerate(board["diagnoses"]):
        expect(rows.nth(i).locator(".count")).to_have_text(str(d["students"]))
        expect(rows.nth(i).locator("blockquote")).to_have_text(d["message"])
    expect(page.locator("#items-h")).to_have_text("Per exercise item")
    families = page.locator("#families tbody tr")
    expect(families).to_have_count(len(board["case_families"]))
    f = board["case_families"][0]
    expect(families.nth(0)).to_contain_text(f"{f['failing_latest']} / {f['students']}")
    expect(page.locator("#concepts tbody tr")).to_have_count(len(board["concepts"]))
    # Hint levels taken: one row per exercise and per ladder, the API's students per level, drawn as bars.
    hints = board["hints"]
    assert hints["taken"] > 0
    rows_hints = page.locator("#hint-levels tbody tr")
    expect(rows_hints).to_have_count(len(hints["by_exercise"]) + len(hints["by_ladder"]))
    for h in [*hints["by_exercise"], *hints["by_ladder"]]:
        row = page.locator(f'#hint-levels tr[data-exercise="{h["exercise"]}"][data-ladder="{h["ladder"]}"]')
        expect(row.locator("td.level")).to_have_text([str(n) for n in h["levels"]])
        expect(row.locator("svg.level-bars")).to_have_attribute("role", "img")
    expect(page.locator("#hints-total")).to_contain_text(str(hints["taken"]))
    for i, d in enumerate(board["diagnoses"]):
        expect(rows.nth(i).locator(".hinted")).to_contain_text(str(d["hinted"]))
    _tab_to(page, 'nav.skip a[href="#hints"]')
    page.keyboard.press("Enter")
    expect(page).to_have_url(re.compile(r"#hints$"))  # waits: the press lands after focus moves

    # Skip links reach the sections by keyboard.
    _tab_to(page, 'nav.skip a[href="#diagnoses"]')
    page.keyboard.press("Enter")
    expect(page).to_have_url(re.compile(r"#diagnoses$"))
    _tab_to(page, "li.diagnosis-row a")
    example = board["diagnoses"][0]["examples"][0]
    assert page.evaluate("document.activeElement.getAttribute('href')") == f"/review/cases/{example}", board["diagnoses"][0]
    page.keyboard.press("Enter")
    expect(page).to_have_url(re.compile(f"/review/cases/{example}"))
    expect(page.locator("h1")).to_be_visible()
    page.go_back()

    # The CSV, with the signed-in session: the same numbers.
    with page.expect_download() as download:
        page.locator("#csv").click()
    rows_csv = list(csv.DictReader(io.StringIO(Path(download.value.path()).read_text(encoding="utf-8"))))
    assert {r["measure"]: r["value"] for r in rows_csv if r["section"] == "overview"}["students"] == str(o["students"])

    # In Chinese, on the same figures.
    page.locator("p.board-links a[lang=zh]").click()
    expect(page.locator("html")).to_have_attribute("lang", "zh-CN")
    expect(page.locator("#overview-h")).to_have_text("概览")


def test_dashboard_fits_a_phone(browser, taught, service):
    context = browser.new_context(viewport=PHONE, is_mobile=True, has_touch=True, locale="zh-CN")
    try:
        page = context.new_page()
        sign_in(page, service.url, taught.ta_key)
        page.goto(f"{service.url}/review/dashboard?course={taught.course.id}&assignment=hw6&deadline=2026-11-30T23:59Z")
        expect(page.locator("#scores svg.chart")).to_be_visible()
        expect(page.locator("#time svg line.marker")).to_have_count(2)  # the deadline, on both timelines
        overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
        assert overflow <= 0, f"the dashboard is {overflow}px wider than a phone"
        width = page.locator("#scores svg.chart").bounding_box()["width"]
        assert width <= PHONE["width"]
    finally:
        context.close()


def test_dashboard_needs_sign_in_and_hides_other_courses(page, taught, service):
    page.goto(f"{service.url}/review/dashboard?course={taught.course.id}&assignment=hw6")
    assert "/review/login" in page.url
    other = service.new_course()
    sign_in(page, service.url, other.key("review", name="TA Other"))
    page.goto(f"{service.url}/review/dashboard?course={taught.course.id}&assignment=hw6")
    expect(page.locator("#assignments")).to_have_count(0)  # not this TA's course: the index, and nothing of it
    expect(page.locator("body")).not_to_contain_text(taught.course.id)
