"""Verdict memo: identical programs reuse code results (real bwrap sandbox, real databases);
written answers are scored afresh; an exercise that opts out never reuses anything."""
from __future__ import annotations

import shutil
import threading

import pytest
import yaml

from service.bootstrap import build_grader
from service.config import REPO_ROOT, Settings
from service.db.memo import DbMemo
from service.db.models import VerdictMemoRow
from service.grading.memo import InMemoryMemo, MemoEntry
from service.submission import Submission
from tests.support.servers import migrated_sessions

pytestmark = [pytest.mark.sandbox, pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs bubblewrap")]

EXAMPLE = REPO_ROOT / "exercises/lesson06_mean_var/example_submission.json"


def _example() -> Submission:
    return Submission.model_validate_json(EXAMPLE.read_text(encoding="utf-8"))


def _code_part(report) -> dict:
    return {"cases": [c.model_dump() for c in report.cases], "diagnoses": [d.model_dump() for d in report.diagnoses],
            "given": (report.given_check.status, report.given_check.output), "seeds": report.seeds.model_dump(),
            "digest": report.program.digest}


@pytest.fixture(params=["sqlite", "postgresql"])
def sessions(request, tmp_path):
    with migrated_sessions(request.param, tmp_path) as maker:
        yield maker


def test_identical_program_reuses_code_results_and_rescores_free_text(sessions):
    grader = build_grader(Settings(device="interpreter"), sessions=sessions)
    first_body = _example()
    first = grader.grade(first_body, submission_id="a" * 32, secret_seed=11)
    assert first.status == "graded" and not first.program.reused and first.program.memo_key

    # Same fill with different spacing and a comment: the same canonical program. Other answers.
    second_body = first_body.model_copy(update={
        "code": first_body.code.replace("tl.where(mask,", "tl.where( mask ,"),
        "answers": {"q1": "不知道", "q2": "", "q3": "用 float64"},
    })
    second = grader.grade(second_body, submission_id="b" * 32, secret_seed=22)

    assert second.program.reused and second.program.memo_key == first.program.memo_key
    assert _code_part(second) == _code_part(first)
    assert second.seeds.secret == 11, "the report records the seeds of the run whose results it reuses"
    assert "reused" not in first.timing and second.timing["reused"] == 1.0
    cases_items = {"code.regular", "code.boundary"}
    for item in second.items:
        if item.id in cases_items:
            assert item.evidence.get("reused") is True and "复用" in item.feedback
            assert item.points == next(i.points for i in first.items if i.id == item.id)
    # Written answers: scored for this submission, not copied.
    first_text = {i.id: i.points for i in first.items if i.id in ("q1", "q2", "q3")}
    second_text = {i.id: i.points for i in second.items if i.id in ("q1", "q2", "q3")}
    assert sum(second_text.values()) < sum(first_text.values())
    with sessions() as session:
        rows = session.query(VerdictMemoRow).all()
        assert [(r.key, r.submission_id) for r in rows] == [(first.program.memo_key, "a" * 32)]
        assert "answers" not in str(rows[0].result) and "不知道" not in str(rows[0].result)


def test_wrong_fill_reuse_keeps_the_diagnosis(tmp_path):
    grader = build_grader(Settings(device="interpreter"))
    grader.memo = InMemoryMemo()
    exercise = grader.catalog.get("lesson06_mean_var")
    code = exercise.template.replace("______", "True", 1)
    first = grader.grade(Submission(exercise=exercise.id, code=code), secret_seed=1)
    second = grader.grade(Submission(exercise=exercise.id, code=code), secret_seed=2)
    assert not first.program.reused and second.program.reused
    # The given check's traceback, as the sandbox sent it: the student's frames only, not the harness's.
    given = first.given_check.output
    assert 'File "/job/given_check.py"' in given and "harness.py" not in given, given
    assert [d.id for d in second.diagnoses] == [d.id for d in first.diagnoses] == ["missing_remask"]
    assert second.score.total == first.score.total
    assert [v.rule for v in second.vetoes] == [v.rule for v in first.vetoes]
    # The other language's texts come with the reused results (no run to say them again from).
    first_en, second_en = first.translations["en"], second.translations["en"]
    assert second_en.cases == first_en.cases and second_en.diagnoses == first_en.diagnoses
    assert any(c.error for c in second_en.cases.values()) and "tl.where" in second_en.diagnoses["missing_remask"]
    assert "reused" in second_en.items["code.boundary"].feedback and "复用" in \
        next(i for i in second.items if i.id == "code.boundary").feedback


def test_nondeterministic_exercise_is_never_reused(tmp_path):
    root = tmp_path / "exercises"
    shutil.copytree(REPO_ROOT / "exercises/lesson06_mean_var", root / "lesson06_mean_var")
    spec_path = root / "lesson06_mean_var/exercise.yaml"
    spec = yaml.safe_load(spec_path.read_text(encoding="utf-8"))
    spec["deterministic"] = False
    spec_path.write_text(yaml.safe_dump(spec, allow_unicode=True), encoding="utf-8")

    grader = build_grader(Settings(device="interpreter", exercises_dir=root))
    memo = grader.memo = InMemoryMemo()
    reports = [grader.grade(_example(), secret_seed=seed) for seed in (1, 2)]
    assert [r.program.reused for r in reports] == [False, False]
    assert [r.program.memo_key for r in reports] == [None, None]
    assert [r.seeds.secret for r in reports] == [1, 2]
    assert len(memo) == 0


def test_two_identical_programs_finishing_together_store_one_entry(sessions):
    memo = DbMemo(sessions)
    entries = [MemoEntry(submission_id=f"{i}" * 32, program_digest="d" * 64, cases=[], diagnoses=[], given_status="passed",
                         given_output="", seeds={"secret": i, "given": 6, "cases": {}},
                         environment={"backend": "interpreter", "sandbox": "bwrap"}) for i in range(1, 5)]
    barrier = threading.Barrier(len(entries))
    errors = []

    def put(entry):
        barrier.wait()
        try:
            memo.put("k" * 64, entry, exercise_id="lesson06_mean_var", exercise_version=1)
        except Exception as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=put, args=(e,)) for e in entries]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    stored = memo.get("k" * 64)
    assert stored is not None and stored.submission_id in {e.submission_id for e in entries}
    with sessions() as session:
        assert session.query(VerdictMemoRow).count() == 1
