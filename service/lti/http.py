"""The HTTP session pylti1p3 calls platforms with: a deadline for the whole call, no redirects,
capped bodies, and only URLs that pass the same checks as webhook callbacks (https, public, unless
allowed)."""
from __future__ import annotations

import threading

import requests
from requests.adapters import HTTPAdapter
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool

from service.outbound import CallbackRefused, Deadline, pin_callback

# The deadline of the call this thread is making (BoundedSession.request sets it): each connection
# urllib3 makes for it hands its socket over as soon as it is connected.
_calling = threading.local()


def _held(sock):  # noqa: ANN001, ANN202 - urllib3's socket
    deadline = getattr(_calling, "deadline", None)
    if deadline is not None:
        deadline.hold(sock)
    return sock


class _HeldHTTPConnection(HTTPConnection):
    def _new_conn(self):  # noqa: ANN202 - urllib3's own signature
        return _held(super()._new_conn())


class _HeldHTTPSConnection(HTTPSConnection):
    def _new_conn(self):  # noqa: ANN202 - urllib3's own signature
        return _held(super()._new_conn())


class _HeldHTTPPool(HTTPConnectionPool):
    ConnectionCls = _HeldHTTPConnection


class _HeldHTTPSPool(HTTPSConnectionPool):
    ConnectionCls = _HeldHTTPSConnection


class _HeldAdapter(HTTPAdapter):
    """requests' adapter whose connections hand their sockets to the current call's Deadline."""

    def init_poolmanager(self, *args, **kwargs):  # noqa: ANN002, ANN003, ANN201 - requests' own signature
        super().init_poolmanager(*args, **kwargs)
        self.poolmanager.pool_classes_by_scheme = {"http": _HeldHTTPPool, "https": _HeldHTTPSPool}

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
        self.headers["Connection"] = "close"  # every call connects anew, so its Deadline holds the socket
        for prefix in ("http://", "https://"):
            self.mount(prefix, _HeldAdapter())

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
        # requests' timeout bounds each read: a platform answering a byte every few seconds held the
        # LTI thread (every course's scores and rosters). The whole call, body included, ends in time.
        with Deadline(self.timeout_s) as deadline:
            _calling.deadline = deadline
            try:
                response = super().request(method, url, **kwargs)
                try:
                    body = response.raw.read(MAX_RESPONSE_BYTES + 1, decode_content=True)
                finally:
                    response.close()
            except Exception:
                if deadline.fired:
                    raise PlatformCallRefused(f"{url} gave no complete answer within {self.timeout_s:g} s") from None
                raise
            finally:
                _calling.deadline = None
        if len(body) > MAX_RESPONSE_BYTES:
            raise PlatformCallRefused(f"{url} answered more than {MAX_RESPONSE_BYTES} bytes")
        # requests keeps a read body here; pylti1p3 then calls .json() / .text as usual.
        response._content = body
        response._content_consumed = True
        return response
