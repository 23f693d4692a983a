"""pylti1p3 fitted to FastAPI and to kernelgrade's database. pylti1p3 ships adapters for Django and
Flask only, so these small classes are ours; what each had to add, and why:

- LtiRequest: pylti1p3 reads parameters synchronously; FastAPI reads a form asynchronously, so the
  route reads it first (each value capped) and hands over a plain dict.
- LtiCookies: pylti1p3 sets cookies before the response exists; they are collected and put on it
  afterwards, `SameSite=None; Secure` over https (the LMS posts the launch from another site).
- DbStorage, DbSessionService: its storages are a framework session or Django's cache; ours is the
  database (several API processes share it). And a nonce is *consumed*: pylti1p3 only checks that
  it exists, which would accept the same id_token twice.
- ToolConf, ToolRegistration: registrations and deployments come from the database, per course (a
  revoked one refuses); the platform's keys from our cache (fetched again when a launch names a
  new kid); the tool's key and its kid from service.lti.keys.
- LtiLaunch: pylti1p3 checks the nonce before the signature and decodes with `verify_aud` off and
  no required claims. We check the signature first (so a forged token cannot spend a nonce), then
  audience and azp, exp and iat, and name every refusal (LaunchRefused) instead of free text.
- LtiLogin, LtiRedirect: a plain 302 (its JS redirect would be inline script, which our CSP forbids).
"""
from __future__ import annotations

import time
import typing as t
from dataclasses import dataclass, field
from datetime import timedelta

import jwt
from fastapi import Request
from pylti1p3.cookie import CookieService
from pylti1p3.deployment import Deployment
from pylti1p3.exception import LtiException, OIDCException
from pylti1p3.launch_data_storage.base import LaunchDataStorage
from pylti1p3.message_launch import MessageLaunch, TLaunchData
from pylti1p3.oidc_login import OIDCLogin
from pylti1p3.redirect import Redirect
from pylti1p3.registration import Registration
from pylti1p3.request import Request as LtiRequestBase
from pylti1p3.session import SessionService
from pylti1p3.tool_config.abstract import ToolConfAbstract
from sqlalchemy import CursorResult, delete, select
from sqlalchemy.orm import Session
from starlette.formparsers import MultiPartException
from starlette.responses import RedirectResponse, Response

from service.config import Settings
from service.db.base import as_utc, utcnow
from service.db.lti_models import LtiDeployment, LtiPlatform, LtiStoreEntry, LtiToolKey
from service.lti import keys, registry
from service.lti.http import BoundedSession
from service.lti.refusals import LaunchRefused

MAX_PARAM_CHARS = 64 * 1024  # an id_token is a few KiB; the submission form's fields have their own caps
MAX_KEY_CHARS = 200  # lti_store.key
LEEWAY_S = 60  # clock skew allowed between the platform and us (exp, iat)
COOKIE_PATH = "/lti"


class LtiRequest(LtiRequestBase):
    def __init__(self, params: dict[str, str], *, secure: bool) -> None:
        self._params, self._secure = params, secure

    @classmethod
    async def read(cls, request: Request, *, secure: bool) -> LtiRequest:
        """Query and form parameters (a form field wins), each truncated to MAX_PARAM_CHARS."""
        params = {k: v[:MAX_PARAM_CHARS] for k, v in request.query_params.items()}
        if request.method == "POST":
            try:
                form = await request.form(max_files=0, max_fields=200)
            except (MultiPartException, ValueError):  # malformed: the missing fields are refused by name
                return cls(params, secure=secure)
            params.update({k: v[:MAX_PARAM_CHARS] for k, v in form.items() if isinstance(v, str)})
        return cls(params, secure=secure)

    @property
    def session(self):  # noqa: ANN201 - pylti1p3's framework session: never used here (DbStorage)
        raise NotImplementedError

    def is_secure(self) -> bool:
        return self._secure

    def get_param(self, key: str) -> str:
        return self._params.get(key, "")


class LtiCookies(CookieService):
    def __init__(self, request: Request, *, secure: bool) -> None:
        self._request, self._secure = request, secure
        self._pending: list[tuple[str, str, int | None]] = []

    def _name(self, name: str) -> str:
        return f"{self._cookie_prefix}-{name}"

    def get_cookie(self, name: str) -> str | None:
        return self._request.cookies.get(self._name(name))

    def set_cookie(self, name: str, value: str | int, exp: int | None = 3600) -> None:
        self._pending.append((self._name(name), str(value), exp))

    def apply(self, response: Response) -> Response:
        for name, value, exp in self._pending:
            response.set_cookie(name, value, max_age=exp, path=COOKIE_PATH, httponly=True, secure=self._secure,
                                samesite="none" if self._secure else "lax")
        return response


class DbStorage(LaunchDataStorage[t.Any]):
    """Keys are random (nonces, states, launch ids), so no per-browser session prefix is needed:
    the state cookie already ties a launch to its browser."""

    def __init__(self, session: Session) -> None:
        self._db = session

    def get_session_cookie_name(self) -> str | None:
        return None

    def can_set_keys_expiration(self) -> bool:
        return True

    def _row(self, key: str) -> LtiStoreEntry | None:
        key = self._prepare_key(key)
        if len(key) > MAX_KEY_CHARS:
            return None
        row = self._db.get(LtiStoreEntry, key)
        return row if row is not None and as_utc(row.expires_at) > utcnow() else None

    def get_value(self, key: str) -> t.Any:
        row = self._row(key)
        return row.value if row is not None else None

    def set_value(self, key: str, value: t.Any, exp: int | None = None) -> None:
        key = self._prepare_key(key)
        if len(key) > MAX_KEY_CHARS:
            raise LaunchRefused("bad_request", "an over-long state or nonce")
        self._db.merge(LtiStoreEntry(key=key, value=value, expires_at=utcnow() + timedelta(seconds=exp or 3600)))
        self._db.commit()

    def check_value(self, key: str) -> bool:
        return self._row(key) is not None

    def consume(self, key: str) -> bool:
        """True once: the entry is deleted by the same statement that finds it."""
        key = self._prepare_key(key)
        if len(key) > MAX_KEY_CHARS:
            return False
        result = t.cast(CursorResult[t.Any], self._db.execute(
            delete(LtiStoreEntry).where(LtiStoreEntry.key == key, LtiStoreEntry.expires_at > utcnow())))
        self._db.commit()
        return result.rowcount == 1


class DbSessionService(SessionService):
    def __init__(self, storage: DbStorage, *, nonce_lifetime_s: int, launch_lifetime_s: int) -> None:
        # Not super().__init__: that builds a storage on the framework's session.
        self.data_storage = storage
        self._launch_data_lifetime = launch_lifetime_s
        self._nonce_lifetime_s = nonce_lifetime_s

    def save_nonce(self, nonce: str) -> None:
        self.data_storage.set_value(self._get_key("nonce", nonce), True, exp=self._nonce_lifetime_s)

    def check_nonce(self, nonce: str) -> bool:
        return t.cast(DbStorage, self.data_storage).consume(self._get_key("nonce", nonce))


class ToolRegistration(Registration):
    """pylti1p3's registration, with the kid of our stored key (it would derive one from the PEM)."""

    def __init__(self, platform: LtiPlatform, tool_key: LtiToolKey) -> None:
        self.platform = platform
        self._kid = tool_key.kid
        (self.set_issuer(platform.issuer).set_client_id(platform.client_id).set_auth_login_url(platform.auth_login_url)
         .set_auth_token_url(platform.auth_token_url).set_key_set_url(platform.key_set_url)
         .set_key_set(t.cast(t.Any, platform.key_set)).set_tool_private_key(tool_key.private_pem))
        if platform.auth_audience:
            self.set_auth_audience(platform.auth_audience)

    def get_kid(self) -> str | None:
        return self._kid


@dataclass
class ToolConf(ToolConfAbstract):
    """Registrations and deployments from the database. Every issuer may hold several client ids."""

    session: Session
    settings: Settings
    http: BoundedSession
    platform: LtiPlatform | None = field(default=None, init=False)
    deployment: LtiDeployment | None = field(default=None, init=False)

    def check_iss_has_one_client(self, iss: str) -> bool:
        return False

    def check_iss_has_many_clients(self, iss: str) -> bool:
        return True

    # None when unknown: pylti1p3 itself checks for it ("Registration not found"), though its abstract
    # class declares Registration.
    def find_registration_by_issuer(  # type: ignore[override]
            self, iss: str, *args: t.Any, **kwargs: t.Any) -> Registration | None:
        return self.find_registration_by_params(iss, "", *args, **kwargs)

    def find_registration_by_params(  # type: ignore[override]
            self, iss: str, client_id: str, *args: t.Any, **kwargs: t.Any) -> Registration | None:
        query = select(LtiPlatform).where(LtiPlatform.issuer == iss[:500])
        if client_id:
            query = query.where(LtiPlatform.client_id == str(client_id)[:200])
        found = list(self.session.scalars(query.limit(3)))
        active = [p for p in found if p.revoked_at is None]
        if not active and found:
            raise LaunchRefused("platform_revoked", f"issuer {iss}")
        if len(active) != 1:  # none, or several client ids of the issuer and the login did not say which
            raise LaunchRefused("unknown_platform", f"issuer {iss!r}, client id {client_id!r}",
                                issuer=iss, client_id=client_id or "?")
        self.platform = active[0]
        return ToolRegistration(self.platform, keys.active_key(self.session))

    def find_deployment(self, iss: str, deployment_id: str) -> Deployment | None:
        return self.find_deployment_by_params(iss, deployment_id, "")

    def find_deployment_by_params(self, iss: str, deployment_id: str, client_id: str, *args: t.Any,
                                  **kwargs: t.Any) -> Deployment | None:
        if self.platform is None:
            return None
        row = self.session.scalar(select(LtiDeployment).where(LtiDeployment.platform_id == self.platform.id,
                                                              LtiDeployment.deployment_id == str(deployment_id)[:255],
                                                              LtiDeployment.revoked_at.is_(None)))
        self.deployment = row
        return Deployment().set_deployment_id(row.deployment_id) if row is not None else None

    def platform_keys(self, kid: str | None) -> dict:
        assert self.platform is not None
        return registry.key_set(self.session, self.platform, kid=kid, http=self.http,
                                max_age_s=self.settings.lti_key_set_max_age_s)


def _refuse(code: str, exc: Exception, **params: str) -> LaunchRefused:
    return exc if isinstance(exc, LaunchRefused) else LaunchRefused(code, str(exc), **params)


class LtiLaunch(MessageLaunch):
    _tool_config: ToolConf

    def _get_request_param(self, key: str) -> str:
        return self._request.get_param(key)

    def validate(self) -> LtiLaunch:
        if self._restored:
            raise LtiException("Can't validate restored launch")
        self._validated = True
        try:  # pylti1p3's order, except that the nonce is spent only once the signature is good
            (self.validate_state().validate_jwt_format().validate_registration().validate_jwt_signature()
             .validate_nonce().validate_deployment().validate_message().save_launch_data())
        except Exception:
            self._validated = False
            raise
        return self

    def validate_state(self) -> LtiLaunch:
        for name in ("state", "id_token"):
            if not self._get_request_param(name):
                raise LaunchRefused("bad_request", name)
        try:
            super().validate_state()
        except LtiException as exc:
            raise _refuse("bad_state", exc) from None
        return self

    def validate_jwt_format(self) -> LtiLaunch:
        try:
            super().validate_jwt_format()
        except LtiException as exc:
            raise _refuse("bad_token", exc) from None
        if not isinstance(self._jwt.get("header"), dict) or not isinstance(self._jwt.get("body"), dict):
            raise LaunchRefused("bad_token", "the header and the body must be JSON objects")
        return self

    def validate_registration(self) -> LtiLaunch:
        body = self._jwt.get("body", {})
        try:
            super().validate_registration()
        except LtiException as exc:
            raise _refuse("unknown_platform", exc, issuer=str(body.get("iss", "?")),
                          client_id=str(self.get_client_id())) from None
        return self

    def get_public_key(self) -> tuple[str, str]:
        kid = self._jwt.get("header", {}).get("kid")
        assert self._registration is not None
        self._registration.set_key_set(t.cast(t.Any, self._tool_config.platform_keys(kid)))
        try:
            return super().get_public_key()
        except LtiException as exc:
            raise LaunchRefused("bad_signature", f"no key {kid!r} in the platform's key set ({exc})") from None

    def validate_jwt_signature(self) -> LtiLaunch:
        alg = self._jwt.get("header", {}).get("alg")
        if alg != "RS256":
            raise LaunchRefused("bad_signature", f"alg {alg!r}: LTI 1.3 launches are signed with RS256")
        public_key, _ = self.get_public_key()
        assert self._registration is not None
        client_id = self._registration.get_client_id()
        try:
            claims = jwt.decode(self._get_id_token(), public_key, algorithms=["RS256"], audience=client_id,
                                issuer=self._registration.get_issuer(), leeway=LEEWAY_S,
                                options={"require": ["exp", "iat", "iss", "aud", "nonce"]})
        except jwt.ExpiredSignatureError:
            exp = self._jwt.get("body", {}).get("exp")
            ago = f"{time.time() - exp:.0f} s ago" if isinstance(exp, (int, float)) else "exp"
            raise LaunchRefused("expired", f"it expired {ago}") from None
        except (jwt.InvalidSignatureError, jwt.DecodeError) as exc:
            raise LaunchRefused("bad_signature", str(exc)) from None
        except jwt.InvalidAudienceError:
            raise LaunchRefused("bad_audience", str(self._jwt.get("body", {}).get("aud"))) from None
        except jwt.ImmatureSignatureError:
            raise LaunchRefused("bad_token", "issued in the future (iat)") from None
        except jwt.InvalidTokenError as exc:
            raise LaunchRefused("bad_token", str(exc)) from None
        aud = claims["aud"]
        if (isinstance(aud, list) and len(aud) > 1 or "azp" in claims) and claims.get("azp") != client_id:
            raise LaunchRefused("bad_audience", f"azp {claims.get('azp')!r} is not {client_id!r}")
        self._jwt["body"] = t.cast(TLaunchData, claims)  # from here on, only verified claims
        return self

    def validate_nonce(self) -> LtiLaunch:
        try:
            super().validate_nonce()
        except LtiException as exc:
            raise _refuse("replayed_nonce", exc) from None
        return self

    def validate_deployment(self) -> LtiLaunch:
        deployment = str(self._jwt.get("body", {}).get("https://purl.imsglobal.org/spec/lti/claim/deployment_id", ""))
        try:
            super().validate_deployment()
        except LtiException as exc:
            raise _refuse("unknown_deployment", exc, deployment=deployment or "?") from None
        return self

    def validate_message(self) -> LtiLaunch:
        try:
            super().validate_message()
        except LtiException as exc:
            raise _refuse("bad_message", exc) from None
        return self

    @property
    def conf(self) -> ToolConf:
        return self._tool_config

    def claim(self, name: str, default: t.Any = None) -> t.Any:
        return self.get_launch_data().get(name, default)


class LtiRedirect(Redirect[Response]):
    def __init__(self, url: str) -> None:
        self._url = url

    def do_redirect(self) -> Response:
        return RedirectResponse(self._url, status_code=302)

    def do_js_redirect(self) -> Response:
        return self.do_redirect()

    def set_redirect_url(self, location: str) -> None:
        self._url = location

    def get_redirect_url(self) -> str:
        return self._url


class LtiLogin(OIDCLogin):
    def get_redirect(self, url: str) -> Redirect[Response]:
        return LtiRedirect(url)

    def validate_oidc_login(self) -> Registration:
        for name in ("iss", "login_hint"):
            if not self._get_request_param(name):
                raise LaunchRefused("bad_request", name)
        try:
            return super().validate_oidc_login()
        except OIDCException as exc:
            raise LaunchRefused("unknown_platform", str(exc), issuer=self._get_request_param("iss"),
                                client_id=self._get_request_param("client_id") or "?") from None


@dataclass
class Tool:
    """What one request needs to run pylti1p3: the database session and the settings."""

    session: Session
    settings: Settings
    secure: bool

    def http(self) -> BoundedSession:
        return BoundedSession(timeout_s=self.settings.lti_http_timeout_s, allowed_hosts=self.settings.lti_allowed_hosts)

    def conf(self) -> ToolConf:
        return ToolConf(self.session, self.settings, self.http())

    def session_service(self) -> DbSessionService:
        return DbSessionService(DbStorage(self.session), nonce_lifetime_s=self.settings.lti_nonce_lifetime_s,
                                launch_lifetime_s=self.settings.lti_launch_lifetime_s)

    def login(self, request: LtiRequest, cookies: LtiCookies) -> LtiLogin:
        return LtiLogin(request, self.conf(), self.session_service(), cookies)

    def launch(self, request: LtiRequest, cookies: LtiCookies) -> LtiLaunch:
        conf = self.conf()
        return LtiLaunch(request, conf, self.session_service(), cookies, requests_session=conf.http)

    def restore(self, launch_id: str, request: LtiRequest, cookies: LtiCookies) -> LtiLaunch:
        """A launch validated earlier (the page it rendered posts its id back); refused if expired,
        unknown, or if its platform or deployment was revoked since."""
        if not launch_id.startswith("lti1p3-launch-") or len(launch_id) > 100:
            raise LaunchRefused("launch_expired", "no such launch",
                                hours=str(self.settings.lti_launch_lifetime_s // 3600))
        conf = self.conf()
        try:
            launch = t.cast(LtiLaunch, LtiLaunch.from_cache(launch_id, request, conf, self.session_service(), cookies,
                                                            requests_session=conf.http))
        except LaunchRefused:
            raise
        except LtiException:
            raise LaunchRefused("launch_expired", "no such launch",
                                hours=str(self.settings.lti_launch_lifetime_s // 3600)) from None
        deployment = str(launch.claim("https://purl.imsglobal.org/spec/lti/claim/deployment_id", ""))
        if conf.find_deployment_by_params(launch.get_iss(), deployment, launch.get_client_id()) is None:
            raise LaunchRefused("unknown_deployment", "revoked since the launch", deployment=deployment)
        return launch
