"""Names and Role Provisioning: the roster of each context, fetched in the background when a
launch finds it missing or old, so TAs see names; and the names of submissions' authors."""
from __future__ import annotations

import logging

import requests
from pylti1p3.exception import LtiException
from pylti1p3.names_roles import NamesRolesProvisioningService
from pylti1p3.service_connector import ServiceConnector
from sqlalchemy import or_, select
from sqlalchemy.orm import Session, sessionmaker

from service.db.base import utcnow
from service.db.lti_models import LtiContext, LtiLink, LtiMember, LtiPlatform, LtiSubmission
from service.lti import keys
from service.lti.adapter import ToolRegistration
from service.lti.http import BoundedSession
from service.lti.launches import text

log = logging.getLogger("kernelgrade.lti.roster")
MAX_PAGES = 100  # pylti1p3's get_members follows `next` links without end: we stop here
MAX_MEMBERS = 20_000


def fetch_members(session: Session, context: LtiContext, http: BoundedSession) -> list[dict]:
    platform = session.get_one(LtiPlatform, context.platform_id)
    connector = ServiceConnector(ToolRegistration(platform, keys.active_key(session)), http)
    service = NamesRolesProvisioningService(connector, {"context_memberships_url": context.memberships_url or ""})
    members: list[dict] = []
    url: str | None = context.memberships_url
    for _ in range(MAX_PAGES):
        if not url or len(members) >= MAX_MEMBERS:
            break
        page, url = service.get_members_page(url)
        members.extend(dict(m) for m in page if isinstance(m, dict) and m.get("user_id"))
    return members[:MAX_MEMBERS]


def sync(session: Session, context: LtiContext, http: BoundedSession) -> int:
    """Replace what the roster says about each member; members seen only at launch stay."""
    members = fetch_members(session, context, http)
    known = {m.sub: m for m in session.scalars(select(LtiMember).where(LtiMember.context_id == context.id))}
    for member in members:
        sub = text(member["user_id"], 255)
        row = known.get(sub) or LtiMember(context_id=context.id, sub=sub)
        name = member.get("name") or " ".join(filter(None, (member.get("given_name"), member.get("family_name"))))
        row.name = text(name, 300) or row.name or ""
        row.email = text(member.get("email"), 300) or row.email or ""
        row.roles = [text(r, 200) for r in (member.get("roles") or [])[:30]]
        row.status = text(member.get("status") or "Active", 16)
        session.add(row)
        known[sub] = row
    context.roster_synced_at, context.roster_error = utcnow(), None
    session.commit()
    return len(members)


def sync_due(sessions: sessionmaker[Session], *, http: BoundedSession) -> int:
    """Sync every context whose roster was asked for since its last sync. Returns how many."""
    with sessions() as session:
        due = list(session.scalars(select(LtiContext.id).where(
            LtiContext.roster_requested_at.is_not(None),
            or_(LtiContext.roster_synced_at.is_(None), LtiContext.roster_synced_at < LtiContext.roster_requested_at))
            .limit(10)))
    for context_id in due:
        with sessions() as session:
            context = session.get_one(LtiContext, context_id)
            try:
                count = sync(session, context, http)
                log.info("roster of context %s: %s members", context_id, count)
            except (requests.RequestException, LtiException, ValueError) as exc:
                session.rollback()
                context = session.get_one(LtiContext, context_id)
                # Tried: wait for the next launch to ask again rather than hammer the platform.
                context.roster_synced_at, context.roster_error = utcnow(), f"{type(exc).__name__}: {exc}"[:500]
                session.commit()
                log.warning("roster of context %s failed: %s", context_id, exc)
    return len(due)


def names(session: Session, submission_ids: list[str]) -> dict[str, str]:
    """submission id -> its author's name (or e-mail) from the roster, for LTI submissions."""
    if not submission_ids:
        return {}
    rows = session.execute(
        select(LtiSubmission.submission_id, LtiMember.name, LtiMember.email)
        .join(LtiLink, LtiLink.id == LtiSubmission.link_id)
        .join(LtiMember, (LtiMember.context_id == LtiLink.context_id) & (LtiMember.sub == LtiSubmission.sub))
        .where(LtiSubmission.submission_id.in_(submission_ids))).all()
    return {sid: name or email for sid, name, email in rows if name or email}
