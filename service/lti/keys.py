"""The tool's signing keys: one active RSA key signs deep-linking responses and service-token
requests; rotation makes a new one active and keeps the old one published for a grace period, so
a platform that cached the JWKS still verifies what was signed just before."""
from __future__ import annotations

import json
from datetime import timedelta

from jwcrypto.jwk import JWK
from sqlalchemy import select
from sqlalchemy.orm import Session

from service.db.base import as_utc, utcnow
from service.db.lti_models import LtiToolKey

KEY_BITS = 2048


def _new_key() -> LtiToolKey:
    jwk = JWK.generate(kty="RSA", size=KEY_BITS)
    kid = jwk.thumbprint()
    public = json.loads(jwk.export_public()) | {"kid": kid, "alg": "RS256", "use": "sig"}
    private_pem = jwk.export_to_pem(private_key=True, password=None).decode()
    return LtiToolKey(kid=kid, private_pem=private_pem, public_jwk=public, created_at=utcnow())


def active_key(session: Session) -> LtiToolKey:
    """The key that signs now; the first call creates one. Two processes creating the first key at
    once both publish theirs, and the newer one signs: harmless."""
    key = session.scalar(select(LtiToolKey).where(LtiToolKey.retired_at.is_(None), LtiToolKey.removed_at.is_(None))
                         .order_by(LtiToolKey.created_at.desc()).limit(1))
    if key is None:
        key = _new_key()
        session.add(key)
        session.commit()
    return key


def rotate(session: Session) -> LtiToolKey:
    """A new active key; every other key is retired (still published for the grace period)."""
    now = utcnow()
    for old in session.scalars(select(LtiToolKey).where(LtiToolKey.retired_at.is_(None))):
        old.retired_at = now
    key = _new_key()
    session.add(key)
    session.commit()
    return key


def remove(session: Session, kid: str) -> bool:
    """Stop publishing a retired key at once (for instance one that leaked). The active key cannot be removed."""
    key = session.get(LtiToolKey, kid)
    if key is None or key.retired_at is None or key.removed_at is not None:
        return False
    key.removed_at = utcnow()
    session.commit()
    return True


def all_keys(session: Session) -> list[LtiToolKey]:
    return list(session.scalars(select(LtiToolKey).order_by(LtiToolKey.created_at)))


def published(session: Session, *, grace_s: int) -> dict:
    """The JWKS: the active key and the keys retired less than `grace_s` ago."""
    active_key(session)
    since = utcnow() - timedelta(seconds=grace_s)
    keys = [k for k in all_keys(session)
            if k.removed_at is None and (k.retired_at is None or as_utc(k.retired_at) > since)]
    return {"keys": [k.public_jwk for k in reversed(keys)]}

