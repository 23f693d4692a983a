"""The LTI background work of the pool's `lti` thread: post due scores, sync requested rosters,
and drop expired nonces and launches about once a minute."""
from __future__ import annotations

import time
from collections.abc import Callable

from sqlalchemy import delete
from sqlalchemy.orm import Session, sessionmaker

from service.config import Settings
from service.db.base import utcnow
from service.db.lti_models import LtiStoreEntry
from service.lti import roster, scores
from service.lti.http import BoundedSession

SWEEP_EVERY_S = 60.0


class Housekeeper:
    def __init__(self, sessions: sessionmaker[Session], settings: Settings, *,
                 on_score: Callable[[bool], None] | None = None) -> None:
        self.sessions, self.settings, self.on_score = sessions, settings, on_score
        self._last_sweep = 0.0

    def run_once(self) -> None:
        with BoundedSession(timeout_s=self.settings.lti_http_timeout_s,
                            allowed_hosts=self.settings.lti_allowed_hosts) as http:
            scores.deliver_due(self.sessions, http=http, backoff_s=self.settings.lti_score_backoff_s,
                               on_attempt=self.on_score)
            roster.sync_due(self.sessions, http=http)
        if time.monotonic() - self._last_sweep > SWEEP_EVERY_S:
            self._last_sweep = time.monotonic()
            with self.sessions() as session:
                session.execute(delete(LtiStoreEntry).where(LtiStoreEntry.expires_at < utcnow()))
                session.commit()
