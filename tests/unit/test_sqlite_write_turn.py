"""SQLite's write turn (service/db/session.py): the threads of one process take turns at writing
on a lock of the engine's, held from a connection's first write to its COMMIT or ROLLBACK. On a
real SQLite file, with real threads: every write lands, and no way a transaction ends leaves the
turn taken."""
from __future__ import annotations

import threading

import pytest
from sqlalchemy import func, select, text, update
from sqlalchemy.exc import IntegrityError

from service.db import store
from service.db.migrate import upgrade
from service.db.models import Course
from service.db.session import make_engine, make_sessionmaker, write_turn_held


@pytest.fixture
def engine(tmp_path):
    url = f"sqlite:///{tmp_path / 'turn.db'}"
    upgrade(url)
    engine = make_engine(url)
    try:
        yield engine
    finally:
        engine.dispose()


def test_a_read_takes_no_turn_and_a_write_holds_it_until_commit(engine):
    sessions = make_sessionmaker(engine)
    with sessions() as session:
        store.create_course(session, "c1", "one")
        assert not write_turn_held(engine)
        session.scalar(select(func.count()).select_from(Course))
        assert not write_turn_held(engine)
        session.execute(update(Course).where(Course.id == "c1").values(name="uno"))
        assert write_turn_held(engine)
        session.commit()
        assert not write_turn_held(engine)
        session.execute(update(Course).where(Course.id == "c1").values(name="eins"))
        assert write_turn_held(engine)
        session.rollback()
        assert not write_turn_held(engine)
    with sessions() as session:
        assert session.get(Course, "c1").name == "uno"


def test_a_session_closed_or_failed_mid_write_gives_the_turn_back(engine):
    sessions = make_sessionmaker(engine)
    with sessions() as session:
        store.create_course(session, "c1", "one")
    with sessions() as session:
        session.execute(update(Course).where(Course.id == "c1").values(name="never"))
        assert write_turn_held(engine)
    assert not write_turn_held(engine)  # closed without a commit: the pool's rollback on return
    with sessions() as session:
        with pytest.raises(IntegrityError):
            session.execute(text("INSERT INTO courses (id, name, webhook_secret) VALUES ('c1', 'twice', 's')"))
        session.rollback()
        assert not write_turn_held(engine)
    with engine.connect() as connection:  # a Core connection, outside any session
        connection.execute(update(Course).where(Course.id == "c1").values(name="core"))
        assert write_turn_held(engine)
        connection.commit()
        assert not write_turn_held(engine)
    with sessions() as session:
        assert session.get(Course, "c1").name == "core"


def test_threads_writing_at_once_all_land(engine):
    sessions = make_sessionmaker(engine)
    with sessions() as session:
        store.create_course(session, "c1", "one")
    errors: list[BaseException] = []
    barrier = threading.Barrier(8)

    def writer(i: int) -> None:
        try:
            barrier.wait(timeout=30)
            for j in range(20):
                with sessions() as session:
                    store.create_course(session, f"t{i}-{j}", "x")
                    session.execute(update(Course).where(Course.id == "c1").values(name=f"{i}-{j}"))
                    session.commit()
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not any(t.is_alive() for t in threads) and not errors, errors
    assert not write_turn_held(engine)
    with sessions() as session:
        assert session.scalar(select(func.count()).select_from(Course)) == 1 + 8 * 20
