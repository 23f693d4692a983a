"""Operations endpoints over real HTTP: liveness, readiness, Prometheus metrics (after a real
grading), and the OpenAPI document with its browsable page."""
from __future__ import annotations

import re

import pytest

from tests.api.support import cheap_body

pytestmark = pytest.mark.sandbox


def metric(text: str, name: str, labels: str = "") -> float | None:
    match = re.search(rf"^{re.escape(name + labels)} ([0-9.e+-]+)$", text, re.MULTILINE)
    return float(match.group(1)) if match else None


def test_healthz(service):
    response = service.client().get("/healthz")
    assert response.status_code == 200 and response.json() == {"status": "ok"}


def test_readyz_reports_the_database_and_sandbox_slots(service):
    response = service.client().get("/readyz")
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["ready"] is True
    assert body["checks"]["database"] == "ok"
    assert int(body["checks"]["sandbox_slots"]) >= 1


def test_metrics_show_queue_depth_and_outcomes_after_a_grading(service, course):
    client = service.client()
    before = client.get("/metrics")
    assert before.status_code == 200
    assert before.headers["content-type"].startswith("text/plain")
    assert metric(before.text, "kernelgrade_queue_depth", '{status="queued"}') is not None
    assert metric(before.text, "kernelgrade_queue_depth", '{status="running"}') is not None
    graded_before = metric(before.text, "kernelgrade_outcomes_total", '{status="graded"}') or 0

    graded = course.client("submit").post("/v1/submissions", params={"wait": 20}, json=cheap_body())
    assert graded.status_code == 200 and graded.json()["status"] == "graded", graded.text

    after = client.get("/metrics").text
    assert metric(after, "kernelgrade_outcomes_total", '{status="graded"}') >= graded_before + 1
    assert metric(after, "kernelgrade_grading_seconds_count") >= 1
    assert metric(after, "kernelgrade_queue_depth", '{status="queued"}') is not None


def test_metrics_count_queued_submissions(service, course):
    service.block_queue(course)
    text = service.client().get("/metrics").text
    assert metric(text, "kernelgrade_queue_depth", '{status="running"}') >= 1


def test_openapi_lists_the_v1_paths(service):
    response = service.client().get("/openapi.json")
    assert response.status_code == 200, response.text
    document = response.json()
    paths = document["paths"]
    for path, methods in {
        "/v1/submissions": {"post", "get"},
        "/v1/grades": {"get"},
        "/v1/course": {"get"},
        "/v1/course/policy": {"put"},
        "/v1/regrades": {"post", "get"},
        "/v1/regrades/{job_id}": {"get"},
        "/v1/submissions/batch": {"post"},
        "/v1/submissions/{submission_id}": {"get"},
        "/v1/submissions/{submission_id}/report": {"get"},
        "/v1/submissions/{submission_id}/regrade": {"post"},
        "/v1/exercises": {"get"},
        "/v1/exercises/{exercise_id}": {"get"},
        "/v1/feedback/{token}": {"get"},
    }.items():
        assert path in paths, f"{path} missing from {sorted(paths)}"
        assert methods <= set(paths[path]), (path, sorted(paths[path]))
    assert "/metrics" not in paths
    schemes = document["components"]["securitySchemes"]
    assert any(s.get("scheme", "").lower() == "bearer" for s in schemes.values())
    formats = [p for p in paths["/v1/submissions/{submission_id}/report"]["get"]["parameters"] if p["name"] == "format"]
    assert formats and set(formats[0]["schema"]["enum"]) == {"json", "gradescope", "prairielearn"}


@pytest.mark.parametrize(("page", "assets"), [("/docs", {"swagger-ui-bundle.js", "swagger-ui.css"}),
                                              ("/redoc", {"redoc.standalone.js"})])
def test_docs_pages_load_their_assets_from_this_server(service, page, assets):
    """Self-hosted (fastapi-offline's files): the pages work without internet. The browser test
    (tests/browser/test_api_docs.py) renders them with every other host blocked."""
    client = service.client()
    response = client.get(page)
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/html")
    assert "/openapi.json" in response.text
    urls = re.findall(r'(?:src|href)="([^"]+)"', response.text)
    assert urls and all(url.startswith("/") and not url.startswith("//") for url in urls), urls
    assert assets <= {url.rsplit("/", 1)[-1] for url in urls}
    for url in urls:
        asset = client.get(url)
        assert asset.status_code == 200, url
        assert len(asset.content) > 1000, url
        kind = {"js": "javascript", "css": "text/css", "png": "image/png"}[url.rsplit(".", 1)[-1]]
        assert kind in asset.headers["content-type"], (url, asset.headers["content-type"])
