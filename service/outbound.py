"""Guards of every outbound HTTP call (webhooks, LTI platforms): public addresses, resolved once; one deadline."""
from __future__ import annotations

import ipaddress
import socket
import threading
from dataclasses import dataclass
from urllib.parse import urlsplit

import httpx


class CallbackRefused(ValueError):
    """A URL the service may not call; the message says why, in words an integrator can act on."""


_NAT64 = ipaddress.ip_network("64:ff9b::/96")


def is_public(ip: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    """Globally routable unicast (not private, loopback, link-local, CGNAT 100.64/10, reserved,
    documentation, multicast, ...), and so is any IPv4 address an IPv6 one carries."""
    if not ip.is_global or ip.is_multicast:
        return False
    if isinstance(ip, ipaddress.IPv6Address):
        embedded = [ip.ipv4_mapped, ip.sixtofour, ip.teredo[1] if ip.teredo else None,
                    ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF) if ip in _NAT64 else None]
        return all(e is None or is_public(e) for e in embedded)
    return True


def _host(url: str, field: str = "callback_url") -> tuple[httpx.URL, str]:
    """The URL as httpx parses it, and its host in ASCII (IDNA 2008, as httpx encodes it): the one
    name that is checked, resolved and connected to."""
    try:
        parsed = httpx.URL(url)
        return parsed, parsed.raw_host.decode("ascii").lower()
    except (httpx.InvalidURL, UnicodeError, ValueError) as exc:
        raise CallbackRefused(f"{field} is not a valid URL: {exc}") from None


def check_callback_url(url: str, *, allowed_hosts: list[str], field: str = "callback_url",
                       allow_setting: str = "webhook_allowed_hosts") -> None:
    """What can be checked without a lookup (at submission). Raise CallbackRefused with the
    reason, in words an integrator can act on. Also checks the LTI platform URLs the tool calls
    (`field` names the URL, `allow_setting` the list of exceptions)."""
    try:
        parts = urlsplit(url)
        hostname = parts.hostname
    except ValueError as exc:  # a malformed IPv6 literal or port
        raise CallbackRefused(f"{field} is not a valid URL: {exc}") from None
    if parts.scheme not in ("https", "http") or not hostname:
        raise CallbackRefused(f"{field} must be an absolute https URL")
    _, host = _host(url, field)
    if hostname in allowed_hosts or host in allowed_hosts:
        return
    if parts.scheme != "https":
        raise CallbackRefused(f"{field} must use https (http is allowed only for hosts in {allow_setting})")
    if host in ("localhost",) or host.endswith((".localhost", ".local", ".internal")):
        raise CallbackRefused(f"{field} host {host!r} is internal")
    try:
        ip = ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return
    if not is_public(ip):
        raise CallbackRefused(f"{field} points to a non-public address ({ip})")


@dataclass(frozen=True)
class Pinned:
    """Where one delivery goes: `url` with the checked address in place of the host, and the
    host's name for the Host header and TLS (None: an allowed host, connected to as it is)."""

    url: str
    host: str | None = None


def pin_callback(url: str, *, allowed_hosts: list[str], field: str = "callback_url",
                 allow_setting: str = "webhook_allowed_hosts") -> Pinned:
    """Check `url`, resolve its host once, check every address, and pin the first one."""
    check_callback_url(url, allowed_hosts=allowed_hosts, field=field, allow_setting=allow_setting)
    parsed, host = _host(url, field)
    if urlsplit(url).hostname in allowed_hosts or host in allowed_hosts:
        return Pinned(url)
    try:
        infos = socket.getaddrinfo(host, parsed.port or 443, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError) as exc:
        raise CallbackRefused(f"{field} host {host!r} does not resolve: {exc}") from None
    # str(): typeshed types a sockaddr's host as str | int; for AF_INET/AF_INET6 (all SOCK_STREAM gives) it is a str
    addresses = [ipaddress.ip_address(str(info[4][0]).split("%", 1)[0]) for info in infos]
    if not addresses:
        raise CallbackRefused(f"{field} host {host!r} does not resolve")
    for ip in addresses:
        if not is_public(ip):
            raise CallbackRefused(f"{field} resolves to a non-public address ({ip})")
    return Pinned(str(parsed.copy_with(host=str(addresses[0]))), host=host)


class Deadline:
    """Ends one HTTP exchange at a fixed time, whatever the peer sends. httpx's (and requests')
    timeouts bound each read, not the exchange: a receiver answering a byte every few seconds, or
    streaming an endless body, kept the webhook thread (one for every course) forever. Each socket
    the exchange connects is handed to `hold` as soon as it is connected (httpcore's `trace`
    extension here; service/lti/http.py's connection class for requests); a duplicate of it (the
    same connection, and a descriptor no other socket can get while we hold it) is shut down when
    the time is up, which wakes a blocked read or write at once, TLS or not."""

    def __init__(self, seconds: float) -> None:
        self.seconds, self.fired = seconds, False
        self._lock = threading.Lock()
        self._sockets: list[socket.socket] = []
        self._timer = threading.Timer(seconds, self._fire)
        self._timer.daemon = True

    def hold(self, sock: socket.socket) -> None:
        held = sock.dup()
        with self._lock:
            self._sockets.append(held)
            fired = self.fired
        if fired:
            self._shut(held)

    def trace(self, event: str, info: dict) -> None:
        """httpx's `trace` extension: holds the socket of each connection made."""
        if event != "connection.connect_tcp.complete":
            return
        stream = info.get("return_value")
        sock = stream.get_extra_info("socket") if stream is not None else None
        if isinstance(sock, socket.socket):
            self.hold(sock)

    @staticmethod
    def _shut(sock: socket.socket) -> None:
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def _fire(self) -> None:
        with self._lock:
            self.fired = True
            held = list(self._sockets)
        for sock in held:
            self._shut(sock)

    def __enter__(self) -> Deadline:
        self._timer.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._timer.cancel()
        with self._lock:
            held, self._sockets = self._sockets, []
        for sock in held:
            sock.close()
