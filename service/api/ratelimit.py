"""The per-key request budget: a moving window (the `limits` library) kept in Redis, shared by every
API replica and kept across restarts, or in this process's memory when no Redis is configured."""
from __future__ import annotations

import logging
import time

from limits import RateLimitItemPerMinute
from limits.errors import StorageError
from limits.storage import storage_from_string
from limits.strategies import MovingWindowRateLimiter

log = logging.getLogger("kernelgrade.ratelimit")
# A Redis that does not answer must not hold every request: give up quickly and let it through.
REDIS_TIMEOUT_S = 0.5
WARN_EVERY_S = 60.0


class RateLimiter:
    """At most `per_minute` requests per key in any 60 seconds."""

    def __init__(self, per_minute: int, *, storage_url: str = "memory://",
                 key_prefix: str = "kernelgrade-ratelimit") -> None:
        options: dict[str, float | str | bool] = {}
        if storage_url.startswith(("redis://", "rediss://")):
            options = {"key_prefix": key_prefix, "socket_timeout": REDIS_TIMEOUT_S,
                       "socket_connect_timeout": REDIS_TIMEOUT_S}
        self.storage_url = storage_url
        self.item = RateLimitItemPerMinute(per_minute)
        self._limiter = MovingWindowRateLimiter(storage_from_string(storage_url, wrap_exceptions=True, **options))
        self._warned_at = float("-inf")

    @property
    def shared(self) -> bool:
        return not self.storage_url.startswith("memory://")

    def take(self, key: str) -> float:
        """0 if allowed (and counted), else seconds until the oldest request in the window leaves it."""
        try:
            if self._limiter.hit(self.item, key):
                return 0.0
            reset_at = self._limiter.get_window_stats(self.item, key).reset_time
        except StorageError as exc:
            # Fail open: the limit protects capacity, the database guards correctness; an outage of the
            # shared counter must not turn into an outage of the API.
            if time.monotonic() - self._warned_at > WARN_EVERY_S:
                self._warned_at = time.monotonic()
                log.warning("rate limit storage %s unavailable, requests are not limited: %s",
                            self.storage_url.split("@")[-1], exc)
            return 0.0
        return max(reset_at - time.time(), 0.001)
