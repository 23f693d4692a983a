"""The student JSON in the student's language (issue 21): /v1/feedback/{token}?lang= returns the
whole report said in it (diagnoses, requirements, rubric items, cases, veto notes), from the report's
`translations`, with the verdict, points and history unchanged; a report graded before translations
stays in its language. Real server, real database, real sandbox."""
from __future__ import annotations

import re

import pytest
from sqlalchemy import select

from service.db.models import ReportRow
from tests.api.support import example_body, template_body, wait_final

pytestmark = pytest.mark.sandbox
CJK = re.compile(r"[\u3400-\u9fff]")


def _token(view: dict) -> str:
    return view["links"]["feedback"].rsplit("/", 1)[-1]


def _points(report: dict) -> dict:
    return {"score": {k: v for k, v in report["score"].items() if k != "requirements"},
            "met": [(r["id"], r["met"]) for r in report["score"]["requirements"]],
            "items": [(i["id"], i["points"], i["status"]) for i in report["items"]],
            "cases": [(c["id"], c["passed"]) for c in report["cases"]],
            "vetoes": [(v["rule"], v["status"]) for v in report["vetoes"]]}


def test_the_student_json_switches_the_whole_report(course, service):
    client = course.client("submit", "read")
    example = example_body()  # the lesson's Chinese answers and claimed output (it claims a pass)
    body = {**template_body("cols < BLOCK"), "answers": example["answers"], "explanation": example["explanation"],
            "claimed_output": example["claimed_output"]}
    view = wait_final(client, client.post("/v1/submissions", json=body).json()["id"])
    assert view["status"] == "graded" and view["report"]["language"] == "zh"
    student = service.client()
    url = f"/v1/feedback/{_token(view)}"

    zh = student.get(url).json()
    en = student.get(url, params={"lang": "en"}).json()
    assert zh["language"] == "zh" and zh["report"]["language"] == "zh"
    assert en["language"] == "en" and en["report"]["language"] == "en"
    assert "translations" not in zh["report"] and "translations" not in en["report"], "one language to read"
    assert _points(en["report"]) == _points(zh["report"])

    said = {lang: next(d["message"] for d in v["report"]["diagnoses"] if d["id"] == "missing_remask")
            for lang, v in (("zh", zh), ("en", en))}
    assert CJK.search(said["zh"]) and not CJK.search(said["en"]) and "tl.where" in said["en"]
    given = {lang: next(r for r in v["report"]["score"]["requirements"] if r["id"] == "given_check")
             for lang, v in (("zh", zh), ("en", en))}
    assert given["en"]["title"] == "The given check passes" and not given["en"]["met"]
    assert CJK.search(given["zh"]["title"])
    boundary = next(i for i in en["report"]["items"] if i["id"] == "code.boundary")
    assert boundary["title"] == "Boundary inputs and probes" and not CJK.search(boundary["feedback"])
    probe = next(c for c in en["report"]["cases"] if c["id"] == "probe.large_mean")
    assert not CJK.search(probe["description"] + (probe["targets"] or ""))
    veto = next(v for v in en["report"]["vetoes"] if v["rule"] == "unverified_claim")
    assert veto["status"] == "confirmed" and not CJK.search(veto["evidence"]["note"])
    assert "harness.py" not in str(en), "the harness's frames stay out in either language"

    # The platform's own view is the report as graded, with the other language kept beside it.
    stored = client.get(f"/v1/submissions/{view['id']}/report").json()
    assert stored["language"] == "zh" and set(stored["translations"]) == {"en"}
    assert stored["score"] == view["report"]["score"]
    with service.sessions() as session:
        seqs = session.scalars(select(ReportRow.seq).where(ReportRow.submission_id == view["id"])).all()
    assert list(seqs) == [1], "switching language writes no report revision"


def test_a_report_graded_before_translations_stays_in_its_language(course, service):
    client = course.client("submit", "read")
    view = wait_final(client, client.post("/v1/submissions", json=template_body("cols < BLOCK")).json()["id"])
    with service.sessions() as session:  # as a report stored before this change: no `translations`
        row = session.scalar(select(ReportRow).where(ReportRow.submission_id == view["id"]))
        row.report = {k: v for k, v in row.report.items() if k != "translations"}
        session.commit()
    student = service.client()
    old = student.get(f"/v1/feedback/{_token(view)}", params={"lang": "en"}).json()
    assert old["language"] == "en" and old["report"]["language"] == "zh", "the texts stay as graded, and say so"
    assert CJK.search(next(d["message"] for d in old["report"]["diagnoses"] if d["id"] == "missing_remask"))
    page = student.get(f"/feedback/{_token(view)}", params={"lang": "en"}).text
    assert 'id="untranslated"' in page and "stays in 中文" in page
