"""What a student may see of a report: the same report, less the course's secrets (the seeds
that determine the hidden inputs) and less the grader's internals (frames of the sandbox harness
in tracebacks). Used by the student JSON (/v1/feedback/{token}) and the feedback page, so that
both show the same thing; stored reports are left as they are (the TA pages see them whole)."""
from __future__ import annotations

import posixpath
import re
from typing import Any

from pydantic import Field
from pydantic.json_schema import SkipJsonSchema

from service.messages import LANGUAGES, written_language
from service.report import CaseReport, Report, ReportTexts, Seeds, in_language

# The files of a job a student wrote or was given: every other frame is the grader's.
STUDENT_FILES = frozenset({"submission.py", "given_check.py"})

# One traceback frame: the `File "...", line N, in f` line and, if present, its source line and
# the line of position markers (`^^^^`, `~~~^^^`) Python 3.11+ prints under it.
_FRAME = re.compile(r'^(?P<indent>[ \t]*)File "(?P<path>[^"\n]+)", line (?P<line>\d+)(?P<rest>[^\n]*)\n'
                    r'(?P<source>(?P=indent)[ \t]+[^\n]*\n(?:(?P=indent)[ \t]+[~^]+[ ~^]*\n)?)?', re.MULTILINE)
# The sandbox's own exception types, named with their module on a traceback's last line
# (`sandbox.gpu_compile.GPUCompileError: ...`): the student reads the type alone.
_OWN_MODULE = re.compile(r'^(?:sandbox\.)?(?:gpu_compile|harness|guards|speed_phase)\.(?=\w+(?:Error|Exception)\b)',
                         re.MULTILINE)


# A warning as Python prints it: `/abs/path/file.py:504: UserWarning: …` (a file of the grader's
# environment, or the job's): the student reads the file's name under site-packages, or its own name.
_WARNING_AT = re.compile(r'^(?P<path>/[^\n:]*/(?P<name>[^/\n:]+\.py)):(?P<line>\d+): (?=\w*Warning\b)', re.MULTILINE)
_SITE = re.compile(r"^.*/(?:site|dist)-packages/")


def _warning_at(m: re.Match[str]) -> str:
    path = m["path"]
    shown = _SITE.sub("", path) if _SITE.match(path) else m["name"]
    return f"{shown}:{m['line']}: "


def strip_internals(text: str | None) -> str | None:
    """The traceback in `text` without the frames of files that are not the student's (the
    harness, the sandbox's modules, torch, triton), and the student's files named without the
    sandbox's job folder; a warning's file named without the grader's folders. Other text is
    returned unchanged."""
    if text and ".py:" in text:
        text = _WARNING_AT.sub(_warning_at, text)
    if not text or 'File "' not in text:
        return text

    def frame(m: re.Match[str]) -> str:
        name = posixpath.basename(m["path"])
        if name not in STUDENT_FILES:
            return ""
        return f'{m["indent"]}File "{name}", line {m["line"]}{m["rest"]}\n{m["source"] or ""}'

    return _OWN_MODULE.sub("", _FRAME.sub(frame, text))


def strip_tracebacks(value: Any) -> Any:
    """`value` (a report in JSON form, or any part of it) with `strip_internals` applied to every
    string in it: the given check's output is quoted in several places (given_check, the
    requirements' evidence, the claim check's side-by-side), and each must lose the same frames."""
    if isinstance(value, str):
        return strip_internals(value)
    if isinstance(value, dict):
        return {k: strip_tracebacks(v) for k, v in value.items()}
    if isinstance(value, list):
        return [strip_tracebacks(v) for v in value]
    return value


def student_report(report: dict[str, Any], language: str | None = None) -> dict[str, Any]:
    """A copy of a stored report (JSON form) as the student sees it, its texts in `language` where the
    report has them (`in_language`; a report graded before translations stays in its own)."""
    if language is not None and language != report.get("language") and language in (report.get("translations") or {}):
        report = in_language(Report.model_validate(report), language).model_dump(mode="json", by_alias=True)
    report = dict(report)
    report.pop("translations", None)  # the student reads one language, the one chosen
    # Seeds stay with the course: they determine the hidden inputs, which a regrade reuses.
    report.pop("seeds", None)
    report["cases"] = [{k: v for k, v in case.items() if k != "seed"} for case in report.get("cases", []) or []]
    return strip_tracebacks(report)


class StudentCaseReport(CaseReport):
    """A case as the student sees it: without its seed."""

    seed: SkipJsonSchema[int | None] = Field(None, exclude=True)  # type: ignore[assignment]  # never sent


class StudentReport(Report):
    """A report as the student sees it (`student_report`): no seeds, no harness frames, one language."""

    cases: list[StudentCaseReport] = []  # type: ignore[assignment]  # read only, never mixed with CaseReport
    seeds: SkipJsonSchema[Seeds | None] = Field(None, exclude=True)
    translations: SkipJsonSchema[dict[str, ReportTexts]] = Field({}, exclude=True)  # type: ignore[assignment]


def detected_language(body: dict[str, Any] | None) -> str | None:
    """The language of a stored submission's written answers and explanation (the grader's rule,
    service.messages.written_language); None when nothing was written."""
    if not isinstance(body, dict):
        return None
    answers = body.get("answers")
    written = [*(answers.values() if isinstance(answers, dict) else ()), body.get("explanation") or ""]
    return written_language(v for v in written if isinstance(v, str))


def student_language(asked: str | None, declared: str | None, body: dict[str, Any] | None, fallback: str) -> str:
    """The language the student reads their feedback in: asked for (?lang=), else the one the
    submission declares (its `language` field), else the one its answers are written in, else the
    lesson's."""
    for choice in (asked, declared, detected_language(body)):
        if choice in LANGUAGES:
            return choice
    return fallback if fallback in LANGUAGES else "zh"
