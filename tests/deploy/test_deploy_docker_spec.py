"""The docker sandbox backend's container specification, exactly (no Docker engine needed).

`container_spec()` is the pure function whose output the launcher hands, unchanged, to
`client.containers.create(image, command, **kwargs)`; these tests pin every isolation setting in
it, and one feeds it to the real Docker SDK's own argument conversion. What a real engine makes of
it is tested in tests/integration/test_docker_backend.py and by the isolation suites.
"""
from __future__ import annotations

import io
import json
import os
import socket
import struct
import subprocess
import sys
from datetime import datetime
from pathlib import Path

import pytest

from sandbox.backends import make_backend
from sandbox.backends.base import TritonCacheMount
from sandbox.backends.docker.backend import DockerBackend
from sandbox.backends.docker.hostview import GpuView
from sandbox.backends.docker.launcher import demux
from sandbox.backends.docker.options import DockerOptions
from sandbox.backends.docker.reaper import is_stale, owner_id, reap
from sandbox.backends.docker.spec import SHELL_SCRIPT, ContainerView, container_spec
from sandbox.contract import RUNTIME_TASKS, DeviceMode, GiB, Limits, MiB

JOB = Path("/var/lib/kernelgrade-jobs/kg-job-123-abc")
LIMITS = Limits(tmpfs_bytes=256 * MiB, memory_bytes=8 * GiB, processes=128, cpu_time_s=300,
                file_size_bytes=32 * MiB, open_files=200)
OPTIONS = DockerOptions(image="registry.example/kernelgrade:1.2.3", python="/opt/venv/bin/python", cpus=2.5)
IMAGE_VIEW = ContainerView(python="/opt/venv/bin/python")
GPU = GpuView(devices=("/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia3"), driver_dir="/usr/local/nvidia/lib64",
              driver_files=("/usr/local/nvidia/lib64/libcuda.so.1", "/usr/local/nvidia/lib64/libnvidia-ml.so.1"))


def spec(mode=DeviceMode.gpu, index=3, options=OPTIONS, hidden=(), view=IMAGE_VIEW, limits=LIMITS):
    return container_spec(job_dir=JOB, mode=mode, device_index=index, limits=limits, options=options, view=view,
                          hidden_paths=hidden, owner="host/123/456")


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
    assert kw["security_opt"] == ["no-new-privileges"]  # and the engine's default seccomp profile
    assert kw["privileged"] is False
    assert kw["ipc_mode"] == "private"
    assert kw["tty"] is False and kw["stdin_open"] is False
    assert kw["log_config"] == {"type": "none", "config": {}}  # output never lands on the host's disk
    assert kw["healthcheck"] == {"test": ["NONE"]}  # the image's HEALTHCHECK is not for sandboxes
    assert kw["working_dir"] == "/tmp" and kw["hostname"] == "sandbox"
    budget = LIMITS.startup_timeout_s + LIMITS.run_timeout_s + LIMITS.kill_grace_s
    assert kw["labels"] == {"kernelgrade.sandbox": "1", "kernelgrade.job": "kg-job-123-abc",
                            "kernelgrade.owner": "host/123/456", "kernelgrade.budget_s": f"{budget:g}"}
    assert "runtime" not in kw
    for forbidden in ("volumes", "pid_mode", "userns_mode", "network", "auto_remove", "device_requests"):
        assert forbidden not in kw
    assert kw["devices"] == []


def test_limits():
    kw = spec()["kwargs"]
    # the submission's 128 on top of the runtime's own tasks (CUDA's threads: spec() is GPU mode)
    assert kw["pids_limit"] == 128 + RUNTIME_TASKS[DeviceMode.gpu] == LIMITS.process_cap(DeviceMode.gpu)
    assert spec(mode=DeviceMode.interpreter)["kwargs"]["pids_limit"] == 128 + RUNTIME_TASKS[DeviceMode.interpreter]
    assert kw["mem_limit"] == 8 * GiB
    assert kw["memswap_limit"] == 8 * GiB  # = mem_limit: no swap
    assert kw["nano_cpus"] == 2_500_000_000
    assert "shm_size" not in kw  # /dev/shm is a tmpfs of ours, capped in bytes and files (below)
    assert kw["ulimits"] == [
        {"name": "cpu", "soft": 300, "hard": 300},
        {"name": "fsize", "soft": 32 * MiB, "hard": 32 * MiB},
        {"name": "nofile", "soft": 200, "hard": 200},
        {"name": "core", "soft": 0, "hard": 0},
    ]


def test_mounts_job_read_only_and_tmpfs_capped_and_executable():
    kw = spec()["kwargs"]
    assert kw["mounts"] == [{"Type": "bind", "Source": str(JOB), "Target": "/job", "ReadOnly": True,
                             "BindOptions": {"Propagation": "rprivate"}}]
    # exec: Triton loads the launcher it compiles into its cache under /tmp (GPU mode).
    assert kw["tmpfs"]["/tmp"] == f"rw,nosuid,nodev,exec,size={256 * MiB},nr_inodes=10000,mode=1777"
    # The files too, not only the bytes: an empty file costs kernel memory as well (SECURITY.md).
    assert kw["tmpfs"]["/dev/shm"] == f"rw,nosuid,nodev,noexec,size={256 * MiB},nr_inodes=10000,mode=1777"
    assert "nr_inodes=77," in spec(limits=LIMITS.model_copy(update={"tmpfs_files": 77}))["kwargs"]["tmpfs"]["/tmp"]


def test_hidden_paths_are_covered_but_never_the_interpreter_or_the_system():
    kw = spec(hidden=[Path("/opt/kernelgrade/exercises"), Path("/var/lib/kernelgrade"), Path("/opt"),
                      Path("/"), Path("/usr"), Path("/tmp/x"), Path("relative")])["kwargs"]
    hidden = "ro,nosuid,nodev,noexec,size=4k,mode=0555"
    assert kw["tmpfs"] == {
        "/tmp": f"rw,nosuid,nodev,exec,size={256 * MiB},nr_inodes=10000,mode=1777",
        "/dev/shm": f"rw,nosuid,nodev,noexec,size={256 * MiB},nr_inodes=10000,mode=1777",
        "/opt/kernelgrade": hidden,  # DockerOptions.hidden_paths: the image's source tree
        "/opt/kernelgrade/exercises": hidden,
        "/var/lib/kernelgrade": hidden,
    }  # "/opt" holds /opt/venv/bin/python: hiding it would break every run, so it is skipped


def test_host_system_image_binds_the_system_read_only_and_hides_only_what_it_binds():
    view = ContainerView(python="/srv/venv/bin/python", system_binds=("/usr", "/etc/ld.so.cache", "/srv/venv"))
    kw = spec(mode=DeviceMode.interpreter, view=view, options=DockerOptions(hidden_paths=[]),
              hidden=[Path("/srv/venv/secrets"), Path("/srv/repo")])["kwargs"]
    assert [(m["Source"], m["Target"], m["ReadOnly"]) for m in kw["mounts"]] == [
        ("/usr", "/usr", True), ("/etc/ld.so.cache", "/etc/ld.so.cache", True), ("/srv/venv", "/srv/venv", True),
        (str(JOB), "/job", True)]
    # Inside a bound folder: covered. Not bound at all (the repository): not there to hide.
    assert set(kw["tmpfs"]) == {"/tmp", "/dev/shm", "/srv/venv/secrets"}
    assert spec(view=view)["command"][-1] == "/srv/venv/bin/python"


def test_gpu_mode_passes_the_devices_and_the_driver_explicitly():
    kw = spec(view=ContainerView(python="/opt/venv/bin/python", gpu=GPU))["kwargs"]
    assert kw["devices"] == ["/dev/nvidiactl:/dev/nvidiactl:rwm", "/dev/nvidia-uvm:/dev/nvidia-uvm:rwm",
                             "/dev/nvidia3:/dev/nvidia3:rwm"]
    assert [m["Target"] for m in kw["mounts"] if m["Target"].startswith("/usr/local/nvidia")] == list(GPU.driver_files)
    env = kw["environment"]
    assert env["TRITON_LIBCUDA_PATH"] == env["LD_LIBRARY_PATH"] == "/usr/local/nvidia/lib64"
    assert env["NVIDIA_VISIBLE_DEVICES"] == "3" and "TRITON_INTERPRET" not in env
    assert "device_requests" not in kw


def test_gpu_driver_files_already_visible_through_a_system_bind_are_not_bound_again():
    view = ContainerView(python="/usr/bin/python3", system_binds=("/usr",), gpu=GPU)
    kw = spec(view=view)["kwargs"]
    assert [m["Target"] for m in kw["mounts"]] == ["/usr", "/job"]
    assert kw["environment"]["TRITON_LIBCUDA_PATH"] == "/usr/local/nvidia/lib64"


def test_gpu_mode_with_the_nvidia_toolkit_requests_exactly_the_given_gpu():
    for index in (0, 3, 7):
        kw = spec(index=index, options=DockerOptions(gpu="nvidia"))["kwargs"]
        assert kw["device_requests"] == [{"driver": "nvidia", "device_ids": [str(index)], "capabilities": [["gpu"]]}]
        assert kw["environment"]["NVIDIA_VISIBLE_DEVICES"] == str(index)
        assert kw["devices"] == []


def test_the_shared_compile_cache_is_read_only_for_grading_and_writable_only_for_compile_runs(tmp_path):
    grading = spec(view=ContainerView(python="/opt/venv/bin/python", triton_cache=TritonCacheMount(tmp_path)))["kwargs"]
    (cache,) = [m for m in grading["mounts"] if m["Target"] == "/triton-shared"]
    assert cache["Source"] == str(tmp_path) and cache["ReadOnly"] is True
    assert grading["environment"]["TRITON_CACHE_DIR"] == "/tmp/triton-cache"  # its own compiles: private
    assert grading["environment"]["KERNELGRADE_SHARED_TRITON_CACHE"] == "/triton-shared"
    assert grading["environment"]["TRITON_CACHE_MANAGER"] == "shared_triton_cache:SharedFirstCacheManager"

    compile_run = spec(view=ContainerView(python="/opt/venv/bin/python",
                                          triton_cache=TritonCacheMount(tmp_path, writable=True)))["kwargs"]
    (cache,) = [m for m in compile_run["mounts"] if m["Target"] == "/triton-shared"]
    assert cache["ReadOnly"] is False and compile_run["environment"]["TRITON_CACHE_DIR"] == "/triton-shared"

    interpreter = spec(mode=DeviceMode.interpreter, view=ContainerView(
        python="/opt/venv/bin/python", triton_cache=TritonCacheMount(tmp_path)))["kwargs"]
    assert all(m["Target"] != "/triton-shared" for m in interpreter["mounts"])  # nothing compiles there


def test_interpreter_mode_gets_no_gpu_at_all():
    kw = spec(mode=DeviceMode.interpreter, view=ContainerView(python="/opt/venv/bin/python", gpu=GPU))["kwargs"]
    assert "device_requests" not in kw and kw["devices"] == []
    assert kw["environment"] == {
        "PATH": "/usr/bin:/bin", "HOME": "/tmp", "TRITON_CACHE_DIR": "/tmp/triton-cache",
        "PYTHONDONTWRITEBYTECODE": "1", "NVIDIA_VISIBLE_DEVICES": "void", "TRITON_INTERPRET": "1",
        # one thread per CPU pool (the runtime's task count is part of the process cap), and the
        # container's own pid namespace: the harness may end what a case left running
        "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1",
        "KERNELGRADE_OWN_PID_NAMESPACE": "1",
    }


def test_runtime_when_set():
    kw = spec(options=DockerOptions(runtime="runsc"))["kwargs"]
    assert kw["runtime"] == "runsc"


def test_options_from_environment(monkeypatch):
    monkeypatch.setenv("KERNELGRADE_DOCKER_IMAGE", "kg:test")
    monkeypatch.setenv("KERNELGRADE_DOCKER_RUNTIME", "runsc")
    monkeypatch.setenv("KERNELGRADE_DOCKER_CPUS", "0.5")
    monkeypatch.setenv("KERNELGRADE_DOCKER_GPU", "nvidia")
    backend = make_backend("docker", python=sys.executable, hidden_paths=[Path("/srv/secret")])
    assert isinstance(backend, DockerBackend) and backend.name == "docker"
    assert (backend.options.image, backend.options.runtime, backend.options.cpus, backend.options.gpu) == (
        "kg:test", "runsc", 0.5, "nvidia")
    assert backend.python == sys.executable  # what a host-system image runs


def test_launch_spec_runs_the_launcher_with_the_exact_spec(monkeypatch):
    monkeypatch.setenv("DOCKER_HOST", "unix:///run/docker-proxy.sock")
    monkeypatch.setenv("KERNELGRADE_DATABASE_URL", "postgresql://secret")
    backend = DockerBackend(options=DockerOptions(image="kg:test", cpus=1), hidden_paths=[Path("/srv/secret")])
    view = ContainerView(python="/opt/venv/bin/python")
    monkeypatch.setattr(backend, "view", lambda mode, index: view)  # the image's labels need an engine
    launch = backend.launch_spec(job_dir=JOB, verdict_fd=9, mode=DeviceMode.gpu, device_index=2, limits=LIMITS)
    argv = launch.argv
    assert argv[:7] == [sys.executable, "-P", "-s", "-m", "sandbox.backends.docker", "run", "--verdict-fd"]
    assert argv[argv.index("--verdict-fd") + 1] == "9"
    assert argv[argv.index("--output-cap") + 1] == str(LIMITS.output_bytes)
    budget = LIMITS.startup_timeout_s + LIMITS.run_timeout_s + LIMITS.kill_grace_s
    assert float(argv[argv.index("--timeout") + 1]) == budget
    sent = json.loads(argv[argv.index("--spec") + 1])
    owner = sent["kwargs"]["labels"]["kernelgrade.owner"]
    assert owner.split("/")[1] == str(os.getpid())
    assert sent == container_spec(job_dir=JOB, mode=DeviceMode.gpu, device_index=2, limits=LIMITS,
                                  options=backend.options, view=view, hidden_paths=[Path("/srv/secret")], owner=owner)
    # The launcher gets PATH, where our code and the SDK are, and the engine's address: nothing of
    # the service's secrets.
    assert set(launch.env) == {"PATH", "PYTHONPATH", "DOCKER_HOST"}


def test_a_confined_launch_hands_the_launcher_its_memory_pipe_and_names_the_limit(monkeypatch):
    """The runner's end of the memory report stays in the Confinement; its write end goes to the
    launcher only (pass_fds, then closed by the caller), once."""
    backend = DockerBackend(options=DockerOptions(image="kg:test", cpus=1))
    monkeypatch.setattr(backend, "view", lambda mode, index: ContainerView(python="/opt/venv/bin/python"))
    confinement = backend.confine(limits=LIMITS, mode=DeviceMode.interpreter, device_index=0, job_dir=JOB)
    try:
        assert confinement.memory_limit == "docker memory cgroup 8 GiB, no swap"
        assert confinement.cgroups is None and confinement.memory_events() is None  # nothing reported yet
        launch = backend.launch_spec(job_dir=JOB, verdict_fd=9, mode=DeviceMode.interpreter, device_index=0,
                                     limits=LIMITS, confinement=confinement)
        (memory_fd,) = launch.pass_fds
        assert launch.argv[launch.argv.index("--memory-fd") + 1] == str(memory_fd)
        again = backend.launch_spec(job_dir=JOB, verdict_fd=9, mode=DeviceMode.interpreter, device_index=0,
                                    limits=LIMITS, confinement=confinement)
        assert again.pass_fds == () and "--memory-fd" not in again.argv
        os.close(memory_fd)
    finally:
        confinement.close(1.0)
    assert confinement.memory_report is None


def test_the_launcher_module_starts_without_the_service():
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    out = subprocess.run([sys.executable, "-P", "-s", "-m", "sandbox.backends.docker", "--help"], capture_output=True,
                         text=True, env=env, cwd="/")
    assert out.returncode == 0, out.stderr
    assert "run" in out.stdout and "reap" in out.stdout


def test_demux_splits_large_frames_and_stops_at_a_truncated_one():
    a, b = socket.socketpair()
    a.sendall(mux(1, b"A" * 200_000) + mux(2, b"err") + struct.pack(">BxxxL", 1, 10) + b"12")
    a.close()
    out = list(demux(b))
    assert b"".join(c for s, c in out if s == 1) == b"A" * 200_000 + b"12"
    assert all(len(c) <= 65536 for _, c in out)
    assert [c for s, c in out if s == 2] == [b"err"]


def test_reaper_logic_removes_unless_told_done():
    removed = []
    assert reap(io.BytesIO(b""), lambda: removed.append(1)) is True  # launcher died (SIGKILL): EOF only
    assert reap(io.BytesIO(b"done"), lambda: removed.append(2)) is False
    assert removed == [1]


def test_a_container_is_stale_when_its_owner_is_gone_or_it_outlived_its_budget():
    me = owner_id()
    born = fresh = datetime.fromisoformat("2026-12-01T14:32:17+00:00").timestamp()  # the list endpoint's "Created"
    labels = {"kernelgrade.owner": me, "kernelgrade.budget_s": "725"}
    assert not is_stale(labels, fresh, now=born + 10)
    assert is_stale(labels, fresh, now=born + 725 + 61)  # past its budget, whoever owns it
    dead = subprocess.Popen(["true"])
    dead.wait()
    assert is_stale({**labels, "kernelgrade.owner": f"{socket.gethostname()}/{dead.pid}/1"}, fresh, now=born + 10)
    other_host = {**labels, "kernelgrade.owner": "elsewhere/1/1"}
    assert not is_stale(other_host, fresh, now=born + 10)  # another worker's: only its age counts


def mux(stream: int, data: bytes) -> bytes:
    return struct.pack(">BxxxL", stream, len(data)) + data


def test_the_docker_sdk_accepts_the_spec_as_it_is():
    """The real SDK's conversion of create() kwargs (docker.models.containers), no engine involved."""
    docker = pytest.importorskip("docker", reason="the optional 'docker' extra is not installed")
    from docker.models.containers import _create_container_args

    api = docker.APIClient(base_url="unix:///nonexistent.sock", version="1.43")  # never connects
    s = spec(options=DockerOptions(image="registry.example/kernelgrade:1.2.3", cpus=2.5, gpu="nvidia"))
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
    assert host_config["PidsLimit"] == LIMITS.process_cap(DeviceMode.gpu) and host_config["Memory"] == 8 * GiB and host_config["MemorySwap"] == 8 * GiB
    assert host_config["NanoCpus"] == 2_500_000_000
    assert host_config["Tmpfs"]["/tmp"].startswith("rw,nosuid,nodev,exec,size=")
    assert host_config["Mounts"][0]["ReadOnly"] is True and host_config["Mounts"][0]["Target"] == "/job"
    assert host_config["DeviceRequests"] == [{"Driver": "nvidia", "Count": 0, "DeviceIDs": ["3"],
                                              "Capabilities": [["gpu"]], "Options": {}}]
    assert {u["Name"] for u in host_config["Ulimits"]} == {"cpu", "fsize", "nofile", "core"}
    assert host_config["LogConfig"] == {"Type": "none", "Config": {}}
    devices = spec(view=ContainerView(python="/opt/venv/bin/python", gpu=GPU))
    config = api.create_container_config(**_create_container_args(
        dict(devices["kwargs"], image=devices["image"], command=devices["command"], version="1.43")))
    assert [d["PathOnHost"] for d in config["HostConfig"]["Devices"]] == list(GPU.devices)
