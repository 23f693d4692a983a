"""The one `not_gradable` report: a failure of ours, which costs the student nothing and says so."""
from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

from service.messages import LANGUAGES, Language, render
from service.report import Environment, ExerciseRef, Report, ReportTexts, Score

MAX_REASON = 2000  # characters of the internal reason the report carries


def not_gradable_report(*, submission_id: str, exercise: ExerciseRef, max_points: float, pass_threshold: float,
                        language: Language, reason: str = "", message: str | Callable[[str], str] | None = None,
                        environment: Environment | None = None, timing: dict[str, float] | None = None) -> Report:
    """A not_gradable report of `submission_id`: no points, never provisional. `message` replaces the
    standard one ("our failure, not yours", with the internal `reason`): its words in a language (then
    also the translation's), or a text in the report's language only; `environment`: where it failed,
    if a sandbox was reached."""
    def said(lang: str) -> str | None:
        if isinstance(message, str):
            return message if lang == language else None
        return message(lang) if message is not None else render("not_gradable_ours", lang, reason=reason[:MAX_REASON])

    return Report(
        submission_id=submission_id,
        exercise=exercise,
        status="not_gradable",
        language=language,
        message=said(language),
        translations={lang: ReportTexts(message=said(lang)) for lang in LANGUAGES
                      if lang != language and said(lang) is not None},
        score=Score(total=0.0, max=max_points, pass_threshold=pass_threshold, passed=False, provisional=False),
        environment=environment or Environment(backend="interpreter", sandbox="none"),
        timing=timing or {},
        created_at=datetime.now(UTC),
    )
