"""API keys over real HTTP: missing, invalid, revoked, the wrong scope, another course's key, and
keys offered anywhere but the Authorization header."""
from __future__ import annotations

import uuid

import httpx
import pytest

from service.db import store
from tests.api.support import EXERCISE, cheap_body, wait_final

pytestmark = pytest.mark.sandbox


@pytest.fixture
def submitted(course) -> str:
    """The id of one submission of `course` (cheap: graded in milliseconds)."""
    response = course.client("submit").post("/v1/submissions", json=cheap_body())
    assert response.status_code == 202, response.text
    return response.json()["id"]


def every_endpoint(submission_id: str) -> list[tuple[str, str, dict | None]]:
    return [
        ("POST", "/v1/submissions", cheap_body()),
        ("POST", "/v1/submissions/batch", {"submissions": [cheap_body()]}),
        ("GET", f"/v1/submissions/{submission_id}", None),
        ("GET", f"/v1/submissions/{submission_id}/report", None),
        ("POST", f"/v1/submissions/{submission_id}/regrade", None),
        ("GET", "/v1/exercises", None),
        ("GET", f"/v1/exercises/{EXERCISE}", None),
    ]


def test_no_key_is_401_everywhere(service, course, submitted):
    client = service.client()
    for method, path, body in every_endpoint(submitted):
        response = client.request(method, path, json=body)
        assert response.status_code == 401, (method, path, response.text)
        assert response.headers.get("WWW-Authenticate") == "Bearer", (method, path)
    assert course.submission_count() == 1


@pytest.mark.parametrize("make_key", [
    lambda good, key_id: "not-a-key",
    lambda good, key_id: "kg_nope_nope",
    lambda good, key_id: f"kg_{key_id}_{'x' * 43}",             # a real key id, a wrong secret
    lambda good, key_id: good[:-1] + ("A" if good[-1] != "A" else "B"),
    lambda good, key_id: good.replace("kg_", "KG_", 1),
    lambda good, key_id: "kg_" + "a" * 500 + "_" + "b" * 500,
], ids=["garbage", "unknown-id", "wrong-secret", "one-char-off", "wrong-prefix", "huge"])
def test_invalid_key_is_401(service, course, submitted, make_key):
    good = course.key("read", "submit", name="rw")
    bad = make_key(good, course.key_id("rw"))
    client = service.client(bad)
    for method, path, body in every_endpoint(submitted):
        response = client.request(method, path, json=body)
        assert response.status_code == 401, (method, path, response.text)
    assert course.submission_count() == 1


def test_revoked_key_is_401(service, course, submitted):
    client = course.client("read", "submit", name="to-revoke")
    assert client.get(f"/v1/submissions/{submitted}").status_code == 200
    with service.sessions() as session:
        assert store.revoke_key(session, course.key_id("to-revoke")) is True
    for method, path, body in every_endpoint(submitted):
        response = client.request(method, path, json=body)
        assert response.status_code == 401, (method, path, response.text)
        assert "revoked" in response.json()["detail"]
    # The course's other keys still work.
    assert course.client("read").get(f"/v1/submissions/{submitted}").status_code == 200


@pytest.mark.parametrize("scopes, method, path_of, body", [
    (("read",), "POST", lambda sid: "/v1/submissions", cheap_body()),
    (("read",), "POST", lambda sid: "/v1/submissions/batch", {"submissions": [cheap_body()]}),
    (("read", "submit"), "POST", lambda sid: f"/v1/submissions/{sid}/regrade", None),
    (("submit",), "GET", lambda sid: f"/v1/submissions/{sid}", None),
    (("submit",), "GET", lambda sid: f"/v1/submissions/{sid}/report", None),
    (("submit", "review"), "GET", lambda sid: "/v1/exercises", None),
    (("review",), "GET", lambda sid: f"/v1/exercises/{EXERCISE}", None),
], ids=["read-posts", "read-batches", "no-review-regrades", "submit-reads", "submit-reports",
        "no-read-lists-exercises", "review-reads-exercise"])
def test_wrong_scope_is_403(course, submitted, scopes, method, path_of, body):
    response = course.client(*scopes).request(method, path_of(submitted), json=body)
    assert response.status_code == 403, response.text
    assert "scope" in response.json()["detail"]
    assert course.submission_count() == 1, "a refused request stores nothing"


def test_admin_scope_allows_everything(course, submitted):
    client = course.client("admin")
    assert client.post("/v1/submissions", json=cheap_body()).status_code == 202
    assert client.get(f"/v1/submissions/{submitted}").status_code == 200
    assert client.get("/v1/exercises").status_code == 200
    regrade = client.post(f"/v1/submissions/{submitted}/regrade")
    assert regrade.status_code in (202, 409), regrade.text  # 409 only if it is still being graded


def test_another_course_cannot_see_or_touch_a_submission(service, course, submitted):
    mine = course.client("read", "submit", "review")
    other = service.new_course()
    theirs = other.client("read", "submit", "review", "admin")
    for method, path in [("GET", f"/v1/submissions/{submitted}"), ("GET", f"/v1/submissions/{submitted}/report"),
                         ("POST", f"/v1/submissions/{submitted}/regrade")]:
        for fmt in (None, "gradescope"):
            response = theirs.request(method, path, params={"format": fmt} if fmt else None)
            assert response.status_code == 404, (method, path, response.text)
    # Indistinguishable from an id that does not exist at all.
    missing = theirs.get(f"/v1/submissions/{uuid.uuid4().hex}")
    assert missing.status_code == 404
    # Nothing happened to it: still exactly one report, never regraded by the other course.
    view = wait_final(mine, submitted)
    assert [h["seq"] for h in view["history"]] == [1]


@pytest.mark.parametrize("where", ["key", "api_key", "access_token", "token"])
def test_keys_in_the_query_string_are_ignored(service, course, submitted, where):
    key = course.key("read", "submit", name="rw")
    client = service.client()
    for method, path, body in every_endpoint(submitted):
        response = client.request(method, path, json=body, params={where: key})
        assert response.status_code == 401, (method, path, response.text)
    assert course.submission_count() == 1


@pytest.mark.parametrize("headers", [
    lambda key: {"X-API-Key": key},
    lambda key: {"Authorization": key},
    lambda key: {"Authorization": f"Basic {key}"},
    lambda key: {"Cookie": f"key={key}"},
], ids=["x-api-key", "no-scheme", "basic", "cookie"])
def test_keys_only_work_as_bearer_authorization(service, course, submitted, headers):
    key = course.key("read", name="r")
    response = service.client(headers=headers(key)).get(f"/v1/submissions/{submitted}")
    assert response.status_code == 401, response.text
    assert service.client(key).get(f"/v1/submissions/{submitted}").status_code == 200


def test_health_endpoints_and_feedback_need_no_key(service):
    client = httpx.Client(base_url=service.url, timeout=30)
    with client:
        assert client.get("/healthz").status_code == 200
        assert client.get("/readyz").status_code == 200
        assert client.get("/metrics").status_code == 200
