"""docs/api.md against the live server: the operations table lists every operation of the served
OpenAPI document with exactly its status codes, the Errors table every error code the document
has, and each operation answers 403 to a key without the scope the table names (and lets a key
with it through). The fuzz tests (tests/fuzz) check that the server answers as the document says."""
from __future__ import annotations

import re

import pytest

from service.config import REPO_ROOT
from tests.api.support import EXERCISE

pytestmark = pytest.mark.sandbox
DOC = (REPO_ROOT / "docs" / "api.md").read_text(encoding="utf-8")
OPERATION_ROW = re.compile(r"^\| `(GET|POST|PUT|PATCH|DELETE) (/[^`]*)` \| ([^|]+) \| ([^|]+) \|$", re.MULTILINE)
SCOPES = ("submit", "read", "review", "admin")
# Answered by the framework for any path, so no operation of the document lists it.
FRAMEWORK_CODES = {405}


def codes(text: str) -> set[int]:
    return {int(c) for c in re.findall(r"\b[1-5]\d\d\b", text)}


def documented_operations() -> dict[str, tuple[str, set[int]]]:
    """'POST /v1/submissions' -> (scope, status codes), from the operations table."""
    rows = {f"{method} {path}": (scope.strip().strip("`"), codes(answers))
            for method, path, scope, answers in OPERATION_ROW.findall(DOC)}
    assert rows, "docs/api.md has no operations table"
    return rows


def errors_table() -> set[int]:
    section = DOC[DOC.index("## Errors"):]
    section = section[:section.index("\n## ")]
    return {int(c) for c in re.findall(r"^\| (\d{3}) \|", section, re.MULTILINE)}


@pytest.fixture(scope="module")
def served(service) -> dict[str, set[int]]:
    document = service.client().get("/openapi.json").json()
    return {f"{method.upper()} {path}": {int(code) for code in op["responses"]}
            for path, methods in document["paths"].items() for method, op in methods.items()}


def test_every_operation_is_documented_with_exactly_its_answers(served):
    documented = {operation: answers for operation, (_, answers) in documented_operations().items()}
    assert documented == served


def test_the_errors_table_lists_every_error_code_of_the_document(served):
    errors = {code for answers in served.values() for code in answers if code >= 400}
    assert errors_table() == errors | FRAMEWORK_CODES


def test_400_is_a_body_that_is_not_text_and_422_text_that_is_not_json(course):
    """The two rows of the Errors table that used to be confused."""
    client = course.client("submit")
    not_text = client.post("/v1/submissions", content=b'{"code": "\xff\xfe"}', headers={"Content-Type": "application/json"})
    assert not_text.status_code == 400 and isinstance(not_text.json()["detail"], str)
    not_json = client.post("/v1/submissions", content=b'{"code": ', headers={"Content-Type": "application/json"})
    assert not_json.status_code == 422 and not_json.json()["detail"][0]["type"] == "json_invalid"
    assert course.submission_count() == 0


def test_each_operation_asks_for_the_scope_the_table_names(course):
    for operation, (scope, _) in documented_operations().items():
        if scope not in SCOPES:
            continue
        method, path = operation.split(" ", 1)
        path = path.replace("{submission_id}", "0" * 32).replace("{exercise_id}", EXERCISE)
        others = [s for s in SCOPES if s not in (scope, "admin")]
        refused = course.client(*others, name=f"all but {scope}").request(method, path)
        assert refused.status_code == 403, (operation, refused.text)
        assert f"'{scope}'" in refused.json()["detail"], (operation, refused.text)
        allowed = course.client(scope).request(method, path)
        assert allowed.status_code not in (401, 403), (operation, scope, allowed.text)
