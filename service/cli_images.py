"""`kernelgrade image build`: the images of the docker backend and the compose stack, without a registry."""
from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

import typer
from rich.console import Console

image_app = typer.Typer(help="Images for the docker sandbox and docker-compose.yml, built without a registry.",
                        no_args_is_help=True)
err = Console(stderr=True)


@image_app.command("build")
def build(
    kind: Annotated[Literal["full", "host", "stack", "all"], typer.Option(help=(
        "full: the Dockerfile's kernelgrade image (API, workers, sandbox) on a Debian base made with debootstrap; "
        "host: a bare sandbox image that gets this machine's /usr and Python read-only (no network needed); "
        "stack: PostgreSQL and Redis for docker-compose.yml; all: full and stack"))] = "full",
    tag: Annotated[str | None,
                   typer.Option(help="default: kernelgrade:latest (full), kernelgrade-sandbox:host (host)")] = None,
    base: Annotated[str | None,
                    typer.Option(help="an image on this engine to build on instead of the Debian base")] = None,
    torch: Annotated[Literal["auto", "cpu", "cuda"], typer.Option(help=(
        "which torch the full image gets: cpu (constraints/cpu.txt) or cuda (deploy/constraints-gpu.txt); "
        "auto: cuda where /dev/nvidia0 exists"))] = "auto",
) -> None:
    """Build (or reuse, when its inputs have not changed) and print the tags to use."""
    from sandbox.backends.base import SandboxUnavailable
    from sandbox.backends.docker import images

    def say(line: str) -> None:
        err.print(line, markup=False, highlight=False)

    if torch == "auto":
        torch = "cuda" if Path("/dev/nvidia0").exists() else "cpu"
    try:
        built = []
        if kind == "host":
            built.append(images.build_host_image(tag or "kernelgrade-sandbox:host", say=say))
        if kind in ("full", "all"):
            built.append(images.build_full_image(tag or "kernelgrade:latest", base=base, torch=torch, say=say))
        if kind in ("stack", "all"):
            built += images.build_stack_images(base=base, say=say)
    except (SandboxUnavailable, RuntimeError, OSError) as exc:
        err.print(f"[red]error[/]: {exc}")
        raise typer.Exit(1) from None
    for image in built:
        state = "reused (inputs unchanged)" if image.cached else "built"
        typer.echo(f"{image.tag}\t{image.id[:19]}\t{state} in {image.seconds:.1f} s")
    if kind == "host":
        typer.echo(f"grade with it: KERNELGRADE_DOCKER_IMAGE={built[0].tag} kernelgrade grade SUBMISSION --sandbox "
                   "docker")
