"""Fuzz the API with schemathesis against the service's own OpenAPI document (/openapi.json).

A real uvicorn server (tests/support/servers.py) on a fresh database (a SQLite file; PostgreSQL
too, marked `postgres`), grading in the real bubblewrap sandbox with one grading thread. The
fuzzer calls every operation of the document (every /v1 route, /healthz and /readyz) with an
admin key, positive and negative inputs (schemathesis' coverage, example and fuzzing phases),
at most MAX_EXAMPLES generated cases per operation, derandomized (the same cases on every run).
Every answer must be free of 5xx, carry a documented status code, content type and headers, and
match the documented body schema.

Random ids and tokens only ever find 404s, so hooks offer the fuzzer the ids and feedback links of
a few seeded submissions too (graded cheaply, graded in the sandbox, held `running`), well-formed
TA decisions, and the real exercise's name in most generated submission bodies: those are stored
and graded, in milliseconds and without the sandbox (their code is not the template), so the
2-core machine is never swamped; a small `max_queue` makes a burst answer 503, which is documented.
"""
from __future__ import annotations

import collections
import shutil
from datetime import timedelta

import httpx
import hypothesis
import pytest
import schemathesis
from hypothesis import HealthCheck
from hypothesis import strategies as st
from schemathesis.checks import (
    content_type_conformance, not_a_server_error, response_headers_conformance, response_schema_conformance,
    status_code_conformance,
)

from tests.api.support import EXERCISE, Service, api_settings, cheap_body, example_body, postgres_up, wait_final
from tests.support.servers import POSTGRES_ADMIN, LiveServer, database

pytestmark = [pytest.mark.fuzz, pytest.mark.sandbox, pytest.mark.timeout(240)]

MAX_EXAMPLES = 40
CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_headers_conformance,
          response_schema_conformance]
RUBRIC_ITEMS = ["code.regular", "code.boundary", "code.explanation", "q1", "q2", "q3"]
VETOES = ["modified_outside_blank", "boundary_check_removed", "unverified_claim", "coincidental_pass"]


def _document() -> dict:
    """The OpenAPI document as create_app builds it; building the app starts nothing (no database
    connection, no worker). The live server serves exactly this (test_live_document_is_the_fuzzed_one)."""
    from service.config import Settings
    from service.main import create_app

    return create_app(Settings(database_url="sqlite:///:memory:")).openapi()


# Loaded at import, not from the live server through a fixture: schemathesis' lazy loader
# (`schemathesis.pytest.from_fixture`, 4.32) sets `Function._nodeid`, which pytest 9.2 no longer has.
DOCUMENT = _document()
schema = schemathesis.openapi.from_dict(DOCUMENT)
schema.config.generation.update(max_examples=MAX_EXAMPLES)


class Seeded:
    """What the fuzzer is offered besides its own random values (filled by `fuzz_target`, read by
    the hooks when the cases are drawn), and the statuses it got."""

    def __init__(self) -> None:
        self.submission_ids: list[str] = []  # for any operation on a submission
        self.regradable: list[str] = []      # cheap ones only: a fuzzed regrade never starts the sandbox
        self.tokens: list[str] = []
        self.statuses: collections.Counter[tuple[str, int]] = collections.Counter()


SEEDED = Seeded()


@pytest.fixture(scope="module", params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def fuzz_target(request, tmp_path_factory):
    """(url, admin key) of a live server with a course and three seeded submissions."""
    if shutil.which("bwrap") is None:
        pytest.skip("bubblewrap (bwrap) is not installed: the fuzzed server grades in the real sandbox")
    if request.param == "postgresql" and not postgres_up():
        pytest.skip(f"PostgreSQL is not reachable at {POSTGRES_ADMIN}")
    data_dir = tmp_path_factory.mktemp(f"fuzz-{request.param}")
    with database(request.param, data_dir) as url:
        settings = api_settings(url, data_dir, workers=1, max_queue=20, max_batch=5, max_wait_s=2)
        with LiveServer(settings) as server:
            service = Service(server, settings, request.param)
            try:
                course = service.new_course()
                key = course.key("admin", name="fuzz-admin")
                client = service.client(key)
                cheap = client.post("/v1/submissions", json=cheap_body("fuzz-seed"))
                real = client.post("/v1/submissions", json=example_body())  # graded in the sandbox (seconds)
                assert cheap.status_code == real.status_code == 202, (cheap.text, real.text)
                held = service.block_queue(course)  # `running` under an hour-long lease: 409 for report, regrade
                tokens = []
                for response in (cheap, real):
                    view = wait_final(client, response.json()["id"], timeout=180)
                    assert view["status"] == "graded", view
                    tokens.append(view["links"]["feedback"].rsplit("/", 1)[-1])
                SEEDED.__init__()
                SEEDED.submission_ids = [cheap.json()["id"], real.json()["id"], held.id]
                SEEDED.regradable = [cheap.json()["id"], held.id]
                SEEDED.tokens = tokens
                yield server.url, key
            finally:
                service.close_clients()


# --- what the fuzzer is offered besides random values ------------------------------------------

@schema.hook("flatmap_path_parameters")
def known_ids(context, path_parameters):
    """The generated value, or a seeded submission's id / feedback token, or the real exercise."""
    if not isinstance(path_parameters, dict):  # None where the path has no parameters
        return st.just(path_parameters)
    if "submission_id" in path_parameters:
        ids = SEEDED.regradable if context.operation.path.endswith("/regrade") else SEEDED.submission_ids
        if context.operation.path.endswith("/decisions"):
            ids = SEEDED.submission_ids[:2] * 2 + SEEDED.submission_ids[2:]  # the graded ones more often than the held one
        return st.one_of(st.just(path_parameters),
                         st.sampled_from(ids).map(lambda i: {**path_parameters, "submission_id": i}))
    if "token" in path_parameters:
        return st.one_of(st.just(path_parameters),
                         st.sampled_from(SEEDED.tokens).map(lambda t: {**path_parameters, "token": t}))
    if "exercise_id" in path_parameters:
        return st.one_of(st.just(path_parameters), st.just({**path_parameters, "exercise_id": EXERCISE}))
    return st.just(path_parameters)


def _with_exercise(item):
    # The real exercise for two bodies in three, so that submissions get stored and graded (cheaply).
    if isinstance(item, dict) and isinstance(item.get("exercise"), str) and len(item.get("code") or "") % 3:
        return {**item, "exercise": EXERCISE}
    return item


@schema.hook("map_body")
def real_exercise(context, body):
    path = context.operation.path
    if path == "/v1/submissions":
        return _with_exercise(body)
    if path == "/v1/submissions/batch" and isinstance(body, dict) and isinstance(body.get("submissions"), list):
        return {**body, "submissions": [_with_exercise(item) for item in body["submissions"]]}
    return body


DECISIONS = st.one_of(
    st.fixed_dictionaries({"item": st.sampled_from(RUBRIC_ITEMS), "points": st.floats(0, 2.5, allow_nan=False),
                           "reason": st.text(min_size=3, max_size=40)}),
    st.fixed_dictionaries({"veto": st.sampled_from(VETOES), "action": st.sampled_from(["confirm", "dismiss"]),
                           "reason": st.text(min_size=3, max_size=40)}),
)


# Always valid on a graded seeded submission (the written answers' items, within their points): a
# decision gets through to the handler in every run, not only with a lucky draw.
VALID_ITEM_DECISIONS = st.fixed_dictionaries({"item": st.sampled_from(["q1", "q2", "q3"]),
                                              "points": st.floats(0, 2, allow_nan=False),
                                              "reason": st.text(min_size=3, max_size=40)})

# LTI platform registrations with public https URLs (random ones are refused: 422), each client id new.
LTI_PLATFORMS = st.fixed_dictionaries({
    "issuer": st.just("https://lms.example.edu"), "client_id": st.uuids().map(str),
    "auth_login_url": st.just("https://lms.example.edu/auth"), "auth_token_url": st.just("https://lms.example.edu/token"),
    "key_set_url": st.just("https://lms.example.edu/jwks"), "deployments": st.lists(st.text(min_size=1, max_size=20),
                                                                                      max_size=3)})


@schema.hook("flatmap_body")
def real_decisions(context, body):
    """Random decisions are almost never valid: offer well-formed ones about the exercise's real
    rubric items and vetoes too (some with too many points, some about an absent veto: 422)."""
    if context.operation.method.upper() == "POST" and context.operation.path.endswith("/decisions"):
        return st.one_of(st.just(body), DECISIONS, VALID_ITEM_DECISIONS)
    if context.operation.method.upper() == "POST" and context.operation.path == "/v1/lti/platforms":
        return st.one_of(st.just(body), LTI_PLATFORMS)  # likewise LTI platform registrations
    return st.just(body)


# --- the tests ---------------------------------------------------------------------------------

def test_live_document_is_the_fuzzed_one(fuzz_target):
    url, _key = fuzz_target
    assert httpx.get(f"{url}/openapi.json", timeout=10).json() == DOCUMENT


@schema.parametrize()
@hypothesis.settings(max_examples=MAX_EXAMPLES, deadline=timedelta(seconds=10), database=None,
                     suppress_health_check=list(HealthCheck), derandomize=True)
def test_every_operation_answers_as_documented(case, fuzz_target):
    url, key = fuzz_target
    response = case.call_and_validate(base_url=url, headers={"Authorization": f"Bearer {key}"}, checks=CHECKS,
                                      timeout=30)
    SEEDED.statuses[(f"{case.method} {case.path}", response.status_code)] += 1


# For each of these operations, the answers that show the fuzzer got past authentication and
# validation into the handler at least once (this test runs after the fuzz test, in file order).
REACHED = {
    "POST /v1/submissions": {200, 202}, "POST /v1/submissions/batch": {202},
    "GET /v1/submissions/{submission_id}": {200}, "GET /v1/submissions/{submission_id}/report": {200},
    "POST /v1/submissions/{submission_id}/regrade": {202}, "POST /v1/submissions/{submission_id}/decisions": {201},
    "GET /v1/submissions/{submission_id}/decisions": {200}, "GET /v1/review/queue": {200},
    "GET /v1/review/copies": {200},
    "GET /v1/exercises/{exercise_id}": {200}, "GET /v1/feedback/{token}": {200},
    "GET /v1/feedback/{token}/hints": {200}, "POST /v1/feedback/{token}/hints": {201, 409},
    "GET /v1/course/webhook-secret": {200}, "POST /v1/course/webhook-secret/rotate": {200},
    "GET /v1/submissions": {200}, "GET /v1/grades": {200}, "GET /v1/course": {200}, "PUT /v1/course/policy": {200},
    "GET /v1/dashboard": {200},
    "GET /v1/regrades": {200}, "POST /v1/regrades": {200, 202, 404}, "GET /v1/regrades/{job_id}": {404},
    "GET /v1/lti/platforms": {200}, "POST /v1/lti/platforms": {201}, "GET /v1/lti/tool": {200},
}


def test_fuzzing_reached_the_handlers(fuzz_target):
    seen: dict[str, set[int]] = collections.defaultdict(set)
    for operation, status in SEEDED.statuses:
        seen[operation].add(status)
    fuzzed = {op: wanted for op, wanted in REACHED.items() if op in seen}
    if not fuzzed:
        pytest.skip("run together with test_every_operation_answers_as_documented")
    missing = {op: sorted(seen[op]) for op, wanted in fuzzed.items() if not wanted & seen[op]}
    assert not missing, f"the fuzzer never got past validation on (statuses seen): {missing}"
