"""The TA's copied-answers page in Chromium: sign in, open it from the nav, pick the assignment, see
the two clusters (the written answer and the renamed kernel) with each pair side by side, on a
desktop and on a phone; the students who did not copy are not there, and no grade changed."""
from __future__ import annotations

import os
import re
from pathlib import Path

from playwright.sync_api import expect

from service.db.models import Submission
from tests.browser.conftest import PHONE, sign_in
from tests.support import copies_class


def _classroom(service):
    course = service.new_course()
    ids = [service.block_queue(course, body=body).id for body in copies_class.small_class()]
    return course, ids


def test_ta_sees_copied_answers_side_by_side(page, service, tmp_path):
    course, ids = _classroom(service)
    sign_in(page, service.url, course.key("review", name="TA Wu"))
    page.locator("#nav-copies").click()
    page.wait_for_url(re.compile("/review/copies"))
    expect(page.locator("#copies-note")).to_contain_text("never a penalty")
    expect(page.locator("#copies-note")).to_contain_text("不会自动扣分")
    page.locator('select[name="assignment"]').select_option(copies_class.ASSIGNMENT)
    page.locator("#copies-filters button[type=submit]").click()
    page.wait_for_url(re.compile("assignment="))

    expect(page.locator("#copies-summary")).to_contain_text("5 students")
    clusters = page.locator("section.cluster")
    expect(clusters).to_have_count(2)
    text = page.locator('section.cluster[data-kind="text"]')
    expect(text.locator(".members a.member")).to_have_text(["Alice", "Bob"])
    pair = text.locator(".side-by-side.pair")
    expect(pair).to_have_count(1)
    expect(pair.locator("pre.output").filter(has_text="仍然会算出值")).to_have_count(1)
    expect(pair.locator("pre.output").filter(has_text="依然会算出值")).to_have_count(1)
    boxes = [pair.locator("pre.output").nth(i).bounding_box() for i in (0, 1)]
    assert boxes[0]["x"] + boxes[0]["width"] <= boxes[1]["x"], "the two answers side by side on a desktop"
    # scripts/screenshots sets KERNELGRADE_SCREENSHOTS=docs/screenshots to refresh the committed ones.
    shots = Path(os.environ.get("KERNELGRADE_SCREENSHOTS") or tmp_path)
    page.screenshot(path=shots / "review-copies-desktop.png", full_page=True)

    code = page.locator('section.cluster[data-kind="code"]')
    expect(code).to_contain_text("blank 1")
    expect(code.locator("pre.output")).to_have_count(2)
    expect(code.locator("pre.output").filter(has_text="first = tl.program_id(0)")).to_have_count(1)
    expect(code.locator("pre.output").filter(has_text="pa = tl.program_id(0)")).to_have_count(1)
    expect(page.locator(".members a.member")).to_have_text(["Alice", "Bob"] * 2)  # no Carol, Dan or Erin
    expect(page.locator("#copies-summary")).to_contain_text("2 clusters")

    # A member links to the student's case; the phone lays the pair out one above the other.
    page.set_viewport_size(PHONE)
    boxes = [pair.locator("pre.output").nth(i).bounding_box() for i in (0, 1)]
    assert boxes[0]["y"] + boxes[0]["height"] <= boxes[1]["y"], "stacked on a phone"
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"], "no sideways scrolling"
    page.screenshot(path=shots / "review-copies-phone.png", full_page=True)
    with service.sessions() as session:
        assert all(session.get(Submission, sid).score_total is None for sid in ids), "no grade written"


def test_copies_page_needs_a_sign_in_and_shows_only_ones_courses(page, service):
    page.goto(f"{service.url}/review/copies?assignment={copies_class.ASSIGNMENT}")
    assert "/review/login" in page.url
    _classroom(service)  # another course's copies
    mine = service.new_course()
    sign_in(page, service.url, mine.key("review"))
    page.goto(f"{service.url}/review/copies?assignment={copies_class.ASSIGNMENT}")
    expect(page.locator("#no-assignment")).to_be_visible()
    expect(page.locator("section.cluster")).to_have_count(0)
