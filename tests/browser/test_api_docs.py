"""/docs (Swagger UI) and /redoc (ReDoc) render in Chromium with every request to another host
blocked, as on a machine without internet: their scripts and styles come from the server itself."""
from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from urllib.parse import urlsplit

import pytest
from playwright.sync_api import Page, Route

from tests.browser.conftest import DESKTOP

# ReDoc always asks for its own "API docs by Redocly" badge from its CDN and hides it when that fails;
# the page needs nothing else from outside (there is no option to turn the badge off).
REDOCLY_BADGE = "https://cdn.redoc.ly/redoc/logo-mini.svg"


@dataclass
class Offline:
    page: Page
    blocked: list[str] = field(default_factory=list)  # requests to other hosts, aborted
    errors: list[str] = field(default_factory=list)  # console errors other than those aborted loads


@pytest.fixture
def offline(browser, service) -> Iterator[Offline]:
    context = browser.new_context(viewport=DESKTOP)
    state = Offline(context.new_page())
    origin = urlsplit(service.url).netloc

    def only_here(route: Route) -> None:
        url = route.request.url
        if urlsplit(url).netloc == origin or url.startswith(("data:", "blob:")):
            route.continue_()
        else:
            state.blocked.append(url)
            route.abort()

    def console(message) -> None:
        if message.type == "error" and message.location.get("url") not in state.blocked:
            state.errors.append(message.text)

    state.page.route("**/*", only_here)
    state.page.on("console", console)
    state.page.on("pageerror", lambda exc: state.errors.append(str(exc)))
    try:
        yield state
    finally:
        context.close()


def test_swagger_ui_renders_offline(offline, service):
    page = offline.page
    page.goto(f"{service.url}/docs")
    page.locator(".opblock-summary-path", has_text="/v1/submissions/batch").first.wait_for(timeout=30_000)
    assert page.locator(".opblock").count() >= 10
    assert "kernelgrade" in page.locator(".info .title").inner_text()
    assert offline.blocked == [] and offline.errors == []


def test_redoc_renders_offline(offline, service):
    page = offline.page
    page.goto(f"{service.url}/redoc")
    page.get_by_text("/v1/submissions/batch").first.wait_for(state="attached", timeout=30_000)
    assert page.locator("h1", has_text="kernelgrade").count() == 1
    assert page.get_by_text("API docs by Redocly").count() == 1
    assert set(offline.blocked) <= {REDOCLY_BADGE} and offline.errors == []
