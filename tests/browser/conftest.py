"""Fixtures of the browser tests: a real server (tests/support/servers.py) on a fresh PostgreSQL
database, submissions graded for real in the bubblewrap sandbox (Triton interpreter on a CPU), and
Debian's Chromium driven by Playwright. Nothing is mocked and nothing is skipped: without
Chromium or bubblewrap the tests fail, saying what to install (scripts/setup installs both)."""
from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from playwright.sync_api import Browser, Page, sync_playwright

from tests.api.support import Course, Receiver, Service, api_settings, postgres_up, wait_final
from tests.browser import scenario
from tests.support.servers import POSTGRES_ADMIN, LiveServer, database

pytestmark = pytest.mark.browser

DESKTOP = {"width": 1280, "height": 900}
PHONE = {"width": 390, "height": 844}
TA_LABEL = "TA Lin"


def chromium_path() -> str:
    found = os.environ.get("KERNELGRADE_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
    if not found:
        pytest.fail("Chromium is not installed: run scripts/setup (apt-get install chromium)")
    return found


@pytest.fixture(scope="session")
def service(tmp_path_factory) -> Iterator[Service]:
    if shutil.which("bwrap") is None:
        pytest.fail("bubblewrap (bwrap) is not installed: run scripts/setup")
    if not postgres_up():
        pytest.fail(f"PostgreSQL is not reachable at {POSTGRES_ADMIN}")
    data_dir = tmp_path_factory.mktemp("browser")
    with contextlib.ExitStack() as stack:
        url = stack.enter_context(database("postgresql", data_dir))
        settings = api_settings(url, data_dir)
        server = stack.enter_context(LiveServer(settings))
        svc = Service(server, settings, "postgresql")
        stack.callback(svc.close_clients)
        yield svc


@dataclass
class Graded:
    course: Course
    ta_key: str
    views: dict[str, dict[str, Any]]  # scenario name -> the submission's API view once graded
    receiver: Receiver
    order: list[str] = field(default_factory=list)  # scenario names in queue order


@pytest.fixture(scope="session")
def graded(service) -> Iterator[Graded]:
    """The three flagged cases of one course, graded one after the other (so the queue order is
    known), the unverified claim with a webhook receiver."""
    course = service.new_course()
    client = course.client("submit", "read")
    ta_key = course.key("review", name=TA_LABEL)
    with Receiver(fail_first=0) as receiver:
        views = {}
        for name, make in scenario.FLAGGED.items():
            body = make()
            if name == "unverified_claim":
                body["callback_url"] = receiver.url
            views[name] = wait_final(client, client.post("/v1/submissions", json=body).json()["id"])
            assert views[name]["status"] == "graded", f"{name}: {views[name].get('message')}"
        # Settled cases in a course of their own: their explanation describes another fill, which a TA
        # looks at (needs_review), and this course's queue holds exactly the three flagged cases above.
        settled = service.new_course().client("submit", "read")
        for name, make in scenario.SETTLED.items():
            views[name] = wait_final(settled, settled.post("/v1/submissions", json=make()).json()["id"])
            assert views[name]["status"] == "graded", f"{name}: {views[name].get('message')}"
        yield Graded(course, ta_key, views, receiver, order=list(scenario.FLAGGED))


@dataclass
class Hostile:
    course: Course
    ta_key: str
    view: dict[str, Any]


@pytest.fixture(scope="session")
def hostile(service) -> Hostile:
    course = service.new_course()
    client = course.client("submit", "read")
    view = wait_final(client, client.post("/v1/submissions", json=scenario.hostile_text()).json()["id"])
    return Hostile(course, course.key("review", name="TA Xss"), view)


@pytest.fixture(scope="session")
def browser() -> Iterator[Browser]:
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium_path(), args=["--no-sandbox"])
        try:
            yield browser
        finally:
            browser.close()


@pytest.fixture
def page(browser) -> Iterator[Page]:
    context = browser.new_context(viewport=DESKTOP, locale="zh-CN")
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
    try:
        yield page
    finally:
        context.close()
    assert not errors, f"errors in the browser console: {errors}"


def sign_in(page: Page, base_url: str, key: str) -> None:
    """Open /review, get sent to the sign-in form, type the key and press Enter."""
    page.goto(f"{base_url}/review")
    assert "/review/login" in page.url
    page.locator("#key").click()
    page.keyboard.type(key)
    page.keyboard.press("Enter")
    page.wait_for_url(f"{base_url}/review")


@dataclass
class Taught:
    course: Course
    ta_key: str
    assignment: str


@pytest.fixture(scope="session")
def taught(service) -> Taught:
    """A class for the dashboard: 60 students, up to 6 attempts each before a deadline, written
    through the real store (tests/support/class_reports.py)."""
    from datetime import UTC, datetime

    from tests.support.class_reports import generate, write

    course = service.new_course()
    with service.sessions() as session:
        for attempt in generate(60, 6, deadline=datetime(2026, 11, 30, 23, 59, tzinfo=UTC), seed=23):
            write(session, course.id, "hw6", attempt)
    return Taught(course, course.key("review", name="TA Dashboard"), "hw6")
