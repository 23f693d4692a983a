"""The docker backend against a real Docker engine: the launcher's lifecycle (frames, caps, budget,
removal in every case, the reaper after SIGKILL, a killed worker, the sweep), the limits as the
container itself sees them, and a missing or stopped engine as not_gradable with an operator's
message (and in the readiness check). The isolation suites run under docker too
(test_sandbox_isolation.py, tests/adversarial, test_lesson06_grading.py).
"""
from __future__ import annotations

import errno
import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
import threading
import time
import uuid
from pathlib import Path

import httpx
import numpy as np
import pytest

from sandbox.backends.base import Confinement
from sandbox.backends.docker import engine
from sandbox.backends.docker.backend import DockerBackend
from sandbox.backends.docker.launcher import EXIT_KILLED, EXIT_LAUNCHER_FAILED, launch
from sandbox.backends.docker.memory import LauncherMemoryReport, encode
from sandbox.backends.docker.options import DockerOptions
from sandbox.backends.docker.reaper import Reaper
from sandbox.backends.docker.spec import BUDGET_LABEL, LABEL, OWNER_LABEL, ContainerView, container_spec
from sandbox.cgroups import MemoryEvents
from sandbox.contract import CaseJob, DeviceMode, Limits, MiB, TensorArg
from sandbox.runner import SandboxRunner
from service.bootstrap import build_grader
from service.config import REPO_ROOT, Settings
from service.submission import Submission
from tests.conftest import scratch_files_body
from tests.support.backends import docker_image
from tests.support.servers import LiveServer
from tests.support.waiting import wait_for

pytestmark = [pytest.mark.docker, pytest.mark.sandbox]

EXAMPLE = REPO_ROOT / "exercises/lesson06_mean_var/example_submission.json"


@pytest.fixture(scope="module")
def host_image() -> str:
    """The bare host-system image: containers start in well under a second with this machine's /bin/sh."""
    return docker_image("docker-host", kind="host")


@pytest.fixture(scope="module")
def api():
    docker_image("docker-host", kind="host")  # skips (or fails in CI) without an engine
    client = engine.client()
    yield client
    client.close()


def containers_of(api, job: str) -> list:
    # sparse: the list endpoint's rows only; a full list inspects each container again, and one the
    # reaper removes in between raises NotFound (CI, stop 38)
    return api.containers.list(all=True, sparse=True, filters={"label": f"kernelgrade.job={job}"})


def shell_spec(host_image: str, job_dir: Path, script: str, **limits) -> dict:
    """A sandbox container (the backend's own spec) whose workload is a shell script."""
    view = ContainerView(python="/usr/bin/python3", system_binds=("/usr", "/etc/ld.so.cache"))
    spec = container_spec(job_dir=job_dir, mode=DeviceMode.interpreter, device_index=0, limits=Limits(**limits),
                          options=DockerOptions(image=host_image, cpus=1), view=view, owner="test/0/0")
    spec["command"] = ["/bin/sh", "-c", script]
    return spec


def run_launcher(api, spec: dict, *, output_cap: int = 1 << 20, timeout_s: float = 60,
                 memory_fd: int | None = None) -> tuple[int, bytes, str, float]:
    """launch() in this process with a real engine and a real reaper; (exit, verdict bytes, log, seconds)."""
    verdict_r, verdict_w = os.pipe()
    log_r, log_w = os.pipe()
    chunks: dict[int, bytearray] = {verdict_r: bytearray(), log_r: bytearray()}

    def drain(fd: int) -> None:
        for chunk in iter(lambda: os.read(fd, 65536), b""):
            chunks[fd].extend(chunk)

    readers = [threading.Thread(target=drain, args=(fd,)) for fd in chunks]
    for reader in readers:
        reader.start()
    started = time.monotonic()
    try:
        code = launch(spec, client=api, verdict_fd=verdict_w, log_fd=log_w, output_cap=output_cap, timeout_s=timeout_s,
                      kill_grace_s=5, reaper_factory=lambda cid: Reaper(cid, env=engine.launcher_env()),
                      memory_fd=memory_fd)
    finally:
        os.close(verdict_w)
        os.close(log_w)
    for reader in readers:
        reader.join(10)
    os.close(verdict_r)
    os.close(log_r)
    return code, bytes(chunks[verdict_r]), bytes(chunks[log_r]).decode(), time.monotonic() - started


def test_stdout_reaches_the_verdict_fd_unchanged_stderr_the_log_and_the_container_is_removed(api, host_image, tmp_path):
    job = tmp_path / f"kg-job-{uuid.uuid4().hex[:8]}"
    job.mkdir()
    script = "printf 'frame-one'; echo 'student print' >&2; head -c 200000 /dev/zero | tr '\\0' 'x'; exit 3"
    code, verdict, log, _ = run_launcher(api, shell_spec(host_image, job, script))
    assert code == 3  # the exit status passes through (the harness's HarnessExit.gpu_poisoned is 4)
    assert verdict == b"frame-one" + b"x" * 200000
    assert log == "student print\n"
    assert containers_of(api, job.name) == []


def test_output_over_the_cap_is_cut_one_byte_past_it_and_the_container_killed(api, host_image, tmp_path):
    job = tmp_path / f"kg-job-{uuid.uuid4().hex[:8]}"
    job.mkdir()
    code, verdict, log, _ = run_launcher(api, shell_spec(host_image, job, "cat /dev/zero"), output_cap=4096)
    assert len(verdict) == 4097  # one byte over: the runner's FrameReader rejects the channel
    assert code == EXIT_KILLED and "exceeded 4096 bytes" in log
    assert containers_of(api, job.name) == []


def test_a_container_that_outlives_the_run_budget_is_killed_and_removed(api, host_image, tmp_path):
    job = tmp_path / f"kg-job-{uuid.uuid4().hex[:8]}"
    job.mkdir()
    code, _, log, elapsed = run_launcher(api, shell_spec(host_image, job, "sleep 600"), timeout_s=2)
    assert code == EXIT_KILLED and "run budget of 2 s exhausted" in log
    assert elapsed < 60
    assert containers_of(api, job.name) == []


def run_reporting_memory(api, spec: dict) -> tuple[int, str, list[MemoryEvents], MemoryEvents | None]:
    """run_launcher with the runner's memory pipe: (exit, log, what the runner read while the container
    ran, every 0.1 s, and the last report, read after the launcher removed the container)."""
    report = LauncherMemoryReport.pipe()
    seen: list[MemoryEvents] = []
    done = threading.Event()

    def watch() -> None:
        while not done.wait(0.1):
            events = report.events()
            if events is not None:
                seen.append(events)

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        code, _, log, _ = run_launcher(api, spec, memory_fd=report.take_write_fd())
    finally:
        done.set()
        watcher.join(10)
    last = report.events()
    report.close()
    return code, log, seen, last


def test_an_oom_kill_reaches_the_runner_on_the_memory_pipe_not_as_a_plain_sigkill(api, host_image, tmp_path):
    """Past mem_limit the kernel kills the container's process (exit 137, as a SIGKILL looks): the
    launcher tells the runner it was the memory limit, from the engine's State.OOMKilled and the
    container's cgroup, before it removes the container."""
    job = tmp_path / f"kg-job-{uuid.uuid4().hex[:8]}"
    job.mkdir()
    spec = shell_spec(host_image, job, "exec /usr/bin/python3 -c 'b = bytearray(512 << 20)'", memory_bytes=64 * MiB)
    code, log, _, last = run_reporting_memory(api, spec)
    assert code == EXIT_KILLED, log
    assert last is not None and last.oom_kills >= 1, last
    assert containers_of(api, job.name) == []


def test_a_container_thrashing_at_its_limit_shows_growing_refaults_while_full(api, host_image, tmp_path):
    """Below an OOM kill: anonymous memory near the limit and a file read over and over, whose pages
    the container's own cgroup must evict and read again (the file starts out of the page cache, so
    its pages are charged to the container). While it runs, the runner sees the cgroup full and its
    refaults grow (what sandbox/limit_watch.py calls a timeout at the limit); no OOM kill."""
    job = tmp_path / f"kg-job-{uuid.uuid4().hex[:8]}"
    job.mkdir()
    with open(job / "pages.bin", "wb") as fh:
        block = os.urandom(MiB)
        for _ in range(48):
            fh.write(block)
        fh.flush()
        os.fsync(fh.fileno())
        os.posix_fadvise(fh.fileno(), 0, 0, os.POSIX_FADV_DONTNEED)
    os.chmod(job / "pages.bin", 0o644)
    program = textwrap.dedent("""
        import os, time
        held = bytearray(36 << 20)
        for i in range(0, len(held), 4096):
            held[i] = 1
        ends = time.monotonic() + 3
        while time.monotonic() < ends:
            fd = os.open("/job/pages.bin", os.O_RDONLY)
            while os.read(fd, 1 << 20):
                pass
            os.close(fd)
    """)
    (job / "thrash.py").write_text(program)
    os.chmod(job / "thrash.py", 0o644)
    spec = shell_spec(host_image, job, "exec /usr/bin/python3 /job/thrash.py", memory_bytes=64 * MiB)
    code, log, seen, last = run_reporting_memory(api, spec)
    assert code == 0, log
    assert last is not None and last.oom_kills == 0, last
    assert seen and any(e.full and e.refaults > seen[0].refaults for e in seen), seen


def test_a_missing_image_is_the_launchers_failure_with_its_reason(api, host_image, tmp_path):
    job = tmp_path / f"kg-job-{uuid.uuid4().hex[:8]}"
    job.mkdir()
    spec = shell_spec(host_image, job, "true")
    spec["image"] = "kernelgrade-no-such-image:0"
    code, verdict, log, _ = run_launcher(api, spec)
    assert code == EXIT_LAUNCHER_FAILED and verdict == b""
    assert "could not run the sandbox container" in log and "kernelgrade-no-such-image" in log


def start_launcher(host_image: str, job: Path, script: str) -> subprocess.Popen:
    """The launcher as the runner starts it: its own process group, the backend's argv and env."""
    spec = shell_spec(host_image, job, script)
    read_fd, write_fd = os.pipe()
    argv = [sys.executable, "-P", "-s", "-m", "sandbox.backends.docker", "run", "--verdict-fd", str(write_fd),
            "--output-cap", "1000", "--timeout", "600", "--kill-grace", "5", "--spec", json.dumps(spec)]
    proc = subprocess.Popen(argv, env=engine.launcher_env(), pass_fds=(write_fd,), start_new_session=True,
                            stdout=subprocess.DEVNULL)
    os.close(write_fd)
    proc.verdict_fd = read_fd  # type: ignore[attr-defined]
    return proc


def test_sigkill_of_the_launchers_process_group_still_removes_the_container(api, host_image, tmp_path):
    """The runner's per-case deadline: SIGKILL to the launcher's whole group, which no `finally` survives."""
    job = tmp_path / f"kg-job-{uuid.uuid4().hex[:8]}"
    job.mkdir()
    proc = start_launcher(host_image, job, "sleep 600")
    try:
        wait_for(lambda: [c for c in containers_of(api, job.name) if c.status == "running"], timeout=60,
                 what="the sandbox container to run")
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(10)
        wait_for(lambda: containers_of(api, job.name) == [], timeout=30, what="the reaper to remove the container")
    finally:
        os.close(proc.verdict_fd)


WORKER = textwrap.dedent('''
    import sys
    from sandbox.backends import make_backend
    from sandbox.contract import CaseJob, DeviceMode, Limits, TensorArg
    from sandbox.runner import SandboxRunner
    import numpy as np

    backend = make_backend("docker", python=sys.executable, hidden_paths=[])
    runner = SandboxRunner(backend=backend, limits=Limits(case_timeout_s=600, run_timeout_s=900))
    program = "import time\\ndef spin(x):\\n    open('/tmp/spinning', 'w').close()\\n    time.sleep(900)\\n"
    runner.run(program=program, given_check=None, given_seed=0, entry_point="spin",
               cases=[CaseJob(id="c", args=[TensorArg(key="x")], outputs=["y"])],
               inputs={"x": np.zeros(1, dtype=np.float32)}, mode=DeviceMode.interpreter)
''')


def test_a_worker_killed_mid_case_leaves_no_container_behind(api, host_image, tmp_path):
    """kill -9 of the grading process alone: its launcher dies with it (PR_SET_PDEATHSIG) and the
    reaper removes the container; the case had 600 s left."""
    env = {**os.environ, "KERNELGRADE_DOCKER_IMAGE": host_image, "TMPDIR": str(tmp_path)}
    worker = subprocess.Popen([sys.executable, "-c", WORKER], env=env, cwd=REPO_ROOT)
    try:
        def ours():
            return [c for c in api.containers.list(sparse=True, filters={"label": LABEL})
                    if (c.attrs.get("Labels") or {}).get(OWNER_LABEL, "").split("/")[1:2] == [str(worker.pid)]]

        (container,) = wait_for(ours, timeout=120, what="the worker's sandbox container")
        wait_for(lambda: _in_the_case(container), timeout=120, what="the case to be running")
        worker.kill()
        worker.wait(10)
        wait_for(lambda: not ours(), timeout=30, what="the killed worker's container to be removed")
    finally:
        if worker.poll() is None:
            worker.kill()


def _in_the_case(container) -> bool:
    """The student's code is running: it left /tmp/spinning in the container's private /tmp."""
    try:
        return container.exec_run(["/bin/sh", "-c", "test -e /tmp/spinning"]).exit_code == 0
    except Exception:  # noqa: BLE001 - it exited meanwhile
        return False


def test_the_sweep_removes_containers_whose_owner_died_or_that_outlived_their_budget(api, host_image, monkeypatch):
    dead = subprocess.Popen(["true"])
    dead.wait()
    mine = f"{socket.gethostname()}/{os.getpid()}/{open(f'/proc/{os.getpid()}/stat').read().rsplit(')', 1)[1].split()[19]}"
    made = {}
    for name, owner, budget in [("dead-owner", f"{socket.gethostname()}/{dead.pid}/1", "600"),
                                ("past-budget", mine, "-120"), ("live", mine, "600")]:
        made[name] = api.containers.create(host_image, ["/bin/sh", "-c", "sleep 600"], network_mode="none",
                                           volumes={"/usr": {"bind": "/usr", "mode": "ro"}},
                                           labels={LABEL: "1", OWNER_LABEL: owner, BUDGET_LABEL: budget,
                                                   "kernelgrade.job": f"sweep-{name}-{uuid.uuid4().hex[:6]}"})
        made[name].start()
    try:
        from sandbox.backends.docker import backend as backend_module

        monkeypatch.setattr(backend_module, "_last_sweep", {})
        DockerBackend(options=DockerOptions(image=host_image)).check()
        left = {c.id for c in api.containers.list(all=True, sparse=True, filters={"label": LABEL})}
        assert made["dead-owner"].id not in left and made["past-budget"].id not in left
        assert made["live"].id in left
    finally:
        for container in made.values():
            try:
                container.remove(force=True)
            except Exception:  # noqa: BLE001 - swept already
                pass


class ReportedBackend(DockerBackend):
    """The docker backend whose runner-side memory report this test writes, as the launcher of a
    container thrashing at its limit would (a real thrash needs file pages no other cgroup holds:
    test_a_container_thrashing_at_its_limit_shows_growing_refaults_while_full); its real launcher
    reports nothing. The runner, the container and the timeout are real."""

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.write_fds: list[int] = []

    def confine(self, **kwargs) -> Confinement:
        confinement = super().confine(**kwargs)
        assert confinement.memory_report is not None
        confinement.memory_report.close()
        report = LauncherMemoryReport.pipe()
        fd = report.take_write_fd()
        assert fd is not None
        self.write_fds.append(fd)
        confinement.memory_report = report
        return confinement


def run_spinning_case(host_image: str, tmp_path: Path, *, thrashing: bool):
    """One case that sleeps past its time limit, while (if `thrashing`) the report says refaults grow
    in a full cgroup."""
    backend = ReportedBackend(options=DockerOptions(image=host_image, cpus=1))
    runner = SandboxRunner(backend=backend, limits=Limits(case_timeout_s=3, run_timeout_s=180), work_root=tmp_path)
    done = threading.Event()

    def report() -> None:
        refaults = 0
        while not done.wait(0.2):
            refaults += 1000
            for fd in backend.write_fds:
                try:
                    os.write(fd, encode(MemoryEvents(refaults=refaults, full=True)))
                except OSError:
                    pass

    writer = threading.Thread(target=report)
    if thrashing:
        writer.start()
    try:
        result = runner.run(program="import time\ndef spin(x):\n    time.sleep(900)\n", given_check=None,
                            given_seed=0, entry_point="spin",
                            cases=[CaseJob(id="c", args=[TensorArg(key="x")], outputs=["y"])],
                            inputs={"x": np.zeros(1, dtype=np.float32)}, mode=DeviceMode.interpreter)
    finally:
        done.set()
        if thrashing:
            writer.join(10)
        for fd in backend.write_fds:
            os.close(fd)
        runner.close()
    assert result.infra_error is None, result.infra_error
    (case,) = result.cases
    return case


def test_a_timeout_while_thrashing_at_the_limit_says_out_of_memory_and_a_plain_one_does_not(host_image, tmp_path):
    """sandbox/limit_watch.py through the runner: the same hang, a timeout either way; out of memory
    only while the memory report shows the cgroup at its limit to the end."""
    case = run_spinning_case(host_image, tmp_path, thrashing=True)
    assert case.status == "timeout" and case.said is not None, case
    assert case.said.code == "sandbox.out_of_memory.at_timeout", case.said
    assert case.said.params["limit"] == "docker memory cgroup 16 GiB, no swap"
    assert case.said.params["time_limit"] == 3 and case.said.params["elapsed"] >= 3
    plain = run_spinning_case(host_image, tmp_path, thrashing=False)
    assert plain.status == "timeout" and plain.said is not None and plain.said.code == "sandbox.timeout", plain


@pytest.mark.sandbox_backends("docker", "docker-host")
def test_the_container_sees_its_limits_from_the_kernel(probes):
    """From inside: seccomp filtering, no-new-privileges, no capabilities, the pids and memory
    cgroup limits, a capped /tmp, a read-only root (the spec's settings as the engine applied them)."""
    body = '''
import os


def status(field):
    with open("/proc/self/status") as fh:
        return next(line.split(":", 1)[1].strip() for line in fh if line.startswith(field + ":"))


def cgroup_value(*candidates):
    for path in candidates:
        try:
            with open(path) as fh:
                value = fh.read().split()[0]
        except OSError:
            continue
        return float("inf") if value == "max" else float(value)
    return -1.0


def probe_kernel():
    tmp = os.statvfs("/tmp")
    return torch.tensor([
        float(status("Seccomp")), float(status("NoNewPrivs")), float(int(status("CapEff"), 16)),
        cgroup_value("/sys/fs/cgroup/pids.max", "/sys/fs/cgroup/pids/pids.max"),
        cgroup_value("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"),
        float(tmp.f_blocks * tmp.f_frsize), float(os.statvfs("/").f_flag & os.ST_RDONLY),
    ], dtype=torch.float64)
'''
    _, cases = probes(body, ["kernel"], processes=77, memory_bytes=3 << 30, tmpfs_bytes=48 * MiB)
    seccomp, no_new_privs, caps, pids_max, memory_max, tmp_bytes, root_ro = cases["kernel"].outputs["out"].tolist()
    assert seccomp == 2, "no seccomp filter (2 = filtering)"
    assert no_new_privs == 1 and caps == 0
    assert pids_max == Limits(processes=77).process_cap(DeviceMode.interpreter)  # 77 + the runtime's own
    assert memory_max == 3 << 30
    assert tmp_bytes == 48 * MiB and root_ro == 1


@pytest.mark.sandbox_backends("docker", "docker-host")
def test_the_container_cannot_make_more_files_than_its_limit(probes):
    """/tmp and /dev/shm are the spec's tmpfs mounts with `nr_inodes` = Limits.tmpfs_files: empty
    files stop at the limit as bytes stop at the size (the engine's own shm mount takes only a size)."""
    limit = 300
    _, cases = probes(scratch_files_body(limit), ["tmp", "shm"], tmpfs_files=limit)
    for name in ("tmp", "shm"):
        assert cases[name].status == "ok", cases[name]
        made, code, inodes = cases[name].outputs["out"].tolist()
        assert inodes == limit, f"/{name}: {inodes} inodes, not the limit {limit}"
        assert 0 < made < limit and code == errno.ENOSPC, f"/{name}: made {made} files (limit {limit}), errno {code}"


def write_socket_that_refuses(tmp_path: Path) -> str:
    """A unix socket with nothing accepting on it: what clients see of a stopped engine."""
    path = tmp_path / "docker.sock"
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(str(path))
    listener.close()  # the file stays; connecting is refused
    return f"unix://{path}"


@pytest.mark.parametrize("engine_state", ["stopped", "absent"])
def test_an_engine_that_is_down_makes_the_submission_not_gradable_with_an_operators_message(
        engine_state, tmp_path, monkeypatch):
    address = write_socket_that_refuses(tmp_path) if engine_state == "stopped" else f"unix://{tmp_path}/none.sock"
    monkeypatch.setenv("DOCKER_HOST", address)
    grader = build_grader(Settings(sandbox="docker", warm_pool=0))
    report = grader.grade(Submission.model_validate_json(EXAMPLE.read_text(encoding="utf-8")), secret_seed=1)
    assert report.status == "not_gradable", report.status
    assert "不是你的问题" in report.message  # the student is told it is not their failure
    assert f"the Docker engine is not reachable at {address}" in report.message
    assert "start it" in report.message
    assert not report.score.passed and report.cases == [] or all(not c.passed for c in report.cases)


def test_a_missing_sandbox_image_is_not_gradable_and_says_how_to_build_it(api, monkeypatch):
    monkeypatch.setenv("KERNELGRADE_DOCKER_IMAGE", "kernelgrade-no-such-image:0")
    grader = build_grader(Settings(sandbox="docker", warm_pool=0))
    report = grader.grade(Submission.model_validate_json(EXAMPLE.read_text(encoding="utf-8")), secret_seed=1)
    assert report.status == "not_gradable"
    assert "'kernelgrade-no-such-image:0' is not on the Docker engine" in report.message
    assert "kernelgrade image build" in report.message


def test_readiness_says_when_the_docker_engine_is_down(tmp_path, monkeypatch):
    monkeypatch.setenv("DOCKER_HOST", write_socket_that_refuses(tmp_path))
    settings = Settings(sandbox="docker", data_dir=tmp_path, database_url=f"sqlite:///{tmp_path}/kg.db", warm_pool=0)
    with LiveServer(settings) as server:
        response = httpx.get(f"{server.url}/readyz", timeout=30)
    assert response.status_code == 503
    checks = response.json()["checks"]
    assert checks["database"] == "ok"
    assert checks["sandbox"].startswith("unavailable (docker): the Docker engine is not reachable"), checks


def test_readiness_is_ok_with_a_running_engine(host_image, tmp_path, monkeypatch):
    monkeypatch.setenv("KERNELGRADE_DOCKER_IMAGE", host_image)
    settings = Settings(sandbox="docker", data_dir=tmp_path, database_url=f"sqlite:///{tmp_path}/kg.db", warm_pool=0)
    with LiveServer(settings) as server:
        response = httpx.get(f"{server.url}/readyz", timeout=30)
    assert response.status_code == 200, response.text
    assert response.json()["checks"]["sandbox"] == "ok (docker)"
