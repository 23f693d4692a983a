"""Real processes for the worker tests: `kernelgrade serve` / `kernelgrade worker` started as
their own process groups, the database read directly, sandbox processes found through /proc.

Nothing here is mocked: the tests talk HTTP to a real server, Celery goes through the real Redis,
grading runs Triton in the real bubblewrap sandbox, and processes die by real signals.
"""
from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

import httpx
import redis
from sqlalchemy import create_engine, func, select
from sqlalchemy.engine import Engine

from service.config import REPO_ROOT
from service.db.models import ReportRow, Submission
from tests.support.waiting import wait_for  # noqa: F401  (re-exported)
from tests.support.servers import free_port

KERNELGRADE = str(Path(sys.executable).parent / "kernelgrade")
EXAMPLE = REPO_ROOT / "exercises" / "lesson06_mean_var" / "example_submission.json"
EXERCISE = "lesson06_mean_var"
REDIS_HOST, REDIS_PORT = "127.0.0.1", 6379
REDIS_START = ["redis-server", "--daemonize", "yes", "--bind", "127.0.0.1", "-::1", "--port", str(REDIS_PORT),
               "--save", "", "--appendonly", "no", "--dir", "/var/lib/redis", "--logfile", "/var/log/redis/ci.log"]
FINAL = ("graded", "not_gradable")
# The line added to the template's given check (and to the submission, so nothing counts as an
# edit) to make one grading last long enough to be killed in the middle, reliably.
SLOW_LINE = "import time; time.sleep({s})\n"
CHECK_ANCHOR = "for shape in ((3, 17), (4, 128)):"


# --- processes -----------------------------------------------------------------------------

class Proc:
    """A `kernelgrade` process leading its own process group, its output in a log file."""

    def __init__(self, name: str, argv: list[str], env: dict[str, str], log_path: Path) -> None:
        self.name, self.argv, self.log_path = name, argv, log_path
        self._log = open(log_path, "ab")  # noqa: SIM115 - closed in reap()
        self.popen = subprocess.Popen(argv, env=env, cwd=REPO_ROOT, stdin=subprocess.DEVNULL, stdout=self._log,
                                      stderr=subprocess.STDOUT, start_new_session=True)

    @property
    def pid(self) -> int:
        return self.popen.pid

    def alive(self) -> bool:
        return self.popen.poll() is None

    def log(self) -> str:
        try:
            return self.log_path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return ""

    def tail(self, chars: int = 4000) -> str:
        return f"--- {self.name} (pid {self.pid}, rc {self.popen.poll()}) log tail ---\n{self.log()[-chars:]}"

    def signal_group(self, sig: int) -> None:
        try:
            os.killpg(self.pid, sig)
        except ProcessLookupError:
            pass

    def kill(self) -> None:
        """SIGKILL the whole process group and reap the leader."""
        self.signal_group(signal.SIGKILL)
        self.reap()

    def reap(self) -> None:
        try:
            self.popen.wait(timeout=15)
        except subprocess.TimeoutExpired:
            pass
        self._log.close()


class Procs:
    """Every process a test started; `close()` (the fixture's finally) kills what is left."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.started: list[Proc] = []

    def start(self, name: str, args: list[str], env: dict[str, str]) -> Proc:
        proc = Proc(name, [KERNELGRADE, *args], env, self.root / f"{name}-{len(self.started)}.log")
        self.started.append(proc)
        return proc

    def tails(self) -> str:
        return "\n".join(p.tail() for p in self.started)

    def close(self) -> None:
        for proc in self.started:
            proc.signal_group(signal.SIGKILL)
        for proc in self.started:
            proc.reap()


def run_cli(args: list[str], env: dict[str, str], timeout: float = 120) -> subprocess.CompletedProcess:
    proc = subprocess.run([KERNELGRADE, *args], env=env, cwd=REPO_ROOT, capture_output=True, text=True,
                          timeout=timeout, start_new_session=True)
    assert proc.returncode == 0, f"kernelgrade {' '.join(args)} failed ({proc.returncode}):\n{proc.stderr[-3000:]}"
    return proc


@dataclass
class Env:
    """The settings every process of one test shares (through KERNELGRADE_* variables)."""

    vars: dict[str, str]
    tmpdir: Path  # TMPDIR of the kernelgrade processes: the sandbox job folders live here

    def with_(self, **extra: str) -> dict[str, str]:
        return {**self.vars, **extra}


def make_env(tmp_path: Path, *, database_url: str | None, lease_s: float, queue: str = "inprocess",
             broker_url: str | None = None, exercises_dir: Path | None = None, **extra: str) -> Env:
    tmpdir = tmp_path / "proc-tmp"
    tmpdir.mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("KERNELGRADE_")}
    env.update({
        "KERNELGRADE_DATA_DIR": str(tmp_path / "data"),
        "KERNELGRADE_QUEUE": queue,
        "KERNELGRADE_LEASE_S": str(lease_s),
        "KERNELGRADE_DEVICE": "interpreter",
        "KERNELGRADE_SANDBOX": "bwrap",
        "TMPDIR": str(tmpdir),
        "PYTHONUNBUFFERED": "1",
    })
    if database_url is not None:
        env["KERNELGRADE_DATABASE_URL"] = database_url
    if broker_url is not None:
        env["KERNELGRADE_BROKER_URL"] = broker_url
    if exercises_dir is not None:
        env["KERNELGRADE_EXERCISES_DIR"] = str(exercises_dir)
    env.update(extra)
    return Env(env, tmpdir)


def start_serve(procs: Procs, env: Env, *, name: str = "serve", port: int | None = None) -> tuple[Proc, str]:
    port = port or free_port()
    proc = procs.start(name, ["serve", "--host", "127.0.0.1", "--port", str(port)], env.vars)
    url = f"http://127.0.0.1:{port}"

    def up() -> bool:
        if not proc.alive():
            raise AssertionError(f"serve exited during start-up\n{proc.tail()}")
        try:
            return httpx.get(f"{url}/healthz", timeout=1).status_code == 200
        except httpx.HTTPError:
            return False

    wait_for(up, timeout=90, interval=0.2, what="kernelgrade serve to answer /healthz", on_timeout=proc.tail)
    return proc, url


def start_worker(procs: Procs, env: Env, *, name: str = "worker", concurrency: int = 1, lane: str = "") -> Proc:
    proc = procs.start(name, ["worker", "--concurrency", str(concurrency), *(["--lane", lane] if lane else [])],
                       env.vars)

    def ready() -> bool:
        if not proc.alive():
            raise AssertionError(f"the Celery worker exited during start-up\n{proc.tail()}")
        return " ready." in proc.log()

    wait_for(ready, timeout=90, interval=0.2, what="the Celery worker to be ready", on_timeout=proc.tail)
    return proc


def create_course_and_key(env: Env, course: str = "c1") -> str:
    """Through the CLI, before any server runs (so the migrations run once, here)."""
    run_cli(["courses", "create", course], env.vars)
    key = run_cli(["keys", "create", "--course", course, "--scope", "admin"], env.vars).stdout.strip()
    assert key.startswith("kg_"), key
    return key


def example_body(slow_s: float | None = None) -> dict:
    body = json.loads(EXAMPLE.read_text(encoding="utf-8"))
    if slow_s is not None:
        assert CHECK_ANCHOR in body["code"]
        body["code"] = body["code"].replace(CHECK_ANCHOR, SLOW_LINE.format(s=slow_s) + CHECK_ANCHOR, 1)
    return body


def slow_exercises(tmp_path: Path, slow_s: float) -> Path:
    """A copy of the shipped exercises whose given check sleeps `slow_s` seconds in the sandbox."""
    root = tmp_path / "exercises"
    shutil.copytree(REPO_ROOT / "exercises", root)
    template = root / EXERCISE / "template.py"
    text = template.read_text(encoding="utf-8")
    assert CHECK_ANCHOR in text
    template.write_text(text.replace(CHECK_ANCHOR, SLOW_LINE.format(s=slow_s) + CHECK_ANCHOR, 1), encoding="utf-8")
    return root


def post_submission(url: str, key: str, body: dict, *, timeout: float = 60) -> str:
    response = httpx.post(f"{url}/v1/submissions", json=body, headers={"Authorization": f"Bearer {key}"},
                          timeout=timeout)
    assert response.status_code == 202, f"{response.status_code}: {response.text[:2000]}"
    return response.json()["id"]


# --- the database, read directly -----------------------------------------------------------

class Ledger:
    """What the database says about submissions and their reports."""

    def __init__(self, database_url: str) -> None:
        self.engine: Engine = create_engine(database_url)

    def close(self) -> None:
        self.engine.dispose()

    def row(self, submission_id: str) -> dict:
        with self.engine.connect() as conn:
            row = conn.execute(select(Submission.status, Submission.attempts, Submission.current_report_id,
                                      Submission.lease_token).where(Submission.id == submission_id)).one()
        return dict(row._mapping)

    def status(self, submission_id: str) -> str:
        return self.row(submission_id)["status"]

    def statuses(self, ids: Iterable[str]) -> dict[str, str]:
        ids = list(ids)
        with self.engine.connect() as conn:
            return dict(conn.execute(select(Submission.id, Submission.status).where(Submission.id.in_(ids))).all())

    def all_final(self, ids: Iterable[str]) -> bool:
        ids = list(ids)
        statuses = self.statuses(ids)
        return len(statuses) == len(ids) and all(s in FINAL for s in statuses.values())

    def reports(self, submission_id: str) -> list[dict]:
        with self.engine.connect() as conn:
            rows = conn.execute(select(ReportRow.id, ReportRow.seq, ReportRow.status, ReportRow.reason)
                                .where(ReportRow.submission_id == submission_id).order_by(ReportRow.seq)).all()
        return [dict(r._mapping) for r in rows]

    def report_counts(self) -> dict[str, int]:
        with self.engine.connect() as conn:
            return dict(conn.execute(select(ReportRow.submission_id, func.count()).group_by(ReportRow.submission_id)).all())

    def submission_ids(self) -> list[str]:
        with self.engine.connect() as conn:
            return list(conn.execute(select(Submission.id)).scalars())

    def assert_exactly_one_current_report(self, submission_id: str, *, status: str = "graded") -> dict:
        """The promise: the submission is final, with one report row, and it is the current one."""
        row = self.row(submission_id)
        reports = self.reports(submission_id)
        assert row["status"] == status, f"{submission_id}: status {row['status']}, reports {reports}"
        assert len(reports) == 1, f"{submission_id}: {len(reports)} report rows: {reports}"
        assert row["current_report_id"] == reports[0]["id"], f"{submission_id}: current {row['current_report_id']} vs {reports}"
        assert reports[0]["status"] == status and reports[0]["seq"] == 1 and reports[0]["reason"] == "initial"
        assert row["lease_token"] is None
        return row


# --- processes seen through /proc ------------------------------------------------------------

def _proc_stat(pid: int) -> tuple[str, int] | None:
    """(state, ppid), or None if gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    rest = stat[stat.rindex(")") + 2:].split()
    return rest[0], int(rest[1])


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def _pids() -> list[int]:
    return [int(p) for p in os.listdir("/proc") if p.isdigit()]


def live(pid: int) -> bool:
    """Running (a zombie waiting for its reaper counts as dead)."""
    stat = _proc_stat(pid)
    return stat is not None and stat[0] not in ("Z", "X")


def descendants(root: int) -> set[int]:
    children: dict[int, list[int]] = {}
    for pid in _pids():
        stat = _proc_stat(pid)
        if stat is not None:
            children.setdefault(stat[1], []).append(pid)
    found: set[int] = set()
    todo = [root]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def sandbox_pids(marker: str) -> set[int]:
    """Live bwrap processes whose command line names `marker` (the test's own TMPDIR, where the
    job folders are, so another test's sandboxes never count)."""
    return {pid for pid in _pids() if live(pid) and "bwrap" in (cmd := _cmdline(pid)) and marker in cmd}


def sandbox_of(proc: Proc) -> set[int]:
    """Live bwrap children (and everything under them) of `proc`."""
    tree = descendants(proc.pid)
    return {pid for pid in tree if live(pid) and "bwrap" in _cmdline(pid)}


# --- Redis -------------------------------------------------------------------------------------

def redis_client(db: int = 0) -> redis.Redis:
    return redis.Redis(host=REDIS_HOST, port=REDIS_PORT, db=db, socket_timeout=2, socket_connect_timeout=2)


def redis_up() -> bool:
    try:
        return bool(redis_client().ping())
    except redis.RedisError:
        return False


def start_redis() -> None:
    if redis_up():
        return
    subprocess.run(REDIS_START, check=False, timeout=30, capture_output=True)
    wait_for(redis_up, timeout=30, interval=0.2, what="Redis to answer PING")


def stop_redis() -> None:
    """`redis-cli shutdown nosave`: every message in the broker is gone."""
    subprocess.run(["redis-cli", "-h", REDIS_HOST, "-p", str(REDIS_PORT), "shutdown", "nosave"],
                   check=False, timeout=30, capture_output=True)
    wait_for(lambda: not redis_up(), timeout=30, interval=0.2, what="Redis to stop")


def random_redis_db() -> int:
    """A database other than 0, so a test's queue is its own (another run's workers never take it)."""
    return random.randint(1, 15)
