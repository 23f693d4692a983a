"""A written answer pasted from the course text, over real HTTP and graded in the real sandbox: the
item goes to a TA with its points, the report's evidence names the passage and quotes it, and the
feedback page and the Gradescope export tell the student, in their language, what was found."""
from __future__ import annotations

import httpx
import pytest

from service.config import REPO_ROOT
from service.exercises import ExerciseCatalog
from tests.api.support import EXERCISE, example_body, wait_final
from tests.support.platform_specs import check_gradescope

pytestmark = pytest.mark.sandbox

LESSON = ExerciseCatalog(REPO_ROOT / "exercises").get(EXERCISE)
# Lesson 6's pitfall on the missing second mask, as the lesson shows it (course_text.yaml).
PASTED = next(p.text for p in LESSON.spec.course_text if p.id == "l6_pitfalls").split("\n")[2]


def test_a_q2_pasted_from_the_lesson_goes_to_a_ta_and_says_so(service, course):
    client = course.client("submit", "read")
    body = example_body()
    body["answers"] = {**body["answers"], "q2": PASTED}
    accepted = client.post("/v1/submissions", json=body)
    assert accepted.status_code == 202, accepted.text
    view = wait_final(client, accepted.json()["id"])
    report = view["report"]
    q2 = next(i for i in report["items"] if i["id"] == "q2")
    assert q2["status"] == "needs_review" and q2["points"] > 0 and "copied_text" in q2["evidence"]["flags"]
    [copied] = q2["evidence"]["copied_text"]
    assert copied["passage"] == "l6_pitfalls" and copied["quote"].startswith("遗漏 tl.where 的二次掩码")
    assert report["score"]["provisional"]
    assert all("copied_text" not in i["evidence"].get("flags", []) for i in report["items"] if i["id"] != "q2")

    page = httpx.get(view["links"]["feedback_page"], timeout=30)
    assert page.status_code == 200
    assert "课程材料“第 6 课 · 核心心智模型 · 3. 正确性条件与常见误区”" in page.text and "照抄课程的措辞" in page.text

    exported = client.get(f"/v1/submissions/{view['id']}/report", params={"format": "gradescope"}).json()
    check_gradescope(exported)
    assert any("照抄课程的措辞" in test.get("output", "") for test in exported["tests"])
