"""The compose stack up for real on a CPU machine: docs/deploy.md's "A host without a registry"
commands, run as written (from the block between its `compose-test` markers), bring up the API, a
worker, PostgreSQL and Redis; the example submission posted through the API container comes back
graded; a worker container killed mid-grade is restarted by its restart policy and the submission
still reaches exactly one report.

Runs in a scratch folder holding copies of docker-compose.yml, deploy/ and the example (a
project of its own: nothing of a developer's own stack or .env is touched), with KERNELGRADE_PORT
set to a free port, KERNELGRADE_JOBS_DIR to a scratch folder and KERNELGRADE_LEASE_S=10 in the
environment, which compose prefers to .env.
`docker compose` becomes Debian's `docker-compose` where the plugin is missing.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from tests.support.backends import docker_image
from tests.support.servers import free_port
from tests.support.waiting import wait_for

ROOT = Path(__file__).resolve().parents[2]
DEPLOY_DOC = ROOT / "docs" / "deploy.md"
LEASE_S = 10

pytestmark = [pytest.mark.docker, pytest.mark.docker_images("full", "stack"), pytest.mark.timeout(1500)]


def documented_commands() -> str:
    text = DEPLOY_DOC.read_text(encoding="utf-8")
    match = re.search(r"<!-- compose-test:begin -->\s*```bash\n(.*?)```\s*<!-- compose-test:end -->", text, re.S)
    assert match, "docs/deploy.md lost its compose-test block"
    return match.group(1)


def compose_command() -> list[str]:
    probe = subprocess.run(["docker", "compose", "version"], capture_output=True)
    if probe.returncode == 0:
        return ["docker", "compose"]
    if shutil.which("docker-compose"):
        return ["docker-compose"]
    pytest.fail("neither `docker compose` nor `docker-compose` is installed (scripts/setup installs docker-compose)")


class Stack:
    def __init__(self, folder: Path, env: dict[str, str], port: int) -> None:
        self.folder, self.env, self.port = folder, env, port
        self.url = f"http://127.0.0.1:{port}"
        self.compose = compose_command()

    def run(self, *args: str, check: bool = True, timeout: float = 300) -> subprocess.CompletedProcess:
        done = subprocess.run([*self.compose, *args], cwd=self.folder, env=self.env, capture_output=True, text=True,
                              timeout=timeout)
        if check and done.returncode != 0:
            raise AssertionError(f"{' '.join(self.compose)} {' '.join(args)}: {done.returncode}\n{done.stdout}\n{done.stderr}")
        return done

    def container(self, service: str) -> str:
        return self.run("ps", "-q", service).stdout.strip()

    def logs(self) -> str:
        return self.run("logs", "--tail", "80", check=False).stdout[-12000:]


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    docker_image("compose stack", kind="full")
    docker_image("compose stack", kind="stack")
    folder = tmp_path_factory.mktemp("compose") / "kgstack"
    (folder / "exercises" / "lesson06_mean_var").mkdir(parents=True)
    shutil.copy(ROOT / "docker-compose.yml", folder)
    shutil.copytree(ROOT / "deploy", folder / "deploy")
    shutil.copy(ROOT / "exercises/lesson06_mean_var/example_submission.json", folder / "exercises/lesson06_mean_var")
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("KERNELGRADE_", "POSTGRES_", "REDIS_", "COMPOSE_"))}
    # `kernelgrade` on PATH (the venv's); `docker compose` as this machine has it.
    shim = folder / ".bin"
    shim.mkdir()
    compose = compose_command()
    if compose == ["docker-compose"]:
        real = shutil.which("docker")
        (shim / "docker").write_text(f'#!/bin/sh\nif [ "$1" = compose ]; then shift; exec docker-compose "$@"; fi\n'
                                     f'exec {real} "$@"\n')
        (shim / "docker").chmod(0o755)
    env.update(PATH=f"{shim}:{Path(sys.executable).parent}:{env.get('PATH', '')}", KERNELGRADE_PORT=str(port),
               KERNELGRADE_LEASE_S=str(LEASE_S), KERNELGRADE_JOBS_DIR=str(folder.parent / "jobs"))
    stack = Stack(folder, env, port)
    script = "set -euo pipefail\n" + documented_commands()
    try:
        done = subprocess.run(["bash", "-c", script], cwd=folder, env=env, capture_output=True, text=True, timeout=900)
        assert done.returncode == 0, f"the documented commands failed ({done.returncode}):\n{done.stdout[-4000:]}\n" \
                                     f"{done.stderr[-6000:]}\n{stack.logs()}"
        stack.documented_output = done.stdout  # type: ignore[attr-defined]
        yield stack
    finally:
        stack.run("down", "--volumes", "--remove-orphans", "--timeout", "10", check=False, timeout=300)
        shutil.rmtree(folder.parent / "jobs", ignore_errors=True)


def last_json(output: str) -> dict:
    for line in reversed(output.strip().splitlines()):
        line = line.strip()
        if line.startswith("{"):
            return json.loads(line)
    raise AssertionError(f"no JSON in the output:\n{output[-3000:]}")


def wait_final(client: httpx.Client, submission_id: str, stack: Stack, timeout: float = 600) -> dict:
    def final():
        view = client.get(f"/v1/submissions/{submission_id}").json()
        return view if view["status"] in ("graded", "not_gradable") else None

    return wait_for(final, timeout=timeout, interval=1, what=f"submission {submission_id} to be graded",
                    on_timeout=stack.logs)


def key_of(stack: Stack) -> str:
    keys = re.findall(r"^(kg_\S+)$", stack.documented_output, re.M)  # type: ignore[attr-defined]
    assert keys, f"no key printed by the documented `keys create`:\n{stack.documented_output}"  # type: ignore[attr-defined]
    return keys[-1]


def test_the_documented_stack_grades_the_example_through_the_api(stack):
    posted = last_json(stack.documented_output)  # type: ignore[attr-defined]
    with httpx.Client(base_url=stack.url, headers={"Authorization": f"Bearer {key_of(stack)}"}, timeout=60) as client:
        report = client.get(f"/v1/submissions/{posted['id']}/report") if posted.get("status") == "graded" else None
        if report is None or report.status_code != 200:
            wait_final(client, posted["id"], stack)
            report = client.get(f"/v1/submissions/{posted['id']}/report")
        assert report.status_code == 200, report.text
        body = report.json()
    assert body["status"] == "graded", body
    assert body["score"]["total"] == 10 and body["score"]["passed"], body["score"]
    assert body["environment"]["backend"] == "interpreter" and body["environment"]["sandbox"] == "docker"
    ready = httpx.get(f"{stack.url}/readyz", timeout=30)
    assert ready.status_code == 200 and ready.json()["checks"]["database"] == "ok", ready.text


def test_a_worker_killed_mid_grade_is_restarted_and_the_submission_finishes(stack):
    example = json.loads((stack.folder / "exercises/lesson06_mean_var/example_submission.json").read_text())
    # Bursts of blank fills other than the example's `mask` (the verdict memo would answer the example
    # without a sandbox; an edit outside the blank is put back, so only the blank makes a new program).
    # One grading on a warm sandbox takes well under a second here and is claimed twice (by
    # worker-fast for its cheap part, then by the sandbox worker), so the kill waits until the sandbox
    # worker's log shows a run task received and not yet finished: it is then claiming or holding a
    # lease. The lost lease shows in the end as a member graded after two attempts (the killed worker's
    # lease, then the restarted one's), and only a member still running at the kill may have two. A kill
    # that still landed between two runs proves nothing: the next burst tries again.
    bursts = [["N > cols", "cols <= N - 1", "N - 1 >= cols", "cols + 1 <= N"],
              ["N >= cols + 1", "cols - N < 0", "0 > cols - N", "cols < N + 0"],
              ["cols - 0 < N", "N + 0 > cols", "cols < 0 + N", "cols < N"]]
    with httpx.Client(base_url=stack.url, headers={"Authorization": f"Bearer {key_of(stack)}"}, timeout=60) as client:
        for fills in bursts:
            worker = stack.container("worker")
            pid = subprocess.run(["docker", "inspect", "-f", "{{.State.Pid}}", worker], capture_output=True,
                                 text=True, check=True).stdout.strip()
            restarts = _restarts(worker)
            ids = []
            for fill in fills:
                code = example["code"].replace("tl.where(mask, ", f"tl.where({fill}, ", 1)  # the blank
                assert code != example["code"]
                response = client.post("/v1/submissions", json={**example, "code": code})
                assert response.status_code == 202, response.text
                ids.append(response.json()["id"])

            def statuses() -> dict[str, str]:
                return {i: client.get(f"/v1/submissions/{i}").json()["status"] for i in ids}

            wait_for(lambda: _run_in_progress(worker) and "running" in statuses().values(), timeout=300,
                     interval=0.05, what="the sandbox worker to run a burst member", on_timeout=stack.logs)
            os.kill(int(pid), 9)  # the sandbox worker container's init dies: a crash, which the restart policy answers
            running_after_kill = {i for i, status in statuses().items() if status == "running"}
            wait_for(lambda: _restarts(worker) > restarts and _running(worker), timeout=120,
                     what="the worker to be restarted", on_timeout=stack.logs)
            views = {i: wait_final(client, i, stack, timeout=600) for i in ids}  # killed or queued behind the kill
            for view in views.values():
                assert view["status"] == "graded", view
                assert len(view["history"]) == 1, view["history"]  # exactly one report
            lost_lease = {i for i, view in views.items() if view["attempts"] == 2}
            assert lost_lease <= running_after_kill, (lost_lease, running_after_kill)  # only a lease held at the kill
            for submission_id in lost_lease:
                report = client.get(f"/v1/submissions/{submission_id}/report").json()
                assert report["status"] == "graded" and report["submission_id"] == submission_id
            if lost_lease:
                return
        pytest.fail(f"in each of {len(bursts)} bursts the kill landed while the sandbox worker held no lease: "
                    "the test proved nothing")


def _run_in_progress(container: str) -> bool:
    """The sandbox worker's log shows a `kernelgrade.run` task received and not yet finished."""
    out = subprocess.run(["docker", "logs", container], capture_output=True, text=True)
    log = out.stdout + out.stderr
    received = re.findall(r"Task kernelgrade\.run\[([\w-]+)\] received", log)
    ended = set(re.findall(r"Task kernelgrade\.run\[([\w-]+)\] (?:succeeded|failed|raised|retry)", log))
    return any(task not in ended for task in received)


def _restarts(container: str) -> int:
    out = subprocess.run(["docker", "inspect", "-f", "{{.RestartCount}}", container], capture_output=True, text=True)
    return int(out.stdout.strip() or 0)


def _running(container: str) -> bool:
    out = subprocess.run(["docker", "inspect", "-f", "{{.State.Running}}", container], capture_output=True, text=True)
    return out.stdout.strip() == "true"
