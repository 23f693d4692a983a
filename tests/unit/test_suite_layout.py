"""The test tree itself: pytest imports a test file outside a package under its basename alone, so two
such files with one name in different folders collide when one process collects both (the exclusive
run of scripts/test does: "import file mismatch", and the whole run stops at collection)."""
from __future__ import annotations

from collections import defaultdict

from service.config import REPO_ROOT

TESTS = REPO_ROOT / "tests"


def test_test_files_outside_packages_have_names_of_their_own():
    by_name: dict[str, list[str]] = defaultdict(list)
    for path in TESTS.rglob("test_*.py"):
        if not (path.parent / "__init__.py").exists():
            by_name[path.name].append(str(path.relative_to(REPO_ROOT)))
    assert by_name, "no test file found outside a package: the check would prove nothing"
    assert {name: paths for name, paths in by_name.items() if len(paths) > 1} == {}
