"""Screenshots of the pages (feedback, review queue and case, the assignment dashboard), desktop
and phone width. Written to a temporary folder in the suite (so the pages are shown to render at
both widths); `scripts/screenshots` runs this with KERNELGRADE_SCREENSHOTS=docs/screenshots to
refresh the committed ones."""
from __future__ import annotations

import os
from pathlib import Path

from tests.browser.conftest import DESKTOP, PHONE, sign_in


def test_screenshots(browser, graded, taught, service, tmp_path):
    out = Path(os.environ.get("KERNELGRADE_SCREENSHOTS") or tmp_path)
    out.mkdir(parents=True, exist_ok=True)
    feedback = graded.views["false_claim"]["links"]["feedback_page"]
    case = f"{service.url}/review/cases/{graded.views['coincidental_pass']['id']}"
    for width, viewport, extra in (("desktop", DESKTOP, {}), ("phone", PHONE, {"is_mobile": True, "has_touch": True})):
        context = browser.new_context(viewport=viewport, device_scale_factor=1, locale="zh-CN", **extra)
        try:
            page = context.new_page()

            def shoot(name: str) -> None:
                overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
                assert overflow <= 0, f"{name} is {overflow}px wider than the {width} screen"
                page.screenshot(path=out / f"{name}-{width}.png", full_page=True)

            page.goto(feedback)
            shoot("feedback")
            sign_in(page, service.url, graded.ta_key)
            shoot("review-queue")
            page.goto(case)
            shoot("review-case")
            page.goto(f"{service.url}/review/login")  # signing in with a second course's key adds it
            page.locator("#key").fill(taught.ta_key)
            page.keyboard.press("Enter")
            page.wait_for_url(f"{service.url}/review")
            page.goto(f"{service.url}/review/dashboard?course={taught.course.id}&assignment={taught.assignment}"
                      "&deadline=2026-11-30T23:59Z")
            shoot("dashboard")
        finally:
            context.close()
    shots = sorted(p.name for p in out.glob("*.png"))
    kinds = ("feedback", "review-queue", "review-case", "dashboard")
    assert {f"{kind}-{w}.png" for kind in kinds for w in ("desktop", "phone")} <= set(shots)
