"""The pages' words, in the report's language: a view of the catalogue's `page.*`, `lti.*`, `dashboard.*` codes.

Templates read them by short name (`t.score` is `page.score`) and format them themselves; the words
live in service/messages/pages.yaml."""
from __future__ import annotations

from service.messages import LANGUAGES, Language, service_catalogue

__all__ = ["DASHBOARD", "LTI_REFUSALS", "LTI_REFUSAL_TITLE", "TEXTS", "Language", "texts"]


def _section(prefix: str) -> dict[str, dict[str, str]]:
    """`{lang: {short name: template}}` for every code under `prefix`."""
    catalogue = service_catalogue()
    codes = sorted(code for code in catalogue.codes if code.startswith(prefix))
    return {lang: {code[len(prefix):]: catalogue.template(code, lang) for code in codes} for lang in LANGUAGES}


TEXTS: dict[str, dict[str, str]] = _section("page.")


def texts(language: str | None) -> dict[str, str]:
    return TEXTS.get(language or "zh", TEXTS["zh"])


# --- LTI (service/lti) ---------------------------------------------------------------------
# A refused launch is shown in both languages: it failed before kernelgrade knew whose it was.
LTI_REFUSAL_TITLE: dict[str, str] = {lang: service_catalogue().template("lti.refusal_title", lang)
                                     for lang in LANGUAGES}
_REFUSALS = _section("lti.refusal.")
LTI_REFUSALS: dict[str, dict[str, str]] = {reason: {lang: _REFUSALS[lang][reason] for lang in LANGUAGES}
                                           for reason in _REFUSALS["en"]}

# --- the assignment dashboard (service/web/dashboard.py) -------------------------------------
# The TA chooses the language (?lang=); diagnoses and concept labels stay in the lesson's own words.
DASHBOARD: dict[str, dict[str, str]] = _section("dashboard.")
