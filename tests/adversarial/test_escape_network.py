"""Network egress from a submission's wrapper: every connection must fail inside the sandbox.

Each attack returns the right answer only if it reached something, so a pass would be a breach;
the host's own listeners also record whether anything arrived.
"""
from __future__ import annotations

import errno
import socket
import threading
from pathlib import Path

import pytest

from tests.adversarial.kit import assert_denied, assert_graded_normally, grade, guarded

pytestmark = [pytest.mark.sandbox, pytest.mark.adversarial]

# Unreachable or refused, as a sandbox with only its own loopback answers.
REFUSED = {errno.ECONNREFUSED, errno.ENETUNREACH, errno.EHOSTUNREACH, errno.EADDRNOTAVAIL}


def host_can_connect(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=2).close()
        return True
    except OSError:
        return False


class Listener:
    """A host TCP or UDP server that records whatever reaches it (UDP: echoes the datagram)."""

    def __init__(self, family: int, address: str, kind: int = socket.SOCK_STREAM) -> None:
        self.sock = socket.socket(family, kind)
        self.sock.bind((address, 0))
        self.port = self.sock.getsockname()[1]
        self.kind = kind
        self.arrived: list[bytes] = []
        self._stop = threading.Event()
        if kind == socket.SOCK_STREAM:
            self.sock.listen()
        self.sock.settimeout(0.2)
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                if self.kind == socket.SOCK_STREAM:
                    conn, _ = self.sock.accept()
                    conn.settimeout(1)
                    try:
                        self.arrived.append(b"<connect>" + conn.recv(64))
                    except OSError:
                        self.arrived.append(b"<connect>")
                    conn.close()
                else:
                    data, peer = self.sock.recvfrom(256)
                    self.arrived.append(data)
                    self.sock.sendto(data, peer)
            except OSError:
                continue

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=2)
        self.sock.close()


def host_address() -> str | None:
    """The host's address on its default route (no packet is sent)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("10.255.255.255", 1))
            address = probe.getsockname()[0]
        except OSError:
            return None
    return None if address.startswith("127.") else address


CONNECT = '''
def attack(x, y):
    def connect():
        with socket.create_connection((@HOST@, @PORT@), timeout=3) as conn:
            conn.sendall(@TOKEN@.encode() + b"\\r\\nPING\\r\\n")
    return attempt(connect)
'''


@pytest.mark.parametrize("port", [5432, 6379], ids=["postgres", "redis"])
def test_tcp_to_the_host_database_and_redis(host, port):
    # The host normally reaches both, so a refusal inside is the sandbox's doing; PostgreSQL may
    # be restarting under another suite, so the host's reach is not required here.
    report = grade(guarded(CONNECT, HOST="127.0.0.1", PORT=port, TOKEN=host.token))
    assert_denied(report, errnos=REFUSED)
    host.assert_untouched()


@pytest.mark.parametrize("where", ["ipv4_loopback", "ipv6_loopback", "host_address"])
def test_tcp_to_a_listener_of_the_test(host, where):
    if where == "ipv6_loopback":
        if not socket.has_ipv6:
            pytest.skip("no IPv6 on this host")
        family, bind, target = socket.AF_INET6, "::1", "::1"
    elif where == "host_address":
        target = host_address()
        if target is None:
            pytest.skip("the host has no non-loopback IPv4 address")
        family, bind = socket.AF_INET, "0.0.0.0"
    else:
        family, bind, target = socket.AF_INET, "127.0.0.1", "127.0.0.1"
    listener = Listener(family, bind)
    try:
        with socket.create_connection((target, listener.port), timeout=2) as conn:  # the host gets through
            conn.sendall(b"host")
        report = grade(guarded(CONNECT, HOST=target, PORT=listener.port, TOKEN=host.token))
    finally:
        listener.close()
    assert_denied(report, errnos=REFUSED)
    from_sandbox = [a for a in listener.arrived if host.token.encode() in a]
    assert not from_sandbox, f"the sandbox reached the host listener: {from_sandbox}"
    assert any(a.startswith(b"<connect>host") for a in listener.arrived), "the host's own connection was not seen"
    host.assert_untouched()


def test_udp_to_an_echo_server_of_the_test(host):
    listener = Listener(socket.AF_INET, "127.0.0.1", socket.SOCK_DGRAM)
    try:
        report = grade(guarded('''
def attack(x, y):
    def echo():
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
            sock.settimeout(1.0)
            sock.sendto(@TOKEN@.encode(), ("127.0.0.1", @PORT@))
            data, _ = sock.recvfrom(256)
            if data != @TOKEN@.encode():
                raise OSError(0, "unexpected answer")
    return attempt(echo)
''', PORT=listener.port, TOKEN=host.token))
    finally:
        listener.close()
    # No echo: a timeout (999) or a refusal (ICMP port unreachable on the sandbox's own loopback).
    assert_denied(report, errnos=REFUSED, details={999.0})
    assert not [a for a in listener.arrived if host.token.encode() in a], "a datagram reached the host"
    host.assert_untouched()


def nameservers() -> list[str]:
    try:
        lines = Path("/etc/resolv.conf").read_text().splitlines()
    except OSError:
        return []
    return [line.split()[1] for line in lines if line.startswith("nameserver") and len(line.split()) > 1
            and ":" not in line.split()[1]]


def test_dns_resolution(host):
    servers = [*nameservers(), "8.8.8.8", "1.1.1.1", "127.0.0.53"]
    report = grade(guarded('''
def attack(x, y):
    import struct
    outcomes = []
    for name in ("example.com", "pypi.org", "github.com"):
        try:
            outcomes.append(bool(socket.getaddrinfo(name, 443)))
        except OSError:
            outcomes.append(False)
    query = struct.pack(">HHHHHH", 0x4b47, 0x0100, 1, 0, 0, 0) + b"\\x07example\\x03com\\x00" + struct.pack(">HH", 1, 1)
    for server in @SERVERS@:
        def ask():
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
                sock.settimeout(1.0)
                sock.sendto(query, (server, 53))
                answer, _ = sock.recvfrom(512)
                if answer[:2] != b"\\x4b\\x47":
                    raise OSError(0, "not an answer")
        outcomes.append(attempt(ask)[0])
    # detail: how many lookups failed (all of them)
    return any(outcomes), outcomes.count(False)
''', SERVERS=servers))
    assert_denied(report, details={float(3 + len(servers))})
    host.assert_untouched()


def test_raw_sockets_and_interfaces(host):
    report = grade(guarded('''
def attack(x, y):
    opened = []
    for family, kind, proto in ((socket.AF_PACKET, socket.SOCK_RAW, 0x0300), (socket.AF_INET, socket.SOCK_RAW, 1),
                                (socket.AF_INET6, socket.SOCK_RAW, 58)):
        worked, _ = attempt(lambda: opened.append(socket.socket(family, kind, proto)))
    for sock in opened:
        sock.close()
    interfaces = sorted(name for _, name in socket.if_nameindex())
    # detail: 1 if the only interface is the sandbox's own loopback
    return bool(opened) or interfaces != ["lo"], float(interfaces == ["lo"])
'''))
    assert_denied(report, details={1.0})
    host.assert_untouched()


def test_zz_next_submission_is_graded_normally(host):
    assert_graded_normally()
    host.assert_untouched()
