"""Platform registrations and deployments, per course: register, change (for instance a new key
set URL after the platform rotated its keys), revoke; and the platform's public keys, fetched
from its JWKS URL, cached in the database and fetched again when a launch names a new key."""
from __future__ import annotations

import re
import secrets
from datetime import timedelta
from typing import Annotated, Any
from urllib.parse import urlsplit

import requests
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from service.api.schemas import StorableText
from service.db.base import as_utc, utcnow
from service.db.lti_models import LtiDeployment, LtiPlatform
from service.db.models import Course
from service.lti.http import BoundedSession
from service.outbound import CallbackRefused, check_callback_url

KEY_REFETCH_MIN_S = 10  # an unknown kid fetches the key set again at most this often (a launch could name any kid)
DeploymentId = Annotated[StorableText, Field(min_length=1, max_length=255)]
ORIGIN = re.compile(r"https?://[A-Za-z0-9.-]+(:[0-9]{1,5})?")  # goes into a CSP header: nothing else
URL_FIELDS = ("auth_login_url", "auth_token_url", "key_set_url", "auth_audience")


class RegistrationError(ValueError):
    """Refused registration input; `field` names what to fix."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class PlatformFields(_Strict):
    auth_login_url: StorableText | None = Field(None, max_length=2000,
                                                description="the platform's OIDC authorization endpoint")
    auth_token_url: StorableText | None = Field(None, max_length=2000,
                                                description="its OAuth 2 token endpoint (grades, roster)")
    auth_audience: StorableText | None = Field(None, max_length=2000,
                                               description="audience of the token request, if not the token URL")
    key_set_url: StorableText | None = Field(None, max_length=2000, description="its public keys (JWKS URL)")
    key_set: dict[str, Any] | None = Field(None,
                                           description="or its public keys themselves (a JWKS), if it publishes no URL")
    frame_origins: list[str] | None = Field(None, max_length=20,
                                            description="origins that may show the tool in a frame (default: the "
                                                        "issuer's and the login URL's)")
    label: StorableText | None = Field(None, max_length=200)

    @field_validator("key_set")
    @classmethod
    def _jwks(cls, value: dict | None) -> dict | None:
        if value is not None and not (isinstance(value.get("keys"), list) and value["keys"]):
            raise ValueError("a JWKS is an object with a non-empty `keys` list")
        return value

    @field_validator("frame_origins")
    @classmethod
    def _origins(cls, value: list[str] | None) -> list[str] | None:
        for origin in value or []:
            if not ORIGIN.fullmatch(origin.rstrip("/")):
                raise ValueError(f"{origin!r} is not an origin (scheme://host[:port])")
        return [origin.rstrip("/") for origin in value] if value is not None else None


class PlatformCreate(PlatformFields):
    issuer: StorableText = Field(min_length=1, max_length=500,
                                 description="the platform's issuer (`iss` of its launches)")
    client_id: StorableText = Field(min_length=1, max_length=200,
                                    description="the client id the platform gave kernelgrade")
    auth_login_url: StorableText = Field(max_length=2000)
    auth_token_url: StorableText = Field(max_length=2000)
    deployments: list[DeploymentId] = Field(default_factory=list, max_length=100,
                                            description="deployment ids to accept")
    label: StorableText = Field("", max_length=200)

    @model_validator(mode="after")
    def _one_key_source(self) -> PlatformCreate:
        if (self.key_set_url is None) == (self.key_set is None):
            raise ValueError("give exactly one of key_set_url (usual) or key_set")
        return self


class PlatformUpdate(PlatformFields):
    """Only the fields given change. A new key_set_url (or key_set) replaces the cached keys."""


def origin_of(url: str) -> str | None:
    """scheme://host[:port] of a URL, or None: it goes into a Content-Security-Policy header."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return None
    origin = f"{parts.scheme}://{parts.netloc}"
    return origin if ORIGIN.fullmatch(origin) else None


def _check_urls(fields: dict[str, Any], allowed_hosts: list[str]) -> None:
    for name in URL_FIELDS:
        if fields.get(name) and not (name == "auth_audience" and not fields[name].startswith(("http://", "https://"))):
            try:
                check_callback_url(fields[name], allowed_hosts=allowed_hosts, field=name,
                                   allow_setting="lti_allowed_hosts")
            except CallbackRefused as exc:
                raise RegistrationError(name, str(exc)) from None
            except ValueError:  # urlsplit: an unparseable URL (a bad IPv6 literal, port)
                raise RegistrationError(name, f"{name} is not a URL") from None


def register(session: Session, *, course_id: str, body: PlatformCreate, allowed_hosts: list[str]) -> LtiPlatform:
    if session.get(Course, course_id) is None:
        raise RegistrationError("course", f"no course {course_id!r}")
    fields = body.model_dump(exclude={"deployments"})
    _check_urls(fields, allowed_hosts)
    origins = fields.pop("frame_origins") or sorted({o for o in (origin_of(body.issuer),
                                                                 origin_of(body.auth_login_url)) if o})
    platform = LtiPlatform(id=secrets.token_hex(6), course_id=course_id, frame_origins=origins,
                           key_set_fetched_at=utcnow() if body.key_set else None, **fields)
    session.add(platform)
    try:
        session.flush()  # the platform first: its deployments refer to it
        session.add_all(LtiDeployment(platform_id=platform.id, deployment_id=d)
                        for d in dict.fromkeys(body.deployments))
        session.commit()
    except IntegrityError:
        session.rollback()
        raise RegistrationError("client_id", f"issuer {body.issuer!r} with client id {body.client_id!r} is registered "
                                             "already (see `lti platforms list`; change or revoke that one)") from None
    return platform


def owned_platform(session: Session, platform_id: str, course_id: str | None) -> LtiPlatform | None:
    platform = session.get(LtiPlatform, platform_id) if len(platform_id) <= 16 and "\x00" not in platform_id else None
    return platform if platform is not None and (course_id is None or platform.course_id == course_id) else None


def update(session: Session, platform: LtiPlatform, body: PlatformUpdate, *, allowed_hosts: list[str]) -> LtiPlatform:
    changes = body.model_dump(exclude_unset=True)
    _check_urls(changes, allowed_hosts)
    if "key_set_url" in changes or "key_set" in changes:
        # The platform rotated its keys or moved them: forget the cached ones (a URL is fetched again).
        url, keys = changes.pop("key_set_url", None), changes.pop("key_set", None)
        if (url is None) == (keys is None):
            raise RegistrationError("key_set_url", "give exactly one of key_set_url or key_set")
        platform.key_set_url, platform.key_set = url, keys
        platform.key_set_fetched_at = utcnow() if keys is not None else None
    for name, value in changes.items():
        if value is not None:
            setattr(platform, name, value)
    session.commit()
    return platform


def revoke(session: Session, platform: LtiPlatform) -> bool:
    if platform.revoked_at is not None:
        return False
    platform.revoked_at = utcnow()
    session.commit()
    return True


def add_deployment(session: Session, platform: LtiPlatform, deployment_id: str, label: str = "") -> LtiDeployment:
    existing = session.scalar(select(LtiDeployment).where(LtiDeployment.platform_id == platform.id,
                                                          LtiDeployment.deployment_id == deployment_id))
    if existing is not None:
        existing.revoked_at, existing.label = None, label or existing.label  # adding it again restores it
        session.commit()
        return existing
    row = LtiDeployment(platform_id=platform.id, deployment_id=deployment_id, label=label)
    session.add(row)
    session.commit()
    return row


def revoke_deployment(session: Session, platform: LtiPlatform, deployment_id: str) -> bool:
    row = session.scalar(select(LtiDeployment).where(LtiDeployment.platform_id == platform.id,
                                                     LtiDeployment.deployment_id == deployment_id,
                                                     LtiDeployment.revoked_at.is_(None)))
    if row is None:
        return False
    row.revoked_at = utcnow()
    session.commit()
    return True


def deployments(session: Session, platform_id: str) -> list[LtiDeployment]:
    return list(session.scalars(select(LtiDeployment).where(LtiDeployment.platform_id == platform_id)
                                .order_by(LtiDeployment.id)))


def platforms(session: Session, course_id: str | None = None) -> list[LtiPlatform]:
    query = select(LtiPlatform).order_by(LtiPlatform.created_at)
    if course_id is not None:
        query = query.where(LtiPlatform.course_id == course_id)
    return list(session.scalars(query))


# --- the platform's public keys ------------------------------------------------------------------

def key_set(session: Session, platform: LtiPlatform, *, kid: str | None, http: BoundedSession, max_age_s: int) -> dict:
    """The platform's JWKS: cached, fetched again when older than `max_age_s` or when it lacks `kid`
    (the platform rotated), but never more often than every KEY_REFETCH_MIN_S seconds."""
    cached = platform.key_set or {"keys": []}
    if platform.key_set_url is None:
        return cached
    fetched = as_utc(platform.key_set_fetched_at) if platform.key_set_fetched_at else None
    now = utcnow()
    known = any(k.get("kid") == kid for k in cached.get("keys", []))
    stale = fetched is None or now - fetched > timedelta(seconds=max_age_s)
    recent = fetched is not None and now - fetched < timedelta(seconds=KEY_REFETCH_MIN_S)
    if (known and not stale) or (platform.key_set is not None and recent):
        return cached
    try:
        response = http.get(platform.key_set_url)
        fresh = response.json() if response.status_code == 200 else None
    except (requests.RequestException, ValueError):
        fresh = None
    if not (isinstance(fresh, dict) and isinstance(fresh.get("keys"), list)):
        return cached  # keep what we had; the signature check says what is missing
    platform.key_set, platform.key_set_fetched_at = fresh, now
    session.commit()
    return fresh


def tool_values(base_url: str) -> dict[str, Any]:
    """What an LMS administrator enters for kernelgrade (docs/integrations.md, LTI)."""
    base = base_url.rstrip("/")
    return {
        "login_url": f"{base}/lti/login",
        "launch_url": f"{base}/lti/launch",
        "redirect_uris": [f"{base}/lti/launch"],
        "deep_linking_url": f"{base}/lti/launch",
        "jwks_url": f"{base}/lti/jwks",
        "scopes": ["https://purl.imsglobal.org/spec/lti-ags/scope/lineitem",
                   "https://purl.imsglobal.org/spec/lti-ags/scope/score",
                   "https://purl.imsglobal.org/spec/lti-nrps/scope/contextmembership.readonly"],
        "messages": ["LtiResourceLinkRequest", "LtiDeepLinkingRequest"],
        "custom_parameters": "exercise=<exercise id> (set by deep linking; by hand only for a link made without it)",
        "privacy": "send the user's name and email (shown to TAs; the grade goes back by the LTI user id)",
    }
