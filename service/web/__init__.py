"""The web pages: the student's feedback page and the TA review pages (server-rendered Jinja2,
a little vanilla JS for the keyboard, no build step). Not part of the OpenAPI: the JSON API stays
the contract; these pages render the same report."""
from __future__ import annotations

import secrets

from fastapi import FastAPI
from starlette.middleware.sessions import SessionMiddleware
from starlette.staticfiles import StaticFiles

from service.config import Settings
from service.web import dashboard, feedback, review
from service.web.auth import SESSION_COOKIE
from service.web.pages import STATIC


def mount_pages(app: FastAPI, settings: Settings) -> None:
    app.include_router(feedback.router)
    app.include_router(review.router)
    app.include_router(dashboard.router)
    app.mount("/static", StaticFiles(directory=STATIC), name="static")
    # The cookie only travels to /review: a student's feedback page never sees a TA's session.
    app.add_middleware(SessionMiddleware, secret_key=settings.session_secret or secrets.token_urlsafe(32),
                       session_cookie=SESSION_COOKIE, max_age=settings.session_max_age_s, path="/review",
                       same_site="lax", https_only=settings.public_url.startswith("https://"))
