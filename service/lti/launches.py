"""What a valid launch records: its context (with the roster service), its placement (resource
link: the exercise from the custom claim, the line item from the AGS claim) and the person, who
may be a student or staff. Identity always comes from these verified claims."""
from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from service.db.base import as_utc, utcnow
from service.db.lti_models import LtiContext, LtiDeployment, LtiLink, LtiMember, LtiPlatform
from service.lti import scores as lti_scores
from service.submission import MAX_ID_CHARS

CLAIM = "https://purl.imsglobal.org/spec/lti/claim/"
AGS = "https://purl.imsglobal.org/spec/lti-ags/claim/endpoint"
NRPS = "https://purl.imsglobal.org/spec/lti-nrps/claim/namesroleservice"
STAFF_ROLES = ("#Instructor", "#TeachingAssistant", "#ContentDeveloper", "#Administrator", "#Mentor")


def text(value: Any, limit: int) -> str:
    """A claim as bounded text (claims are the platform's, but still capped before storing)."""
    return ("" if value is None else str(value)).replace("\x00", "")[:limit]


def is_staff(claims: dict[str, Any]) -> bool:
    roles = claims.get(CLAIM + "roles") or []
    return any(isinstance(r, str) and r.endswith(STAFF_ROLES) for r in roles)


@dataclass(frozen=True)
class Person:
    sub: str
    name: str
    email: str
    roles: list[str]

    @classmethod
    def of(cls, claims: dict[str, Any]) -> Person:
        name = text(claims.get("name") or " ".join(filter(None, (claims.get("given_name"), claims.get("family_name")))),
                    300)
        return cls(sub=text(claims.get("sub"), 255), name=name, email=text(claims.get("email"), 300),
                   roles=[text(r, 200) for r in (claims.get(CLAIM + "roles") or [])[:30]])


def _get_or_add(session: Session, model, lookup: dict[str, Any], **values: Any):  # noqa: ANN001, ANN202
    """The row with `lookup`, created (under a race, re-read) or updated with `values`."""
    row = session.scalar(select(model).filter_by(**lookup))
    if row is None:
        row = model(**lookup, **values)
        session.add(row)
        try:
            session.commit()
            return row
        except IntegrityError:  # a concurrent launch created it
            session.rollback()
            row = session.scalar(select(model).filter_by(**lookup))
    for name, value in values.items():
        if value is not None and getattr(row, name) != value:
            setattr(row, name, value)
    session.commit()
    return row


def record_context(session: Session, platform: LtiPlatform, claims: dict[str, Any], *,
                   roster_max_age_s: int) -> LtiContext:
    context = claims.get(CLAIM + "context") or {}
    nrps = claims.get(NRPS) or {}
    row = _get_or_add(session, LtiContext, {"platform_id": platform.id,
                                            "context_id": text(context.get("id") or "(no context)", 255)},
                      title=text(context.get("title") or context.get("label"), 500) or None,
                      memberships_url=text(nrps.get("context_memberships_url"), 2000) or None)
    synced = as_utc(row.roster_synced_at) if row.roster_synced_at else None
    if row.memberships_url and (synced is None or utcnow() - synced > timedelta(seconds=roster_max_age_s)):
        row.roster_requested_at = utcnow()  # service.lti.roster syncs it in the background
        session.commit()
    return row


def record_member(session: Session, context: LtiContext, person: Person) -> LtiMember:
    return _get_or_add(session, LtiMember, {"context_id": context.id, "sub": person.sub},
                       name=person.name or None, email=person.email or None, roles=person.roles, status="Active")


def record_link(session: Session, deployment: LtiDeployment, context: LtiContext, claims: dict[str, Any]) -> LtiLink:
    link = claims.get(CLAIM + "resource_link") or {}
    custom = claims.get(CLAIM + "custom") or {}
    ags = claims.get(AGS) or {}
    scopes = [text(s, 200) for s in ags.get("scope", [])[:10]] if isinstance(ags.get("scope"), list) else None
    named = text(ags.get("lineitem"), 2000) or None  # the platform's own line item; none: the tool's is kept
    row = _get_or_add(session, LtiLink,
                      {"deployment_id": deployment.id, "resource_link_id": text(link.get("id"), 255)},
                      context_id=context.id, title=text(link.get("title"), 500) or None,
                      exercise_id=text(custom.get("exercise"), 100) or None if isinstance(custom, dict) else None,
                      ags_scopes=scopes, lineitems_url=text(ags.get("lineitems"), 2000) or None)
    if named is not None and row.lineitem_url != named:
        # A line item new to kernelgrade (the placement's first, or a column made again in the LMS):
        # every learner's grade that counts is queued for it, not left for their next change.
        lti_scores.line_item_named(session, row, named)
    return row


ASSIGNMENT_PREFIXES = ("lti:", "lti@")  # an LTI placement's assignment ids; refused from API clients


def assignment_of(session: Session, link: LtiLink) -> str:
    """The `assignment` of the placement's submissions: `lti:<resource link id>`, unless an older
    placement of the same course already has that (another LMS, or another deployment of one: a
    resource link id is unique within a deployment only, and user ids within an issuer only, so two
    LMSs' placements `3` and users `5` are different people): then `lti@<placement number>:<resource
    link id>`, which no other placement has. The gradebook and the LMS score choose a student's
    attempts by (assignment, student id): each placement's must be its own. Decided by the links,
    which a launch stores before any submission and which are never deleted: stable, and the same
    whichever placement's first submission comes first. At most 200 characters (the contract's)."""
    plain = f"lti:{link.resource_link_id}"[:MAX_ID_CHARS]
    course = (select(LtiPlatform.course_id).join(LtiDeployment, LtiDeployment.platform_id == LtiPlatform.id)
              .where(LtiDeployment.id == link.deployment_id).scalar_subquery())
    alike = session.execute(select(LtiLink.id, LtiLink.resource_link_id)
                            .join(LtiDeployment, LtiDeployment.id == LtiLink.deployment_id)
                            .join(LtiPlatform, LtiPlatform.id == LtiDeployment.platform_id)
                            .where(LtiPlatform.course_id == course,
                                   LtiLink.resource_link_id.startswith(plain[4:], autoescape=True))).all()
    if min(link_id for link_id, other in alike if f"lti:{other}"[:MAX_ID_CHARS] == plain) == link.id:
        return plain
    return f"lti@{link.id}:{link.resource_link_id}"[:MAX_ID_CHARS]


def find_link(session: Session, deployment: LtiDeployment, claims: dict[str, Any]) -> LtiLink | None:
    link_id = text((claims.get(CLAIM + "resource_link") or {}).get("id"), 255)
    return session.scalar(select(LtiLink).where(LtiLink.deployment_id == deployment.id,
                                                LtiLink.resource_link_id == link_id))
