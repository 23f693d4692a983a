"""Rendering the pages: one Jinja2 environment (autoescape always on) and the security headers
every HTML response carries."""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any

import jinja2
from fastapi import Request
from fastapi.templating import Jinja2Templates
from starlette.responses import Response

HERE = Path(__file__).resolve().parent
STATIC = HERE / "static"

# No inline script or style anywhere: the pages work under this policy, and student text that
# slipped through escaping could still not run.
CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; form-action 'self'; "
       "base-uri 'none'; frame-ancestors 'none'")
HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",  # the feedback link is a secret: never send it on as a Referer
    "Cache-Control": "no-store",
}


@lru_cache
def templates() -> Jinja2Templates:
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(HERE / "templates"), autoescape=True,
                             undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    return Jinja2Templates(env=env)


def render(request: Request, name: str, context: dict[str, Any], *, status_code: int = 200,
           headers: dict[str, str] | None = None) -> Response:
    merged = {name: value for name, value in {**HEADERS, **(headers or {})}.items() if value}  # "" drops one
    return templates().TemplateResponse(request, name, context, status_code=status_code, headers=merged)


def framed_by(origins: list[str], *, form_targets: list[str] | None = None) -> dict[str, str]:
    """Headers of a page an LMS shows in a frame (service/lti): only `origins` may frame it
    (X-Frame-Options cannot name origins, so it is dropped), and its forms may also post to
    `form_targets` (the LMS's deep-linking return URL)."""
    csp = CSP.replace("frame-ancestors 'none'", "frame-ancestors " + (" ".join(["'self'", *origins])))
    if form_targets:
        csp = csp.replace("form-action 'self'", "form-action " + " ".join(["'self'", *form_targets]))
    return {"Content-Security-Policy": csp, "X-Frame-Options": ""}


def secure(response: Response) -> Response:
    """The same headers on a response that is not a rendered page (a redirect, a CSV)."""
    response.headers.update(HEADERS)
    return response
