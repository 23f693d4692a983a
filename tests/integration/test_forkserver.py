"""KERNELGRADE_SANDBOX_START=fork (sandbox/forkserver.py): attempts forked from a template that has
imported torch, each with the isolation of a fresh bwrap sandbox. The isolation tests and the
adversarial suite run against it with the variable set (docs/forkserver.md); these check what
only a forked child could get wrong: what it inherits from the template. Each check runs on a
cold child (forked for its attempt) and on a warm one (forked by the warm pool, its job streamed
in after its hello)."""
from __future__ import annotations

import errno
import os
import time

import pytest

from sandbox.backends.base import SandboxUnavailable
from sandbox.contract import DeviceMode, Limits
from sandbox.forkserver import START_ENV, ForkServer
from sandbox.runner import SandboxRunner
from tests.conftest import run_probes, scratch_files_body

pytestmark = pytest.mark.sandbox

BODY = '''
import os
import random
import resource


def probe_identity():
    return outcome(os.getpid() == 2 and os.getuid() == 65534 and os.getgid() == 65534)


def probe_capabilities():
    status = open("/proc/self/status").read()
    sets = [status.split(name + ":")[1].split()[0] for name in ("CapEff", "CapPrm", "CapBnd", "CapAmb", "CapInh")]
    return outcome(all(int(s, 16) == 0 for s in sets) and status.split("NoNewPrivs:")[1].split()[0] == "1"
                   and status.split("Seccomp:")[1].split()[0] == "2")


def probe_processes():
    return outcome(sorted(int(p) for p in os.listdir("/proc") if p.isdigit()) == [1, 2])


def probe_job_files():
    return outcome(sorted(os.listdir("/job")) == sorted(["exits.py", "given_check.py", "gpu_compile.py", "harness.py",
                                                          "inputs.safetensors", "job.json", "launch_hook.py",
                                                          "shared_triton_cache.py", "submission.py", "wire.py"]))


def probe_ptys():
    return outcome(os.listdir("/dev/pts") == ["ptmx"])


def probe_cpu_limit():
    return outcome(resource.getrlimit(resource.RLIMIT_CPU)[1] == 900)


def probe_init_capabilities():
    # pid 1 (a warm child's stays privileged until its job is in /job): no capability left by now
    status = open("/proc/1/status").read()
    sets = [status.split(name + ":")[1].split()[0] for name in ("CapEff", "CapPrm", "CapBnd", "CapAmb")]
    return outcome(all(int(s, 16) == 0 for s in sets) and status.split("Seccomp:")[1].split()[0] == "2")


def probe_job_read_only():
    for action in (lambda: open("/job/new.py", "w"), lambda: open("/job/submission.py", "a"),
                   lambda: os.chmod("/job/submission.py", 0o666)):
        try:
            action()
            return outcome(False)
        except OSError as exc:
            if exc.errno not in (30, 13, 1):  # EROFS, EACCES, EPERM
                return outcome(False, exc.errno)
    return outcome(True)


def probe_random():
    return outcome(True, random.getrandbits(52))
'''
NAMES = ["identity", "capabilities", "init_capabilities", "processes", "job_files", "job_read_only", "ptys",
         "cpu_limit", "random"]


class ForkRunner:
    """A runner in fork mode whose attempts take a cold child, or (`warm`) a warm pool's child."""

    def __init__(self, runner: SandboxRunner, warm: bool) -> None:
        self.runner, self.warm = runner, warm
        self.pool = runner.start_pool(mode=DeviceMode.interpreter, device_index=0, size=1) if warm else None

    def probes(self, body: str, names: list[str]):
        handed = self.pool.handed_total if self.pool is not None else 0
        if self.pool is not None:
            assert self.pool.wait_ready(1, 120), "the warm pool's forked child never said hello"
        result, cases = run_probes(self.runner, body, names)
        assert result.sandbox_start == "forked", f"the attempt's sandbox started {result.sandbox_start!r}"
        if self.pool is not None:
            assert self.pool.handed_total == handed + 1, "the attempt did not take the warm child"
            assert self.pool.forked_total >= 1 and self.pool.forked_total == self.pool.started_total
        else:
            assert self.runner.cold_starts >= 1
        return result, cases


def make_fork_runner(backend, monkeypatch, *, warm: bool, **limits) -> ForkRunner:
    if not ForkServer.available():
        pytest.skip("fork mode needs a writable pids cgroup and a Python outside /tmp (ForkServer.available)")
    monkeypatch.setenv(START_ENV, "fork")
    return ForkRunner(SandboxRunner(backend=backend, limits=Limits(**{"case_timeout_s": 60, **limits})), warm=warm)


def _templates(runner: SandboxRunner) -> list[ForkServer]:
    """The runner's templates: its one, or (root without a pids cgroup) those of a host uid each."""
    [server] = runner.forks.values()
    return list(getattr(server, "templates", [server]))


def _live_templates(runner: SandboxRunner) -> list[int]:
    return [t._proc.pid for t in _templates(runner) if t._proc is not None and t._proc.poll() is None]


@pytest.fixture(params=["cold", "warm"])
def fork_runner(request, bwrap_backend, monkeypatch):
    forks = make_fork_runner(bwrap_backend, monkeypatch, warm=request.param == "warm")
    yield forks
    forks.runner.close()


def test_a_forked_child_has_the_isolation_of_a_fresh_sandbox(fork_runner):
    """Two attempts from one template: each sees only itself and its own job (read-only), as uid
    65534 with no capability, the seccomp filter and its own ptys, its pid 1 without capabilities
    either; the generators it inherited are reseeded."""
    draws = []
    for _ in range(2):
        _, cases = fork_runner.probes(BODY, NAMES)
        for name in NAMES[:-1]:
            assert cases[name].status == "ok" and cases[name].outputs["out"][0] == 1.0, f"{name}: {cases[name]}"
        draws.append(cases["random"].outputs["out"][1])
    assert _live_templates(fork_runner.runner) and all(t._proc is not None and t._proc.poll() is None
                                                       for t in _templates(fork_runner.runner)), \
        "the template did not serve both attempts"
    assert draws[0] != draws[1], "two children drew the same random numbers: the template's state was not reseeded"


def test_the_template_ends_with_the_runner(fork_runner):
    fork_runner.probes(BODY, ["identity"])
    pids = _live_templates(fork_runner.runner)
    assert pids
    waiting = fork_runner.pool.pids() if fork_runner.pool is not None else []  # the refill, if any yet
    fork_runner.runner.close()
    for child in waiting:
        assert not os.path.exists(f"/proc/{child}"), "a warm child outlived its runner"
    for pid in pids:
        assert (not os.path.exists(f"/proc/{pid}")
                or open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0] == "Z")


def test_a_closed_template_is_never_started_again(bwrap_backend, monkeypatch, tmp_path):
    """A spawn that waited for the template while its server closed (a pool's refill, a cold start
    racing the runner's shutdown) must fail, not start a new template that nobody would close: the
    H200 found such a template alive after its grader had closed."""
    runner = make_fork_runner(bwrap_backend, monkeypatch, warm=False).runner
    server = ForkServer(backend=runner.backend, limits=runner.limits, mode=DeviceMode.interpreter, device_index=0)
    server.start()
    started = server._proc
    assert started is not None and started.poll() is None
    server.close()
    assert started.poll() is not None
    with pytest.raises(SandboxUnavailable, match="closed"):
        server.spawn_warm(job_dir=tmp_path)
    assert server._proc is started, "a new template was started after close()"
    runner.close()


def test_fresh_is_the_default(bwrap_backend, monkeypatch):
    monkeypatch.delenv(START_ENV, raising=False)
    runner = SandboxRunner(backend=bwrap_backend, limits=Limits())
    assert runner.start == "fresh" and runner._fork_server(DeviceMode.interpreter, 0) is None
    monkeypatch.setenv(START_ENV, "fork")
    assert SandboxRunner(backend=bwrap_backend, limits=Limits()).start == "fork"


def test_a_compile_run_starts_fresh_in_fork_mode(bwrap_backend, monkeypatch, tmp_path):
    """A compile run's sandbox mounts a staging folder of its own writable (compile_warm.py); a
    template's children share the template's mounts, so it never forks (on the H200 every
    prewarm compile failed with PermissionError on /triton-shared when it did)."""
    from sandbox.backends.base import TritonCacheMount
    monkeypatch.setenv(START_ENV, "fork")
    staging = bwrap_backend.with_triton_cache(TritonCacheMount(tmp_path, writable=True, reads=tmp_path))
    assert SandboxRunner(backend=staging, limits=Limits())._fork_server(DeviceMode.gpu, 0) is None
    reading = bwrap_backend.with_triton_cache(TritonCacheMount(tmp_path))
    runner = SandboxRunner(backend=reading, limits=Limits())
    assert runner._forks_wanted == (ForkServer.unavailable_reason() is None)


@pytest.mark.parametrize("start", ["cold", "warm"])
def test_a_forked_child_cannot_make_more_files_than_its_limit(bwrap_backend, monkeypatch, start):
    """The child mounts its own /tmp and /dev/shm with `nr_inodes` = Limits.tmpfs_files, so empty
    files (a kilobyte of kernel memory each, no bytes) stop at the limit as bytes stop at the size
    (a fresh bwrap sandbox's --tmpfs takes only a size: SECURITY.md, "Known weaknesses")."""
    limit = 300
    forks = make_fork_runner(bwrap_backend, monkeypatch, warm=start == "warm", tmpfs_files=limit)
    try:
        _, cases = forks.probes(scratch_files_body(limit), ["tmp", "shm"])
    finally:
        forks.runner.close()
    for name in ("tmp", "shm"):
        assert cases[name].status == "ok", cases[name]
        made, code, inodes = cases[name].outputs["out"].tolist()
        assert inodes == limit, f"/{name}: {inodes} inodes, not the limit {limit}"
        assert 0 < made < limit and code == errno.ENOSPC, f"/{name}: made {made} files (limit {limit}), errno {code}"


def test_a_warm_pool_outlives_its_template(bwrap_backend, monkeypatch):
    """The template dies under a warm child that waits for its job: the child is discarded (it died
    with the template, and a child of an earlier template never reads as alive), the next spawn
    starts a new template, and its warm child runs the next attempt."""
    forks = make_fork_runner(bwrap_backend, monkeypatch, warm=True)
    try:
        pool = forks.pool
        assert pool is not None and pool.wait_ready(1, 120)
        [server] = [t for t in _templates(forks.runner) if not t.idle()]  # the warm child's
        assert server._proc is not None
        first_template, [first_child] = server._proc.pid, pool.pids()
        os.killpg(first_template, 9)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not (pool.replaced_total >= 1 and pool.ready_count() == 1):
            time.sleep(0.05)
        assert pool.replaced_total >= 1 and first_child not in pool.pids(), "the dead template's child was kept"
        _, cases = forks.probes(BODY, ["identity", "processes"])
        assert all(c.outputs["out"][0] == 1.0 for c in cases.values()), cases
        assert _live_templates(forks.runner) and first_template not in _live_templates(forks.runner), "no new template"
    finally:
        forks.runner.close()


@pytest.mark.parametrize("why", ["unavailable", "spawn fails"])
def test_a_pool_that_cannot_fork_starts_fresh_and_says_why(bwrap_backend, monkeypatch, caplog, why):
    """Fork mode where no child can be forked (no pids cgroup, or a template that fails): the pool
    starts fresh sandboxes, the log says why, and the attempt says it ran in a fresh one."""
    import logging

    from sandbox.backends.base import SandboxUnavailable

    monkeypatch.setenv(START_ENV, "fork")
    if why == "unavailable":
        monkeypatch.setattr(ForkServer, "unavailable_reason", staticmethod(lambda: "no writable pids cgroup (test)"))
    else:
        if ForkServer.unavailable_reason() is not None:  # a template that fails needs one that could fork
            pytest.skip(f"no fork-server template here: {ForkServer.unavailable_reason()}")

        def refuse(self, **_):
            raise SandboxUnavailable("the fork-server template did not start (test)")

        monkeypatch.setattr(ForkServer, "spawn_warm", refuse)
    caplog.set_level(logging.WARNING)
    runner = SandboxRunner(backend=bwrap_backend, limits=Limits(case_timeout_s=60))
    try:
        pool = runner.start_pool(mode=DeviceMode.interpreter, device_index=0, size=1)
        assert pool is not None and pool.wait_ready(1, 120)
        result, _ = run_probes(runner, BODY, ["identity"])
        assert pool.handed_total == 1 and pool.forked_total == 0 and result.sandbox_start == "fresh"
    finally:
        runner.close()
    assert "(test)" in caplog.text and "fresh" in caplog.text, caplog.text


# --- root without a pids cgroup (the H200): a template per host uid, one child at a time ---------

BOMB = '''
import os


def probe_bomb():
    started = 0
    for _ in range(64):
        try:
            pid = os.fork()
        except OSError:
            break
        if pid == 0:
            os.setsid()  # out of the process group: only the pid namespace still holds it
            os.execv("/usr/bin/sleep", ["sleep", "120"])
        started += 1
    return outcome(started >= 64, started)
'''

LEAVE = '''
import ctypes
import os

libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long


def probe_leave():
    # a key in its session keyring (add_key, x86-64): keys are counted per host uid, not per process
    key = libc.syscall(248, b"user", b"kg-left-behind", b"job A", 5, ctypes.c_long(-3))
    for folder in ("/tmp", "/dev/shm"):
        with open(f"{folder}/kg-left-behind", "w") as fh:
            fh.write("job A")
    os.environ["KG_LEFT_BEHIND"] = "job A"
    if os.fork() == 0:  # a daemon: out of the harness's process group and session, its parent gone
        os.setsid()
        if os.fork() == 0:
            os.execv("/usr/bin/sleep", ["sleep", "120"])
        os._exit(0)
    os.wait()
    return outcome(True, key)


def probe_find():
    found = [f"{folder}/{name}" for folder in ("/tmp", "/dev/shm") for name in os.listdir(folder)]
    key = libc.syscall(249, b"user", b"kg-left-behind", None, ctypes.c_long(0))  # request_key: any keyring
    return outcome(bool(found) or "KG_LEFT_BEHIND" in os.environ or key > 0, len(found))
'''


def _uid_of(result) -> int:
    """The template's host uid, as the run's process_limit names it."""
    prefix = "RLIMIT_NPROC (host uid "
    assert result.process_limit.startswith(prefix) and result.process_limit.endswith(
        ", its template's, one job at a time)"), result.process_limit
    return int(result.process_limit[len(prefix):].split(",")[0])


def _tasks_of(uid: int) -> list[int]:
    """Live processes of host uid `uid` (real uid)."""
    found = []
    for entry in os.listdir("/proc"):
        try:
            status = open(f"/proc/{entry}/status").read() if entry.isdigit() else ""
        except OSError:
            continue
        if status and int(status.split("Uid:")[1].split()[0]) == uid and "\nState:\tZ" not in status:
            found.append(int(entry))
    return found


def make_uid_fork_runner(monkeypatch, *, warm: bool, **limits) -> ForkRunner:
    """Fork mode as root where no pids cgroup can be written (detection patched off, as
    scripts/no-pids-cgroup does for a whole run): templates of a host uid each."""
    import sys

    import sandbox.backends.bwrap as bwrap
    import sandbox.cgroups as cgroups
    from sandbox.backends.bwrap import BwrapBackend
    from sandbox.forkserver import UidTemplates

    if os.geteuid() != 0:
        pytest.skip("templates of a host uid each are root's fallback")
    monkeypatch.setitem(cgroups._detected, "pids", (None, "no pids cgroup (test)"))
    monkeypatch.setattr(bwrap, "_unprivileged", {})
    backend = BwrapBackend(python=sys.executable, hidden_paths=[])
    why = ForkServer.unavailable_reason(backend)
    if why is not None:  # a venv under /root (mode 700): run under scripts/no-pids-cgroup
        pytest.skip(f"{why}; scripts/no-pids-cgroup runs it where the Python environment is not reachable")
    monkeypatch.setenv(START_ENV, "fork")
    forks = ForkRunner(SandboxRunner(backend=backend, limits=Limits(**{"case_timeout_s": 60, **limits})), warm=warm)
    assert isinstance(forks.runner._fork_server(DeviceMode.interpreter, 0), UidTemplates)
    return forks


@pytest.mark.parametrize("start", ["cold", "warm"])
def test_without_a_pids_cgroup_a_fork_bomb_is_capped_and_the_next_job_of_its_template_gets_its_whole_budget(
        monkeypatch, start):
    """Each job is a fork bomb whose processes leave the process group and would live 120 s: the
    template's host uid's RLIMIT_NPROC caps each, and a later job on the same template gets the
    same number of processes as the first: nothing of the earlier job was left to count."""
    forks = make_uid_fork_runner(monkeypatch, warm=start == "warm", processes=16)
    cap = Limits(processes=16).process_cap(DeviceMode.interpreter)
    counts: dict[int, list[float]] = {}
    try:
        for _ in range(4):  # until a template serves its second job (warm: the pool refills from another first)
            result, cases = forks.probes(BOMB, ["bomb"])
            breached, started = cases["bomb"].outputs["out"].tolist()
            assert breached == 0.0 and 0 < started < cap, f"{started} forks with a cap of {cap}"
            counts.setdefault(_uid_of(result), []).append(started)
            if any(len(c) > 1 for c in counts.values()):
                break
    finally:
        forks.runner.close()
    again = [c for c in counts.values() if len(c) > 1]
    assert again, f"no template served two jobs: {counts}"
    assert len({s for c in counts.values() for s in c}) == 1, f"the jobs got different budgets: {counts}"


def test_without_a_pids_cgroup_nothing_of_a_job_is_left_for_the_next_child_of_its_template(monkeypatch):
    """Job A leaves files in /tmp and /dev/shm, an environment variable, a daemon (its own session,
    its parent gone) and tries a key in its session keyring (refused by the seccomp filter since
    test_the_kernel_keyrings_are_refused; tried still, for a sandbox without the filter). Once A's run is over no process of
    its host uid is left but the template's own three (its bwrap, bwrap's init, the template),
    and job B, forked by the same template, finds none of the rest."""
    forks = make_uid_fork_runner(monkeypatch, warm=False)
    try:
        first, cases = forks.probes(LEAVE, ["leave"])
        assert cases["leave"].status == "ok" and cases["leave"].outputs["out"][0] == 1.0, cases["leave"]
        uid = _uid_of(first)
        deadline = time.monotonic() + 60
        while len(_tasks_of(uid)) != 3 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(_tasks_of(uid)) == 3, f"processes of host uid {uid} outlived job A: {_tasks_of(uid)}"
        second, cases = forks.probes(LEAVE, ["find"])
        assert _uid_of(second) == uid, "job B ran on another template"
        assert cases["find"].status == "ok" and cases["find"].outputs["out"].tolist() == [0.0, 0.0], cases["find"]
    finally:
        forks.runner.close()


def test_a_template_of_a_host_uid_forks_no_second_child_while_one_lives(monkeypatch, tmp_path):
    """Both guards of one child at a time: the trusted side refuses a second spawn while the
    first child lives; and where it did ask (its check bypassed), the template forks the second
    only once the first and everything of it is gone."""
    import threading

    from sandbox.backends.base import SandboxUnavailable

    forks = make_uid_fork_runner(monkeypatch, warm=False)
    server = ForkServer(backend=forks.runner.backend, limits=forks.runner.limits, mode=DeviceMode.interpreter,
                        device_index=0, own_uid=True)
    try:
        first = server.spawn_warm(job_dir=tmp_path)
        with pytest.raises(SandboxUnavailable, match="has not ended"):
            server.spawn_warm(job_dir=tmp_path)
        monkeypatch.setattr(ForkServer, "idle", lambda self: True)
        second: list = []
        asking = threading.Thread(target=lambda: second.append(server.spawn_warm(job_dir=tmp_path)))
        asking.start()
        asking.join(3)
        assert asking.is_alive() and not second, "the template forked a second child while the first lived"
        first.kill(5)
        asking.join(60)
        assert second and second[0].alive() and not first.alive()
        second[0].kill(5)
    finally:
        server.close()
        forks.runner.close()


def test_a_template_of_a_host_uid_whose_server_closes_while_it_starts_is_not_left_running(monkeypatch, tmp_path):
    """close() from another thread while a template is being prepared (a grader closing while
    its warm pool's refill, or a cold attempt, starts a template: the H200's forked adversarial
    run): the start must not go on to launch a template that nobody owns any more. The spawn
    fails, and no process of the uid leased for it is left."""
    import threading

    from sandbox.backends.bwrap import BwrapBackend

    forks = make_uid_fork_runner(monkeypatch, warm=False)
    server = ForkServer(backend=forks.runner.backend, limits=forks.runner.limits, mode=DeviceMode.interpreter,
                        device_index=0, own_uid=True)
    uids: list[int] = []
    prepare = BwrapBackend.template_spec

    def close_meanwhile(self, **kwargs):
        uids.append(kwargs["host_uid"])
        spec = prepare(self, **kwargs)
        closing = threading.Thread(target=server.close)  # the grader's close, from its own thread
        closing.start()
        closing.join(60)
        assert not closing.is_alive(), "close() waited for the template's start"
        return spec

    monkeypatch.setattr(BwrapBackend, "template_spec", close_meanwhile)
    forked = []
    try:
        with pytest.raises(SandboxUnavailable, match="closed"):
            forked.append(server.spawn_warm(job_dir=tmp_path))
        assert server._proc is None, "a template was launched after its server closed"
    finally:
        for child in forked:
            child.kill(5)
        server.close()  # (without the fix: the template started after close, killed here)
        forks.runner.close()
    assert len(uids) == 1
    assert not forked, "a child was forked by a template started after its server closed"
    assert not _tasks_of(uids[0]), f"processes of the template's host uid {uids[0]} outlived close()"


def test_the_templates_of_a_host_uid_end_when_close_returns(monkeypatch):
    """A runner's close() returns only once nothing of its templates is left: no process of any
    uid they leased (bwrap, its init, the template, a warm child), not merely their first bwrap."""
    forks = make_uid_fork_runner(monkeypatch, warm=True)
    try:
        assert forks.pool is not None and forks.pool.wait_ready(1, 120), "the warm child never said hello"
        uids = [t._lease.uid for t in _templates(forks.runner) if t._lease is not None]
        assert uids and all(_tasks_of(uid) for uid in uids[:1])
    finally:
        forks.runner.close()
    left = {uid: _tasks_of(uid) for uid in uids}
    assert not any(left.values()), f"processes of the templates' host uids outlived close(): {left}"


EXITING = '''
import json, os, sys
import sandbox.cgroups as cgroups
cgroups._detected["pids"] = (None, "no pids cgroup (test)")
os.environ["KERNELGRADE_SANDBOX_START"] = "fork"
from sandbox.backends.bwrap import BwrapBackend
from sandbox.contract import DeviceMode, Limits
from sandbox.runner import SandboxRunner
runner = SandboxRunner(backend=BwrapBackend(python=sys.executable, hidden_paths=[]), limits=Limits())
pool = runner.start_pool(mode=DeviceMode.interpreter, device_index=0, size=1)
assert pool.wait_ready(1, 120), "no warm child"
templates = runner.forks[(DeviceMode.interpreter, 0)].templates
print(json.dumps([t._lease.uid for t in templates if t._lease is not None]), flush=True)
if sys.argv[1] == "killed":
    os.kill(os.getpid(), 9)
'''


@pytest.mark.parametrize("how", ["exits", "killed"])
def test_the_templates_of_a_host_uid_end_with_their_process(monkeypatch, how):
    """A process that ends without closing its runner (returns from its main, or is SIGKILLed)
    leaves no template, no warm child, no process of a uid they leased."""
    import json
    import subprocess
    import sys

    from service.config import REPO_ROOT

    make_uid_fork_runner(monkeypatch, warm=False).runner.close()  # skips where no template of a host uid can run
    done = subprocess.run([sys.executable, "-c", EXITING, how], capture_output=True, text=True, timeout=300,
                          cwd=REPO_ROOT, env={**os.environ, "PYTHONPATH": str(REPO_ROOT)})
    assert done.stdout.strip(), done.stderr[-3000:]
    uids = json.loads(done.stdout.strip().splitlines()[-1])
    assert uids, done.stderr[-3000:]
    deadline = time.monotonic() + 30
    while any(_tasks_of(uid) for uid in uids) and time.monotonic() < deadline:
        time.sleep(0.1)
    left = {uid: _tasks_of(uid) for uid in uids}
    assert not any(left.values()), f"processes of the templates' host uids outlived their process: {left}"
