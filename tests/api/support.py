"""Helpers of the API tests: submission bodies, a live service with its courses and keys,
polling, 422 locations, and a real webhook receiver. The fixtures are in conftest.py."""
from __future__ import annotations

import json
import socket
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import psycopg
from sqlalchemy import func, select

from service.config import REPO_ROOT, Settings
from service.db import store
from service.db.models import Course as CourseRow
from service.db.models import Submission
from service.submission import Submission as SubmissionBody
from tests.support.waiting import wait_for  # noqa: F401  (re-exported)
from tests.support.servers import POSTGRES_ADMIN, LiveServer

EXERCISE = "lesson06_mean_var"
EXERCISE_DIR = REPO_ROOT / "exercises" / EXERCISE
EXAMPLE_PATH = EXERCISE_DIR / "example_submission.json"
FINAL = ("graded", "not_gradable")
BLANK = "______"
ALL_SCOPES = ("submit", "read", "review")


# --- submission bodies -----------------------------------------------------------------------

def example_body() -> dict[str, Any]:
    """The correct answer shipped with the exercise (full code points)."""
    return json.loads(EXAMPLE_PATH.read_text(encoding="utf-8"))


def template_body(fill: str) -> dict[str, Any]:
    """The bare template with its blank filled: really runs in the sandbox (~3 s)."""
    template = (EXERCISE_DIR / "template.py").read_text(encoding="utf-8")
    assert template.count(BLANK) == 1
    return {"exercise": EXERCISE, "code": template.replace(BLANK, fill)}


def cheap_body(tag: str = "") -> dict[str, Any]:
    """Code that does not keep the template's blank line: graded (0 points) in milliseconds,
    without starting the sandbox. `tag` makes bodies distinct."""
    return {"exercise": EXERCISE, "code": f"x = 1  # {tag or uuid.uuid4().hex}\n"}


# --- the server and its courses ---------------------------------------------------------------

def postgres_up() -> bool:
    try:
        with psycopg.connect(POSTGRES_ADMIN, connect_timeout=3):
            return True
    except psycopg.Error:
        return False


@dataclass
class Course:
    service: "Service"
    id: str
    webhook_secret: str
    keys: dict[str, tuple[str, str]] = field(default_factory=dict)  # name -> (key id, plaintext)

    def key(self, *scopes: str, name: str | None = None) -> str:
        """A new key with these scopes (cached by `name`, default the sorted scopes)."""
        name = name or ",".join(sorted(scopes))
        if name not in self.keys:
            with self.service.sessions() as session:
                row, plaintext = store.create_key(session, course_id=self.id, scopes=list(scopes), label=name)
            self.keys[name] = (row.id, plaintext)
        return self.keys[name][1]

    def key_id(self, name: str) -> str:
        return self.keys[name][0]

    def client(self, *scopes: str, name: str | None = None) -> httpx.Client:
        return self.service.client(self.key(*(scopes or ALL_SCOPES), name=name))

    def submission_count(self) -> int:
        with self.service.sessions() as session:
            return session.scalar(select(func.count()).select_from(Submission).where(Submission.course_id == self.id))


@dataclass
class Service:
    server: LiveServer
    settings: Settings
    kind: str
    _clients: list[httpx.Client] = field(default_factory=list)

    @property
    def url(self) -> str:
        return self.server.url

    @property
    def sessions(self):
        return self.server.sessions

    def client(self, key: str | None = None, *, headers: dict[str, str] | None = None) -> httpx.Client:
        headers = {**({"Authorization": f"Bearer {key}"} if key is not None else {}), **(headers or {})}
        client = httpx.Client(base_url=self.url, headers=headers, timeout=60)
        self._clients.append(client)
        return client

    def new_course(self) -> Course:
        course_id = f"c-{uuid.uuid4().hex[:10]}"
        with self.sessions() as session:
            row = store.create_course(session, course_id, f"Course {course_id}")
            return Course(self, row.id, row.webhook_secret)

    def row(self, submission_id: str) -> Submission | None:
        with self.sessions() as session:
            return session.get(Submission, submission_id)

    def block_queue(self, course: Course, *, body: dict | None = None, idempotency_key: str | None = None) -> Submission:
        """Store a submission (through the store, as the API does) and hold it as `running` under
        a lease that lasts an hour: it counts against `max_queue` and no worker takes it."""
        with self.sessions() as session:
            row, _ = store.create_submission(session, course_id=course.id,
                                             body=SubmissionBody.model_validate(body or cheap_body()),
                                             callback_url=None, idempotency_key=idempotency_key)
            row.status, row.lease_token = "running", "held-by-the-test"
            row.lease_expires_at = datetime.now(timezone.utc) + timedelta(hours=1)
            session.commit()
            return row

    def interrupted(self, course: Course, *, attempts: int) -> Submission:
        """A submission whose worker died `attempts` times: `running` under a lease that has
        already expired, so the next worker to claim it finds the attempts used up."""
        row = self.block_queue(course)
        with self.sessions() as session:
            row = session.get(Submission, row.id)
            row.attempts = attempts
            row.lease_expires_at = datetime.now(timezone.utc) - timedelta(seconds=5)
            session.commit()
        # No wake-up call: the workers poll the database every second and find it.
        return row

    def close_clients(self) -> None:
        for client in self._clients:
            client.close()


def api_settings(url: str, data_dir: Path, **overrides) -> Settings:
    # speed_after_grade off: on a GPU, lesson 6's speed card would otherwise arrive as a `speed` revision
    # at a moment of its own and race these suites' exact history and webhook assertions; the revision
    # is tested in tests/integration/test_speed_after_grade.py and tests/gpu/test_speed_after_grade_gpu.py.
    values: dict[str, Any] = dict(database_url=url, data_dir=data_dir, webhook_allowed_hosts=["127.0.0.1"],
                                  webhook_backoff_s=[0.5, 0.5], rate_limit_per_minute=100_000,
                                  speed_after_grade=False)
    values.update(overrides)
    return Settings(**values)


# --- waiting ---------------------------------------------------------------------------------

def wait_final(client: httpx.Client, submission_id: str, *, timeout: float = 120) -> dict[str, Any]:
    """Poll GET /v1/submissions/{id} until it is graded or not_gradable; returns the view."""
    last: dict[str, Any] = {}

    def done():
        nonlocal last
        response = client.get(f"/v1/submissions/{submission_id}")
        assert response.status_code == 200, response.text
        last = response.json()
        return last if last["status"] in FINAL else None

    try:
        return wait_for(done, timeout=timeout, interval=0.2, what=f"submission {submission_id} to be graded")
    except AssertionError as exc:
        raise AssertionError(f"{exc}; last view: {json.dumps(last)[:2000]}") from None


def loc_names(error: dict[str, Any]) -> str:
    """A 422 error's loc as a dotted path without the 'body'/'query'/'header' prefix:
    ["body", "submissions", 1, "exercise"] and ["body", "submissions.1.exercise"] both give
    "submissions.1.exercise"."""
    loc = [str(part) for part in error["loc"]]
    if loc and loc[0] in ("body", "query", "header", "path"):
        loc = loc[1:]
    return ".".join(loc)


def error_locs(response: httpx.Response) -> list[str]:
    detail = response.json()["detail"]
    assert isinstance(detail, list), detail
    return [loc_names(e) for e in detail]


def webhook_secret(service: Service, course_id: str) -> str:
    with service.sessions() as session:
        return session.get(CourseRow, course_id).webhook_secret


# --- a webhook receiver ----------------------------------------------------------------------

@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: bytes
    answered: int


class Receiver:
    """A real HTTP server on 127.0.0.1 that records every POST; it answers 500 to the first
    `fail_first` POSTs and 200 afterwards."""

    def __init__(self, fail_first: int = 1) -> None:
        self.fail_first = fail_first
        self.received: list[Received] = []
        self._lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                with receiver._lock:
                    status = 500 if len(receiver.received) < receiver.fail_first else 200
                    receiver.received.append(Received(self.path, {k.lower(): v for k, v in self.headers.items()},
                                                      body, status))
                payload = b'{"ok": %s}' % (b"true" if status == 200 else b"false")
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args):  # keep the test output clean
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/hooks/kernelgrade"
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)

    def __enter__(self) -> "Receiver":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def snapshot(self) -> list[Received]:
        with self._lock:
            return list(self.received)


class Stalling:
    """A receiver that never finishes answering, on a real socket: `endless` sends a 200 and then
    a body without end (slowly: 6 MB/s); `trickle` sends its status line a byte every 0.3 s (each read of the
    delivery's client gets a byte well within its timeout). Counts the connections it took."""

    def __init__(self, mode: str) -> None:
        self.mode, self.connections = mode, 0
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}/hooks/stall"
        self._stop = threading.Event()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self._answer, args=(conn,), daemon=True).start()

    def _answer(self, conn: socket.socket) -> None:
        try:
            conn.recv(1 << 20)
            if self.mode == "endless":
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 1000000000000\r\n\r\n")
                while not self._stop.wait(0.01):  # 6 MB/s: without end, yet gentle on the test machine
                    conn.sendall(b"x" * 65536)
            else:
                for byte in b"HTTP/1.1 200 OK\r\nX-Slow: " + b"a" * 100_000:
                    if self._stop.wait(0.3):
                        break
                    conn.sendall(bytes([byte]))
        except OSError:
            pass  # the delivery hung up: what it should do
        finally:
            conn.close()

    def __enter__(self) -> "Stalling":
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self.sock.close()
