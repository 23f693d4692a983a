"""Student-facing text of the grade exports (Gradescope, PrairieLearn, the gradebook): the catalogue's `grades.*`."""
from __future__ import annotations

from service.messages import LANGUAGES, Language, service_catalogue

__all__ = ["Language", "say", "status_word"]


def say(code: str, language: Language, **params: object) -> str:
    """The export message `grades.<code>` (a language other than zh/en reads Chinese, as the exports always did)."""
    return service_catalogue().render(f"grades.{code}", language if language in LANGUAGES else "zh", **params)


def status_word(status: str, language: Language) -> str:
    """A veto status in words; a status without words reads as itself."""
    code = f"grades.status.{status}"
    if code not in service_catalogue() or language not in LANGUAGES:
        return status
    return service_catalogue().render(code, language)
