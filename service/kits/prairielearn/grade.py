#!/usr/bin/env python3
"""PrairieLearn runs this in the grader container: the student's files (/grade/student) and the
question's data (/grade/data/data.json) become a kernelgrade submission, graded on the configured
kernelgrade server, and the result goes to /grade/results/results.json. A failure on our side is
`gradable: false` (no points lost, no attempt used), never a zero.

Configuration: /grade/serverFilesCourse/kernelgrade/config.json ({"server_url", "api_key",
"exercise", "assignment", "timeout_s", "language"}), each overridable by the environment
(KERNELGRADE_URL, KERNELGRADE_KEY, KERNELGRADE_EXERCISE, KERNELGRADE_ASSIGNMENT,
KERNELGRADE_TIMEOUT_S, KERNELGRADE_LANGUAGE). KERNELGRADE_GRADE_ROOT moves /grade elsewhere."""
import hashlib
import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from kernelgrade_kit import KitError, deadline_in, env_or, read_files, say, server_from, submission_from_files  # noqa: E402

ROOT = Path(os.environ.get("KERNELGRADE_GRADE_ROOT", "/grade"))
TEXT_ANSWERS = ("q1", "q2", "q3", "explanation", "claimed_output")


def load_config() -> dict:
    path = ROOT / "serverFilesCourse" / "kernelgrade" / "config.json"
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}


def submission(config: dict, data: dict) -> tuple[dict, str]:
    """The submission, and an idempotency key: the same variant with the same answers is the same
    kernelgrade submission (a re-grade fetches its current result instead of grading again)."""
    exercise = (env_or(config, "exercise", "KERNELGRADE_EXERCISE")
                or (data.get("params") or {}).get("kernelgrade_exercise"))
    if not exercise:
        raise KitError("config", error="no exercise configured")
    body = submission_from_files(read_files(ROOT / "student"), exercise=exercise)
    answers = data.get("submitted_answers") or {}
    if not isinstance(body.get("answers", {}), dict):  # a submission.json's own `answers`, of any type
        raise KitError("invalid", error="`answers` in submission.json is not an object of texts")
    body["answers"] = dict(body.get("answers", {}))  # a submission.json may leave it out
    for name in TEXT_ANSWERS:  # answers given through pl-string-input & co. rather than files
        if isinstance(answers.get(name), str) and answers[name].strip():
            if name in ("q1", "q2", "q3"):
                body["answers"][name] = answers[name].strip()
            else:
                body[name] = answers[name].strip()
    assignment = env_or(config, "assignment", "KERNELGRADE_ASSIGNMENT")
    seed = data.get("variant_seed")
    digest = hashlib.sha256(json.dumps([seed, body], sort_keys=True, ensure_ascii=False).encode()).hexdigest()
    body = {**body, **({"assignment": assignment} if assignment else {}),
            "external_ref": f"prairielearn:variant:{seed}:{digest[:16]}"}
    if language := env_or(config, "language", "KERNELGRADE_LANGUAGE"):
        body["language"] = language
    return body, f"prairielearn:{digest}"


def main() -> int:
    config = load_config()
    language = env_or(config, "language", "KERNELGRADE_LANGUAGE", "zh")
    timeout_s = float(env_or(config, "timeout_s", "KERNELGRADE_TIMEOUT_S", 100))
    try:
        data_path = ROOT / "data" / "data.json"
        data = json.loads(data_path.read_text(encoding="utf-8")) if data_path.is_file() else {}
        body, key = submission(config, data)
        results = server_from(config).grade(body, idempotency_key=key, result_format="prairielearn",
                                            deadline=deadline_in(timeout_s))
    except KitError as exc:
        text = say(exc.code, language, **{"seconds": int(timeout_s), **exc.params})
        results = {"gradable": False, "format_errors": [text], "message": text}
    out = ROOT / "results" / "results.json"
    out.parent.mkdir(parents=True, exist_ok=True)  # PrairieLearn does not create it
    out.write_text(json.dumps(results, ensure_ascii=False), encoding="utf-8")
    print(f"kernelgrade: wrote {out} (gradable: {results.get('gradable', True)}, score: {results.get('score')})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
