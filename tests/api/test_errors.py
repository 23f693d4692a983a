"""Errors over real HTTP: invalid input names its field (422), oversized bodies (413), the rate
limit (429), a full queue (503), refused callback URLs, and malformed requests that must never
produce a 5xx."""
from __future__ import annotations

import json

import httpx
import pytest
from sqlalchemy import select

from service.db.models import Submission
from tests.api.support import EXERCISE, cheap_body, error_locs, example_body

pytestmark = pytest.mark.sandbox


# --- 422 -----------------------------------------------------------------------------------

def test_unknown_body_field_is_422_naming_it(course):
    response = course.client().post("/v1/submissions", json={**cheap_body(), "grade": 10})
    assert response.status_code == 422, response.text
    detail = response.json()["detail"]
    assert [e["loc"] for e in detail] == [["body", "grade"]]
    assert course.submission_count() == 0


def test_missing_code_is_422(course):
    response = course.client().post("/v1/submissions", json={"exercise": EXERCISE})
    assert response.status_code == 422, response.text
    assert error_locs(response) == ["code"]
    assert course.submission_count() == 0


def test_unknown_exercise_is_422_naming_it(course):
    response = course.client().post("/v1/submissions", json={**cheap_body(), "exercise": "lesson99_nope"})
    assert response.status_code == 422, response.text
    assert error_locs(response) == ["exercise"]


def test_invalid_json_is_422(course):
    response = course.client().post("/v1/submissions", content=b'{"exercise": "lesson06_mean_var", "code": ',
                                    headers={"Content-Type": "application/json"})
    assert response.status_code == 422, response.text
    assert response.json()["detail"][0]["type"] == "json_invalid"
    assert course.submission_count() == 0


def test_validation_errors_do_not_echo_the_program(course):
    code = "SECRET_PROGRAM_TEXT = 1\n" * 10
    response = course.client().post("/v1/submissions", json={"exercise": EXERCISE, "code": code, "answers": "nope"})
    assert response.status_code == 422
    assert "SECRET_PROGRAM_TEXT" not in response.text
    assert error_locs(response) == ["answers"]


@pytest.mark.parametrize("url", ["http://example.com/x", "https://10.0.0.1/x", "https://192.168.1.20/hook",
                                 "https://169.254.169.254/latest/meta-data", "https://[::1]/x", "https://localhost/x",
                                 "http://localhost:8080/x", "ftp://example.com/x", "https:///nohost", "not a url"])
def test_refused_callback_url_is_422_naming_it(course, url):
    client = course.client()
    response = client.post("/v1/submissions", json={**cheap_body(), "callback_url": url})
    assert response.status_code == 422, (url, response.text)
    assert error_locs(response) == ["callback_url"]
    batch = client.post("/v1/submissions/batch", json={"submissions": [cheap_body(), {**cheap_body(), "callback_url": url}]})
    assert batch.status_code == 422, (url, batch.text)
    assert error_locs(batch) == ["submissions.1.callback_url"]
    assert course.submission_count() == 0


def test_public_https_callback_is_accepted(course):
    response = course.client().post("/v1/submissions", json={**cheap_body(), "callback_url": "https://example.com/hook"})
    assert response.status_code == 202, response.text


# --- 413: bodies over max_body_bytes --------------------------------------------------------

@pytest.fixture(scope="module")
def small_bodies(start_service):
    service = start_service(max_body_bytes=2000)
    return service, service.new_course()


def test_body_over_the_cap_is_413(small_bodies):
    service, course = small_bodies
    body = example_body()
    assert len(json.dumps(body).encode()) > 2000
    response = course.client().post("/v1/submissions", json=body)
    assert response.status_code == 413, response.text
    assert "2000" in response.json()["detail"]
    batch = course.client().post("/v1/submissions/batch", json={"submissions": [cheap_body() for _ in range(30)]})
    assert batch.status_code == 413, batch.text
    assert course.submission_count() == 0


def test_chunked_body_over_the_cap_is_413(small_bodies):
    """No Content-Length to refuse early: the cap must hold while the body streams in."""
    service, course = small_bodies
    data = json.dumps(example_body()).encode()

    def chunks():
        for start in range(0, len(data), 500):
            yield data[start:start + 500]

    response = course.client().post("/v1/submissions", content=chunks(), headers={"Content-Type": "application/json"})
    assert response.status_code == 413, response.text
    assert course.submission_count() == 0


def test_bodies_under_the_cap_are_accepted(small_bodies):
    service, course = small_bodies
    response = course.client().post("/v1/submissions", json=cheap_body())
    assert response.status_code == 202, response.text
    data = json.dumps(cheap_body()).encode()
    chunked = course.client().post("/v1/submissions", content=iter([data[:10], data[10:]]),
                                   headers={"Content-Type": "application/json"})
    assert chunked.status_code == 202, chunked.text


# --- 429: the per-key rate limit ------------------------------------------------------------

def test_rate_limit_is_429_with_retry_after(start_service):
    service = start_service(rate_limit_per_minute=3)
    course = service.new_course()
    client = course.client("read", name="limited")
    statuses = [client.get("/v1/exercises").status_code for _ in range(3)]
    assert statuses == [200, 200, 200]
    limited = client.get("/v1/exercises")
    assert limited.status_code == 429, limited.text
    retry_after = int(limited.headers["Retry-After"])
    assert 1 <= retry_after <= 60
    posted = course.client("submit", name="limited-submit")
    for _ in range(3):
        posted.post("/v1/submissions", json=cheap_body())
    refused = posted.post("/v1/submissions", json=cheap_body())
    assert refused.status_code == 429 and "Retry-After" in refused.headers
    assert course.submission_count() == 3
    # Per key: another key of the same course is not limited; unauthenticated health checks neither.
    assert course.client("read", name="other").get("/v1/exercises").status_code == 200
    assert all(service.client().get("/healthz").status_code == 200 for _ in range(5))


# --- 503: the queue is full -----------------------------------------------------------------

@pytest.fixture(scope="module")
def full_queue(start_service):
    """max_queue=1 and one submission held as `running` (an hour's lease: no worker takes it)."""
    service = start_service(max_queue=1)
    course = service.new_course()
    held = service.block_queue(course, body=cheap_body("held"), idempotency_key="held")
    return service, course, held


def test_full_queue_is_503_with_retry_after(full_queue):
    service, course, held = full_queue
    client = course.client()
    response = client.post("/v1/submissions", json=cheap_body())
    assert response.status_code == 503, response.text
    assert int(response.headers["Retry-After"]) >= 1
    batch = client.post("/v1/submissions/batch", json={"submissions": [cheap_body()]})
    assert batch.status_code == 503, batch.text
    assert int(batch.headers["Retry-After"]) >= 1
    assert course.submission_count() == 1


def test_full_queue_still_answers_an_idempotent_replay(full_queue):
    service, course, held = full_queue
    response = course.client().post("/v1/submissions", json=cheap_body("held"), headers={"Idempotency-Key": "held"})
    assert response.status_code == 202, response.text
    assert response.json()["id"] == held.id and response.json()["status"] == "running"


def test_full_queue_is_still_ready_and_reads_work(full_queue):
    service, course, held = full_queue
    assert service.client().get("/readyz").status_code == 200
    assert course.client("read").get(f"/v1/submissions/{held.id}").status_code == 200


# --- never a 5xx ------------------------------------------------------------------------------

def _json(body) -> dict:
    return {"content": json.dumps(body).encode(), "headers": {"Content-Type": "application/json"}}


MALFORMED = {
    "code-is-a-number": ("POST", "/v1/submissions", _json({"exercise": EXERCISE, "code": 123})),
    "exercise-is-null": ("POST", "/v1/submissions", _json({"exercise": None, "code": "x"})),
    "answers-is-a-list": ("POST", "/v1/submissions", _json({**cheap_body(), "answers": ["a", "b"]})),
    "answers-values-not-strings": ("POST", "/v1/submissions", _json({**cheap_body(), "answers": {"q1": {"a": 1}}})),
    "too-many-answers": ("POST", "/v1/submissions", _json({**cheap_body(), "answers": {f"q{i}": "a" for i in range(50)}})),
    "code-too-long": ("POST", "/v1/submissions", _json({**cheap_body(), "code": "x" * (65 * 1024)})),
    "empty-code": ("POST", "/v1/submissions", _json({**cheap_body(), "code": ""})),
    "body-is-a-list": ("POST", "/v1/submissions", _json([cheap_body()])),
    "body-is-a-string": ("POST", "/v1/submissions", _json("code")),
    "empty-body": ("POST", "/v1/submissions", {"content": b"", "headers": {"Content-Type": "application/json"}}),
    "not-json-content-type": ("POST", "/v1/submissions", {"content": json.dumps(cheap_body()).encode(),
                                                          "headers": {"Content-Type": "text/plain"}}),
    "form-body": ("POST", "/v1/submissions", {"data": {"exercise": EXERCISE, "code": "x"}}),
    "non-utf8-body": ("POST", "/v1/submissions", {"content": b'{"exercise": "\xff\xfe", "code": "\xc3\x28"}',
                                                  "headers": {"Content-Type": "application/json"}}),
    "utf16-body": ("POST", "/v1/submissions", {"content": json.dumps(cheap_body()).encode("utf-16"),
                                               "headers": {"Content-Type": "application/json"}}),
    "deeply-nested-json": ("POST", "/v1/submissions", {"content": b"[" * 50_000 + b"]" * 50_000,
                                                       "headers": {"Content-Type": "application/json"}}),
    "huge-number": ("POST", "/v1/submissions", {"content": b'{"exercise": 1' + b"0" * 5000 + b', "code": "x"}',
                                                "headers": {"Content-Type": "application/json"}}),
    "callback-not-a-string": ("POST", "/v1/submissions", _json({**cheap_body(), "callback_url": ["https://x.org"]})),
    "callback-too-long": ("POST", "/v1/submissions", _json({**cheap_body(), "callback_url": "https://example.com/" + "a" * 3000})),
    "nul-in-callback": ("POST", "/v1/submissions", _json({**cheap_body(), "callback_url": "https://example.com/\x00"})),
    "nul-in-code": ("POST", "/v1/submissions", _json({**cheap_body(), "code": "x = 1\x00\n"})),
    "nul-in-answer": ("POST", "/v1/submissions", _json({**cheap_body(), "answers": {"q1\x00": "a\x00"}})),
    "nul-in-explanation": ("POST", "/v1/submissions", _json({**cheap_body(), "explanation": "\x00"})),
    "nul-in-exercise": ("POST", "/v1/submissions", _json({**cheap_body(), "exercise": "lesson06\x00"})),
    "lone-surrogate": ("POST", "/v1/submissions", {"content": b'{"exercise": "lesson06_mean_var", "code": "\\ud800"}',
                                                   "headers": {"Content-Type": "application/json"}}),
    "wait-huge": ("POST", "/v1/submissions?wait=1e308", _json(cheap_body())),
    "wait-overflow": ("POST", "/v1/submissions?wait=1e400", _json(cheap_body())),
    "wait-nan": ("POST", "/v1/submissions?wait=nan", _json(cheap_body())),
    "wait-negative": ("POST", "/v1/submissions?wait=-1", _json(cheap_body())),
    "wait-not-a-number": ("POST", "/v1/submissions?wait=soon", _json(cheap_body())),
    "idempotency-key-too-long": ("POST", "/v1/submissions", {**_json(cheap_body()),
                                                            "headers": {"Content-Type": "application/json",
                                                                        "Idempotency-Key": "k" * 5000}}),
    "batch-not-a-list": ("POST", "/v1/submissions/batch", _json({"submissions": "all of them"})),
    "batch-items-not-objects": ("POST", "/v1/submissions/batch", _json({"submissions": [1, "two", None]})),
    "batch-nul-idempotency-key": ("POST", "/v1/submissions/batch",
                                  _json({"submissions": [{**cheap_body(), "idempotency_key": "a\x00b"}]})),
    "batch-extra-field": ("POST", "/v1/submissions/batch", _json({"submissions": [cheap_body()], "all": True})),
    "id-of-1000-chars": ("GET", "/v1/submissions/" + "a" * 1000, {}),
    "report-id-of-1000-chars": ("GET", "/v1/submissions/" + "a" * 1000 + "/report", {}),
    "regrade-id-of-1000-chars": ("POST", "/v1/submissions/" + "a" * 1000 + "/regrade", {}),
    "id-with-nul": ("GET", "/v1/submissions/%00", {}),
    "report-id-with-nul": ("GET", "/v1/submissions/ab%00cd/report", {}),
    "regrade-id-with-nul": ("POST", "/v1/submissions/%00/regrade", {}),
    "id-with-unicode": ("GET", "/v1/submissions/%E2%98%83", {}),
    "id-with-bad-percent-utf8": ("GET", "/v1/submissions/%FF%FE", {}),
    "report-format-traversal": ("GET", "/v1/submissions/" + "0" * 32 + "/report?format=../../etc/passwd", {}),
    "feedback-with-nul": ("GET", "/v1/feedback/%00", {}),
    "feedback-1000-chars": ("GET", "/v1/feedback/" + "f" * 1000, {}),
    "exercise-with-nul": ("GET", "/v1/exercises/%00", {}),
    "unknown-method": ("DELETE", "/v1/submissions/" + "0" * 32, {}),
    "unknown-path": ("GET", "/v1/nothing-here", {}),
}


# Odd but valid: JSON in UTF-16 is still JSON (Python's json detects the encoding).
LENIENT = {"utf16-body"}


@pytest.mark.parametrize("name", list(MALFORMED))
def test_malformed_requests_never_give_5xx(service, course, name):
    method, path, kwargs = MALFORMED[name]
    client = course.client("submit", "read", "review")
    try:
        response = client.request(method, path, **kwargs)
    except httpx.RemoteProtocolError:
        pytest.fail(f"{name}: the server dropped the connection")
    assert response.status_code < 500, f"{name}: {response.status_code} {response.text[:500]}"
    if name not in LENIENT:
        assert response.status_code >= 400, f"{name} was accepted: {response.status_code} {response.text[:300]}"
    # The server is still healthy afterwards.
    assert client.get("/healthz").status_code == 200


def test_a_malformed_request_leaves_the_connection_usable(service, course):
    client = course.client("read")
    for _ in range(3):
        assert client.get("/v1/submissions/%00").status_code == 404
        assert client.get("/v1/exercises").status_code == 200


def test_nothing_malformed_was_stored(service):
    """None of the malformed submissions above made it into the database."""
    with service.sessions() as session:
        bodies = [row.body for row in session.scalars(select(Submission))]
    assert not any("\x00" in json.dumps(b, ensure_ascii=False) for b in bodies)
