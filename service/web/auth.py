"""TA sign-in for the review pages: a key-backed session and CSRF tokens.

A TA signs in once with an API key that has the `review` scope (or `admin`); the session cookie
(signed with itsdangerous by Starlette's SessionMiddleware: HttpOnly, SameSite=Lax, path /review,
Secure when the service's public URL is https) then holds the key's *id*, never its secret.
Every request re-reads the key, so revoking it ends the session. Signing in with the key of
another course adds that course. Every form carries the session's CSRF token."""
from __future__ import annotations

import hmac
import secrets
from urllib.parse import urlsplit

from fastapi import Request
from sqlalchemy.orm import Session

from service.db import store
from service.db.models import ApiKey

SCOPE = "review"
SESSION_COOKIE = "kg_review"


def has_review_scope(key: ApiKey) -> bool:
    return SCOPE in key.scopes or "admin" in key.scopes


def csrf_token(request: Request) -> str:
    token = request.session.get("csrf")
    if not token:
        token = request.session["csrf"] = secrets.token_urlsafe(32)
    return token


def csrf_ok(request: Request, submitted: str) -> bool:
    expected = request.session.get("csrf")
    if not expected or not submitted:
        return False
    return hmac.compare_digest(expected.encode(), submitted.encode())


def review_keys(request: Request, session: Session) -> list[ApiKey]:
    """The signed-in keys that still exist, are not revoked and may review; stale ones are dropped."""
    held: dict[str, str] = request.session.get("keys") or {}
    valid = []
    for course_id, key_id in list(held.items()):
        key = session.get(ApiKey, key_id) if isinstance(key_id, str) else None
        if key is None or key.revoked_at is not None or key.course_id != course_id or not has_review_scope(key):
            held.pop(course_id, None)
            continue
        valid.append(key)
    if len(held) != len(request.session.get("keys") or {}):
        request.session["keys"] = held
    return sorted(valid, key=lambda k: k.course_id)


def sign_in(request: Request, session: Session, presented: str) -> ApiKey | None:
    key = store.authenticate(session, presented.strip()) if presented and len(presented) <= 200 else None
    if key is None or not has_review_scope(key):
        return None
    keys = dict(request.session.get("keys") or {})
    keys[key.course_id] = key.id
    request.session["keys"] = keys
    request.session["csrf"] = secrets.token_urlsafe(32)  # a new token with every sign-in
    return key


def sign_out(request: Request) -> None:
    request.session.clear()


def safe_next(target: str | None) -> str:
    """Only a path of this site's review pages: never an open redirect."""
    if not target:
        return "/review"
    parts = urlsplit(target)
    if parts.scheme or parts.netloc or not parts.path.startswith("/review") or "\\" in target:
        return "/review"
    return target
