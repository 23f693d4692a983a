"""The student's feedback page in Chromium: the diagnosis in plain words, the failed probe with
its numbers and the padding picture, provisional and pending marks, Chinese for a Chinese
lesson, a phone-width layout, and a link that reaches one report only."""
from __future__ import annotations

import httpx
from playwright.sync_api import expect

from tests.browser.conftest import PHONE
from tests.support.english import CJK


def test_student_opens_the_link_and_sees_the_diagnosis(page, graded):
    view = graded.views["false_claim"]
    report = view["report"]
    page.goto(view["links"]["feedback_page"])

    expect(page.locator("html")).to_have_attribute("lang", "zh-CN")
    expect(page.locator("h1")).to_have_text("第 6 课：均值方差与 Mask 二次传播")
    score = page.locator("#score")
    expect(score).to_contain_text(f"{report['score']['total']:g}")
    expect(score).to_contain_text("及格线 8")
    expect(score).to_contain_text("未通过")
    # Which pass requirements hold it back, by name, and the full list with their messages.
    expect(page.locator("#held")).to_contain_text("给定检查通过")
    given = page.locator('#requirements li[data-id="given_check"]')
    expect(given).to_have_attribute("data-met", "false")
    expect(given).to_contain_text("AssertionError")
    expect(page.locator("#requirements li.requirement")).to_have_count(len(report["score"]["requirements"]))
    expect(page.locator("#score svg.score-bar")).to_be_visible()

    # The diagnosis, in words: what went wrong and why (the missing second mask).
    diagnosis = page.locator('#diagnoses .diagnosis[data-id="missing_remask"]')
    expect(diagnosis).to_contain_text("(BLOCK−N)·mean²/N")
    expect(diagnosis).to_contain_text("tl.where(mask, …, 0.0)")

    # First screen: the bar has the verdict's colour; why it did not pass (the veto); the picture
    # of the lead diagnosis next to it, not only inside a failed case.
    expect(page.locator("#score svg.score-bar rect.fill.short")).to_have_count(1)
    expect(page.locator('#why li.reason[data-id="unverified_claim"]')).to_contain_text("声称的运行结果与实际不符")
    expect(page.locator("#diagnoses .lead-picture svg.padding-row rect.lane.padding.counted")).to_have_count(31)

    # The failed probe, folded under the diagnosis: its input, error size and tolerance, and the picture.
    expect(page.locator('#failed-cases article[data-case="probe.large_mean"]')).to_be_hidden()
    page.locator("#failed-cases summary").click()
    probe = page.locator('#failed-cases article[data-case="probe.large_mean"]')
    expect(probe).to_contain_text("大均值小方差")
    expect(probe).to_contain_text("误差 / 容差")
    expect(probe).to_contain_text("容差 (var)")
    expect(probe.locator("svg.padding-row")).to_be_visible()
    expect(probe.locator("svg.padding-row rect.lane.padding.counted")).to_have_count(31)  # BLOCK 64 − N 33
    expect(probe.locator("svg.padding-row rect.lane.valid")).to_have_count(33)
    expect(probe.locator(".picture-note")).to_contain_text("mean²")

    # We ran it: the veto is confirmed, the claimed output beside ours.
    veto = page.locator('#vetoes li[data-rule="unverified_claim"]')
    expect(veto).to_contain_text("已确认")
    expect(veto.locator("pre.claimed")).to_contain_text("两个 assert_close 都通过")
    expect(veto.locator("pre.real")).to_contain_text("AssertionError")
    assert "seed" not in page.content().lower(), "seeds stay with the course"


def test_a_passed_padding_probe_shows_zeroed_padding(page, graded):
    page.goto(graded.views["low_confidence"]["links"]["feedback_page"])
    page.locator("#passed-cases summary").click()
    probe = page.locator('article[data-case="probe.large_mean"]')
    expect(probe.locator("svg.padding-row rect.lane.padding")).to_have_count(31)
    expect(probe.locator("svg.padding-row rect.lane.padding.counted")).to_have_count(0)
    expect(probe).to_contain_text("二次 mask 把它们清零了")
    q2 = page.locator('li.item[data-id="q2"]')
    expect(q2).to_contain_text("待助教复核")


def test_readable_on_a_phone(browser, graded):
    context = browser.new_context(viewport=PHONE, is_mobile=True, has_touch=True, device_scale_factor=2)
    try:
        page = context.new_page()
        page.goto(graded.views["false_claim"]["links"]["feedback_page"])  # diagnoses, requirements, outputs side by side
        expect(page.locator("#diagnoses")).to_be_visible()
        expect(page.locator("#requirements")).to_be_visible()
        overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
        assert overflow <= 0, f"the page is {overflow}px wider than a phone"
        box = page.locator("#diagnoses .lead-picture svg.padding-row").bounding_box()
        assert box is not None and box["width"] <= PHONE["width"]
    finally:
        context.close()


def test_a_link_reaches_its_own_report_only(graded, service):
    one, other = graded.views["unverified_claim"], graded.views["low_confidence"]
    page_one = httpx.get(one["links"]["feedback_page"])
    assert page_one.status_code == 200
    assert other["id"] not in page_one.text
    token = one["links"]["feedback_page"].rsplit("/", 1)[-1]
    for wrong in (token[:-1], token[:-1] + ("A" if token[-1] != "A" else "B"), other["id"], one["id"], "x" * 65):
        response = httpx.get(f"{service.url}/feedback/{wrong}")
        assert response.status_code == 404 and one["id"] not in response.text, wrong
    headers = page_one.headers
    assert headers["referrer-policy"] == "no-referrer", "the token must not leak through Referer"
    assert "script-src 'self'" in headers["content-security-policy"]
    assert "set-cookie" not in headers, "the student page sets no cookie"
    assert headers["cache-control"] == "no-store"


def test_a_submission_being_graded_says_so_and_refreshes(service):
    course = service.new_course()
    row = service.block_queue(course)  # held as `running` by the test
    response = httpx.get(f"{service.url}/feedback/{row.feedback_token}")
    assert response.status_code == 200
    assert "正在评分" in response.text and '<meta http-equiv="refresh" content="5">' in response.text


def test_the_switch_shows_the_whole_report_in_the_other_language(page, graded):
    """Desktop: the student clicks English; the diagnosis, the requirements, the rubric items, the
    veto's note and the cases are English too (not only the headings), the verdict and points the
    same; back to Chinese, the report's own words again."""
    view = graded.views["false_claim"]
    page.goto(view["links"]["feedback_page"])
    diagnosis = page.locator('#diagnoses .diagnosis.lead[data-id="missing_remask"]')
    given = page.locator('#requirements li[data-id="given_check"] .requirement-title')
    expect(given).to_have_text("给定检查通过")
    zh_diagnosis = diagnosis.inner_text()
    assert CJK.search(zh_diagnosis)
    points = page.locator("#score .score-line").inner_text()

    page.locator('#lang-switch a[data-lang="en"]').click()
    expect(page.locator("html")).to_have_attribute("lang", "en")
    expect(given).to_have_text("The given check passes")
    expect(page.locator('#held .held-requirement[data-id="given_check"]')).to_have_text("The given check passes")
    expect(diagnosis).to_contain_text("tl.where(mask, …, 0.0)")
    assert not CJK.search(diagnosis.inner_text()), diagnosis.inner_text()
    expect(page.locator('#items li[data-id="code.boundary"] .item-title')).to_have_text("Boundary inputs and probes")
    expect(page.locator('#why li.reason[data-id="unverified_claim"] .reason-note')).to_contain_text(
        "when we ran this same program")
    page.locator("#failed-cases summary").click()
    probe = page.locator('#failed-cases article[data-case="probe.large_mean"]')
    expect(probe).to_contain_text("Large mean, small variance")
    assert page.locator("#untranslated").count() == 0, "this report has both languages"
    assert page.locator("#score .score-line").inner_text().split("·")[0] == points.split("·")[0], "same points"

    page.locator('#lang-switch a[data-lang="zh"]').click()
    expect(given).to_have_text("给定检查通过")
    expect(diagnosis).to_have_text(zh_diagnosis)
