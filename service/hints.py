"""The hint ladder (lesson 6, seed 000: 概念区域 → 具体方向 → 关键局部 → 完整答案): four levels per
diagnosis of an exercise, and a `general` ladder, in `exercises/<id>/hints.yaml`, zh and en.

A student asks for the next level on the feedback page or through `POST /v1/feedback/{token}/hints`
(the feedback token is the key). A level is never shown before it is asked for; every level taken
is recorded (table `hints_taken`) with the point cost the course's policy set at that moment
(`courses.hint_cost`, none by default), shown to the TA and exported with the grades."""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field
from sqlalchemy import select
from sqlalchemy.orm import Session

from service.db.models import Course, HintTaken, Submission
from service.messages import LANGUAGES, render
from service.status import SubmissionStatus

LEVELS = 4
LEVEL_NAMES: dict[str, tuple[str, ...]] = {  # the levels' names, from the catalogue (hints.level.1 … 4)
    lang: tuple(render(f"hints.level.{level}", lang) for level in range(1, LEVELS + 1)) for lang in LANGUAGES}
GENERAL = "general"


class Level(BaseModel):
    model_config = ConfigDict(extra="forbid")
    zh: str = Field(min_length=1)
    en: str = Field(min_length=1)

    def text(self, language: str) -> str:
        return self.en if language == "en" else self.zh


class HintFile(BaseModel):
    model_config = ConfigDict(extra="forbid")
    general: list[Level] = Field(min_length=LEVELS, max_length=LEVELS)
    diagnoses: dict[str, list[Level]] = {}

    def model_post_init(self, _context: Any) -> None:
        for key, ladder in self.diagnoses.items():
            if len(ladder) != LEVELS:
                raise ValueError(f"hint ladder {key!r} has {len(ladder)} levels, not {LEVELS}")

    def ladder(self, diagnosis: str) -> list[Level] | None:
        return self.general if diagnosis == GENERAL else self.diagnoses.get(diagnosis)


@lru_cache(maxsize=64)
def _load(path: Path, mtime: float) -> HintFile | None:
    del mtime  # part of the cache key: an edited file is read again
    return HintFile.model_validate(yaml.safe_load(path.read_text(encoding="utf-8")))


def hints_of(exercise_root: Path) -> HintFile | None:
    path = exercise_root / "hints.yaml"
    return _load(path, path.stat().st_mtime) if path.is_file() else None


def ladders_for(hints: HintFile, diagnoses: list[str]) -> list[str]:
    """The ladders a report offers: one per diagnosis that has one, in the report's order; the
    general ladder when none has."""
    found = [d for d in dict.fromkeys(diagnoses) if hints.ladder(d) is not None and d != GENERAL]
    return found or [GENERAL]


@dataclass
class Taken:
    diagnosis: str
    level: int  # 1..4
    text: str
    name: str  # the level's name (概念区域 …)
    cost: float


def taken(session: Session, submission_id: str) -> list[HintTaken]:
    return list(session.scalars(select(HintTaken).where(HintTaken.submission_id == submission_id)
                                .order_by(HintTaken.id)))


def shown(rows: list[HintTaken], hints: HintFile | None, language: str) -> list[Taken]:
    """The levels taken, in the student's language (a level whose text is gone shows its name only)."""
    out = []
    for row in rows:
        ladder = hints.ladder(row.diagnosis) if hints is not None else None
        text = ladder[row.level - 1].text(language) if ladder and 0 < row.level <= len(ladder) else ""
        out.append(Taken(diagnosis=row.diagnosis, level=row.level, text=text,
                         name=LEVEL_NAMES.get(language, LEVEL_NAMES["zh"])[row.level - 1], cost=row.cost))
    return out


class HintError(Exception):
    """Why the next level cannot be given: `code` is the HTTP status, `message` the words."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code, self.message = code, message


def take_next(session: Session, row: Submission, hints: HintFile | None, offered: list[str],
              diagnosis: str | None, language: str) -> HintTaken:
    """Record and return the next level of `diagnosis` (default: the first ladder offered)."""
    if hints is None or not offered:
        raise HintError(409, render("hints.error.none", language))
    diagnosis = diagnosis or offered[0]
    if diagnosis not in offered:
        raise HintError(422, render("hints.error.no_such", language, diagnosis=diagnosis, offered=", ".join(offered)))
    # Lock the submission row so that two clicks cannot take the same level twice.
    session.scalar(select(Submission).where(Submission.id == row.id).with_for_update())
    levels = [h.level for h in taken(session, row.id) if h.diagnosis == diagnosis]
    level = max(levels, default=0) + 1
    if level > LEVELS:
        raise HintError(409, render("hints.error.all_given", language, diagnosis=diagnosis,
                                    levels=" → ".join(LEVEL_NAMES.get(language, LEVEL_NAMES["zh"]))))
    course = session.get(Course, row.course_id)
    cost = float(course.hint_cost or 0.0) if course is not None else 0.0
    hint = HintTaken(submission_id=row.id, course_id=row.course_id, diagnosis=diagnosis, level=level, cost=cost,
                     language=language)
    session.add(hint)
    if cost:
        _regrade_on_platform(session, row)
    session.commit()
    return hint


def _regrade_on_platform(session: Session, row: Submission) -> None:
    """A level that costs points changes the grade that counts: queue it for the LMS (LTI AGS), in
    the same transaction that records the level."""
    from service.db import store
    from service.db.base import utcnow
    from service.lti import scores as lti_scores

    session.flush()
    current = store.current_report(session, row)
    if current is not None:
        # The policy is read once the student's lock is ours (enqueue): a policy change that held it
        # (and queued its own score) is visible then; read now, this score would undo it at the LMS.
        lti_scores.enqueue(session, row, current, policy=lambda: store.course_policy(session, row.course_id),
                           at=utcnow())


@dataclass
class Ladders:
    """What one submission offers: the exercise's hints, the ladders its report offers (none until
    it is graded), the levels taken, and the course's cost per level (None: free)."""
    hints: HintFile | None
    offered: list[str]
    rows: list[HintTaken]
    cost: float | None

    def next_level(self, diagnosis: str) -> int | None:
        levels = [h.level for h in self.rows if h.diagnosis == diagnosis]
        level = max(levels, default=0) + 1
        return level if level <= LEVELS else None


def ladders(session: Session, row: Submission, exercise_root: Path | None) -> Ladders:
    from service.db import store

    hints = hints_of(exercise_root) if exercise_root is not None else None
    offered: list[str] = []
    if hints is not None and row.status == SubmissionStatus.graded:
        current = store.current_report(session, row)
        if current is not None:
            diagnoses = [d.get("id", "") for d in current.report.get("diagnoses") or [] if isinstance(d, dict)]
            offered = ladders_for(hints, diagnoses)
    course = session.get(Course, row.course_id)
    return Ladders(hints=hints, offered=offered, rows=taken(session, row.id),
                   cost=course.hint_cost if course is not None else None)
