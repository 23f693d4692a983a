"""Every sentence a student or TA reads, in Chinese and English: code and numbers in, text out.

Grading and sandbox code never write prose; they name a message code and its parameters, and
`render` says it in the report's language (`report_language`: declared, else the one the answers are
written in, `written_language`). service/messages/*.yaml hold the service's
messages (pages, grading, grades, sandbox, namespaced by prefix); each
exercise adds its own (`exercises/<id>/messages.yaml`, same format) through `Catalogue.load`.
"""
from __future__ import annotations

from service.messages.catalogue import (
    LANGUAGES,
    Catalogue,
    CatalogueError,
    Language,
    render,
    service_catalogue,
)
from service.messages.language import report_language, written_language

__all__ = ["LANGUAGES", "Catalogue", "CatalogueError", "Language", "render", "report_language", "service_catalogue",
           "written_language"]
