"""Alembic environment: the URL comes from the caller (service.db.migrate) or KERNELGRADE_DATABASE_URL."""
from __future__ import annotations

from alembic import context

from service.db import lti_models, models  # noqa: F401  (registers the tables)
from service.db.base import Base
from service.db.session import make_engine

config = context.config
url = config.get_main_option("sqlalchemy.url")


def run_migrations_offline() -> None:
    context.configure(url=url, target_metadata=Base.metadata, literal_binds=True, render_as_batch=True)
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    connectable = config.attributes.get("connection")
    if connectable is None:
        if url is None:
            raise RuntimeError("no sqlalchemy.url in the Alembic config (service.db.migrate sets it)")
        engine = make_engine(url)
        try:
            with engine.connect() as connection:
                _run(connection)
        finally:
            engine.dispose()
    else:
        _run(connectable)


def _run(connection) -> None:  # noqa: ANN001
    context.configure(connection=connection, target_metadata=Base.metadata, render_as_batch=True)
    with context.begin_transaction():
        context.run_migrations()


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
