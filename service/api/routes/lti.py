"""/v1/lti: a course's LTI 1.3 platform registrations and deployments (the `admin` scope): register,
read, change (for instance a new key set URL), revoke. The answer says what to enter in the LMS."""
from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, HTTPException, Path, Request
from pydantic import BaseModel, ConfigDict, Field
from sqlalchemy.orm import Session

from service.api.deps import AdminKey, SessionDep, SettingsDep
from service.api.routes.submissions import base_url
from service.api.schemas import BODY_ERRORS, KEYED_ERRORS, StorableText, UTCDateTime, ValidationErrorBody, error
from service.db.lti_models import LtiPlatform
from service.lti import registry
from service.lti.registry import DeploymentId, PlatformCreate, PlatformUpdate, RegistrationError

router = APIRouter(prefix="/v1/lti", tags=["lti"], responses=KEYED_ERRORS)
NOT_FOUND: dict[int | str, dict[str, Any]] = {404: error("no such platform registration in this key's course")}
INVALID: dict[int | str, dict[str, Any]] = {
    **BODY_ERRORS, 422: error("invalid registration (the field is named)", model=ValidationErrorBody)}
PlatformId = Annotated[str, Path(max_length=16)]


class DeploymentView(BaseModel):
    deployment_id: str
    label: str
    created_at: UTCDateTime
    revoked_at: UTCDateTime | None


class ToolValues(BaseModel):
    """What the LMS administrator enters for kernelgrade."""

    login_url: str
    launch_url: str
    redirect_uris: list[str]
    deep_linking_url: str
    jwks_url: str
    scopes: list[str]
    messages: list[str]
    custom_parameters: str
    privacy: str


class PlatformView(BaseModel):
    id: str
    course: str
    issuer: str
    client_id: str
    auth_login_url: str
    auth_token_url: str
    auth_audience: str | None
    key_set_url: str | None
    key_set_cached: bool = Field(description="the platform's keys are in kernelgrade's cache")
    key_set_fetched_at: UTCDateTime | None
    frame_origins: list[str]
    label: str
    created_at: UTCDateTime
    revoked_at: UTCDateTime | None
    deployments: list[DeploymentView]
    tool: ToolValues


class DeploymentCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    deployment_id: DeploymentId
    label: StorableText = Field("", max_length=200)


def _view(request: Request, session: Session, platform: LtiPlatform, settings) -> PlatformView:  # noqa: ANN001
    return PlatformView(
        id=platform.id, course=platform.course_id, issuer=platform.issuer, client_id=platform.client_id,
        auth_login_url=platform.auth_login_url, auth_token_url=platform.auth_token_url,
        auth_audience=platform.auth_audience, key_set_url=platform.key_set_url,
        key_set_cached=platform.key_set is not None, key_set_fetched_at=platform.key_set_fetched_at,
        frame_origins=platform.frame_origins, label=platform.label, created_at=platform.created_at,
        revoked_at=platform.revoked_at,
        deployments=[DeploymentView(deployment_id=d.deployment_id, label=d.label, created_at=d.created_at,
                                    revoked_at=d.revoked_at) for d in registry.deployments(session, platform.id)],
        tool=ToolValues(**registry.tool_values(base_url(request, settings))))


def _owned(session: Session, platform_id: str, course_id: str) -> LtiPlatform:
    platform = registry.owned_platform(session, platform_id, course_id)
    if platform is None:  # another course's registration does not exist for this key
        raise HTTPException(404, f"no platform registration {platform_id!r}")
    return platform


def _invalid(exc: RegistrationError) -> HTTPException:
    return HTTPException(422, [{"loc": ["body", exc.field], "msg": str(exc), "type": "value_error"}])


@router.post("/platforms", status_code=201, response_model=PlatformView, responses=INVALID)
def register(request: Request, body: PlatformCreate, session: SessionDep, settings: SettingsDep,
             key: AdminKey) -> PlatformView:
    """Register an LMS (its issuer and the client id it gave kernelgrade) for this course, with the
    deployment ids to accept. The answer's `tool` is what to enter on the LMS's side."""
    try:
        platform = registry.register(session, course_id=key.course_id, body=body,
                                     allowed_hosts=settings.lti_allowed_hosts)
    except RegistrationError as exc:
        raise _invalid(exc) from None
    return _view(request, session, platform, settings)


@router.get("/platforms", response_model=list[PlatformView])
def list_platforms(request: Request, session: SessionDep, settings: SettingsDep, key: AdminKey) -> list[PlatformView]:
    return [_view(request, session, p, settings) for p in registry.platforms(session, key.course_id)]


@router.get("/platforms/{platform_id}", response_model=PlatformView, responses=NOT_FOUND)
def get_platform(request: Request, platform_id: PlatformId, session: SessionDep, settings: SettingsDep,
                 key: AdminKey) -> PlatformView:
    return _view(request, session, _owned(session, platform_id, key.course_id), settings)


@router.patch("/platforms/{platform_id}", response_model=PlatformView, responses={**NOT_FOUND, **INVALID})
def update_platform(request: Request, platform_id: PlatformId, body: PlatformUpdate, session: SessionDep,
                    settings: SettingsDep, key: AdminKey) -> PlatformView:
    """Change URLs, origins or the label. A new `key_set_url` or `key_set` replaces the cached keys
    (the platform rotated them); unknown key ids are fetched again on their own as well."""
    platform = _owned(session, platform_id, key.course_id)
    try:
        registry.update(session, platform, body, allowed_hosts=settings.lti_allowed_hosts)
    except RegistrationError as exc:
        session.rollback()
        raise _invalid(exc) from None
    return _view(request, session, platform, settings)


@router.delete("/platforms/{platform_id}", response_model=PlatformView, responses=NOT_FOUND)
def revoke_platform(request: Request, platform_id: PlatformId, session: SessionDep, settings: SettingsDep,
                    key: AdminKey) -> PlatformView:
    """Revoke: its launches are refused from now on, and no more scores are posted to it."""
    platform = _owned(session, platform_id, key.course_id)
    registry.revoke(session, platform)
    return _view(request, session, platform, settings)


@router.post("/platforms/{platform_id}/deployments", status_code=201, response_model=PlatformView,
             responses={**NOT_FOUND, **INVALID})
def add_deployment(request: Request, platform_id: PlatformId, body: DeploymentCreate, session: SessionDep,
                   settings: SettingsDep, key: AdminKey) -> PlatformView:
    """Accept launches of one more deployment (adding a revoked one again restores it)."""
    platform = _owned(session, platform_id, key.course_id)
    registry.add_deployment(session, platform, body.deployment_id, body.label)
    return _view(request, session, platform, settings)


@router.delete("/platforms/{platform_id}/deployments/{deployment_id:path}", response_model=PlatformView,
               responses={404: error("no such platform, or no such active deployment")})
def revoke_deployment(request: Request, platform_id: PlatformId, deployment_id: str, session: SessionDep,
                      settings: SettingsDep, key: AdminKey) -> PlatformView:
    platform = _owned(session, platform_id, key.course_id)
    if "\x00" in deployment_id or not registry.revoke_deployment(session, platform, deployment_id[:255]):
        raise HTTPException(404, f"no active deployment {deployment_id[:255]!r} of platform {platform.id}")
    return _view(request, session, platform, settings)


@router.get("/tool", response_model=ToolValues)
def tool(request: Request, settings: SettingsDep, key: AdminKey) -> dict[str, Any]:
    """What to enter on the LMS's side (the same for every course of this kernelgrade)."""
    return registry.tool_values(base_url(request, settings))


