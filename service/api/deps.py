"""Dependencies written once: the session, the settings, the caller's key and its scopes."""
from __future__ import annotations

from collections.abc import Iterator
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


def get_key(request: Request, session: SessionDep,
            credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)]) -> ApiKey:
    if credentials is None:
        raise HTTPException(401, "missing API key: send 'Authorization: Bearer <key>'",
                            headers={"WWW-Authenticate": "Bearer"})
    key = store.authenticate(session, credentials.credentials)
    if key is None:
        raise HTTPException(401, "invalid or revoked API key", headers={"WWW-Authenticate": "Bearer"})
    retry_after = request.app.state.rate_limiter.take(key.id)
    if retry_after > 0:
        per_minute = request.app.state.settings.rate_limit_per_minute
        raise HTTPException(429, f"rate limit of {per_minute} requests/minute exceeded",
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
AdminKey = Annotated[ApiKey, require("admin")]
