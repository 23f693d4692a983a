"""LTI in a real browser: the LMS's course page shows kernelgrade in a frame; the launch (login
cookie, signed id_token) works there, the student submits in the frame and lands on their
feedback in it; a site that is not the registered LMS cannot frame that page."""
from __future__ import annotations

import contextlib
from collections.abc import Iterator

import httpx
import pytest
from fastapi import FastAPI
from fastapi.responses import HTMLResponse
from playwright.sync_api import Page

from service.db import store
from tests.api.support import api_settings, cheap_body
from tests.support.lti_platform import Browser, Platform, forms
from tests.support.servers import LiveServer, ServedApp, database

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def lms(tmp_path_factory) -> Iterator[tuple[LiveServer, Platform, str]]:
    """kernelgrade (SQLite), an LTI platform registered with it, and a link to lesson 6 made by deep linking."""
    data_dir = tmp_path_factory.mktemp("lti-browser")
    with contextlib.ExitStack() as stack:
        url = stack.enter_context(database("sqlite", data_dir))
        server = stack.enter_context(LiveServer(api_settings(url, data_dir, lti_allowed_hosts=["127.0.0.1"])))
        platform = stack.enter_context(Platform(server.url))
        with server.sessions() as session:
            store.create_course(session, "lti-browser", "LTI in a browser")
            _, key = store.create_key(session, course_id="lti-browser", scopes=["admin"])
        response = httpx.post(f"{server.url}/v1/lti/platforms", json=platform.tool_registration(),
                              headers={"Authorization": f"Bearer {key}"})
        assert response.status_code == 201, response.text
        teacher = Browser()
        (pick,) = forms(teacher.launch(platform, user="teacher", hint="deeplink").text)
        (back,) = forms(teacher.submit(pick, server.url, exercise="lesson06_mean_var").text)
        link = teacher.submit(back, server.url).json()["links"][0]
        teacher.close()
        yield server, platform, link


def test_launch_submit_and_feedback_inside_the_lms_frame(lms, page: Page):
    server, platform, link = lms
    page.goto(f"{platform.url}/course?user=alice&hint=link:{link}")
    frame = page.frame_locator("#tool")
    frame.locator("#who").wait_for()
    assert "Alice Liddell" in frame.locator("#who").inner_text()
    frame.locator("#code").fill(cheap_body("in a frame")["code"])
    frame.locator("#submit-form button[type=submit]").click()
    frame.locator("#score, #status").first.wait_for(timeout=60_000)  # the feedback page, in the frame
    tool_frame = next(f for f in page.frames if f.url.startswith(f"{server.url}/lti/feedback/"))
    assert tool_frame.parent_frame == page.main_frame


def test_another_site_cannot_frame_the_feedback(lms, page: Page, browser):
    server, platform, link = lms
    student = Browser()
    landed = student.submit([f for f in forms(student.launch(platform, user="bob", hint=f"link:{link}").text)
                             if f.action == "/lti/submit"][0], server.url, code=cheap_body("bob")["code"])
    student.close()
    feedback = str(landed.url)
    # The registered LMS may frame it...
    page.goto(f"{platform.url}/course?user=bob&hint=x&tool_page={feedback}")
    page.frame_locator("#tool").locator("h1").first.wait_for()
    assert "lesson06_mean_var" in page.frame_locator("#tool").locator("main").inner_text()
    # ...a site that is not the LMS may not: Chromium refuses to render it (frame-ancestors).
    evil = FastAPI()
    evil.get("/")(lambda: HTMLResponse(f'<link rel="icon" href="data:,"><iframe id="tool" src="{feedback}"></iframe>'))
    context = browser.new_context()
    refused: list[str] = []
    other_page = context.new_page()
    other_page.on("console", lambda msg: refused.append(msg.text) if "frame-ancestors" in msg.text else None)
    try:
        with ServedApp(evil, probe="/") as other:
            other_page.goto(other.url)
            other_page.wait_for_timeout(1000)
            assert refused and server.url in refused[0] and f"frame-ancestors 'self' {platform.url}" in refused[0], refused
            shown = next(f for f in other_page.frames if f is not other_page.main_frame).content()
            assert "lesson06_mean_var" not in shown, "nothing of the feedback page was shown"
    finally:
        context.close()
