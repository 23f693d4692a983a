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
