"""`kernelgrade lti ...`: register LMS platforms and deployments per course, rotate the tool's
signing key, and print what an LMS administrator enters."""
from __future__ import annotations

import json
from typing import Annotated

import typer
from pydantic import ValidationError

from service.cli_common import fail, migrated_sessions
from service.config import Settings

app = typer.Typer(help="LTI 1.3: LMS platforms, deployments and the tool's keys.", no_args_is_help=True)
platforms_app = typer.Typer(help="Platform registrations (an LMS's issuer and client id), per course.",
                            no_args_is_help=True)
deployments_app = typer.Typer(help="Deployment ids a registered platform may launch with.", no_args_is_help=True)
keys_app = typer.Typer(help="The tool's signing keys (published at /lti/jwks).", no_args_is_help=True)
app.add_typer(platforms_app, name="platforms")
app.add_typer(deployments_app, name="deployments")
app.add_typer(keys_app, name="keys")


def _db():  # noqa: ANN202 - the command line's session factory (migrated database)
    return migrated_sessions(Settings())()


def _fail(message: str) -> typer.Exit:
    return fail(message)


def _platform(session, platform_id: str):  # noqa: ANN001, ANN202
    from service.lti import registry

    platform = registry.owned_platform(session, platform_id, None)
    if platform is None:
        raise _fail(f"no platform registration {platform_id!r} (see `kernelgrade lti platforms list`)")
    return platform


def _show(session, platform) -> None:  # noqa: ANN001
    from service.lti import registry

    state = f"revoked {platform.revoked_at:%Y-%m-%d}" if platform.revoked_at else "active"
    deployments = ", ".join(d.deployment_id + (" (revoked)" if d.revoked_at else "")
                            for d in registry.deployments(session, platform.id)) or "none"
    print(f"{platform.id}\t{platform.course_id}\t{platform.issuer}\tclient {platform.client_id}\t{state}\t"
          f"deployments: {deployments}\t{platform.label}")


@app.command("tool")
def tool(url: Annotated[str,
                        typer.Option(help="kernelgrade's public URL (default KERNELGRADE_PUBLIC_URL)")] = "") -> None:
    """What an LMS administrator enters for kernelgrade (login, launch and JWKS URLs, scopes)."""
    from service.lti import registry

    base = url or Settings().public_url
    if not base:
        raise _fail("give --url https://kernelgrade.example.edu (or set KERNELGRADE_PUBLIC_URL)")
    print(json.dumps(registry.tool_values(base), indent=2))


@platforms_app.command("add")
def add_platform(
    course: Annotated[str, typer.Option(help="course id")],
    issuer: Annotated[str, typer.Option(help="the platform's issuer (iss)")],
    client_id: Annotated[str, typer.Option(help="the client id the platform gave kernelgrade")],
    login_url: Annotated[str, typer.Option(help="the platform's OIDC authorization endpoint")],
    token_url: Annotated[str, typer.Option(help="the platform's OAuth 2 token endpoint")],
    jwks_url: Annotated[str, typer.Option(help="the platform's public keys (JWKS URL)")],
    deployment: Annotated[list[str], typer.Option(help="a deployment id to accept; repeat for several")] = [],  # noqa: B006
    frame_origin: Annotated[list[str], typer.Option(help="an origin that may frame the tool (default: the issuer's "
                                                         "and the login URL's)")] = [],  # noqa: B006
    audience: Annotated[str | None, typer.Option(help="audience of token requests, if not the token URL")] = None,
    label: Annotated[str, typer.Option(help="a name for people")] = "",
) -> None:
    """Register an LMS for a course."""
    from service.lti import registry

    try:
        body = registry.PlatformCreate(issuer=issuer, client_id=client_id, auth_login_url=login_url,
                                       auth_token_url=token_url, key_set_url=jwks_url, deployments=deployment,
                                       frame_origins=frame_origin or None, auth_audience=audience, label=label)
    except ValidationError as exc:
        raise _fail("; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())) from None
    with _db() as session:
        try:
            platform = registry.register(session, course_id=course, body=body,
                                         allowed_hosts=Settings().lti_allowed_hosts)
        except registry.RegistrationError as exc:
            raise _fail(f"{exc.field}: {exc}") from None
        _show(session, platform)


@platforms_app.command("list")
def list_platforms(course: Annotated[str | None, typer.Option(help="only this course")] = None) -> None:
    from service.lti import registry

    with _db() as session:
        for platform in registry.platforms(session, course):
            _show(session, platform)


@platforms_app.command("update")
def update_platform(
    platform_id: Annotated[str, typer.Argument(help="the id shown by `lti platforms list`")],
    jwks_url: Annotated[str | None, typer.Option(help="a new JWKS URL (the cached keys are dropped)")] = None,
    login_url: Annotated[str | None, typer.Option()] = None,
    token_url: Annotated[str | None, typer.Option()] = None,
    frame_origin: Annotated[list[str], typer.Option(help="replace the origins that may frame the tool")] = [],  # noqa: B006
    refresh_keys: Annotated[bool, typer.Option(help="fetch the platform's keys again at the next launch")] = False,
) -> None:
    """Change a registration; after the platform rotated its keys, --refresh-keys."""
    from service.lti import registry

    with _db() as session:
        platform = _platform(session, platform_id)
        fields = {k: v for k, v in (("auth_login_url", login_url), ("auth_token_url", token_url),
                                    ("frame_origins", frame_origin or None)) if v is not None}
        if jwks_url or refresh_keys:
            fields["key_set_url"] = jwks_url or platform.key_set_url
        try:
            registry.update(session, platform, registry.PlatformUpdate(**fields),
                            allowed_hosts=Settings().lti_allowed_hosts)
        except (registry.RegistrationError, ValidationError) as exc:
            raise _fail(str(exc)) from None
        _show(session, platform)


@platforms_app.command("revoke")
def revoke_platform(platform_id: Annotated[str, typer.Argument(help="the id shown by `lti platforms list`")]) -> None:
    """Refuse the platform's launches from now on and post no more scores to it."""
    from service.lti import registry

    with _db() as session:
        if not registry.revoke(session, _platform(session, platform_id)):
            raise _fail(f"platform {platform_id} is revoked already")
        print(f"platform {platform_id} revoked")


@deployments_app.command("add")
def add_deployment(platform_id: Annotated[str, typer.Argument(help="the platform registration")],
                   deployment_id: Annotated[str, typer.Argument(help="the deployment id the LMS shows")],
                   label: Annotated[str, typer.Option()] = "") -> None:
    from service.lti import registry

    with _db() as session:
        registry.add_deployment(session, _platform(session, platform_id), deployment_id, label)
        _show(session, _platform(session, platform_id))


@deployments_app.command("revoke")
def revoke_deployment(platform_id: Annotated[str, typer.Argument()],
                      deployment_id: Annotated[str, typer.Argument()]) -> None:
    from service.lti import registry

    with _db() as session:
        if not registry.revoke_deployment(session, _platform(session, platform_id), deployment_id):
            raise _fail(f"no active deployment {deployment_id!r} of platform {platform_id}")
        print(f"deployment {deployment_id} of platform {platform_id} revoked")


@keys_app.command("list")
def list_keys() -> None:
    from service.lti import keys

    with _db() as session:
        keys.active_key(session)
        for key in keys.all_keys(session):
            state = ("removed" if key.removed_at else f"retired {key.retired_at:%Y-%m-%d %H:%M}" if key.retired_at
                     else "active")
            print(f"{key.kid}\t{key.created_at:%Y-%m-%d %H:%M}\t{state}")


@keys_app.command("rotate")
def rotate_keys() -> None:
    """A new signing key; the old one stays published for KERNELGRADE_LTI_TOOL_KEY_GRACE_S (default 7 days)."""
    from service.lti import keys

    with _db() as session:
        key = keys.rotate(session)
        print(f"new signing key {key.kid}")


@keys_app.command("remove")
def remove_key(kid: Annotated[str, typer.Argument(help="a retired key's id")]) -> None:
    """Stop publishing a retired key now (for instance one that leaked)."""
    from service.lti import keys

    with _db() as session:
        if not keys.remove(session, kid):
            raise _fail(f"no retired key {kid!r} (the active key cannot be removed: rotate first)")
        print(f"key {kid} removed from the JWKS")
