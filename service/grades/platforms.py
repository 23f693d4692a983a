"""A report in the result formats course platforms import: Gradescope `results.json` and the
PrairieLearn external-grader result. The field-by-field mapping, and where each platform
documents its format, is in docs/integrations.md; these functions are that table."""
from __future__ import annotations

from typing import Any

from service.grades.messages import Language, say, status_word
from service.grades.policy import Counted, CoursePolicy, counted_report
from service.messages import render
from service.report import Item, Report

NO_HINTS: tuple[tuple[str, ...], float] = ((), 0.0)  # the hint levels taken and their cost (gradebook.hint_charge)
MAX_OUTPUT_CHARS = 60_000  # PrairieLearn caps the whole results file at 1 MB; Gradescope shows long text collapsed


def _clip(text: str) -> str:
    return text if len(text) <= MAX_OUTPUT_CHARS else text[:MAX_OUTPUT_CHARS] + "\n…"


def _rule_name(blocking: str) -> str:
    return blocking.split(":")[1]


def _why(counted: Counted, language: Language, report: Report | None = None) -> list[str]:
    """Why the score that counts is what it is: the blocking veto or requirement, capped or zero."""
    if counted.blocking is None:
        return [say("not_passed_capped", language, cap=counted.cap,
                    total=counted.total)] if counted.rule == "capped" else []
    params = dict(cap=counted.cap, total=counted.total)
    if counted.blocking.startswith("veto:"):
        rule, status = _rule_name(counted.blocking), counted.blocking.split(":")[2]
        code = {"zero": f"veto_{status}_zero", "capped": f"veto_{status}_capped"}.get(counted.rule, f"veto_{status}")
        return [say(code, language, rule=rule, **params)]
    requirement = counted.blocking.split(":", 1)[1]
    code = "requirement_capped" if counted.rule == "capped" else "requirement_unmet"
    return [say(code, language, requirement=_requirement_name(report, requirement), **params)]


def _requirement_name(report: Report | None, requirement_id: str) -> str:
    """`id (title)`: the id platforms key on, the title the student reads."""
    if report is None:
        return requirement_id
    found = next((r for r in report.score.requirements if r.id == requirement_id), None)
    if found is None or not found.title:
        return requirement_id
    return f"{requirement_id}（{found.title}）" if report.language == "zh" else f"{requirement_id} ({found.title})"


def pending_reasons(report: Report) -> list[str]:
    """What a provisional score waits for, as the review queue names it."""
    reasons = [f"veto:{v.rule}" for v in report.vetoes if v.status == "suspected"]
    reasons += [f"item:{i.id}" for i in report.items if i.status == "needs_review"]
    reasons += [f"decision:{c.target}" for c in report.carried_decisions if c.outcome == "returned"]
    return reasons


def reasons(report: Report, counted: Counted, *, language: Language) -> list[str]:
    """Why the score that counts is what it is (the blocking veto or requirement, capped or zero),
    and what the hints cost: the words every export and the LTI activity page give with it."""
    lines = _why(counted, language, report)
    if counted.hint_cost:
        lines.append(render("export_hint_cost", language, cost=counted.hint_cost, count=len(counted.hints),
                            levels=list(counted.hints)))
    return lines


def summary(report: Report, counted: Counted, *, language: Language, feedback_url: str | None) -> str:
    score = report.score
    lines = [say("score_line", language, total=score.total, max=score.max, threshold=score.pass_threshold)]
    if counted.points != counted.total:
        lines.append(say("exported_line", language, points=counted.points, max=score.max))
    lines += reasons(report, counted, language=language)
    if score.provisional:
        lines.append(say("pending", language, reasons=", ".join(pending_reasons(report))))
    elif counted.awaiting_other:
        lines.append(say("pending_other", language))
    lines += [d.message for d in report.diagnoses]
    if feedback_url:
        lines.append(say("feedback_link", language, url=feedback_url))
    return _clip("\n".join(lines))


def _not_gradable_text(report: Report, language: Language, feedback_url: str | None) -> str:
    lines = [say("not_gradable", language)] + ([report.message] if report.message else [])
    if feedback_url:
        lines.append(say("feedback_link", language, url=feedback_url))
    return _clip("\n".join(lines))


def _item_name(item: Item, language: Language) -> str:
    return f"{item.id}: {item.title}" + (say("pending_item", language) if item.status == "needs_review" else "")


def _verdict_tests(report: Report, language: Language) -> list[tuple[str, str]]:
    """(name, output) of the informational entries: each veto that was not dismissed, each unmet requirement."""
    tests = []
    for veto in report.vetoes:
        if veto.status == "dismissed":
            continue
        note = veto.evidence.get("note") or veto.evidence.get("message") or ""
        code = "veto_confirmed" if veto.status == "confirmed" else "veto_suspected"
        tests.append((say("veto_test", language, rule=veto.rule, status=status_word(veto.status, language)),
                      "\n".join(filter(None, [say(code, language, rule=veto.rule), str(note)]))))
    for requirement in report.score.requirements:
        if not requirement.met and requirement.id != "no_blocking_veto":  # the vetoes are listed above
            name = _requirement_name(report, requirement.id)
            tests.append((say("requirement_test", language, requirement=name),
                          "\n".join(filter(None, [say("requirement_unmet", language, requirement=name),
                                                   requirement.message]))))
    return tests


def gradescope(report: Report, *, policy: CoursePolicy, feedback_url: str | None = None,
               hints: tuple[tuple[str, ...], float] = NO_HINTS) -> dict[str, Any]:
    """Gradescope autograder `results.json`: one test per rubric item, the score that counts on top."""
    language: Language = report.language
    base = {"output_format": "text", "test_output_format": "text", "test_name_format": "text",
            "visibility": "visible", "stdout_visibility": "hidden"}
    kernelgrade = {"submission_id": report.submission_id, "schema": "kernelgrade.report/v1", "status": report.status,
                   "exercise": report.exercise.model_dump()}
    counted = counted_report(report.model_dump(mode="json"), policy.veto_policy)
    counted = counted.with_hints(*hints) if counted is not None else None
    if counted is None:  # not_gradable: no score at all, never a zero (docs/integrations.md)
        return {**base, "output": _not_gradable_text(report, language, feedback_url),
                "tests": [{"name": say("not_gradable_test", language), "status": "failed",
                           "output": report.message or say("not_gradable", language)}],
                "extra_data": {"kernelgrade": kernelgrade}}
    tests: list[dict[str, Any]] = [
        {"name": _item_name(item, language), "number": str(number), "score": item.points,
         "max_score": item.max_points, "status": "passed" if item.status == "pass" else "failed",
         "output": _clip(item.feedback), "tags": [item.status], "visibility": "visible",
         "extra_data": {"item": item.id, "status": item.status}}
        for number, item in enumerate(report.items, start=1)
    ]
    tests += [{"name": name, "status": "failed", "output": output, "visibility": "visible"}
              for name, output in _verdict_tests(report, language)]
    results: dict[str, Any] = {
        **base, "score": counted.points,
        "output": summary(report, counted, language=language, feedback_url=feedback_url),
        "tests": tests,
        "extra_data": {"kernelgrade": {**kernelgrade, "total": counted.total, "counted": counted.points,
                                       "rule": counted.rule, "blocking": counted.blocking,
                                       "provisional": counted.provisional, "pending": pending_reasons(report),
                                       "passed": counted.passed, "hint_cost": counted.hint_cost,
                                       "hints": list(counted.hints)}},
    }
    if (seconds := report.timing.get("total_s")) is not None:
        results["execution_time"] = max(1, round(seconds))
    return results


def _test_output(item: Item) -> str:
    """What the item looked at: the cases it passed and failed, or the concepts found and missing."""
    evidence = item.evidence
    lines = []
    for key in ("passed", "failed", "found", "missing", "diagnoses"):
        values = evidence.get(key)
        if values:
            lines.append(f"{key}: " + ", ".join(str(v) for v in values))
    return _clip("\n".join(lines))


def prairielearn(report: Report, *, policy: CoursePolicy, feedback_url: str | None = None,
                 hints: tuple[tuple[str, ...], float] = NO_HINTS) -> dict[str, Any]:
    """PrairieLearn external-grader result: `score` in [0, 1]; `gradable: false` for not_gradable."""
    language: Language = report.language
    counted = counted_report(report.model_dump(mode="json"), policy.veto_policy)
    counted = counted.with_hints(*hints) if counted is not None else None
    if counted is None:  # "no points awarded or lost, and not penalized an attempt" (PrairieLearn's words)
        text = _not_gradable_text(report, language, feedback_url)
        return {"gradable": False, "format_errors": [text], "message": text}
    tests: list[dict[str, Any]] = [
        {"name": _item_name(item, language),
         "description": render("grades.rubric_item", language, id=item.id, max=f"{item.max_points:g}"),
         "points": item.points, "max_points": item.max_points, "message": _clip(item.feedback),
         "output": _test_output(item)}
        for item in report.items
    ]
    tests += [{"name": name, "description": name, "points": 0, "max_points": 0, "message": output, "output": ""}
              for name, output in _verdict_tests(report, language)]
    score = counted.points / counted.max if counted.max else 0.0
    return {"gradable": True, "score": min(1.0, max(0.0, score)),
            "message": summary(report, counted, language=language, feedback_url=feedback_url),
            "tests": tests}
