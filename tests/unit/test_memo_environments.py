"""The memo says which device/Triton environments its entries were produced on (`environments`),
and migration 0010 fills that in for the entries already stored: the in-process memo and the
database memo on SQLite and PostgreSQL (issue #20 review: the grader no longer decodes entries)."""
from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
import sqlalchemy as sa
from alembic import command
from sqlalchemy import insert, select

from service.db.base import Base, utcnow
from service.db.memo import DbMemo
from service.db.migrate import alembic_config, upgrade
from service.db.models import VerdictMemoRow
from service.db.session import make_engine, make_sessionmaker
from service.grading.memo import InMemoryMemo, MemoEntry, MemoEnvironment, encode_entry, settled_environment
from service.report import Environment, Seeds
from tests.unit.test_review_flags import url  # noqa: F401  (the database fixture, both kinds)


def _entry(n: int, *, mode: str = "gpu", device: str = "NVIDIA H200", triton: str = "3.2.0") -> MemoEntry:
    return MemoEntry(submission_id=f"{n:032d}", program_digest=f"{n:064d}", cases=[], diagnoses=[],
                     given_status="passed", given_output="", seeds=Seeds(secret=n, given=0, cases={}),
                     environment=Environment(backend=mode, sandbox="bwrap", device=device, triton=triton,
                                             torch="2.5.1", python="3.11.9"))


def _put(memo, n: int, **environment: str) -> None:
    memo.put(f"{n:064d}", _entry(n, **environment), exercise_id="e", exercise_version=1)


def _seen(memo, mode: str) -> set[tuple[str, str]]:
    return {(e.device, e.triton) for e in memo.environments(mode)}


@pytest.fixture(params=["memory", "database"])
def memo(request, url):  # noqa: F811 - url: SQLite and PostgreSQL
    if request.param == "memory":
        yield InMemoryMemo()
        return
    upgrade(url)
    engine = make_engine(url)
    try:
        yield DbMemo(make_sessionmaker(engine))
    finally:
        engine.dispose()


def test_environments_are_the_distinct_devices_and_tritons_of_a_mode(memo):
    assert memo.environments("gpu") == []
    _put(memo, 1)
    _put(memo, 2)
    _put(memo, 1, device="NVIDIA A100")  # the same key again: the first entry stays, nothing new is seen
    _put(memo, 3, mode="interpreter", device="cpu")
    _put(memo, 4, triton="")  # an environment without a Triton version names none
    assert _seen(memo, "gpu") == {("NVIDIA H200", "3.2.0")}
    assert _seen(memo, "interpreter") == {("cpu", "3.2.0")}
    (h200,) = memo.environments("gpu")
    assert h200.first_at <= h200.last_at and h200.first_at.tzinfo is not None
    assert settled_environment(memo.environments("gpu")) == h200

    # Another GPU model's entries interleaved with the H200's (a mixed fleet): no guess.
    _put(memo, 5, device="NVIDIA A100")
    _put(memo, 6)
    assert _seen(memo, "gpu") == {("NVIDIA H200", "3.2.0"), ("NVIDIA A100", "3.2.0")}
    assert settled_environment(memo.environments("gpu")) is None


def test_an_environment_that_replaced_the_others_is_settled(memo):
    """A Triton upgrade: every entry of the new version came after the last of the old one."""
    _put(memo, 1, triton="3.1.0")
    _put(memo, 2, triton="3.1.0")
    _put(memo, 3, triton="3.2.0")
    settled = settled_environment(memo.environments("gpu"))
    assert settled is not None and (settled.device, settled.triton) == ("NVIDIA H200", "3.2.0")
    _put(memo, 4, triton="3.1.0")  # a host still on the old version: they interleave now
    assert settled_environment(memo.environments("gpu")) is None


def test_settled_environment_rule():
    t = datetime(2026, 12, 1, tzinfo=UTC)

    def env(name: str, first: int, last: int) -> MemoEnvironment:
        return MemoEnvironment(device=name, triton="3.2.0", first_at=t + timedelta(minutes=first),
                               last_at=t + timedelta(minutes=last))

    assert settled_environment([]) is None
    assert settled_environment([env("a", 0, 9)]) == env("a", 0, 9)
    assert settled_environment([env("a", 0, 9), env("b", 10, 20)]) == env("b", 10, 20)
    assert settled_environment([env("a", 0, 10), env("b", 10, 20)]) is None  # one moment in common
    assert settled_environment([env("a", 0, 30), env("b", 10, 20)]) is None
    assert settled_environment([env("a", 0, 1), env("b", 2, 3), env("c", 4, 5)]) == env("c", 4, 5)


def test_0010_backfills_where_stored_entries_were_made(url):  # noqa: F811
    config = alembic_config(url)
    command.upgrade(config, "0009_hints")
    engine = make_engine(url)
    try:
        columns = ("key", "exercise_id", "exercise_version", "program_digest", "submission_id", "result", "created_at")
        old = sa.table("verdict_memo", *(Base.metadata.tables["verdict_memo"].c[c]._copy() for c in columns))
        now = utcnow()
        rows = [(1, _entry(1)), (2, _entry(2, mode="interpreter", device="cpu")), (3, None)]
        with engine.begin() as conn:
            conn.execute(insert(old), [{"key": f"{n:064d}", "exercise_id": "e", "exercise_version": 1,
                                        "program_digest": "d", "submission_id": "s",
                                        "result": encode_entry(entry) if entry else {"not": "an entry"},
                                        "created_at": now} for n, entry in rows])
        command.upgrade(config, "head")
        memo = DbMemo(make_sessionmaker(engine))
        assert _seen(memo, "gpu") == {("NVIDIA H200", "3.2.0")}
        assert _seen(memo, "interpreter") == {("cpu", "3.2.0")}
        with engine.connect() as conn:
            made = conn.execute(select(VerdictMemoRow.key, VerdictMemoRow.mode, VerdictMemoRow.device,
                                       VerdictMemoRow.triton).order_by(VerdictMemoRow.key)).all()
        assert [tuple(r)[1:] for r in made] == [("gpu", "NVIDIA H200", "3.2.0"), ("interpreter", "cpu", "3.2.0"),
                                                ("", "", "")]
        command.downgrade(config, "0009_hints")
        command.upgrade(config, "head")
    finally:
        engine.dispose()
