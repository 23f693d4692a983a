"""The report in the formats course platforms import: Gradescope results.json, PrairieLearn."""
from __future__ import annotations

from typing import Any

from service.report import Report


def _summary(report: Report) -> str:
    if report.status == "not_gradable":
        return report.message or "not gradable"
    lines = [f"{report.score.total:g}/{report.score.max:g} (pass ≥ {report.score.pass_threshold:g})"
             + ("，暂定：待助教复核" if report.score.provisional else "")]
    lines += [f"veto {v.rule} ({v.status})" for v in report.vetoes]
    lines += [d.message for d in report.diagnoses]
    return "\n".join(lines)


def gradescope(report: Report) -> dict[str, Any]:
    """Gradescope autograder results.json: one test per rubric item."""
    return {
        "score": report.score.total,
        "output": _summary(report),
        "visibility": "visible",
        "stdout_visibility": "hidden",
        "tests": [
            {"name": f"{item.id}: {item.title}", "score": item.points, "max_score": item.max_points,
             "status": "passed" if item.status == "pass" else "failed", "output": item.feedback,
             "visibility": "visible"}
            for item in report.items
        ],
        "extra_data": {"submission_id": report.submission_id, "schema": "kernelgrade.report/v1",
                       "provisional": report.score.provisional, "status": report.status},
    }


def prairielearn(report: Report) -> dict[str, Any]:
    """PrairieLearn external grader results: score normalised to [0, 1]."""
    gradable = report.status == "graded"
    return {
        "gradable": gradable,
        "score": report.score.total / report.score.max if gradable and report.score.max else 0.0,
        "message": _summary(report),
        "tests": [
            {"name": item.title, "description": item.id, "points": item.points, "max_points": item.max_points,
             "message": item.feedback, "output": item.status}
            for item in report.items
        ],
    }
