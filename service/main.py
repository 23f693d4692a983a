"""create_app(): the FastAPI application, its lifespan (migrations, workers) and error mapping."""
from __future__ import annotations

import json
import logging
from contextlib import asynccontextmanager

import anyio
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi_offline import FastAPIOffline
from sqlalchemy import exc as sa_exc
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from service.api.ratelimit import RateLimiter
from service.api.routes import dashboard, exercises, feedback, grades, health, lti, review, submissions, webhook_secret
from service.config import Settings, get_settings
from service.db.migrate import upgrade
from service.db.session import make_engine, make_sessionmaker
from service.exercises import ExerciseCatalog
from service.lti import routes as lti_pages
from service.web import mount_pages
from service.worker.dispatch import make_dispatcher
from service.worker.metrics import Metrics

log = logging.getLogger("kernelgrade.api")


class BodySizeLimit:
    """Refuse request bodies over the cap before they are read into memory (413), and bodies not
    sent in full within `max_seconds` (408). Before the deadline, a client that sent its headers and
    then a byte now and then (no key needed: the body is read before anything checks one) held its
    connection and what it had sent forever; a few thousand of them held the process's descriptors
    and memory (tests/api/test_slow_body.py). The body reaches the app as one message: kept as the
    messages it came in, 256 KiB sent a byte at a time were a quarter of a million dicts (~70 MB)."""

    def __init__(self, app: ASGIApp, max_bytes: int, max_seconds: float = 60.0) -> None:
        self.app, self.max_bytes, self.max_seconds = app, max_bytes, max_seconds

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        declared = dict(scope.get("headers") or {}).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_bytes:
            return await self._refuse(send)
        # Read the body here, up to the cap, then hand it on: without a Content-Length (chunked) the
        # cap can only be seen while streaming, and an error raised from receive() inside the app
        # would not reach us (FastAPI turns any failure while reading the body into a 400).
        body = bytearray()
        buffered: list[Message] = []
        complete = False  # False after a disconnect: the app then reads the disconnect, never a cut body as whole
        with anyio.move_on_after(self.max_seconds) as scope_:
            while True:
                message = await receive()
                if message["type"] != "http.request":
                    buffered.append(message)
                    break
                body += message.get("body", b"")
                if len(body) > self.max_bytes:
                    return await self._refuse(send)
                if not message.get("more_body", False):
                    complete = True
                    break
        if scope_.cancelled_caught:
            return await self._refuse(send, status=408,
                                      detail=f"request body not received within {self.max_seconds:g} s")
        buffered.insert(0, {"type": "http.request", "body": bytes(body), "more_body": not complete})

        async def replay() -> Message:
            return buffered.pop(0) if buffered else await receive()

        await self.app(scope, replay, send)

    async def _refuse(self, send: Send, *, status: int = 413, detail: str = "") -> None:
        detail = detail or f"request body exceeds {self.max_bytes} bytes"
        body = json.dumps({"detail": detail}).encode()
        await send({"type": "http.response.start", "status": status,
                    "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                                (b"connection", b"close")]})
        await send({"type": "http.response.body", "body": body})


DATABASE_RETRY_AFTER_S = 5


def database_unavailable(exc: BaseException) -> bool:
    """The database cannot be reached or dropped the connection (restart, failover, network), the
    pool is exhausted, or SQLite stayed locked: a condition to retry later (503), not a bug (500)."""
    if isinstance(exc, (sa_exc.DisconnectionError, sa_exc.TimeoutError)):
        return True
    if not isinstance(exc, sa_exc.DBAPIError):
        return False
    if exc.connection_invalidated:
        return True
    if isinstance(exc, (sa_exc.OperationalError, sa_exc.InterfaceError)):
        if type(exc.orig).__module__.startswith("sqlite3"):  # SQLite also says OperationalError for "no such table"
            return "locked" in str(exc.orig) or "busy" in str(exc.orig)
        return True
    return False


def _validation_errors(exc: RequestValidationError) -> list[dict]:
    """FastAPI's errors without echoing the input back (it may be a whole program)."""
    return [{"loc": list(e.get("loc", ())), "msg": e.get("msg", ""), "type": e.get("type", "")} for e in exc.errors()]


def create_app(settings: Settings | None = None) -> FastAPI:
    settings = settings or get_settings()

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        upgrade(settings.db_url())
        app.state.dispatcher.start()
        try:
            yield
        finally:
            app.state.dispatcher.stop()
            app.state.engine.dispose()

    # /docs and /redoc from the Swagger UI and ReDoc files that fastapi-offline ships, served by this app:
    # they work without internet. No validator badge either (Swagger UI would fetch it from outside).
    app = FastAPIOffline(title="kernelgrade", version="1", lifespan=lifespan,
                         swagger_ui_parameters={"validatorUrl": None},
                         description="Autograder for Triton kernel exercises. Authenticate with `Authorization: Bearer "
                                     "<key>`.")
    engine = make_engine(settings.db_url())
    app.state.settings = settings
    app.state.engine = engine
    app.state.sessions = make_sessionmaker(engine)
    app.state.metrics = Metrics()
    app.state.rate_limiter = RateLimiter(settings.rate_limit_per_minute, storage_url=settings.rate_limit_storage(),
                                         key_prefix=settings.rate_limit_key_prefix)
    app.state.grader_catalog = ExerciseCatalog(settings.exercises_dir)
    app.state.dispatcher = make_dispatcher(settings, sessions=app.state.sessions, metrics=app.state.metrics)

    @app.exception_handler(RequestValidationError)
    async def on_validation_error(request: Request, exc: RequestValidationError) -> JSONResponse:
        return JSONResponse({"detail": _validation_errors(exc)}, status_code=422)

    @app.exception_handler(StarletteHTTPException)
    async def on_http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        return JSONResponse({"detail": exc.detail}, status_code=exc.status_code, headers=exc.headers)

    @app.exception_handler(sa_exc.SQLAlchemyError)
    async def on_database_error(request: Request, exc: sa_exc.SQLAlchemyError) -> JSONResponse:
        if not database_unavailable(exc):
            return await on_unexpected(request, exc)
        # Nothing was acknowledged: the client retries (with its Idempotency-Key, it cannot store twice).
        log.warning("database unavailable on %s %s: %s", request.method, request.url.path,
                    str(exc).splitlines()[0] if str(exc) else type(exc).__name__)
        return JSONResponse({"detail": "the database is unavailable for the moment; retry the request"},
                            status_code=503, headers={"Retry-After": str(DATABASE_RETRY_AFTER_S)})

    @app.middleware("http")
    async def refuse_nul_in_query(request: Request, call_next):
        # No text column stores NUL (PostgreSQL refuses it: a 500 otherwise), and no value needs it:
        # every query parameter with one is invalid input, said as the validation errors say it.
        bad = [name for name, value in request.query_params.multi_items() if "\x00" in name or "\x00" in value]
        if bad:
            return JSONResponse({"detail": [{"loc": ["query", name.replace("\x00", "")],
                                             "msg": "NUL characters are not allowed",
                                             "type": "value_error"} for name in bad]}, status_code=422)
        return await call_next(request)

    @app.exception_handler(Exception)
    async def on_unexpected(request: Request, exc: Exception) -> JSONResponse:
        log.exception("unhandled error on %s %s", request.method, request.url.path)
        return JSONResponse({"detail": "internal error (logged); nothing was lost: retry the request"}, status_code=500)

    for router in (submissions.router, review.router, grades.router, dashboard.router, exercises.router,
                   feedback.router, lti.router, health.router, webhook_secret.router):
        app.include_router(router)
    mount_pages(app, settings)
    app.include_router(lti_pages.router)
    app.add_middleware(BodySizeLimit, max_bytes=settings.max_body_bytes, max_seconds=settings.max_body_seconds)
    return app
