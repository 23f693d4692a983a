"""Writing the kits: the Gradescope autograder zip, and the PrairieLearn grader image context with
an example question. What runs inside them is kernelgrade_kit.py (standard library only)."""
from __future__ import annotations

import html
import json
import shutil
import subprocess
import uuid
import zipfile
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from service.config import REPO_ROOT
from service.exercises import Exercise
from service.messages import LANGUAGES, render

KITS = Path(__file__).resolve().parent
GRADER_IMAGE = "kernelgrade-pl-grader"


class KitConfig(BaseModel):
    """kernelgrade.json in the Gradescope zip (the assignment's configuration)."""

    model_config = ConfigDict(extra="forbid")

    mode: Literal["server", "local"] = "server"
    server_url: str | None = Field(None, pattern=r"^https?://")
    api_key: str | None = Field(None, description="a course key with the submit and read scopes")
    exercise: str = Field(min_length=1, max_length=100)
    assignment: str | None = Field(None, max_length=200)
    timeout_s: int = Field(540, ge=30, le=2400,
                           description="below the assignment's Gradescope timeout (10 min by default)")
    language: Literal["zh", "en"] = "zh"
    local_command: str = "kernelgrade"
    veto_policy: Literal["capped", "zero"] = Field("capped", description="local mode: what a confirmed veto exports")

    @model_validator(mode="after")
    def _server_needs_url_and_key(self) -> KitConfig:
        if self.mode == "server" and not (self.server_url and self.api_key):
            raise ValueError("server mode needs --server and --key-file (a key with the submit and read scopes)")
        return self


def _tracked_sources() -> list[str]:
    """The repository's tracked files that make kernelgrade installable (local mode ships them)."""
    listed = subprocess.run(["git", "ls-files", "pyproject.toml", "README.md", "constraints", "service", "sandbox",
                             "exercises"], cwd=REPO_ROOT, capture_output=True, text=True, check=True)
    return [line for line in listed.stdout.splitlines() if line]


def gradescope_zip(config: KitConfig, output: Path) -> Path:
    """setup.sh and run_autograder at the root of the zip (Gradescope looks there), with the kit and
    its configuration; local mode also ships kernelgrade's source for setup.sh to install."""
    output.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(output, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name in ("setup.sh", "run_autograder"):
            info = zipfile.ZipInfo(name)
            info.external_attr = 0o100755 << 16  # executable, as Gradescope runs them
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, (KITS / "gradescope" / name).read_bytes())
        archive.write(KITS / "kernelgrade_kit.py", "kernelgrade_kit.py")
        archive.writestr("kernelgrade.json", config.model_dump_json(indent=2, exclude_none=True))
        if config.mode == "local":
            for relative in _tracked_sources():
                archive.write(REPO_ROOT / relative, f"kernelgrade-src/{relative}")
    return output


QUESTION_TEXT: dict[str, dict[str, str]] = {  # the PrairieLearn question's labels (kits.question.*)
    lang: {key: render(f"kits.question.{key}", lang) for key in ("explanation", "output", "output_help")}
    for lang in LANGUAGES}


def _editor(file_name: str, mode: str, lines: int) -> str:
    return (f'<pl-file-editor file-name="{file_name}" ace-mode="ace/mode/{mode}" min-lines="{lines}" '
            'allow-blank="true">'
            "</pl-file-editor>")


def _question_html(exercise: Exercise) -> str:
    """The code editor (started from the template), one editor per written question, one for the claimed output."""
    spec = exercise.spec
    text = QUESTION_TEXT["en" if spec.language == "en" else "zh"]
    parts = [f"<p>{html.escape(spec.title.in_(spec.language))}</p>",
             '<pl-file-editor file-name="solution.py" ace-mode="ace/mode/python" source-file-name="template.py">'
             "</pl-file-editor>"]
    for question in spec.questions:
        label = text["explanation"] if question.id == "explanation" else question.id.upper()
        parts += [f"<p><strong>{html.escape(label)}</strong> {html.escape(question.prompt.in_(spec.language))}</p>",
                  _editor(f"{question.id}.md", "markdown", 6)]
    parts += [f"<p><strong>{text['output']}</strong> {html.escape(text['output_help'])}</p>",
              _editor("output.txt", "text", 4)]
    return ("<pl-question-panel>\n" + "\n".join(parts) + "\n</pl-question-panel>\n\n<pl-submission-panel>\n"
            "<pl-external-grader-results></pl-external-grader-results>\n<pl-file-preview></pl-file-preview>\n"
            "</pl-submission-panel>\n")


def prairielearn_kit(output: Path, *, exercise: Exercise, server_url: str, assignment: str | None) -> Path:
    """`image/` (docker build it: the grader), `question/` (copy into the course's questions/), and
    `serverFilesCourse/kernelgrade/config.json` (the server and key; course staff only)."""
    image, question, server_files = output / "image", output / "question", output / "serverFilesCourse" / "kernelgrade"
    for folder in (image, question, server_files):
        folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(KITS / "prairielearn" / "image" / "Dockerfile", image / "Dockerfile")
    shutil.copy(KITS / "prairielearn" / "grade.py", image / "grade.py")
    shutil.copy(KITS / "kernelgrade_kit.py", image / "kernelgrade_kit.py")
    info = {
        "uuid": str(uuid.uuid4()), "title": exercise.spec.title.in_(exercise.spec.language), "topic": "Triton kernels",
        "tags": ["kernelgrade", exercise.id], "type": "v3", "singleVariant": True, "gradingMethod": "External",
        "externalGradingOptions": {
            "enabled": True, "image": GRADER_IMAGE, "entrypoint": "/kernelgrade/grade",
            "serverFilesCourse": ["kernelgrade/"], "timeout": 120, "enableNetworking": True,
            "environment": {"KERNELGRADE_EXERCISE": exercise.id, "KERNELGRADE_TIMEOUT_S": "100",
                            **({"KERNELGRADE_ASSIGNMENT": assignment} if assignment else {})},
        },
    }
    (question / "info.json").write_text(json.dumps(info, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    (question / "question.html").write_text(_question_html(exercise), encoding="utf-8")
    (question / "template.py").write_text(exercise.template, encoding="utf-8")
    config = server_files / "config.json"
    if not config.exists():  # never overwrite a key someone put there
        config.write_text(json.dumps({"server_url": server_url, "api_key": "kg_<id>_<secret> (submit + read scopes)",
                                      "language": exercise.spec.language}, indent=2) + "\n", encoding="utf-8")
    return output
