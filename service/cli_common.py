"""What every `kernelgrade` command group shares: the error console, one-line failures, the migrated database."""
from __future__ import annotations

from typing import TYPE_CHECKING

import typer
from rich.console import Console
from rich.markup import escape

from service.config import Settings

if TYPE_CHECKING:
    from sqlalchemy.orm import Session, sessionmaker

err = Console(stderr=True)


def fail(message: str, code: int = 2) -> typer.Exit:
    """Print `message` as one error line and return the Exit to raise."""
    # soft_wrap: one error is one line, whatever the terminal's width (scripts read it)
    err.print(f"[bold red]error:[/] {escape(message)}", highlight=False, soft_wrap=True)
    return typer.Exit(code)


def migrated_sessions(settings: Settings) -> sessionmaker[Session]:
    """The command line's session factory, on a database upgraded to the newest migration."""
    from service.db.migrate import upgrade  # only the commands that use the database pay for it
    from service.db.session import make_engine, make_sessionmaker

    upgrade(settings.db_url())
    return make_sessionmaker(make_engine(settings.db_url()))
