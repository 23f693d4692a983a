"""kernelgrade's platform kit: turn a platform's submission files into a kernelgrade submission,
grade it (on a kernelgrade server over HTTP, or locally with the `kernelgrade` command), and say
what happened in the platform's result format. Standard library only: it runs as it is in
Gradescope's and PrairieLearn's containers. An unreachable server or a grading failure is never
written as a zero."""
from __future__ import annotations

import json
import os
import re
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

MAX_FILE_BYTES = 512 * 1024  # what one submitted file may bring (the service caps code at 64 KiB anyway)
MAX_FILES = 50
MAX_WAIT_PER_REQUEST_S = 25  # below the service's default max_wait_s (30)
USER_AGENT = "kernelgrade-kit/1"

# A copy of the catalogue's kit.* messages (service/messages/grades.yaml): this file runs on the platform without the
# service; tests/unit/test_messages.py keeps the two equal.
MESSAGES = {
    "unreachable": {"zh": "无法连接评分服务 {url}（{error}）。"
                          "这次提交还没有评分——这不是 0 分；课程团队会重新运行评分。",
                    "en": "The grading service {url} could not be reached ({error}). This submission is not graded "
                          "yet - that is not a zero; the course staff will run the grader again."},
    "timeout": {"zh": "评分服务在 {seconds} 秒内没有给出结果（提交 {submission} 仍在评分）。这不是 0 "
                      "分；课程团队会重新运行评分。",
                "en": "The grading service gave no result within {seconds} s (submission {submission} is still "
                      "being graded). That is not a zero; the course staff will run the grader again."},
    "config": {"zh": "评分工具的配置有误（{error}），这是课程的问题，不是你的：这次提交还没有评分，不是 0 分。",
               "en": "The grader is misconfigured ({error}): the course's problem, not yours. This submission is "
                     "not graded yet, which is not a zero."},
    "invalid": {"zh": "没能从你提交的文件里组出一次作答：{error}。请检查文件后重新提交；这次不计分。",
                "en": "Your files did not make a submission: {error}. Check them and submit again; this attempt "
                      "earns no score."},
    "other_exercise": {"zh": "你的 submission.json 写的是练习 {named}，而这次作业评的是练习 {exercise}。"
                             "请提交这道练习的作答后重新提交；这次不计分。",
                       "en": "Your submission.json is for exercise {named}, but this assignment grades exercise "
                             "{exercise}. Submit your answer to this exercise; this attempt earns no score."},
    "kept": {"zh": "暂时保留你上一次有效提交的分数 {score:g}。",
             "en": "Your previous valid score {score:g} is kept meanwhile."},
    "title": {"zh": "kernelgrade：未评分", "en": "kernelgrade: not graded"},
}
SECTION_ALIASES = {
    "q1": "q1", "q2": "q2", "q3": "q3", "explanation": "explanation", "解释": "explanation", "实现说明": "explanation",
    "output": "claimed_output", "claimed output": "claimed_output", "输出": "claimed_output",
    "运行输出": "claimed_output",
}
# A heading: up to 3 blanks, an optional `#`-run or `**`, blanks, the name. One run of blanks before
# the name (`#{1,6}\s*` followed by `\s*` split the same blanks every way: a line of "#" and 512 KiB
# of spaces, the most one uploaded file brings, held the grader for hours before anything was sent).
HEADING = re.compile(r"^(?:\s{0,3}(?:#{1,6}|\*\*))?\s*"
                     r"(q[1-3]|explanation|claimed output|output|解释|实现说明|运行输出|输出)"
                     r"\b\s*(?:\*\*)?\s*[:：.、)）-]?\s*(.*)$", re.IGNORECASE)


class KitError(Exception):
    """What went wrong, as one of MESSAGES' codes and its parameters."""

    def __init__(self, code: str, **params: Any) -> None:
        super().__init__(code)
        self.code, self.params = code, params


def say(code: str, language: str, **params: Any) -> str:
    return MESSAGES[code].get(language, MESSAGES[code]["en"]).format(**params)


# --- reading the platform's files ----------------------------------------------------------------

def read_files(folder: Path) -> dict[str, str]:
    """The submitted text files under `folder` (relative path -> text), bounded; links are not followed."""
    files: dict[str, str] = {}
    if not folder.is_dir():
        return files
    for path in sorted(folder.rglob("*")):
        if len(files) >= MAX_FILES:
            break
        if (path.is_symlink() or not path.is_file()
                or any(part.startswith(".") for part in path.relative_to(folder).parts)):
            continue
        with open(path, "rb") as handle:
            data = handle.read(MAX_FILE_BYTES + 1)
        if len(data) > MAX_FILE_BYTES:
            raise KitError("invalid", error=f"{path.name} is larger than {MAX_FILE_BYTES // 1024} KiB")
        files[path.relative_to(folder).as_posix()] = data.decode("utf-8", errors="replace")
    return files


def sections(text: str) -> dict[str, str]:
    """Answers written under headings (`## Q1`, `Q2:`, `解释`, `输出`, ...)
    -> {q1, q2, q3, explanation, claimed_output}."""
    found: dict[str, list[str]] = {}
    current = None
    for line in text.splitlines():
        match = HEADING.match(line)
        if match:
            current = SECTION_ALIASES[match.group(1).lower()]
            found.setdefault(current, [])
            if match.group(2).strip():
                found[current].append(match.group(2).strip())
        elif current is not None:
            found[current].append(line)
    return {key: "\n".join(lines).strip() for key, lines in found.items()}


def _notebook(text: str) -> tuple[str, dict[str, str]]:
    """The kernel cell of a notebook (the code cell that defines a @triton.jit kernel), its printed
    output as the claimed output, and the answers of its markdown cells."""
    notebook = json.loads(text)
    code, answers, output = "", {}, ""
    for cell in notebook.get("cells", []):
        source = ("".join(cell.get("source", [])) if isinstance(cell.get("source"), list)
                  else str(cell.get("source", "")))
        if cell.get("cell_type") == "code" and not code and "triton.jit" in source:
            code = source
            output = "".join("".join(o.get("text", [])) if isinstance(o.get("text"), list) else str(o.get("text", ""))
                             for o in cell.get("outputs", []) if o.get("output_type") == "stream")
        elif cell.get("cell_type") == "markdown":
            answers.update({k: v for k, v in sections(source).items() if v})
    if output and "claimed_output" not in answers:
        answers["claimed_output"] = output
    return code, answers


# What a submission.json may say: the student's own work. Everything else of the contract (`student`,
# `assignment`, `attempt`, `external_ref`, `callback_url`) comes from the platform or the kit's configuration,
# never from the files a student uploads.
STUDENT_FIELDS = ("code", "answers", "explanation", "claimed_output", "language")


def submission_from_files(files: dict[str, str], *, exercise: str) -> dict[str, Any]:
    """A kernelgrade submission from a platform's files: `submission.json` (the contract itself), a
    notebook, or a `.py` cell plus answers (`answers.md` with Q1-Q3 headings, or q1.md ... and
    `output.txt` for the claimed output). The exercise is always `exercise` (the assignment's): a
    submission.json naming another one is refused, and only STUDENT_FIELDS are taken from it."""
    names = {name.lower(): name for name in files}
    if "submission.json" in names:
        try:
            body = json.loads(files[names["submission.json"]])
        except RecursionError:  # JSON nested past Python's recursion limit ([[[[...: a crash, not a result file)
            raise KitError("invalid", error="submission.json is nested too deeply") from None
        except ValueError as exc:
            raise KitError("invalid", error=f"submission.json is not JSON ({exc})") from None
        if not isinstance(body, dict):
            raise KitError("invalid", error="submission.json is not a JSON object")
        named = body.get("exercise")
        if named not in (None, "", exercise):  # another exercise's answer (an easier one, the lesson's example)
            raise KitError("other_exercise", named=json.dumps(named, ensure_ascii=False)[:100], exercise=exercise)
        # Only the student's work: the exercise is the assignment's, and who submitted, for which
        # assignment and attempt, and where the report goes are the platform's and the course's to say.
        return {"exercise": exercise, **{k: body[k] for k in STUDENT_FIELDS if k in body}}
    code, answers = "", {}  # type: tuple[str, dict[str, str]]
    notebooks = [n for n in files if n.lower().endswith(".ipynb")]
    if notebooks:
        try:
            code, answers = _notebook(files[notebooks[0]])
        except RecursionError:
            raise KitError("invalid", error=f"{notebooks[0]} is nested too deeply to be a notebook") from None
        except (ValueError, AttributeError, TypeError) as exc:
            raise KitError("invalid", error=f"{notebooks[0]} is not a notebook ({exc})") from None
    python = [n for n in files if n.lower().endswith(".py")]
    if not code and python:
        preferred = [n for n in python if Path(n).name.lower() in ("solution.py", "kernel.py", "answer.py", "main.py")]
        code = files[(preferred or sorted(python))[0]]
    for name in ("answers.md", "answers.txt", "readme.md"):
        if name in names:
            answers.update({k: v for k, v in sections(files[names[name]]).items() if v})
    for key, candidates in (("q1", ("q1.md", "q1.txt")), ("q2", ("q2.md", "q2.txt")), ("q3", ("q3.md", "q3.txt")),
                            ("explanation", ("explanation.md", "explanation.txt")),
                            ("claimed_output", ("output.txt", "claimed_output.txt", "output.md"))):
        for candidate in candidates:
            if candidate in names and files[names[candidate]].strip():
                answers[key] = files[names[candidate]].strip()
    if not code.strip():
        raise KitError("invalid", error="no kernel code found (a .py file, a notebook with a @triton.jit cell, "
                                        "or submission.json)")
    return {"exercise": exercise, "code": code,
            "answers": {k: answers[k] for k in ("q1", "q2", "q3") if answers.get(k)},
            "explanation": answers.get("explanation", ""), "claimed_output": answers.get("claimed_output", "")}


# --- grading on a kernelgrade server ----------------------------------------------------------------

class Server:
    """The few calls a kit makes: submit (idempotent), poll, fetch the platform's result."""

    def __init__(self, url: str, key: str) -> None:
        if not url or not url.startswith(("http://", "https://")):
            raise KitError("config", error="server_url must be an http(s) URL")
        if not key:
            raise KitError("config", error="no API key configured")
        self.url, self.key = url.rstrip("/"), key

    def _call(self, method: str, path: str, *, body: dict | None = None, headers: dict[str, str] | None = None,
              timeout_s: float = 60) -> tuple[int, Any]:
        request = urllib.request.Request(self.url + path, method=method,
                                         # UTF-8, not json.dumps' ASCII escapes (six bytes a CJK character, which
                                         # took honest Chinese answers over the service's body cap)
                                         data=None if body is None else json.dumps(body, ensure_ascii=False).encode(),
                                         headers={"Authorization": f"Bearer {self.key}", "User-Agent": USER_AGENT,
                                                  "Content-Type": "application/json", **(headers or {})})
        try:
            with urllib.request.urlopen(request, timeout=timeout_s) as response:  # noqa: S310 - the configured server
                return response.status, json.loads(response.read() or b"null")
        except urllib.error.HTTPError as exc:
            try:
                detail = json.loads(exc.read() or b"null")
            except ValueError:
                detail = None
            return exc.code, detail
        except (urllib.error.URLError, TimeoutError, ConnectionError, OSError) as exc:
            raise KitError("unreachable", url=self.url, error=str(getattr(exc, "reason", exc))) from None

    def _retrying(self, method: str, path: str, *, deadline: float, tries: int = 3, **kwargs: Any) -> tuple[int, Any]:
        """Retry what the service asks to retry (429, 503) and lost connections: a few times, within the deadline."""
        pause = 2.0
        for attempt in range(1, tries + 1):
            try:
                status, data = self._call(method, path, timeout_s=max(5.0, min(60.0, deadline - time.monotonic())),
                                          **kwargs)
                if status not in (429, 502, 503, 504):
                    return status, data
                failure = KitError("unreachable", url=self.url, error=f"HTTP {status}")
            except KitError as exc:
                if exc.code != "unreachable":
                    raise
                failure = exc
            if attempt == tries or time.monotonic() + pause >= deadline:
                raise failure
            time.sleep(pause)
            pause = min(pause * 2, 15.0)
        raise AssertionError("unreachable")  # the loop returns or raises

    def grade(self, body: dict[str, Any], *, idempotency_key: str, result_format: str,
              deadline: float) -> dict[str, Any]:
        """Submit (the same key gives back the same submission, with its current report), wait past
        the service's own `wait` bound by polling, and return the platform's result."""
        wait = max(0, min(MAX_WAIT_PER_REQUEST_S, int(deadline - time.monotonic()) - 5))
        status, view = self._retrying("POST", f"/v1/submissions?wait={wait}", body=body, deadline=deadline,
                                      headers={"Idempotency-Key": idempotency_key})
        if status in (401, 403):
            raise KitError("config", error=f"the API key was refused (HTTP {status})")
        if status == 422:
            fields = ", ".join(".".join(str(p) for p in e.get("loc", [])[1:]) + f": {e.get('msg', '')}"
                               for e in (view or {}).get("detail", []) if isinstance(e, dict))
            raise KitError("invalid", error=fields or "the service refused it")
        if status == 413:  # the student's files, over the service's cap: not the service's failure
            raise KitError("invalid", error="the files are larger than the grading service accepts "
                                            f"({len(json.dumps(body, ensure_ascii=False).encode()) // 1024} KiB; "
                                            f"{str((view or {}).get('detail', 'HTTP 413'))[:200]})")
        if status == 409:
            raise KitError("config", error="this submission was already sent with different content")
        if status not in (200, 202):
            raise KitError("unreachable", url=self.url, error=f"HTTP {status}")
        submission_id = view["id"]
        pause = 2.0
        while view["status"] not in ("graded", "not_gradable"):
            if time.monotonic() + pause >= deadline:
                raise KitError("timeout", submission=submission_id)
            time.sleep(pause)
            pause = min(pause * 1.5, 10.0)
            status, view = self._retrying("GET", f"/v1/submissions/{submission_id}", deadline=deadline)
            if status != 200:
                raise KitError("unreachable", url=self.url, error=f"HTTP {status}")
        status, result = self._retrying("GET", f"/v1/submissions/{submission_id}/report?format={result_format}",
                                        deadline=deadline + 30)
        if status != 200:
            raise KitError("unreachable", url=self.url, error=f"HTTP {status}")
        return result


def last_said_line(text: str) -> str:
    """The last line of `text` that says something: not blank, not a compile error's caret line
    (`          ^`). The rule of service.grading.rubric._case_failure (a copy: the kit runs without
    the service); "" when no line does."""
    said = [line for line in text.strip().splitlines() if line.strip().strip("^~ ")]
    return said[-1].strip() if said else ""


def grade_locally(body: dict[str, Any], *, command: str, result_format: str, veto_policy: str,
                  timeout_s: float) -> dict[str, Any]:
    """Grade with the `kernelgrade` command on this machine (its sandbox, the Triton interpreter)."""
    with tempfile.TemporaryDirectory(prefix="kernelgrade-kit-") as folder:
        path = Path(folder) / "submission.json"
        path.write_text(json.dumps(body, ensure_ascii=False), encoding="utf-8")
        try:
            done = subprocess.run([command, "grade", str(path), "--format", result_format, "--device", "interpreter",
                                   "--veto-policy", veto_policy], capture_output=True, text=True, timeout=timeout_s,
                                  check=False)
        except FileNotFoundError:
            raise KitError("config", error=f"{command!r} is not installed (run setup.sh)") from None
        except subprocess.TimeoutExpired:
            raise KitError("timeout", submission="local") from None
    if done.returncode == 2:  # kernelgrade grade: input it cannot read
        raise KitError("invalid", error=last_said_line(done.stderr)[:500] or "refused")
    if done.returncode != 0:
        raise KitError("config", error=f"kernelgrade exited with {done.returncode}: {done.stderr.strip()[-500:]}")
    return json.loads(done.stdout)


def deadline_in(seconds: float) -> float:
    return time.monotonic() + seconds


def env_or(config: dict[str, Any], key: str, env: str, default: Any = None) -> Any:
    return os.environ.get(env) or config.get(key) or default


def server_from(config: dict[str, Any]) -> Server:
    return Server(env_or(config, "server_url", "KERNELGRADE_URL", ""), env_or(config, "api_key", "KERNELGRADE_KEY", ""))


