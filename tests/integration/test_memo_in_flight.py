"""In-flight de-duplication of identical new programs (issue #6, a class burst): the grading that
claims a memo key runs the program, the identical ones graded meanwhile wait for its result and
reuse it; when the first run leaves nothing to reuse they run the program themselves.

The claim primitives are checked on the real memos (in-process, SQLite, PostgreSQL); the grader
tests run real programs in the bubblewrap sandbox on the Triton interpreter with a database memo.
"""
from __future__ import annotations

import contextlib
import shutil
import threading
import time

import pytest

from sandbox.contract import RunResult
from service.config import REPO_ROOT, Settings
from service.db.models import MemoClaimRow
from service.db.migrate import upgrade
from service.db.session import make_engine, make_sessionmaker
from service.grading.assemble import assemble
from service.db.memo import DbMemo
from service.grading.memo import InMemoryMemo, memo_key
from service.bootstrap import build_grader
from service.grading.pipeline import ENVIRONMENT_RETRY_S
from service.submission import Submission
from tests.support.servers import database

sandbox = pytest.mark.sandbox
needs_bwrap = pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs bubblewrap")

EXAMPLE = REPO_ROOT / "exercises/lesson06_mean_var/example_submission.json"
KEY = "k" * 64


def _example() -> Submission:
    return Submission.model_validate_json(EXAMPLE.read_text(encoding="utf-8"))


def _with_fill(grader, fill: str) -> Submission:
    """The example submission (its written answers) with the blank filled by `fill`."""
    body = _example()
    template = grader.catalog.get(body.exercise).template
    return body.model_copy(update={"code": template.replace("______", fill, 1)})


def _code_part(report) -> dict:
    return {"cases": [c.model_dump() for c in report.cases], "diagnoses": [d.model_dump() for d in report.diagnoses],
            "given": (report.given_check.status, report.given_check.output), "seeds": report.seeds.model_dump(),
            "digest": report.program.digest, "score": report.score.total}


@contextlib.contextmanager
def _sessions(kind: str, tmp_path):
    if kind == "postgresql":
        import psycopg

        from tests.support.servers import POSTGRES_ADMIN
        try:
            psycopg.connect(POSTGRES_ADMIN, connect_timeout=3).close()
        except psycopg.Error:
            pytest.skip("PostgreSQL is not reachable")
    with database(kind, tmp_path) as url:
        upgrade(url)
        engine = make_engine(url)
        try:
            yield make_sessionmaker(engine)
        finally:
            engine.dispose()


@pytest.fixture
def db_sessions(request, tmp_path):
    with _sessions(getattr(request, "param", "sqlite"), tmp_path) as sessions:
        yield sessions


@pytest.fixture(params=["memory", "sqlite", "postgresql"])
def memo(request, tmp_path):
    if request.param == "memory":
        yield InMemoryMemo()
        return
    with _sessions(request.param, tmp_path) as sessions:
        yield DbMemo(sessions)


# --- the claim primitives -------------------------------------------------------------------

def test_one_live_claim_per_key_released_by_its_owner_only(memo):
    assert memo.claim(KEY, owner="a" * 32, ttl_s=60)
    assert not memo.claim(KEY, owner="b" * 32, ttl_s=60)
    assert memo.claim("j" * 64, owner="b" * 32, ttl_s=60), "claims are per key"
    memo.release(KEY, owner="b" * 32)  # not b's: nothing happens
    assert not memo.claim(KEY, owner="c" * 32, ttl_s=60)
    assert memo.claim(KEY, owner="a" * 32, ttl_s=60), "the same owner (a retried submission) takes its claim over"
    assert not memo.wait_released(KEY, timeout_s=0.3)
    memo.release(KEY, owner="a" * 32)
    assert memo.wait_released(KEY, timeout_s=0.3)
    assert memo.claim(KEY, owner="c" * 32, ttl_s=60)


def test_racing_claimants_get_exactly_one_claim(memo):
    owners = [f"{i:032d}" for i in range(6)]
    barrier = threading.Barrier(len(owners))
    won, errors = [], []

    def race(owner):
        barrier.wait()
        try:
            if memo.claim(KEY, owner=owner, ttl_s=60):
                won.append(owner)
        except Exception as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=race, args=(o,)) for o in owners]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [] and len(won) == 1


def test_a_release_wakes_the_waiters_and_an_expired_claim_frees_the_key(memo):
    assert memo.claim(KEY, owner="a" * 32, ttl_s=60)
    woke = []

    def wait():
        started = time.monotonic()
        assert memo.wait_released(KEY, timeout_s=30)
        woke.append(time.monotonic() - started)

    waiters = [threading.Thread(target=wait) for _ in range(3)]
    for t in waiters:
        t.start()
    time.sleep(0.5)
    assert woke == []
    memo.release(KEY, owner="a" * 32)
    for t in waiters:
        t.join(timeout=10)
    assert len(woke) == 3 and max(woke) < 5

    # A holder that died: its claim stops holding anyone at its expiry, and a new claimant gets it.
    assert memo.claim(KEY, owner="d" * 32, ttl_s=1.0)
    assert not memo.claim(KEY, owner="e" * 32, ttl_s=60)
    started = time.monotonic()
    assert memo.wait_released(KEY, timeout_s=30)
    assert 0.5 < time.monotonic() - started < 10
    assert memo.claim(KEY, owner="e" * 32, ttl_s=60)
    assert not memo.claim(KEY, owner="f" * 32, ttl_s=60)


# --- the grader: identical new programs graded at once ------------------------------------

def _learn_environment(grader):
    """One grading first, so the grader knows its sandbox's device and Triton version (the memo
    key needs them; a warm pool tells them as well)."""
    report = grader.grade(_example(), secret_seed=1)
    assert report.status == "graded" and report.program.memo_key
    return report


class _Asked:
    """Counts the grader's questions to its memo's `environments` (the real one answers them)."""

    def __init__(self, grader) -> None:
        self.count, real = 0, grader.memo.environments

        def environments(mode: str):
            self.count += 1
            return real(mode)

        grader.memo.environments = environments


@sandbox
@needs_bwrap
def test_a_grader_whose_sandbox_never_said_hello_learns_the_environment_from_the_memo(db_sessions):
    """A Celery fast-only worker, or `serve` just restarted: it answers memo hits for runs made by
    another grader's sandbox, asking the memo once; with entries of two devices interleaved it
    guesses nothing, asks again only after ENVIRONMENT_RETRY_S, and never once a sandbox told it."""
    report = _learn_environment(build_grader(Settings(device="interpreter"), sessions=db_sessions))

    fast = build_grader(Settings(device="interpreter"), sessions=db_sessions)
    asked = _Asked(fast)
    assert fast.learn_environment() and asked.count == 1
    reused = fast.grade(_example(), secret_seed=2)
    assert reused.program.reused and reused.program.memo_key == report.program.memo_key
    assert fast.counts.snapshot()["sandbox_runs"] == 0, "answered from the memo, no sandbox of its own"
    assert fast.learn_environment() and asked.count == 1, "known: the memo is not asked again"

    # Another device's run comes between two of this one's (a fleet of mixed CPUs or GPUs): no guess.
    memo = DbMemo(db_sessions)
    entry = memo.get(report.program.memo_key)
    elsewhere = entry.environment.model_copy(update={"device": "another device"})
    memo.put("x" * 64, entry.model_copy(update={"environment": elsewhere}), exercise_id="e", exercise_version=1)
    memo.put("y" * 64, entry, exercise_id="e", exercise_version=1)
    mixed = build_grader(Settings(device="interpreter"), sessions=db_sessions)
    asked = _Asked(mixed)
    assert not mixed.learn_environment() and not mixed.learn_environment()
    assert asked.count == 1, "asked at most once per retry interval while unknown"
    mixed._environment_asked -= ENVIRONMENT_RETRY_S  # the interval has passed
    assert not mixed.learn_environment() and asked.count == 2
    ran = mixed.grade(_example(), secret_seed=3)
    assert ran.status == "graded" and not ran.program.reused and mixed.counts.snapshot()["sandbox_runs"] == 1
    mixed._environment_asked -= ENVIRONMENT_RETRY_S
    assert mixed.learn_environment() and asked.count == 2, "its own sandbox's hello told it"


def _grade_together(grader, body, count: int, *, seed0: int = 100) -> tuple[list, list]:
    barrier = threading.Barrier(count)
    reports: list = [None] * count
    errors: list = []

    def one(i):
        barrier.wait()
        try:
            reports[i] = grader.grade(body, submission_id=f"{seed0 + i:032d}", secret_seed=seed0 + i)
        except Exception as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=900)
    return reports, errors


@sandbox
@needs_bwrap
@pytest.mark.parametrize("db_sessions", ["sqlite", "postgresql"], indirect=True)
def test_identical_new_programs_graded_together_run_once(db_sessions):
    grader = build_grader(Settings(device="interpreter"), sessions=db_sessions)
    _learn_environment(grader)
    before = grader.counts.snapshot()

    reports, errors = _grade_together(grader, _with_fill(grader, "cols < N"), 4)

    assert errors == []
    counts = grader.counts.snapshot()
    assert counts["sandbox_runs"] - before["sandbox_runs"] == 1
    assert counts["reused_after_wait"] - before["reused_after_wait"] == 3
    assert sorted(r.program.reused for r in reports) == [False, True, True, True]
    first = next(r for r in reports if not r.program.reused)
    assert all(_code_part(r) == _code_part(first) for r in reports), "every report has the one run's results"
    assert all(r.status == "graded" and r.program.memo_key == first.program.memo_key for r in reports)
    waited = [r for r in reports if r.program.reused]
    assert all("memo_wait_s" in r.timing and r.timing["reused"] == 1.0 for r in waited)
    assert "memo_wait_s" not in first.timing
    with db_sessions() as session:
        assert session.query(MemoClaimRow).count() == 0, "the claim is released once the result is stored"


@sandbox
@needs_bwrap
@pytest.mark.parametrize("failure", ["infra_error", "exception", "not_memoisable"])
def test_waiters_run_the_program_themselves_when_the_first_run_leaves_nothing_to_reuse(db_sessions, monkeypatch,
                                                                                       failure):
    """The claimant's run fails on our side (not_gradable), its grading crashes, or its result
    may not be stored (a timed-out case): the waiting gradings each run the program, as they
    would have without de-duplication, and get their own graded reports."""
    grader = build_grader(Settings(device="interpreter"), sessions=db_sessions)
    _learn_environment(grader)
    before = grader.counts.snapshot()
    count = 3

    entered, all_waiting = [], threading.Event()
    real_wait = grader.memo.wait_released

    def wait_released(key, *, timeout_s):
        entered.append(key)
        if len(entered) == count - 1:
            all_waiting.set()
        return real_wait(key, timeout_s=timeout_s)

    monkeypatch.setattr(grader.memo, "wait_released", wait_released)
    real_run, calls, calls_lock = grader.runner.run, [], threading.Lock()

    def run(**kwargs):
        with calls_lock:
            calls.append(kwargs["mode"])
            claimant = len(calls) == 1
        if not claimant:
            return real_run(**kwargs)
        assert all_waiting.wait(120), "the other gradings never waited"
        if failure == "exception":
            raise RuntimeError("the claimant's grading broke")
        if failure == "infra_error":
            return RunResult(backend="bwrap", mode=kwargs["mode"], infra_error="the sandbox backend went away")
        result = real_run(**kwargs)
        result.cases[-1].status, result.cases[-1].error = "timeout", "ran out of time (made up by the test)"
        return result

    monkeypatch.setattr(grader.runner, "run", run)
    reports, errors = _grade_together(grader, _with_fill(grader, "cols < N"), count)

    counts = grader.counts.snapshot()
    assert counts["sandbox_runs"] - before["sandbox_runs"] == count
    assert counts["ran_after_wait"] - before["ran_after_wait"] == count - 1
    assert counts["reused"] == before["reused"]
    finished = [r for r in reports if r is not None]
    if failure == "exception":
        assert [str(e) for e in errors] == ["the claimant's grading broke"] and len(finished) == count - 1
    else:
        assert errors == [] and len(finished) == count
    claimant = [r for r in finished if "memo_wait_s" not in r.timing]
    waiters = [r for r in finished if "memo_wait_s" in r.timing]
    assert len(waiters) == count - 1
    assert [r.status for r in claimant] == {"infra_error": ["not_gradable"], "exception": [],
                                            "not_memoisable": ["graded"]}[failure]
    for report in waiters:
        assert report.status == "graded" and not report.program.reused and report.score.total == 10
    # The waiters' own runs were stored: the next identical program reuses them, without waiting.
    after = grader.grade(_with_fill(grader, "cols <  N"), secret_seed=7)
    assert after.program.reused and "memo_wait_s" not in after.timing
    assert after.program.memo_key == waiters[0].program.memo_key
    with db_sessions() as session:
        assert session.query(MemoClaimRow).count() == 0


@sandbox
@needs_bwrap
def test_a_dead_claimant_holds_others_only_until_its_claim_expires_and_a_regrade_never_waits(db_sessions):
    grader = build_grader(Settings(device="interpreter"), sessions=db_sessions)
    exercise = grader.catalog.get("lesson06_mean_var")
    environment = _learn_environment(grader).environment

    def key_of(fill: str) -> str:
        program = assemble(exercise.template, [fill])
        return memo_key(program_digest=program.digest, exercise=exercise, mode="interpreter",
                        device=environment.device, triton=environment.triton)

    # A worker claimed "cols < N" and died: nobody releases it, the claim expires in 4 s.
    assert grader.memo.claim(key_of("cols < N"), owner="d" * 32, ttl_s=4)
    report = grader.grade(_with_fill(grader, "cols < N"), secret_seed=3)
    assert report.status == "graded" and not report.program.reused
    assert report.program.memo_key == key_of("cols < N")
    assert 2 < report.timing["memo_wait_s"] < 60
    assert grader.counts.snapshot()["ran_after_wait"] == 1

    # A regrade asks for a fresh run: it neither waits for a live claim nor takes one.
    regraded_key = key_of("mask & (cols < N)")
    assert grader.memo.claim(regraded_key, owner="e" * 32, ttl_s=600)
    started = time.monotonic()
    regrade = grader.grade(_with_fill(grader, "mask & (cols < N)"), secret_seed=4, reuse=False)
    assert regrade.status == "graded" and not regrade.program.reused and "memo_wait_s" not in regrade.timing
    assert time.monotonic() - started < 300
    with db_sessions() as session:
        # e's claim is untouched; the dead d's expired row stays until someone claims its key again.
        assert {(r.key, r.owner) for r in session.query(MemoClaimRow).all()} == {
            (regraded_key, "e" * 32), (key_of("cols < N"), "d" * 32)}
