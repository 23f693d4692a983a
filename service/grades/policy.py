"""The grade that counts: a course's policy (which attempt, what a veto exports) applied to a report's score."""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

# A capped score sits this far below the pass line: the rubric's finest step is half a point.
CAP_MARGIN = 0.5


class CoursePolicy(BaseModel):
    model_config = ConfigDict(extra="forbid")

    grade_policy: Literal["last", "best"] = Field(
        "last", description="which graded attempt counts for a student and assignment: the last one, or the best one")
    veto_policy: Literal["capped", "zero"] = Field(
        "capped", description="what a confirmed veto exports: the score capped below the pass line, or zero")
    hint_cost: float = Field(0.0, ge=0, le=100, description="points each level of the hint ladder costs when a student "
                                                           "takes it (0: hints are free, the default)")


class PolicyUpdate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    grade_policy: Literal["last", "best"] | None = None
    veto_policy: Literal["capped", "zero"] | None = None
    hint_cost: float | None = Field(None, ge=0, le=100, description="points per hint level (0: free)")


def blocking_of(report: dict[str, Any]) -> str | None:
    """What keeps a graded report from passing: a confirmed veto first, then a suspected one, then
    the first unmet requirement of the pass rule. `veto:<rule>:<status>` or `requirement:<id>`."""
    vetoes = report.get("vetoes") or []
    for status in ("confirmed", "suspected"):
        for veto in vetoes:
            if veto.get("status") == status:
                return f"veto:{veto['rule']}:{status}"
    for requirement in (report.get("score") or {}).get("requirements") or []:
        if not requirement.get("met"):
            return f"requirement:{requirement['id']}"
    return None


def grade_columns(report: dict[str, Any]) -> dict[str, Any]:
    """The submissions table's grade columns for a report that becomes current (NULL unless graded)."""
    version = (report.get("exercise") or {}).get("version")
    if report.get("status") != "graded":
        return {"exercise_version": version, "score_total": None, "score_max": None, "pass_threshold": None,
                "passed": None, "provisional": None, "blocking": None}
    score = report["score"]
    return {"exercise_version": version, "score_total": score["total"], "score_max": score["max"],
            "pass_threshold": score["pass_threshold"], "passed": score["passed"], "provisional": score["provisional"],
            "blocking": blocking_of(report)}


@dataclass(frozen=True)
class Counted:
    """The points a platform gets for one graded report, and why they differ from the total if they do."""

    points: float
    total: float
    max: float
    pass_threshold: float
    passed: bool
    provisional: bool
    blocking: str | None
    rule: Literal["total", "capped", "zero"]
    hint_cost: float = 0.0  # what the hint levels taken cost (the course's hint_cost), already off `points`
    hints: tuple[str, ...] = ()  # the levels taken, `<ladder>:<level>`, oldest first
    # provisional because another attempt waiting for a TA may still count instead (grade_policy best)
    awaiting_other: bool = False

    def with_hints(self, hints: tuple[str, ...], cost: float) -> Counted:
        """The same grade less what the hints cost, never below 0: every export (gradebook, LTI,
        webhooks, Gradescope, PrairieLearn) takes it off the same way (service.grades.gradebook.hint_charges)."""
        cost = round(max(0.0, cost), 6)
        return replace(self, points=round(max(0.0, self.points - cost), 6) if cost else self.points,
                       hint_cost=cost, hints=tuple(hints))

    @property
    def cap(self) -> float:
        return cap_below(self.pass_threshold)

    @property
    def veto_confirmed(self) -> bool:
        return bool(self.blocking and self.blocking.startswith("veto:") and self.blocking.endswith(":confirmed"))


def cap_below(pass_threshold: float) -> float:
    return max(0.0, pass_threshold - CAP_MARGIN)


def counted(*, total: float, max_points: float, pass_threshold: float, passed: bool, provisional: bool,
            blocking: str | None, veto_policy: str) -> Counted:
    """A report that does not pass never exports a passing score: a confirmed veto gives zero or the
    cap (the course's veto policy); a suspected veto or an unmet requirement gives at most the cap.
    Only a total short of the pass line with nothing else in the way (`requirement:total`: the
    requirements before it are met, blocking_of) exports as it is, between the cap and the line too."""
    def made(points: float, rule: Literal["total", "capped", "zero"]) -> Counted:
        return Counted(points=points, total=total, max=max_points, pass_threshold=pass_threshold, passed=passed,
                       provisional=provisional, blocking=blocking, rule=rule)

    confirmed = bool(blocking and blocking.startswith("veto:") and blocking.endswith(":confirmed"))
    if confirmed and veto_policy == "zero":
        return made(0.0, "zero")
    cap = cap_below(pass_threshold)
    # A TA's points (any fraction) can put a vetoed total between the cap and the line (7.75 of 8):
    # the cap applies there too, not only at or above the line.
    held_back = blocking is not None and blocking != "requirement:total"
    if not passed and total > cap and (held_back or total >= pass_threshold):
        return made(cap, "capped")
    return made(total, "total")


def counted_report(report: dict[str, Any], veto_policy: str) -> Counted | None:
    """`counted` for a stored report; None for one that is not graded (not_gradable never has points)."""
    if report.get("status") != "graded":
        return None
    score = report["score"]
    return counted(total=score["total"], max_points=score["max"], pass_threshold=score["pass_threshold"],
                   passed=score["passed"], provisional=score["provisional"], blocking=blocking_of(report),
                   veto_policy=veto_policy)
