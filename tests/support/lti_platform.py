"""An LTI 1.3 platform that kernelgrade did not write: the `lti1p3platform` package (launch
messages, OIDC initiation, signing, access tokens, the AGS and NRPS services, checking a deep-linking
answer against the tool's JWKS), served over real HTTP by uvicorn on a loopback port. What is ours
is what that package leaves abstract to an LMS: storage (line items, scores, links, members), the
request/response glue for Starlette (with AGS containers as the JSON arrays the spec has, where
lti1p3platform answers its own page object), and the launch form (its template imports pkg_resources).

A `Browser` walks the flows the way a browser would: follows redirects, keeps cookies, submits
the auto-posting forms."""
from __future__ import annotations

import asyncio
import threading
import uuid
from dataclasses import dataclass, field
from datetime import datetime
from html import escape
from html.parser import HTMLParser
from typing import Any

import httpx
from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from jwcrypto.jwk import JWK
from lti1p3platform.exceptions import LineItemNotFoundException
from lti1p3platform.ltiplatform import LTI1P3PlatformConfAbstract
from lti1p3platform.membership import Context
from lti1p3platform.message_launch import LTIAdvantageMessageLaunchAbstract
from lti1p3platform.oidc_login import OIDCLoginAbstract
from lti1p3platform.registration import Registration
from lti1p3platform.request import Request as PlatformRequest
from lti1p3platform.score import UpdateScoreStatus
from lti1p3platform.service_connector import AssignmentsGradesService, NamesRoleProvisioningService

from tests.support.servers import ServedApp

LEARNER = "http://purl.imsglobal.org/vocab/lis/v2/membership#Learner"
INSTRUCTOR = "http://purl.imsglobal.org/vocab/lis/v2/membership#Instructor"
CONTEXT = "course-101"


def new_rsa() -> tuple[str, str]:
    key = JWK.generate(kty="RSA", size=2048)
    return (key.export_to_pem(private_key=True, password=None).decode(), key.export_to_pem().decode())


@dataclass
class User:
    id: str
    name: str
    email: str
    roles: list[str]


@dataclass
class Link:
    id: str
    title: str
    custom: dict[str, str]
    line_item: str | None = None  # line item id in the platform's store


@dataclass
class PlatformState:
    """What an LMS keeps: users, links (placements), line items and the scores posted to them."""

    users: dict[str, User] = field(default_factory=dict)
    links: dict[str, Link] = field(default_factory=dict)
    line_items: dict[str, dict[str, Any]] = field(default_factory=dict)
    scores: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    deep_link_items: list[list[dict[str, Any]]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    # The next `slow_scores` score posts are stored, then answered only after `slow_s` seconds (an
    # overloaded LMS: the tool's request times out although the score was taken).
    slow_scores: int = 0
    slow_s: float = 0.0
    # The next look-ups of the line items (GET) are answered this late (seconds, one per look-up), with
    # what the platform had when asked: another request can create a line item meanwhile.
    lookup_delays: list[float] = field(default_factory=list)
    lookups_held: int = 0  # late look-ups begun so far
    # Whether launches grant the tool the right to create line items (the AGS `lineitem` scope).
    allow_creating_lineitems: bool = True


class Conf(LTI1P3PlatformConfAbstract):
    def init_platform_config(self, **kwargs: Any) -> None:
        self._registration = kwargs["registration"]

    def get_registration_by_params(self, **kwargs: Any) -> Registration:
        return self._registration


class StarletteRequest(PlatformRequest):
    """lti1p3platform's request, from what a Starlette route read (its FastAPI one is commented out)."""

    def build_metadata(self, request: dict[str, Any]) -> dict[str, Any]:
        return request


async def read(request: Request) -> StarletteRequest:
    form = dict(await request.form()) if request.headers.get("content-type", "").startswith(
        ("application/x-www-form-urlencoded", "multipart/form-data")) else {}
    body = await request.json() if "json" in request.headers.get("content-type", "") else None
    return StarletteRequest({"method": request.method, "form_data": form, "get_data": dict(request.query_params),
                             "headers": request.headers, "content_type": request.headers.get("content-type"),
                             "path": request.url.path, "json": body})


def answer(response) -> Response:  # noqa: ANN001 - lti1p3platform.response.Response
    content = response.result if response.result is not None else {"message": response.message}
    headers = {}
    if response.media_type.endswith("container+json") and isinstance(content, dict) and "content" in content:
        # lti1p3platform answers its own page object here; AGS (and every LMS) answers the JSON
        # array, the next page in a Link header.
        if content.get("next"):
            headers["Link"] = f'<{content["next"]}>; rel="next"'
        content = content["content"]
    return JSONResponse(content, status_code=response.code, media_type=response.media_type, headers=headers)


class Grades(AssignmentsGradesService):
    state: PlatformState

    def find_lineitems(self, page: int = 1, limit: int | None = None, line_item_id: str | None = None,
                       resource_link_id: str | None = None, resource_id: str | None = None, tag: str | None = None,
                       **_: Any) -> dict[str, Any]:
        items = [li for li in self.state.line_items.values()
                 if (resource_link_id is None or li.get("resourceLinkId") == resource_link_id)
                 and (tag is None or li.get("tag") == tag) and (resource_id is None or li.get("resourceId") == resource_id)]
        return {"content": items, "has_next": False, "next": None}

    def find_lineitem(self, line_item_id: str) -> dict[str, Any]:
        try:
            return self.state.line_items[line_item_id]
        except KeyError:
            raise LineItemNotFoundException(line_item_id) from None

    def create_lineitem(self, creation_data: dict[str, Any]) -> dict[str, Any]:
        item_id = uuid.uuid4().hex[:8]
        item = {**creation_data, "id": f"{self.ags.lineitems_url}/{item_id}"}
        self.state.line_items[item_id] = item
        return item

    def update_lineitem(self, update_data: dict[str, Any]) -> dict[str, Any]:
        self.state.line_items[update_data["id"]].update(update_data)
        return self.state.line_items[update_data["id"]]

    def delete_lineitem(self, line_item_id: str) -> None:
        self.state.line_items.pop(line_item_id)

    def update_score(self, line_item_id: str, score: dict[str, Any]) -> UpdateScoreStatus:
        self.find_lineitem(line_item_id)
        with self.state.lock:
            earlier = [s for s in self.state.scores.get(line_item_id, []) if s.get("userId") == score.get("userId")]
            if earlier and datetime.fromisoformat(earlier[-1]["timestamp"]) >= datetime.fromisoformat(score["timestamp"]):
                return UpdateScoreStatus.OLD_TIMESTAMP  # AGS: a score older than the last one is refused
            self.state.scores.setdefault(line_item_id, []).append(score)
        return UpdateScoreStatus.SUCCESS if earlier else UpdateScoreStatus.CREATED

    def get_results(self, line_item_id: str, page: int = 1, limit: int | None = None, user_id: str | None = None,
                    **_: Any) -> dict[str, Any]:
        return {"content": self.state.scores.get(line_item_id, []), "has_next": False, "next": None}


class Roster(NamesRoleProvisioningService):
    state: PlatformState

    def get_member_data_page(self, page: int = 1, limit: int | None = None, role: str | None = None,
                             since: str | None = None, **_: Any) -> dict[str, Any]:
        members = [{"user_id": u.id, "name": u.name, "email": u.email, "roles": u.roles, "status": "Active"}
                   for u in self.state.users.values()]
        return {"content": members, "has_next": False}

    def get_context_by_id(self) -> Context:
        return Context(id=CONTEXT, label="T101", title="Triton 101")


class Launch(LTIAdvantageMessageLaunchAbstract):
    """The platform's launch for one (user, link or deep-linking request)."""

    platform: "Platform"

    def get_preflight_response(self) -> dict[str, Any]:
        return dict(self._request.query_params)  # type: ignore[union-attr]

    def prepare_launch(self, preflight_response: dict[str, Any]) -> None:
        platform = self.platform
        user = platform.state.users[preflight_response["login_hint"]]
        self.set_user_data(user.id, user.roles, full_name=user.name, email_address=user.email)
        self.set_launch_context_claim(CONTEXT, context_title="Triton 101", context_label="T101")
        self.set_nrps(f"{platform.url}/nrps/{CONTEXT}/memberships")
        hint = preflight_response.get("lti_message_hint", "")
        if hint == "deeplink":
            self.set_dl(f"{platform.url}/deep-link-return", title="kernelgrade", accept_types={"ltiResourceLink"},
                        extra_data={"opaque": "kept"})
            return
        link = platform.state.links[hint.removeprefix("link:")]
        self.set_resource_link_claim(link.id, title=link.title)
        self.set_custom_parameters_claim(link.custom)
        self.set_ags(f"{platform.url}/ags/{CONTEXT}/lineitems",
                     f"{platform.url}/ags/{CONTEXT}/lineitems/{link.line_item}" if link.line_item else None,
                     allow_creating_lineitems=platform.state.allow_creating_lineitems)
        self.set_id_token_expiration(platform.id_token_expiration)

    def render_launch_form(self, launch_data: dict[str, Any], **kwargs: Any) -> HTMLResponse:
        return HTMLResponse(
            f'<form method="post" action="{escape(launch_data["launch_url"])}" id="form">'
            f'<input type="hidden" name="id_token" value="{escape(launch_data["id_token"])}">'
            f'<input type="hidden" name="state" value="{escape(launch_data["state"])}"></form>'
            '<script>document.getElementById("form").submit();</script>')  # as lti1p3platform's own template


class Login(OIDCLoginAbstract):
    def set_lti_message_hint(self, **kwargs: Any) -> None:
        self._lti_message_hint = kwargs["hint"]

    def get_redirect(self, url: str) -> RedirectResponse:
        return RedirectResponse(url, status_code=302)


class Platform:
    """A live LTI 1.3 platform for kernelgrade at `tool_url`. Knobs the tests turn: `deployment_id`
    (the id launches carry), `id_token_expiration` (seconds; negative: already expired)."""

    def __init__(self, tool_url: str, *, client_id: str = "kernelgrade-client", deployment_id: str = "dep-1") -> None:
        self.tool_url = tool_url.rstrip("/")
        self.client_id, self.deployment_id = client_id, deployment_id
        self.id_token_expiration = 300
        self.private_pem, self.public_pem = new_rsa()
        self.state = PlatformState()
        for user in (User("alice", "Alice Liddell", "alice@example.edu", [LEARNER]),
                     User("bob", "Bob Chen", "bob@example.edu", [LEARNER]),
                     User("carol", "Carol Wu", "carol@example.edu", [LEARNER]),  # never launches: known from the roster
                     User("teacher", "Tess Teacher", "tess@example.edu", [INSTRUCTOR])):
            self.state.users[user.id] = user
        self._served = ServedApp(self._app(), probe="/jwks")
        self.url = self._served.url

    def registration(self) -> Registration:
        return (Registration().set_iss(self.url).set_client_id(self.client_id).set_deployment_id(self.deployment_id)
                .set_oidc_login_url(f"{self.tool_url}/lti/login").set_launch_url(f"{self.tool_url}/lti/launch")
                .set_deeplink_launch_url(f"{self.tool_url}/lti/launch")
                .set_tool_key_set_url(f"{self.tool_url}/lti/jwks")
                .set_platform_public_key(self.public_pem).set_platform_private_key(self.private_pem))

    def conf(self) -> Conf:
        return Conf(registration=self.registration())

    def tool_registration(self) -> dict[str, Any]:
        """What the LMS administrator gives kernelgrade (POST /v1/lti/platforms)."""
        return {"issuer": self.url, "client_id": self.client_id, "auth_login_url": f"{self.url}/authorize",
                "auth_token_url": f"{self.url}/token", "key_set_url": f"{self.url}/jwks",
                "deployments": ["dep-1"], "label": "lti1p3platform"}

    def add_link(self, title: str, custom: dict[str, str], *, line_item: dict[str, Any] | None = None) -> Link:
        link = Link(id=f"rl-{uuid.uuid4().hex[:8]}", title=title, custom=custom)
        if line_item is not None:
            item_id = uuid.uuid4().hex[:8]
            self.state.line_items[item_id] = {**line_item, "resourceLinkId": link.id,
                                              "id": f"{self.url}/ags/{CONTEXT}/lineitems/{item_id}"}
            link.line_item = item_id
        self.state.links[link.id] = link
        return link

    def delete_line_item(self, item_id: str) -> None:
        """What an instructor deleting the gradebook column does: the line item and its scores are
        gone (AGS answers 404 for it), and no launch names it any more."""
        with self.state.lock:
            del self.state.line_items[item_id]
            self.state.scores.pop(item_id, None)
            for link in self.state.links.values():
                if link.line_item == item_id:
                    link.line_item = None

    def new_column(self, link: Link) -> str:
        """What an instructor making the placement's gradebook column again in the LMS does: a new
        line item for the link, which launches name from then on. Returns its id."""
        item_id = uuid.uuid4().hex[:8]
        with self.state.lock:
            self.state.line_items[item_id] = {"scoreMaximum": 10, "label": link.title, "resourceLinkId": link.id,
                                              "id": f"{self.url}/ags/{CONTEXT}/lineitems/{item_id}"}
            link.line_item = item_id
        return item_id

    def line_items_of(self, link: Link) -> list[dict[str, Any]]:
        """The gradebook columns of a placement (its line items by resource link)."""
        with self.state.lock:
            return [i for i in self.state.line_items.values() if i.get("resourceLinkId") == link.id]

    def scores(self, link: Link) -> list[dict[str, Any]]:
        with self.state.lock:
            return list(self.state.scores.get(link.line_item or "", []))

    def _app(self) -> FastAPI:
        app = FastAPI()
        platform = self

        @app.get("/jwks")
        def jwks() -> dict:
            return platform.conf().get_jwks()

        @app.get("/start")
        def start(user: str, hint: str) -> Response:
            """The LMS page with the tool's link: third-party initiated login."""
            login = Login(None, platform.conf())
            login.set_lti_message_hint(hint=hint)
            return login.initiate_login(user)

        @app.get("/course")
        def course_page(user: str, hint: str, tool_page: str = "") -> HTMLResponse:
            """The LMS's page of an activity: the tool in a frame (or any page of it, `tool_page`)."""
            source = tool_page or f"/start?user={user}&hint={hint}"
            return HTMLResponse(f'<link rel="icon" href="data:,"><h1>Triton 101</h1><iframe id="tool" src="{escape(source)}" width="900" height="700">'
                                '</iframe>')

        @app.get("/authorize")
        def authorize(request: Request) -> Response:
            launch = Launch(request, platform.conf())  # type: ignore[arg-type]
            launch.platform = platform
            return launch.lti_launch()

        @app.post("/token")
        async def token(request: Request) -> Response:
            try:
                return JSONResponse(platform.conf().get_access_token(dict(await request.form())))
            except Exception as exc:  # noqa: BLE001 - the tool sees a refusal, as from an LMS
                return JSONResponse({"error": "invalid_client", "error_description": str(exc)}, status_code=400)

        @app.post("/deep-link-return")
        async def deep_link_return(request: Request) -> Response:
            conf = platform.conf()
            conf.get_registration()
            items = conf.validate_deeplinking_resp(dict(await request.form()))
            platform.state.deep_link_items.append(items)
            created = [platform.add_link(i.get("title", ""), i.get("custom", {}), line_item=i.get("lineItem")).id
                       for i in items]
            return JSONResponse({"links": created})

        def grades(request: StarletteRequest, line_item: str | None = None) -> Grades:
            service = Grades(request, platform.conf(), f"{platform.url}/ags/{CONTEXT}/lineitems",
                             f"{platform.url}/ags/{CONTEXT}/lineitems/{line_item}" if line_item else None)
            service.platform_config.get_registration()
            service.state = platform.state
            return service

        @app.api_route("/ags/{context}/lineitems", methods=["GET", "POST"])
        async def line_items(request: Request, context: str) -> Response:
            service = grades(await read(request))
            handler = service.handle_get_lineitems if request.method == "GET" else service.handle_create_lineitem
            response = answer(service.handle_resp(handler))
            with platform.state.lock:
                delay = platform.state.lookup_delays.pop(0) if request.method == "GET" and \
                    platform.state.lookup_delays else None
                platform.state.lookups_held += delay is not None
            if delay is not None:
                await asyncio.sleep(delay)
            return response

        @app.get("/ags/{context}/lineitems/{item}")
        async def line_item(request: Request, context: str, item: str) -> Response:
            service = grades(await read(request), item)
            return answer(service.handle_resp(service.handle_get_lineitem, line_item_id=item))

        @app.post("/ags/{context}/lineitems/{item}/scores")
        async def scores(request: Request, context: str, item: str) -> Response:
            service = grades(await read(request), item)
            response = answer(service.handle_resp(service.handle_update_score, line_item_id=item))
            with platform.state.lock:
                slow = platform.state.slow_scores > 0
                platform.state.slow_scores -= slow
            if slow:
                await asyncio.sleep(platform.state.slow_s)
            return response

        @app.get("/nrps/{context}/memberships")
        async def memberships(request: Request, context: str) -> Response:
            service = Roster(await read(request), platform.conf(), f"{platform.url}/nrps/{context}/memberships")
            service.platform_config.get_registration()
            service.state = platform.state
            return answer(service.handle_resp(service.handle_get_members))

        return app

    def __enter__(self) -> "Platform":
        self._served.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._served.__exit__(*exc)


# --- a browser ------------------------------------------------------------------------------------

@dataclass
class Form:
    action: str
    method: str
    fields: dict[str, str]


class _Forms(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.forms: list[Form] = []
        self._textarea: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        if tag == "form":
            self.forms.append(Form(a.get("action", ""), a.get("method", "get").lower(), {}))
        elif self.forms and tag == "input" and a.get("name") and (a.get("type") != "radio" or "checked" in a):
            self.forms[-1].fields[a["name"]] = a.get("value", "")
        elif self.forms and tag == "textarea" and a.get("name"):
            self._textarea = a["name"]
            self.forms[-1].fields[self._textarea] = ""

    def handle_data(self, data: str) -> None:
        if self._textarea is not None:
            self.forms[-1].fields[self._textarea] += data

    def handle_endtag(self, tag: str) -> None:
        if tag == "textarea":
            self._textarea = None


def forms(html: str) -> list[Form]:
    parser = _Forms()
    parser.feed(html)
    return parser.forms


class Browser:
    """Cookies, redirects and auto-posting forms, like a browser in the LMS's frame."""

    def __init__(self) -> None:
        self.http = httpx.Client(timeout=60, follow_redirects=False)

    def close(self) -> None:
        self.http.close()

    def follow(self, response: httpx.Response, *, limit: int = 10) -> httpx.Response:
        for _ in range(limit):
            if response.status_code not in (301, 302, 303, 307):
                return response
            response = self.http.get(httpx.URL(str(response.url)).join(response.headers["location"]))
        raise AssertionError("too many redirects")

    def open(self, url: str) -> httpx.Response:
        return self.follow(self.http.get(url))

    def submit(self, form: Form, base: str, **changes: str) -> httpx.Response:
        url = str(httpx.URL(base).join(form.action))
        return self.follow(self.http.post(url, data={**form.fields, **changes}))

    def launch_form(self, platform: Platform, *, user: str, hint: str) -> Form:
        """Up to the platform's auto-posting form (id_token, state), not yet posted to the tool."""
        page = self.open(f"{platform.url}/start?user={user}&hint={hint}")
        assert page.status_code == 200, page.text[:500]
        (form,) = forms(page.text)
        assert set(form.fields) == {"id_token", "state"}, form.fields
        return form

    def launch(self, platform: Platform, *, user: str, hint: str) -> httpx.Response:
        form = self.launch_form(platform, user=user, hint=hint)
        return self.submit(form, platform.url)
