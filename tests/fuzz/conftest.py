"""Markers of the fuzz tests (registered here: pyproject's marker list is not ours to edit)."""
from __future__ import annotations


def pytest_configure(config) -> None:
    config.addinivalue_line("markers", "fuzz: schemathesis fuzzing of the service's own OpenAPI document (tests/fuzz)")
