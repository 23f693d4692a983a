"""The HTTP session pylti1p3 calls platforms with: a timeout, no redirects, capped bodies, and
only URLs that pass the same checks as webhook callbacks (https, public, unless allowed)."""
from __future__ import annotations

import requests

from service.worker.webhooks import CallbackRefused, pin_callback

MAX_RESPONSE_BYTES = 4 * 1024 * 1024  # a roster page or a key set; anything larger is refused


class PlatformCallRefused(requests.RequestException):
    """The URL may not be called, or the answer was too large."""


class BoundedSession(requests.Session):
    """pylti1p3 calls `requests` with no timeout, follows redirects and reads whole bodies: every
    request through this session has a timeout, follows nothing, and reads at most a few MiB."""

    def __init__(self, *, timeout_s: float, allowed_hosts: list[str]) -> None:
        super().__init__()
        self.timeout_s, self.allowed_hosts = timeout_s, allowed_hosts
        self.headers["User-Agent"] = "kernelgrade-lti"

    def request(self, method, url, **kwargs):  # noqa: ANN001, ANN201 - requests' own signature
        try:
            # Every address the host resolves to is checked; unlike a webhook, the connection is not
            # pinned to the checked address (requests would then present the address to TLS).
            pin_callback(str(url), allowed_hosts=self.allowed_hosts, field="platform URL",
                         allow_setting="lti_allowed_hosts")
        except CallbackRefused as exc:
            raise PlatformCallRefused(str(exc)) from None
        kwargs["timeout"] = kwargs.get("timeout") or self.timeout_s
        kwargs["allow_redirects"] = False
        kwargs["stream"] = True
        response = super().request(method, url, **kwargs)
        try:
            body = response.raw.read(MAX_RESPONSE_BYTES + 1, decode_content=True)
        finally:
            response.close()
        if len(body) > MAX_RESPONSE_BYTES:
            raise PlatformCallRefused(f"{url} answered more than {MAX_RESPONSE_BYTES} bytes")
        # requests keeps a read body here; pylti1p3 then calls .json() / .text as usual.
        response._content = body
        response._content_consumed = True
        return response
