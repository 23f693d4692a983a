"""Real things for tests: fresh databases (SQLite file or a new PostgreSQL database) and a real
uvicorn server on a loopback port, in a thread of the test process."""
from __future__ import annotations

import contextlib
import socket
import threading
import time
import uuid
from collections.abc import Iterator

import httpx
import uvicorn

from service.config import Settings

POSTGRES_ADMIN = "postgresql://postgres@127.0.0.1:5432/postgres"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def database(kind: str, tmp_path) -> Iterator[str]:
    """A SQLAlchemy URL of an empty database of `kind` ("sqlite" or "postgresql"), dropped afterwards."""
    if kind == "sqlite":
        yield f"sqlite:///{tmp_path / 'kernelgrade.db'}"
        return
    import psycopg  # here: a SQLite-only machine (the H200) runs these suites without the driver

    name = f"kg_test_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(POSTGRES_ADMIN, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield f"postgresql+psycopg://postgres@127.0.0.1:5432/{name}"
    finally:
        with psycopg.connect(POSTGRES_ADMIN, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@contextlib.contextmanager
def migrated_sessions(kind: str, tmp_path) -> Iterator:
    """A session maker over a fresh database of `kind`, migrated to head; skips the test when
    PostgreSQL is asked for and not reachable."""
    import pytest

    from service.db.migrate import upgrade
    from service.db.session import make_engine, make_sessionmaker

    if kind == "postgresql":
        import psycopg

        try:
            psycopg.connect(POSTGRES_ADMIN, connect_timeout=3).close()
        except psycopg.Error:
            pytest.skip(f"PostgreSQL is not reachable at {POSTGRES_ADMIN}")
    with database(kind, tmp_path) as url:
        upgrade(url)
        engine = make_engine(url)
        try:
            yield make_sessionmaker(engine)
        finally:
            engine.dispose()


class ServedApp:
    """An ASGI app served by uvicorn on a free loopback port, in a thread of the test process;
    ready once `probe` answers 200."""

    def __init__(self, app, *, probe: str) -> None:  # noqa: ANN001 - any ASGI app
        self.app, self.probe = app, probe
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self._server = uvicorn.Server(uvicorn.Config(self.app, host="127.0.0.1", port=self.port, log_level="warning"))
        self._thread = threading.Thread(target=self._server.run, daemon=True)

    def __enter__(self):  # noqa: ANN204 - the subclass
        self._thread.start()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{self.url}{self.probe}", timeout=1).status_code == 200:
                    return self
            except httpx.HTTPError:
                time.sleep(0.1)
        raise RuntimeError(f"server {self.url} did not start")

    def __exit__(self, *exc) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=15)


class LiveServer(ServedApp):
    def __init__(self, settings: Settings) -> None:
        from service.main import create_app

        super().__init__(create_app(settings), probe="/healthz")

    @property
    def sessions(self):
        return self.app.state.sessions
