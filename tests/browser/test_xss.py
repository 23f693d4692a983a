"""Student text is shown as text: an answer, an explanation, a claimed output and a code comment
full of HTML and script render inert, on the student's page and on the TA's."""
from __future__ import annotations

from playwright.sync_api import expect

from tests.browser.conftest import sign_in
from tests.browser.scenario import XSS


def _inert(page) -> None:
    assert page.evaluate("window.__xss") is None, "student script ran"
    assert page.locator('img[src="x"]').count() == 0, "student HTML became an element"
    assert page.locator("b", has_text="bold?").count() == 0
    assert page.evaluate("Array.from(document.scripts).every(s => s.src.endsWith('/static/review.js'))")


def test_feedback_page_shows_student_html_as_text(page, hostile):
    page.goto(hostile.view["links"]["feedback_page"])
    expect(page.locator('li.item[data-id="q2"]')).to_contain_text("<script>")  # first line or folded rest
    _inert(page)


def test_review_page_shows_student_html_as_text(page, hostile, service):
    sign_in(page, service.url, hostile.ta_key)
    page.goto(f"{service.url}/review/cases/{hostile.view['id']}")
    answer = page.locator('article.item[data-id="q2"] blockquote.answer')
    expect(answer).to_contain_text(XSS)
    expect(page.locator("#code")).to_contain_text(XSS)
    explanation = page.locator('article.item[data-id="code.explanation"] blockquote.answer')
    expect(explanation).to_contain_text(XSS)
    _inert(page)
