"""docker-compose.yml and the deploy/ overrides, checked by the Compose CLI's own `config`.

`docker-compose config` (Debian's docker-compose 1.29 package, installed by scripts/setup) parses,
interpolates and validates a file against the Compose schema without any Docker engine. That the
stack runs is tested for real in tests/deploy/test_compose_stack.py.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
COMPOSE = ROOT / "docker-compose.yml"
GPU = ROOT / "deploy" / "compose.gpu.yml"
SECRETS = {"POSTGRES_PASSWORD": "pg-secret-123", "REDIS_PASSWORD": "redis-secret-456", "SESSION_SECRET": "session-secret-789",
           "DOCKER_GID": "998"}

if shutil.which("docker-compose") is None:
    if os.environ.get("CI"):
        raise RuntimeError("CI must have docker-compose (.ci/run installs Debian's docker-compose package)")
    pytest.skip("docker-compose is not installed (apt-get install docker-compose)", allow_module_level=True)


_EMPTY_ENV = Path(tempfile.mkdtemp(prefix="kg-compose-test-")) / "empty.env"
_EMPTY_ENV.write_text("")


def compose(*files: Path, env: dict[str, str], args=("config",)) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items()
             if not k.startswith(("POSTGRES_", "REDIS_", "KERNELGRADE_", "DOCKER_", "COMPOSE_"))}
    argv = ["docker-compose", "--project-directory", str(ROOT)]
    for f in files:
        argv += ["-f", str(f)]
    # An empty --env-file: a developer's own .env must not make these tests pass.
    return subprocess.run([*argv, "--env-file", str(_EMPTY_ENV), *args], cwd=ROOT, env={**clean, **env},
                          capture_output=True, text=True, timeout=60)


def rendered(*files: Path, env: dict[str, str] = SECRETS) -> dict:
    out = compose(*files, env=env)
    assert out.returncode == 0, out.stderr
    return yaml.safe_load(out.stdout)


@pytest.mark.parametrize("missing", ["POSTGRES_PASSWORD", "REDIS_PASSWORD", "SESSION_SECRET", "DOCKER_GID"])
def test_refuses_to_render_without_each_secret(missing):
    env = {k: v for k, v in SECRETS.items() if k != missing}
    out = compose(COMPOSE, env=env)
    assert out.returncode != 0
    assert f"set {missing} in .env" in out.stderr


def test_refuses_with_an_empty_secret():
    out = compose(COMPOSE, env={**SECRETS, "POSTGRES_PASSWORD": ""})
    assert out.returncode != 0 and "set POSTGRES_PASSWORD" in out.stderr


def test_services_healthchecks_volumes_and_secrets():
    config = rendered(COMPOSE)
    services = config["services"]
    assert set(services) == {"api", "worker-fast", "worker", "postgres", "redis"}
    for name, service in services.items():
        assert service["healthcheck"]["test"], name
        assert service["restart"] == "unless-stopped"
    assert set(config["volumes"]) == {"kernelgrade-data", "postgres-data", "redis-data"}
    assert services["postgres"]["environment"]["POSTGRES_PASSWORD"] == "pg-secret-123"
    assert "redis-secret-456" in services["api"]["environment"]["KERNELGRADE_BROKER_URL"]
    assert "pg-secret-123" in services["worker"]["environment"]["KERNELGRADE_DATABASE_URL"]
    assert services["worker"]["environment"]["KERNELGRADE_QUEUE"] == "celery"
    assert "--requirepass" in " ".join(services["redis"]["command"])


def test_database_and_broker_sit_on_an_internal_network_with_nothing_published():
    config = rendered(COMPOSE)
    services = config["services"]
    assert config["networks"]["backend"]["internal"] is True
    for name in ("postgres", "redis"):
        assert set(services[name]["networks"]) == {"backend"}
        assert "ports" not in services[name]
    for name in ("worker", "worker-fast"):
        assert set(services[name]["networks"]) == {"backend"} and "ports" not in services[name]
    assert services["api"]["ports"][0].startswith("127.0.0.1:8000:8000")  # loopback unless the operator says otherwise


def test_the_base_file_runs_on_a_cpu_machine_and_the_gpu_override_reserves_exactly_one_gpu():
    cpu = rendered(COMPOSE)["services"]["worker"]
    assert "deploy" not in cpu and "KERNELGRADE_DEVICE" not in cpu["environment"]  # auto: the interpreter here
    worker = rendered(COMPOSE, GPU)["services"]["worker"]
    assert worker["deploy"]["resources"]["reservations"]["devices"] == [
        {"driver": "nvidia", "device_ids": ["0"], "capabilities": ["gpu"]}]
    assert worker["environment"]["KERNELGRADE_GPU_INDEX"] == "0" and worker["environment"]["KERNELGRADE_DEVICE"] == "gpu"


def test_the_fast_worker_runs_no_sandbox_and_the_sandbox_worker_only_sandboxes():
    """Cheap work never queues behind a sandbox run: two Celery services on the two queues; the fast
    one has no engine socket, no jobs folder and no GPU, also with the GPU override."""
    for files in ([COMPOSE], [COMPOSE, GPU]):
        services = rendered(*files)["services"]
        fast, sandbox = services["worker-fast"], services["worker"]
        assert fast["environment"]["KERNELGRADE_WORKER_LANE"] == "fast"
        assert sandbox["environment"]["KERNELGRADE_WORKER_LANE"] == "sandbox"
        assert fast["environment"]["KERNELGRADE_QUEUE"] == "celery" and "deploy" not in fast
        assert not any("docker.sock" in str(volume) or "jobs" in str(volume) for volume in fast["volumes"])
        assert "group_add" not in fast and "KERNELGRADE_SANDBOX" not in fast["environment"]
    host = yaml.load((ROOT / "deploy" / "compose.worker-host.yml").read_text(), Loader=_ComposeTags)
    assert host["services"]["worker"]["environment"]["KERNELGRADE_WORKER_LANE"] == "sandbox"


def test_postgres_and_redis_images_can_be_local_builds():
    services = rendered(COMPOSE)["services"]
    assert (services["postgres"]["image"], services["redis"]["image"]) == ("postgres:16-alpine", "redis:7.4-alpine")
    local = {**SECRETS, "POSTGRES_IMAGE": "kernelgrade-postgres:local", "REDIS_IMAGE": "kernelgrade-redis:local"}
    services = rendered(COMPOSE, env=local)["services"]
    assert (services["postgres"]["image"], services["redis"]["image"]) == (
        "kernelgrade-postgres:local", "kernelgrade-redis:local")


def test_generated_gpu_workers_each_pin_their_own_gpu(tmp_path):
    extra = tmp_path / "compose.gpus.yml"
    out = subprocess.run([sys.executable, str(ROOT / "deploy" / "gpu_workers.py"), "1", "2", "3"],
                         capture_output=True, text=True, check=True)
    extra.write_text(out.stdout)
    services = rendered(COMPOSE, GPU, extra)["services"]
    for gpu in (1, 2, 3):
        worker = services[f"worker-gpu{gpu}"]
        assert worker["deploy"]["resources"]["reservations"]["devices"][0]["device_ids"] == [str(gpu)]
        assert worker["environment"]["KERNELGRADE_GPU_INDEX"] == str(gpu)
        assert worker["environment"]["KERNELGRADE_DEVICE"] == "gpu"
        assert "pg-secret-123" in worker["environment"]["KERNELGRADE_DATABASE_URL"]
    assert compose(COMPOSE, extra, env={"REDIS_PASSWORD": "x"}).returncode != 0  # still refuses without secrets


def test_the_worker_runs_sandboxes_as_containers_of_the_hosts_engine():
    worker = rendered(COMPOSE)["services"]["worker"]
    env = worker["environment"]
    assert env["KERNELGRADE_SANDBOX"] == "docker" and env["DOCKER_HOST"] == "unix:///var/run/docker.sock"
    assert env["TMPDIR"] == "/var/lib/kernelgrade-jobs"
    assert env["KERNELGRADE_COMPILE_CACHE_DIR"].startswith("/var/lib/kernelgrade-jobs/")
    assert env["KERNELGRADE_DOCKER_GPU"] == "nvidia" and env["KERNELGRADE_DOCKER_IMAGE"] == "kernelgrade:latest"
    assert "/var/lib/kernelgrade-jobs:/var/lib/kernelgrade-jobs:rw" in worker["volumes"]
    assert "/var/run/docker.sock:/var/run/docker.sock:rw" in worker["volumes"]
    assert worker["group_add"] == ["998"] and "security_opt" not in worker  # nothing relaxed
    moved = rendered(COMPOSE, env={**SECRETS, "KERNELGRADE_JOBS_DIR": "/srv/kg-jobs"})["services"]["worker"]
    assert moved["environment"]["TMPDIR"] == "/srv/kg-jobs" and "/srv/kg-jobs:/srv/kg-jobs:rw" in moved["volumes"]


class _ComposeTags(yaml.SafeLoader):
    """Compose v2's merge tags (!reset, !override), which Debian's docker-compose 1.29 cannot read."""


_ComposeTags.add_constructor("!reset", lambda loader, node: ("reset", loader.construct_sequence(node)))
_ComposeTags.add_constructor("!override", lambda loader, node: ("override", loader.construct_sequence(node)))


def test_bwrap_override_drops_the_socket_and_relaxes_the_worker_for_bwrap():
    """Checked as YAML: `docker-compose config` 1.29 (the one on CI) knows neither these merge tags
    nor `systempaths=unconfined`; the override needs Compose >= 2.24.4."""
    worker = yaml.load((ROOT / "deploy" / "compose.bwrap.yml").read_text(), Loader=_ComposeTags)["services"]["worker"]
    assert worker["environment"]["KERNELGRADE_SANDBOX"] == "bwrap"
    assert worker["security_opt"] == ["seccomp=unconfined", "apparmor=unconfined", "systempaths=unconfined"]
    assert worker["group_add"] == ("reset", [])
    assert worker["volumes"] == ("override", ["kernelgrade-data:/var/lib/kernelgrade"])  # no socket, no jobs folder


def test_worker_host_file_needs_both_urls():
    host = ROOT / "deploy" / "compose.worker-host.yml"
    urls = {"KERNELGRADE_DATABASE_URL": "postgresql+psycopg://kg:s@db:5432/kg", "KERNELGRADE_BROKER_URL": "redis://:s@db:6379/0"}
    for missing in urls:
        out = compose(host, env={**{k: v for k, v in urls.items() if k != missing}, "DOCKER_GID": "998"})
        assert out.returncode != 0 and f"set {missing}" in out.stderr
    worker = rendered(host, env={**urls, "DOCKER_GID": "998"})["services"]["worker"]
    assert worker["environment"]["KERNELGRADE_QUEUE"] == "celery"
    assert worker["environment"]["KERNELGRADE_SANDBOX"] == "docker" and worker["group_add"] == ["998"]
