"""Hostile uploads to the Gradescope and PrairieLearn kits: the files a student hands the platform,
read by the kit's own scripts (service/kits/gradescope/run_autograder, service/kits/prairielearn/grade.py,
with kernelgrade_kit.py beside them, as the built kits lay them out) in a process of their own.

The server the kits are configured with listens nowhere: every upload here must end in a results
file (the student's own doing: no score, and why) before the kit would contact it, or in the kit's
"could not be reached" result, within seconds. Before the fixes, one of these uploads held the
grader for hours and the others crashed it with no results file at all."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from service.config import REPO_ROOT
from tests.support.servers import free_port

KITS = REPO_ROOT / "service" / "kits"
CODE = (REPO_ROOT / "exercises" / "lesson06_mean_var" / "example_submission.json")
MAX_FILE_BYTES = 512 * 1024  # kernelgrade_kit.MAX_FILE_BYTES: the most one uploaded file brings


def _without_ours() -> dict[str, str]:
    """This process's environment without KERNELGRADE_* (KERNELGRADE_URL & co. override a kit's configuration)."""
    return {k: v for k, v in os.environ.items() if not k.startswith("KERNELGRADE_")}


def gradescope(tmp_path: Path, files: dict[str, str], *, language: str = "en") -> tuple[dict, float]:
    """Lay out /autograder under tmp_path, upload `files`, run run_autograder; (results.json, seconds)."""
    root = tmp_path / "autograder"
    (root / "source").mkdir(parents=True)
    for name in ("run_autograder", "kernelgrade_kit.py"):
        shutil.copy(KITS / ("gradescope" if name == "run_autograder" else "") / name, root / "source" / name)
    (root / "source" / "kernelgrade.json").write_text(json.dumps(
        {"mode": "server", "server_url": f"http://127.0.0.1:{free_port()}", "api_key": "k", "exercise":
         "lesson06_mean_var", "timeout_s": 30, "language": language}), encoding="utf-8")
    (root / "submission").mkdir()
    for name, text in files.items():
        (root / "submission" / name).write_text(text, encoding="utf-8")
    started = time.monotonic()
    done = subprocess.run([sys.executable, str(root / "source" / "run_autograder")], capture_output=True, text=True,
                          timeout=120, check=False, cwd=root,
                          env={**_without_ours(), "KERNELGRADE_AUTOGRADER_ROOT": str(root)})
    elapsed = time.monotonic() - started
    assert done.returncode == 0, f"the kit crashed, no results file: {done.stderr[-2000:]}"
    return json.loads((root / "results" / "results.json").read_text(encoding="utf-8")), elapsed


def prairielearn(tmp_path: Path, files: dict[str, str], *, submitted: dict | None = None) -> dict:
    root = tmp_path / "grade"
    (root / "student").mkdir(parents=True)
    (root / "data").mkdir()
    (root / "serverFilesCourse" / "kernelgrade").mkdir(parents=True)
    kit = tmp_path / "kit"
    kit.mkdir()
    for path in (KITS / "prairielearn" / "grade.py", KITS / "kernelgrade_kit.py"):
        shutil.copy(path, kit / path.name)
    (root / "serverFilesCourse" / "kernelgrade" / "config.json").write_text(json.dumps(
        {"server_url": f"http://127.0.0.1:{free_port()}", "api_key": "k", "exercise": "lesson06_mean_var",
         "timeout_s": 30, "language": "en"}), encoding="utf-8")
    (root / "data" / "data.json").write_text(json.dumps({"variant_seed": 7, "submitted_answers": submitted or {}}),
                                             encoding="utf-8")
    for name, text in files.items():
        (root / "student" / name).write_text(text, encoding="utf-8")
    done = subprocess.run([sys.executable, str(kit / "grade.py")], capture_output=True, text=True, timeout=120,
                          check=False, env={**_without_ours(), "KERNELGRADE_GRADE_ROOT": str(root)})
    assert done.returncode == 0, f"the kit crashed, no results file: {done.stderr[-2000:]}"
    return json.loads((root / "results" / "results.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize("line", ["#" + " " * (MAX_FILE_BYTES - 2) + "x", "**" + " " * (MAX_FILE_BYTES - 3) + "x"],
                         ids=["hash-then-spaces", "stars-then-spaces"])
def test_an_answers_file_of_blanks_after_a_heading_mark_is_read_in_linear_time(tmp_path, line):
    """answers.md holding one line: a heading mark and 512 KiB of spaces. The heading pattern had
    two runs of blanks in a row (`#{1,6}\\s*` then `\\s*`), which split the spaces every way:
    8 000 of them took 2.6 s, so the largest file allowed would hold the grader about three hours,
    before anything reached the server. Now the kit reads it at once and goes on (here to a
    server that is not there: "could not be reached", no score)."""
    code = json.loads(CODE.read_text(encoding="utf-8"))["code"]
    results, elapsed = gradescope(tmp_path, {"solution.py": code, "answers.md": line})
    assert elapsed < 30, f"the kit took {elapsed:.1f} s on one line of blanks"
    assert "score" not in results and "could not be reached" in results["output"], results["output"]


NESTED = "[" * 200_000 + "]" * 200_000


@pytest.mark.parametrize("name", ["submission.json", "answer.ipynb"])
def test_json_nested_past_the_recursion_limit_is_the_students_invalid_upload(tmp_path, name):
    """A submission.json (or notebook) nested 200 000 deep raised RecursionError out of json.loads,
    which the kit did not catch: run_autograder died with a traceback and wrote no results file
    (Gradescope then shows an autograder failure to the student and the staff). Now it is the
    student's own invalid upload, said in their language, with no score and no previous score kept."""
    metadata = {"previous_submissions": [{"submission_time": "2026-12-01T10:00:00Z", "score": 9.0}]}
    for language, words in (("en", "nested too deeply"), ("zh", "没能从你提交的文件里组出一次作答")):
        folder = tmp_path / language
        folder.mkdir()
        (folder / "autograder").mkdir()
        (folder / "autograder" / "submission_metadata.json").write_text(json.dumps(metadata), encoding="utf-8")
        results, _ = gradescope(folder, {name: NESTED}, language=language)
        assert "score" not in results, results
        assert words in results["output"] and name in results["output"], results["output"]
        assert results["extra_data"]["kernelgrade"]["status"] == "invalid"
    results = prairielearn(tmp_path, {name: NESTED})
    assert results["gradable"] is False and "nested too deeply" in results["message"], results


@pytest.mark.parametrize("answers", [None, "q1", ["q1"]], ids=["left-out", "a-string", "a-list"])
def test_a_submission_json_without_an_answers_object_beside_text_inputs(tmp_path, answers):
    """A PrairieLearn question that takes the written answers in text inputs (pl-string-input) and the
    code as a file: a submission.json without `answers` (or with a string there) made grade.py index
    it (KeyError, TypeError) and die with no results file. Now the inputs' answers go in (left out), or
    the upload is the student's invalid one (a string, a list); never a crash."""
    body = {"code": json.loads(CODE.read_text(encoding="utf-8"))["code"],
            **({"answers": answers} if answers is not None else {})}
    results = prairielearn(tmp_path, {"submission.json": json.dumps(body)},
                           submitted={"q1": "第二次求和前重新施加掩码", "q2": "padding lane"})
    assert results["gradable"] is False, results
    if answers is None:
        assert "could not be reached" in results["message"], results  # a whole submission, sent
    else:
        assert "answers" in results["message"] and "not an object" in results["message"], results
