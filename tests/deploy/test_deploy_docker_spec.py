"""The docker sandbox backend's container specification, exactly (no Docker engine needed).

`container_spec()` is the pure function whose output the launcher hands, unchanged, to
`client.containers.create(image, command, **kwargs)`; these tests pin every isolation setting in
it. The last test feeds it to the real Docker SDK's own argument conversion (still no engine).
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from sandbox.backends import make_backend
from sandbox.backends.docker import SHELL_SCRIPT, DockerBackend, DockerOptions, container_spec
from sandbox.contract import GiB, MiB, DeviceMode, Limits

JOB = Path("/var/lib/kernelgrade-jobs/kg-job-123-abc")
LIMITS = Limits(tmpfs_bytes=256 * MiB, memory_bytes=8 * GiB, processes=128, cpu_time_s=300,
                file_size_bytes=32 * MiB, open_files=200)
OPTIONS = DockerOptions(image="registry.example/kernelgrade:1.2.3", python="/opt/venv/bin/python", cpus=2.5)


def spec(mode=DeviceMode.gpu, index=3, options=OPTIONS, hidden=()):
    return container_spec(job_dir=JOB, mode=mode, device_index=index, limits=LIMITS, options=options, hidden_paths=hidden)


def test_image_and_command_put_frames_on_stdout_and_the_students_output_on_stderr():
    s = spec()
    assert s["image"] == "registry.example/kernelgrade:1.2.3"
    assert s["command"] == ["/bin/sh", "-c", SHELL_SCRIPT, "/opt/venv/bin/python"]
    assert SHELL_SCRIPT == 'exec 3>&1 1>&2 && exec "$0" -I -B /job/harness.py /job 3'
    json.dumps(s)  # plain data: it travels to the launcher on its command line


def test_isolation_settings():
    kw = spec()["kwargs"]
    assert kw["user"] == "65534:65534"
    assert kw["network_mode"] == "none"
    assert kw["read_only"] is True
    assert kw["cap_drop"] == ["ALL"]
    assert "cap_add" not in kw
    assert kw["security_opt"] == ["no-new-privileges"]
    assert kw["privileged"] is False
    assert kw["ipc_mode"] == "private"
    assert kw["tty"] is False and kw["stdin_open"] is False
    assert kw["log_config"] == {"type": "none", "config": {}}  # output never lands on the host's disk
    assert kw["healthcheck"] == {"test": ["NONE"]}  # the image's HEALTHCHECK is not for sandboxes
    assert kw["working_dir"] == "/tmp" and kw["hostname"] == "sandbox"
    assert kw["labels"] == {"kernelgrade.sandbox": "1", "kernelgrade.job": "kg-job-123-abc"}
    assert "runtime" not in kw
    for forbidden in ("volumes", "devices", "pid_mode", "userns_mode", "network", "auto_remove"):
        assert forbidden not in kw


def test_limits():
    kw = spec()["kwargs"]
    assert kw["pids_limit"] == 128
    assert kw["mem_limit"] == 8 * GiB
    assert kw["memswap_limit"] == 8 * GiB  # = mem_limit: no swap
    assert kw["nano_cpus"] == 2_500_000_000
    assert kw["shm_size"] == 256 * MiB
    assert kw["ulimits"] == [
        {"name": "cpu", "soft": 300, "hard": 300},
        {"name": "fsize", "soft": 32 * MiB, "hard": 32 * MiB},
        {"name": "nofile", "soft": 200, "hard": 200},
        {"name": "core", "soft": 0, "hard": 0},
    ]


def test_mounts_job_read_only_and_tmpfs_capped():
    kw = spec()["kwargs"]
    assert kw["mounts"] == [{"Type": "bind", "Source": str(JOB), "Target": "/job", "ReadOnly": True,
                             "BindOptions": {"Propagation": "rprivate"}}]
    assert kw["tmpfs"]["/tmp"] == f"rw,nosuid,nodev,size={256 * MiB},mode=1777"


def test_hidden_paths_are_covered_but_never_the_interpreter_or_the_system():
    kw = spec(hidden=[Path("/opt/kernelgrade/exercises"), Path("/var/lib/kernelgrade"), Path("/opt"),
                      Path("/"), Path("/usr"), Path("/tmp/x"), Path("relative")])["kwargs"]
    hidden = "ro,nosuid,nodev,noexec,size=4k,mode=0555"
    assert kw["tmpfs"] == {
        "/tmp": f"rw,nosuid,nodev,size={256 * MiB},mode=1777",
        "/opt/kernelgrade": hidden,  # DockerOptions.hidden_paths: the image's source tree
        "/opt/kernelgrade/exercises": hidden,
        "/var/lib/kernelgrade": hidden,
    }  # "/opt" holds /opt/venv/bin/python: hiding it would break every run, so it is skipped


def test_gpu_mode_requests_exactly_the_given_gpu():
    for index in (0, 3, 7):
        kw = spec(index=index)["kwargs"]
        assert kw["device_requests"] == [{"driver": "nvidia", "device_ids": [str(index)], "capabilities": [["gpu"]]}]
        assert kw["environment"]["NVIDIA_VISIBLE_DEVICES"] == str(index)
        assert "TRITON_INTERPRET" not in kw["environment"]


def test_interpreter_mode_gets_no_gpu_at_all():
    kw = spec(mode=DeviceMode.interpreter)["kwargs"]
    assert "device_requests" not in kw
    assert kw["environment"] == {
        "PATH": "/usr/bin:/bin", "HOME": "/tmp", "TRITON_CACHE_DIR": "/tmp/triton-cache",
        "PYTHONDONTWRITEBYTECODE": "1", "NVIDIA_DRIVER_CAPABILITIES": "compute,utility",
        "NVIDIA_VISIBLE_DEVICES": "void", "TRITON_INTERPRET": "1",
    }


def test_runtime_when_set():
    kw = spec(options=DockerOptions(runtime="runsc"))["kwargs"]
    assert kw["runtime"] == "runsc"


def test_options_from_environment(monkeypatch):
    monkeypatch.setenv("KERNELGRADE_DOCKER_IMAGE", "kg:test")
    monkeypatch.setenv("KERNELGRADE_DOCKER_RUNTIME", "runsc")
    monkeypatch.setenv("KERNELGRADE_DOCKER_CPUS", "1.5")
    backend = make_backend("docker", python=sys.executable, hidden_paths=[Path("/srv/secret")])
    assert isinstance(backend, DockerBackend) and backend.name == "docker"
    assert (backend.options.image, backend.options.runtime, backend.options.cpus) == ("kg:test", "runsc", 1.5)


def test_launch_spec_runs_the_launcher_with_the_exact_spec(monkeypatch):
    monkeypatch.setenv("DOCKER_HOST", "unix:///run/docker-proxy.sock")
    monkeypatch.setenv("KERNELGRADE_DATABASE_URL", "postgresql://secret")
    backend = DockerBackend(options=OPTIONS, hidden_paths=[Path("/srv/secret")])
    launch = backend.launch_spec(job_dir=JOB, verdict_fd=9, mode=DeviceMode.gpu, device_index=2, limits=LIMITS)
    argv = launch.argv
    assert argv[:5] == [sys.executable, "-I", "-m", "sandbox.backends.docker", "run"]
    assert argv[argv.index("--verdict-fd") + 1] == "9"
    assert argv[argv.index("--output-cap") + 1] == str(LIMITS.output_bytes)
    budget = LIMITS.startup_timeout_s + LIMITS.run_timeout_s + LIMITS.kill_grace_s
    assert float(argv[argv.index("--timeout") + 1]) == budget
    sent = json.loads(argv[argv.index("--spec") + 1])
    assert sent == container_spec(job_dir=JOB, mode=DeviceMode.gpu, device_index=2, limits=LIMITS, options=OPTIONS,
                                  hidden_paths=[Path("/srv/secret")])
    # The launcher gets PATH and the Docker client's variables, nothing of the service's secrets.
    assert set(launch.env) == {"PATH", "DOCKER_HOST"}


def test_the_launcher_module_starts():
    out = subprocess.run([sys.executable, "-I", "-m", "sandbox.backends.docker", "--help"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "run" in out.stdout and "reap" in out.stdout


def test_the_docker_sdk_accepts_the_spec_as_it_is():
    """The real SDK's conversion of create() kwargs (docker.models.containers), no engine involved."""
    docker = pytest.importorskip("docker", reason="the optional 'docker' extra is not installed")
    from docker.models.containers import _create_container_args

    api = docker.APIClient(base_url="unix:///nonexistent.sock", version="1.43")  # never connects
    s = spec()
    args = _create_container_args(dict(s["kwargs"], image=s["image"], command=s["command"], version="1.43"))
    config = api.create_container_config(**args)  # what create() would POST to /containers/create
    host_config = config["HostConfig"]
    assert config["User"] == "65534:65534" and config["NetworkDisabled"] is False
    assert config["Cmd"] == s["command"] and config["Image"] == s["image"]
    assert config["Healthcheck"]["Test"] == ["NONE"]
    assert host_config["NetworkMode"] == "none"
    assert host_config["ReadonlyRootfs"] is True
    assert host_config["CapDrop"] == ["ALL"]
    assert host_config["SecurityOpt"] == ["no-new-privileges"]
    assert host_config["PidsLimit"] == 128 and host_config["Memory"] == 8 * GiB and host_config["MemorySwap"] == 8 * GiB
    assert host_config["NanoCpus"] == 2_500_000_000
    assert host_config["Tmpfs"]["/tmp"].startswith("rw,nosuid,nodev,size=")
    assert host_config["Mounts"][0]["ReadOnly"] is True and host_config["Mounts"][0]["Target"] == "/job"
    assert host_config["DeviceRequests"] == [{"Driver": "nvidia", "Count": 0, "DeviceIDs": ["3"],
                                              "Capabilities": [["gpu"]], "Options": {}}]
    assert {u["Name"] for u in host_config["Ulimits"]} == {"cpu", "fsize", "nofile", "core"}
    assert host_config["LogConfig"] == {"Type": "none", "Config": {}}
