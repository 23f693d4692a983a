"""Tables of the LTI 1.3 tool: its signing keys, the platforms and deployments each course
registered, contexts, placements (resource links), the roster, which submission came from which
launch, the score outbox with every attempt, and a small expiring store (OIDC nonces, launches)."""
from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, Boolean, ForeignKey, Index, Integer, String, Text, UniqueConstraint, false
from sqlalchemy.orm import Mapped, mapped_column

from service.db.base import Base, utcnow
from service.db.models import TZDateTime


class LtiToolKey(Base):
    """An RSA key the tool signs with (deep-linking responses, service-token requests). Exactly one
    is active; a rotated-out key stays published in the JWKS until `retired_at + grace`."""

    __tablename__ = "lti_tool_keys"

    kid: Mapped[str] = mapped_column(String(64), primary_key=True)  # RFC 7638 thumbprint
    private_pem: Mapped[str] = mapped_column(Text)
    public_jwk: Mapped[dict[str, Any]] = mapped_column(JSON)
    created_at: Mapped[datetime] = mapped_column(TZDateTime, default=utcnow)
    retired_at: Mapped[datetime | None] = mapped_column(TZDateTime, nullable=True)  # no longer signs
    removed_at: Mapped[datetime | None] = mapped_column(TZDateTime, nullable=True)  # no longer published


class LtiPlatform(Base):
    """A platform registration (an LMS's issuer and the client id it gave kernelgrade), per course."""

    __tablename__ = "lti_platforms"
    __table_args__ = (UniqueConstraint("issuer", "client_id"),)

    id: Mapped[str] = mapped_column(String(16), primary_key=True)
    course_id: Mapped[str] = mapped_column(ForeignKey("courses.id"), index=True)
    issuer: Mapped[str] = mapped_column(String(500))
    client_id: Mapped[str] = mapped_column(String(200))
    auth_login_url: Mapped[str] = mapped_column(String(2000))  # the platform's OIDC authorization endpoint
    auth_token_url: Mapped[str] = mapped_column(String(2000))  # its OAuth 2 token endpoint (services)
    auth_audience: Mapped[str | None] = mapped_column(String(2000), nullable=True)
    key_set_url: Mapped[str | None] = mapped_column(String(2000), nullable=True)
    key_set: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)  # fetched from key_set_url, or given
    key_set_fetched_at: Mapped[datetime | None] = mapped_column(TZDateTime, nullable=True)
    frame_origins: Mapped[list[str]] = mapped_column(JSON, default=list)  # who may frame the tool's pages
    label: Mapped[str] = mapped_column(String(200), default="")
    created_at: Mapped[datetime] = mapped_column(TZDateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(TZDateTime, default=utcnow, onupdate=utcnow)
    revoked_at: Mapped[datetime | None] = mapped_column(TZDateTime, nullable=True)


class LtiDeployment(Base):
    __tablename__ = "lti_deployments"
    __table_args__ = (UniqueConstraint("platform_id", "deployment_id"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    platform_id: Mapped[str] = mapped_column(ForeignKey("lti_platforms.id"), index=True)
    deployment_id: Mapped[str] = mapped_column(String(255))
    label: Mapped[str] = mapped_column(String(200), default="")
    created_at: Mapped[datetime] = mapped_column(TZDateTime, default=utcnow)
    revoked_at: Mapped[datetime | None] = mapped_column(TZDateTime, nullable=True)


class LtiContext(Base):
    """A course section of the platform (the launch's context claim), with its roster service."""

    __tablename__ = "lti_contexts"
    __table_args__ = (UniqueConstraint("platform_id", "context_id"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    platform_id: Mapped[str] = mapped_column(ForeignKey("lti_platforms.id"), index=True)
    context_id: Mapped[str] = mapped_column(String(255))
    title: Mapped[str] = mapped_column(String(500), default="")
    memberships_url: Mapped[str | None] = mapped_column(String(2000), nullable=True)  # NRPS
    roster_requested_at: Mapped[datetime | None] = mapped_column(TZDateTime, nullable=True, index=True)
    roster_synced_at: Mapped[datetime | None] = mapped_column(TZDateTime, nullable=True)
    roster_error: Mapped[str | None] = mapped_column(Text, nullable=True)
    created_at: Mapped[datetime] = mapped_column(TZDateTime, default=utcnow)


class LtiLink(Base):
    """A placement: one resource link of a deployment, the exercise it grades and its line item."""

    __tablename__ = "lti_links"
    __table_args__ = (UniqueConstraint("deployment_id", "resource_link_id"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    deployment_id: Mapped[int] = mapped_column(ForeignKey("lti_deployments.id"), index=True)
    context_id: Mapped[int] = mapped_column(ForeignKey("lti_contexts.id"), index=True)
    resource_link_id: Mapped[str] = mapped_column(String(255))
    title: Mapped[str] = mapped_column(String(500), default="")
    exercise_id: Mapped[str | None] = mapped_column(String(100), nullable=True)
    ags_scopes: Mapped[list[str]] = mapped_column(JSON, default=list)
    lineitems_url: Mapped[str | None] = mapped_column(String(2000), nullable=True)
    lineitem_url: Mapped[str | None] = mapped_column(String(2000), nullable=True)  # given, or found/created by us
    # True: `lineitem_url` is one kernelgrade found by the resource link or created (service.lti.scores);
    # False: the platform named it in a launch's AGS `lineitem` claim (or none yet).
    lineitem_by_tool: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    created_at: Mapped[datetime] = mapped_column(TZDateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(TZDateTime, default=utcnow, onupdate=utcnow)


class LtiMember(Base):
    """Someone in a context: from their own launches and from the platform's roster (NRPS)."""

    __tablename__ = "lti_members"

    context_id: Mapped[int] = mapped_column(ForeignKey("lti_contexts.id"), primary_key=True)
    sub: Mapped[str] = mapped_column(String(255), primary_key=True)
    name: Mapped[str] = mapped_column(String(300), default="")
    email: Mapped[str] = mapped_column(String(300), default="")
    roles: Mapped[list[str]] = mapped_column(JSON, default=list)
    status: Mapped[str] = mapped_column(String(16), default="Active")  # Active | Inactive | Deleted (NRPS)
    updated_at: Mapped[datetime] = mapped_column(TZDateTime, default=utcnow, onupdate=utcnow)


class LtiSubmission(Base):
    """Which placement and which platform user a submission came from (identity from the launch)."""

    __tablename__ = "lti_submissions"
    __table_args__ = (Index("ix_lti_submissions_link_id_sub", "link_id", "sub"),)

    submission_id: Mapped[str] = mapped_column(ForeignKey("submissions.id"), primary_key=True)
    link_id: Mapped[int] = mapped_column(ForeignKey("lti_links.id"))
    sub: Mapped[str] = mapped_column(String(255))
    created_at: Mapped[datetime] = mapped_column(TZDateTime, default=utcnow)


class LtiScorePost(Base):
    """One score to send to the platform's line item (the outbox); retried with backoff."""

    __tablename__ = "lti_score_posts"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    submission_id: Mapped[str] = mapped_column(ForeignKey("submissions.id"), index=True)
    report_id: Mapped[int] = mapped_column(ForeignKey("reports.id"))
    link_id: Mapped[int] = mapped_column(ForeignKey("lti_links.id"), index=True)
    sub: Mapped[str] = mapped_column(String(255))
    score: Mapped[dict[str, Any]] = mapped_column(JSON)  # the AGS score body
    # The line item (gradebook column) it was sent to, set just before each POST (service.lti.scores);
    # none: not sent yet (or sent before this was recorded).
    lineitem_url: Mapped[str | None] = mapped_column(String(2000), nullable=True)
    state: Mapped[str] = mapped_column(String(16), default="pending")  # pending | posted | failed | superseded
    attempt: Mapped[int] = mapped_column(Integer, default=0)
    last_status_code: Mapped[int | None] = mapped_column(Integer, nullable=True)
    last_error: Mapped[str | None] = mapped_column(Text, nullable=True)
    next_attempt_at: Mapped[datetime | None] = mapped_column(TZDateTime, nullable=True, index=True)
    created_at: Mapped[datetime] = mapped_column(TZDateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(TZDateTime, default=utcnow, onupdate=utcnow)


class LtiScoreAttempt(Base):
    """Every attempt at posting a score, kept."""

    __tablename__ = "lti_score_attempts"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    post_id: Mapped[int] = mapped_column(ForeignKey("lti_score_posts.id"), index=True)
    at: Mapped[datetime] = mapped_column(TZDateTime, default=utcnow)
    ok: Mapped[bool] = mapped_column(Boolean)
    status_code: Mapped[int | None] = mapped_column(Integer, nullable=True)
    error: Mapped[str | None] = mapped_column(Text, nullable=True)


class LtiStoreEntry(Base):
    """pylti1p3's launch data storage: OIDC nonces (consumed once) and validated launches."""

    __tablename__ = "lti_store"

    key: Mapped[str] = mapped_column(String(200), primary_key=True)
    value: Mapped[Any] = mapped_column(JSON)
    expires_at: Mapped[datetime] = mapped_column(TZDateTime, index=True)
