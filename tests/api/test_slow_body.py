"""Red team, round 4: a request body sent a byte now and then was waited for forever.

The body is read (service/main.py, BodySizeLimit) before any route checks a key, so anyone who can
reach the port could open connections, send headers and part of a body, and never finish: each
held a descriptor and what it had sent, for good. Now the whole body must arrive within
`max_body_seconds`; past that the answer is 408 and the connection is closed.
"""
from __future__ import annotations

import json
import socket
import time
from urllib.parse import urlsplit

import pytest

from tests.api.support import cheap_body


@pytest.fixture(scope="module")
def slow_service(start_service):
    return start_service(max_body_seconds=2)


def _connect(url: str) -> socket.socket:
    parts = urlsplit(url)
    sock = socket.create_connection((parts.hostname, parts.port), timeout=30)
    return sock


def _answer(sock: socket.socket) -> bytes:
    """Everything the server sends until it closes the connection (at most 30 s of silence)."""
    received = b""
    while chunk := sock.recv(65536):
        received += chunk
    return received


@pytest.mark.parametrize("framing", ["content-length", "chunked"])
def test_a_body_that_never_finishes_is_answered_408_and_closed(slow_service, framing):
    course = slow_service.new_course()
    key = course.key("submit", "read")
    body = json.dumps(cheap_body("slow")).encode()
    sock = _connect(slow_service.url)
    try:
        head = (f"POST /v1/submissions HTTP/1.1\r\nHost: test\r\nAuthorization: Bearer {key}\r\n"
                "Content-Type: application/json\r\n")
        if framing == "content-length":
            sock.sendall(f"{head}Content-Length: {len(body)}\r\n\r\n".encode() + body[:10])
        else:
            sock.sendall(f"{head}Transfer-Encoding: chunked\r\n\r\n".encode() + b"a\r\n" + body[:10] + b"\r\n")
        for _ in range(4):  # a byte every second: never idle long, never done
            time.sleep(1)
            try:
                sock.sendall(b"1\r\n \r\n" if framing == "chunked" else b" ")
            except OSError:
                break  # the server closed it already
        answer = _answer(sock)
    finally:
        sock.close()
    assert answer.startswith(b"HTTP/1.1 408"), answer[:200]
    assert b"not received within 2 s" in answer
    assert course.submission_count() == 0


def test_a_body_sent_in_time_is_still_taken(slow_service):
    course = slow_service.new_course()
    response = course.client("submit", "read").post("/v1/submissions", json=cheap_body("in time"))
    assert response.status_code == 202, response.text
