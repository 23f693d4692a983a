"""The feedback page says what an edit outside the blank is and the misconception it shows (the
feedback audit, 2026-12-05): before, the "why it did not pass" block showed the line and its code
only, and the edit's words ("the divisor was changed from N to BLOCK: … shrinks by a factor
N/BLOCK") were in the report but on no page. Real server, real database, real sandbox."""
from __future__ import annotations

import html

import pytest

from tests.api.support import example_body, wait_final

pytestmark = pytest.mark.sandbox


def test_the_page_says_what_an_edit_is_in_the_students_language(course, service):
    client = course.client("submit", "read")
    body = example_body()
    body["code"] = body["code"].replace("mean = tl.sum(values, axis=0) / N", "mean = tl.sum(values, axis=0) / BLOCK")
    view = wait_final(client, client.post("/v1/submissions", json=body).json()["id"])
    assert view["status"] == "graded" and not view["report"]["score"]["passed"]
    assert [v["rule"] for v in view["report"]["vetoes"]] == ["modified_outside_blank"]
    token = view["links"]["feedback"].rsplit("/", 1)[-1]
    student = service.client()

    zh = html.unescape(student.get(f"/feedback/{token}").text)
    why = zh[zh.index('id="why"'):zh.index('id="requirements"')]
    assert "第 12 行" in why and "mean = tl.sum(values, axis=0) / BLOCK" in why
    assert '<p class="reason-edit">把分母从 N 改成了 BLOCK：BLOCK ≥ N，统计量会被缩小 N/BLOCK 倍' in why, why

    en = html.unescape(student.get(f"/feedback/{token}", params={"lang": "en"}).text)
    why = en[en.index('id="why"'):en.index('id="requirements"')]
    assert '<p class="reason-edit">The divisor was changed from N to BLOCK: BLOCK ≥ N, so the statistic shrinks' in why
    assert "把分母" not in why


def test_why_no_next_hint_is_said_in_the_students_language(course, service):
    """Before: "every level of 'missing_remask' has been given already", in English to a Chinese student."""
    from tests.api.support import template_body

    client = course.client("submit", "read")
    view = wait_final(client, client.post("/v1/submissions", json=template_body("cols < BLOCK")).json()["id"])
    url = f"/v1/feedback/{view['links']['feedback'].rsplit('/', 1)[-1]}/hints"
    student = service.client()
    for _ in range(4):
        assert student.post(url, json={"diagnosis": "missing_remask"}).status_code == 201
    done = student.post(url, json={"diagnosis": "missing_remask"})
    assert done.status_code == 409
    assert done.json()["detail"] == "“missing_remask”的四级提示（概念区域 → 具体方向 → 关键局部 → 完整答案）已经全部给出，没有下一级了。"
    done = student.post(url, json={"diagnosis": "missing_remask"}, params={"lang": "en"})
    assert done.json()["detail"] == ('Every level of "missing_remask" (concept area → direction → key spot → full answer) '
                                     "has been given already: there is no next one.")
    wrong = student.post(url, json={"diagnosis": "not_a_diagnosis"})
    assert wrong.status_code == 422
    assert wrong.json()["detail"][0]["msg"].startswith("这次提交没有“not_a_diagnosis”的提示阶梯（可选：missing_remask")
