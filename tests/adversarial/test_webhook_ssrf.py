"""A course platform aiming the webhook at the grader's own network: a name that resolves to a
public address when checked and to 127.0.0.1 when connected to (DNS rebinding), a name that IDNA
2003 and IDNA 2008 spell differently, and addresses that are not globally routable (CGNAT
100.64.0.0/10, NAT64 and IPv4-mapped loopback).

DNS is a zone of the test's own (`socket.getaddrinfo` answers from it, encoding a non-ASCII name
with Python's IDNA 2003 codec as the real call does); the delivery code, httpx and the sockets are
the real ones, and the internal service is a real TCP listener on 127.0.0.1 that records every
connection it gets."""
from __future__ import annotations

import socket
import threading

import httpx
import pytest

from service.outbound import CallbackRefused, check_callback_url, pin_callback
from service.worker.webhooks import post_callback

pytestmark = [pytest.mark.adversarial]

PUBLIC = "192.88.99.1"  # globally routable, and nothing answers there from here: the delivery fails, harmlessly


class Listener:
    """The internal service an SSRF would reach: counts the connections it accepts."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.connections = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            self.connections += 1
            conn.close()

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=2)
        self.sock.close()


@pytest.fixture
def listener():
    server = Listener()
    yield server
    server.close()


@pytest.fixture
def zone(monkeypatch):
    """name -> list of addresses; a name asked again gets the next entry (the last one repeats)."""
    records: dict[str, list[str]] = {}
    asked: list[str] = []
    real = socket.getaddrinfo

    def getaddrinfo(host, port, family=0, type=0, proto=0, flags=0):
        name = host.decode() if isinstance(host, bytes) else str(host)
        if not name.isascii():
            name = name.encode("idna").decode("ascii")  # what the C resolver call does with a str: IDNA 2003
        name = name.lower()
        if name not in records:
            return real(host, port, family, type, proto, flags)  # numeric addresses
        asked.append(name)
        answers = records[name]
        address = answers[min(asked.count(name), len(answers)) - 1]
        return real(address, port, family, type, proto, flags)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    return records


def deliver(url: str) -> str:
    """One delivery as the worker makes it; returns how it ended."""
    with httpx.Client(timeout=1.0, follow_redirects=False) as client:
        try:
            response = post_callback(client, url, body=b"{}", headers={"Content-Type": "application/json"},
                                     allowed_hosts=[])
            return f"HTTP {response.status_code}"
        except (httpx.HTTPError, CallbackRefused) as exc:
            return f"{type(exc).__name__}: {exc}"


def test_dns_rebinding_cannot_reach_loopback(zone, listener):
    zone["rebind.example"] = [PUBLIC, "127.0.0.1"]  # checked: public; asked again: loopback
    outcome = deliver(f"https://rebind.example:{listener.port}/hook")
    assert listener.connections == 0, f"the delivery reached 127.0.0.1 ({outcome})"
    assert outcome.startswith(("ConnectError", "ConnectTimeout")), outcome


def test_idna_2003_and_2008_spellings_cannot_reach_loopback(zone, listener):
    zone["fass.example"] = [PUBLIC]  # what IDNA 2003 makes of faß.example
    zone["xn--fa-hia.example"] = ["127.0.0.1"]  # what IDNA 2008 (httpx) makes of it
    outcome = deliver(f"https://faß.example:{listener.port}/hook")
    assert listener.connections == 0, f"the delivery reached 127.0.0.1 ({outcome})"
    assert "non-public address (127.0.0.1)" in outcome, outcome  # checked under the name it connects to


@pytest.mark.parametrize("address", ["100.64.0.1", "100.100.100.200", "[::ffff:127.0.0.1]", "[64:ff9b::7f00:1]",
                                     "[2002:7f00:1::]", "192.0.2.1", "198.18.0.1", "0.0.0.0", "[fd00::1]"])
def test_addresses_that_are_not_globally_routable_are_refused(address):
    with pytest.raises(CallbackRefused, match="non-public"):
        check_callback_url(f"https://{address}/hook", allowed_hosts=[])


def test_names_resolving_to_cgnat_are_refused(zone):
    zone["metadata.example"] = ["100.100.100.200"]  # a cloud metadata service in 100.64.0.0/10
    with pytest.raises(CallbackRefused, match="non-public address"):
        pin_callback("https://metadata.example/latest", allowed_hosts=[])


def test_public_names_are_pinned_and_allowed_hosts_still_work(zone, listener):
    zone["hooks.example"] = [PUBLIC]
    pinned = pin_callback("https://hooks.example:8443/a?b=1", allowed_hosts=[])
    assert pinned.url == f"https://{PUBLIC}:8443/a?b=1" and pinned.host == "hooks.example"
    # The explicit allow-list (tests, intranets) still reaches an internal host, over http too.
    url = f"http://127.0.0.1:{listener.port}/hook"
    assert pin_callback(url, allowed_hosts=["127.0.0.1"]).host is None
    with httpx.Client(timeout=1.0) as client, pytest.raises(httpx.HTTPError):
        post_callback(client, url, body=b"{}", headers={}, allowed_hosts=["127.0.0.1"])  # the listener hangs up
    assert listener.connections == 1
