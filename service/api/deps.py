"""Dependencies written once: the session, the settings, the caller's key and its scopes."""
from __future__ import annotations

import time
from collections.abc import Iterator
from threading import Lock
from typing import Annotated

from fastapi import Depends, HTTPException, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from sqlalchemy.orm import Session

from service.config import Settings
from service.db import store
from service.db.models import ApiKey

bearer = HTTPBearer(auto_error=False, description="Authorization: Bearer kg_<id>_<secret> (per-course API key)")


def get_session(request: Request) -> Iterator[Session]:
    with request.app.state.sessions() as session:
        yield session


def get_settings_dep(request: Request) -> Settings:
    return request.app.state.settings


SessionDep = Annotated[Session, Depends(get_session)]
SettingsDep = Annotated[Settings, Depends(get_settings_dep)]


class RateLimiter:
    """Token bucket per key, in this process: `rate` requests a minute, bursts up to `rate`."""

    def __init__(self, per_minute: int) -> None:
        self.rate = per_minute / 60.0
        self.capacity = float(per_minute)
        self._buckets: dict[str, tuple[float, float]] = {}
        self._lock = Lock()

    def take(self, key: str) -> float:
        """0 if allowed, else seconds until a token is free."""
        now = time.monotonic()
        with self._lock:
            tokens, last = self._buckets.get(key, (self.capacity, now))
            tokens = min(self.capacity, tokens + (now - last) * self.rate)
            if tokens >= 1:
                self._buckets[key] = (tokens - 1, now)
                return 0.0
            self._buckets[key] = (tokens, now)
            return (1 - tokens) / self.rate


def get_key(request: Request, session: SessionDep,
            credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)]) -> ApiKey:
    if credentials is None:
        raise HTTPException(401, "missing API key: send 'Authorization: Bearer <key>'", headers={"WWW-Authenticate": "Bearer"})
    key = store.authenticate(session, credentials.credentials)
    if key is None:
        raise HTTPException(401, "invalid or revoked API key", headers={"WWW-Authenticate": "Bearer"})
    retry_after = request.app.state.rate_limiter.take(key.id)
    if retry_after > 0:
        raise HTTPException(429, f"rate limit of {request.app.state.settings.rate_limit_per_minute} requests/minute exceeded",
                            headers={"Retry-After": str(max(1, round(retry_after)))})
    return key


def require(scope: str):
    def check(key: Annotated[ApiKey, Depends(get_key)]) -> ApiKey:
        if scope not in key.scopes and "admin" not in key.scopes:
            raise HTTPException(403, f"this key lacks the '{scope}' scope (it has: {', '.join(key.scopes)})")
        return key

    return Depends(check)


SubmitKey = Annotated[ApiKey, require("submit")]
ReadKey = Annotated[ApiKey, require("read")]
ReviewKey = Annotated[ApiKey, require("review")]
