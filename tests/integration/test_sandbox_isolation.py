"""Hostile programs against the real sandbox: every attack here must fail.

Each test runs real code through `SandboxRunner`, once per backend: bubblewrap, a container of
the kernelgrade image, and a container of the bare host-system image (tests/support/backends.py).
The sandboxed entry
point catches its own failure and encodes the outcome in the returned tensor:
`[1.0 if the forbidden thing worked else 0.0, detail]`, the detail usually being the errno.
Wherever the sandbox could be bypassed, the test first shows from the host that the target is
really there (a listening port, a readable file, a visible process, an environment variable),
so that without the sandbox these tests would fail.
"""
from __future__ import annotations

import errno
import os
import re
import socket
import subprocess
import sys
import sysconfig
import time
import uuid
from pathlib import Path

import numpy as np
import pytest

from sandbox.contract import CaseRun
from service.config import REPO_ROOT
from service.grading.sandbox_text import render_run

pytestmark = pytest.mark.sandbox_backends("bwrap", "docker", "docker-host")

SOLUTION = REPO_ROOT / "exercises" / "lesson06_mean_var" / "solution.py"
HOST_SERVICE_PORTS = {"postgres": 5432, "redis": 6379}
SANDBOX_UID = 65534


def outcome(case: CaseRun) -> tuple[bool, float]:
    """(did the forbidden thing work, detail) from a probe that returned normally."""
    assert case.status == "ok", f"probe {case.id!r} did not return normally: {case.status}: {case.error}"
    out = np.asarray(case.outputs["out"])
    assert out.shape == (2,), f"probe {case.id!r} returned {out!r}"
    return bool(out[0] == 1.0), float(out[1])


def assert_denied(case: CaseRun, *, errnos: set[int] | None = None) -> None:
    worked, detail = outcome(case)
    assert not worked, f"probe {case.id!r}: the sandboxed code SUCCEEDED (detail {detail})"
    if errnos is not None:
        code = int(detail)
        assert code in errnos, (
            f"probe {case.id!r} was denied with errno {code} ({errno.errorcode.get(code, '?')}), "
            f"expected one of {sorted(errno.errorcode.get(e, str(e)) for e in errnos)}"
        )


def host_can_connect(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=2).close()
        return True
    except OSError:
        return False


def host_processes_with(marker: str) -> list[int]:
    """Host pids whose command line contains `marker`."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
        except OSError:
            continue
        if marker.encode() in cmdline:
            found.append(int(entry))
    return found


@pytest.fixture
def host_sleeper():
    """A host process with a unique marker in its argv, started with the current environment."""
    started = []

    def start(marker: str) -> subprocess.Popen:
        proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)", marker], env=dict(os.environ))
        started.append(proc)
        deadline = time.monotonic() + 10
        while not host_processes_with(marker):
            assert time.monotonic() < deadline, "the host helper process did not start"
            time.sleep(0.05)
        return proc

    yield start
    for proc in started:
        proc.kill()
        proc.wait()


@pytest.mark.sandbox
def test_network_is_unreachable(probes):
    abstract_name = f"\0kernelgrade-isolation-{uuid.uuid4().hex}"
    with socket.create_server(("127.0.0.1", 0)) as tcp_server, socket.socket(socket.AF_UNIX) as unix_server:
        own_port = tcp_server.getsockname()[1]
        unix_server.bind(abstract_name)
        unix_server.listen()
        # The host reaches every target, so a refusal inside is the sandbox's doing.
        assert host_can_connect(own_port)
        with socket.socket(socket.AF_UNIX) as client:
            client.connect(abstract_name)
        services = {name: port for name, port in HOST_SERVICE_PORTS.items() if host_can_connect(port)}
        # The database and Redis ports are tried when the host runs them (CI does); the test's own
        # listener proves the point either way.

        targets = {"own_listener": own_port, **services}
        body = "import socket\n"
        for name, port in targets.items():
            body += (f"def probe_tcp_{name}():\n"
                     f"    return attempt(lambda: socket.create_connection(('127.0.0.1', {port}), timeout=5).close())\n")
        body += f'''
def probe_dns():
    return attempt(lambda: socket.getaddrinfo("example.com", 80))


def probe_public_ip():
    return attempt(lambda: socket.create_connection(("1.1.1.1", 53), timeout=5).close())


def probe_abstract_unix():
    def connect():
        with socket.socket(socket.AF_UNIX) as sock:
            sock.connect({abstract_name!r})
    return attempt(connect)
'''
        names = [f"tcp_{name}" for name in targets] + ["dns", "public_ip", "abstract_unix"]
        _, cases = probes(body, names)

    for name in targets:
        assert_denied(cases[f"tcp_{name}"], errnos={errno.ECONNREFUSED, errno.ENETUNREACH})
    assert_denied(cases["dns"])  # socket.gaierror: some EAI_* code
    assert_denied(cases["public_ip"], errnos={errno.ENETUNREACH, errno.ECONNREFUSED, errno.EHOSTUNREACH})
    assert_denied(cases["abstract_unix"], errnos={errno.ECONNREFUSED})


@pytest.mark.sandbox
def test_writes_outside_private_tmp_do_not_reach_the_host(probes, tmp_path):
    token = uuid.uuid4().hex
    read_only_targets = {
        "job_new_file": f"/job/escape-{token}.txt",
        "usr": f"/usr/escape-{token}.txt",
    }
    # A .pth file would run code in every later Python process on the host.
    site_packages = Path(sysconfig.get_paths()["purelib"])
    # Host paths the sandbox does not bind at all: whatever happens inside, the host must not see it.
    unbound_targets = {
        "host_tmp_path": str(tmp_path / "escaped" / f"marker-{token}.txt"),
        "repo": str(REPO_ROOT / f"escape-{token}.txt"),
        "exercise_dir": str(SOLUTION.parent / f"escape-{token}.txt"),
    }
    # A checkout under /tmp (a rehearsal clone) puts the venv where the sandbox has its own /tmp: there
    # the write lands in the sandbox's tmpfs, and what counts is that the host never sees it.
    (unbound_targets if site_packages.is_relative_to("/tmp") else read_only_targets)["venv_site_packages"] = \
        str(site_packages / f"escape-{token}.pth")
    body = f'''
import os


def write(path, mode="w"):
    def action():
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, mode) as fh:
            fh.write("escaped {token}\\n")
    return action


def probe_job_harness():
    return attempt(write("/job/harness.py", "a"))


def probe_private_tmp():
    path = "/tmp/probe-{token}.txt"
    write(path)()
    with open(path) as fh:
        content_ok = fh.read() == "escaped {token}\\n"
    with open("/proc/mounts") as fh:
        tmp_is_tmpfs = any(line.split()[1:3] == ["/tmp", "tmpfs"] for line in fh)
    return outcome(content_ok, tmp_is_tmpfs)
'''
    for name, path in {**read_only_targets, **unbound_targets}.items():
        body += f"\n\ndef probe_{name}():\n    return attempt(write({path!r}))\n"
    names = [*read_only_targets, *unbound_targets, "job_harness", "private_tmp"]
    _, cases = probes(body, names)

    for name in [*read_only_targets, "job_harness"]:
        assert_denied(cases[name], errnos={errno.EROFS, errno.EACCES, errno.EPERM})
    for name, path in {**read_only_targets, **unbound_targets}.items():
        outcome(cases[name])  # returned normally
        assert not Path(path).exists(), f"probe {name!r} created {path} on the host"
    assert not (tmp_path / "escaped").exists(), "the sandbox wrote into the host's tmp_path"
    # The private /tmp is there and writable (so the denials above are not just a broken sandbox).
    assert outcome(cases["private_tmp"]) == (True, 1.0), "writing /tmp inside the sandbox failed or /tmp is no tmpfs"


@pytest.mark.sandbox
def test_no_writable_space_outside_the_capped_tmp(probes):
    cap = 4 * (1 << 20)
    targets = {
        "tmp": "/tmp/fill.bin",  # the reference: the capped private /tmp fills up
        "root": "/fill.bin",
        "repo": str(REPO_ROOT / "fill.bin"),
        "exercise_dir": str(SOLUTION.parent / "fill.bin"),
        "dev": "/dev/fill.bin",
        "dev_shm": "/dev/shm/fill.bin",
    }
    body = f'''
import os


def fill(path):
    def action():
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as fh:
            for _ in range({2 * cap // (1 << 20)}):
                fh.write(b"x" * (1 << 20))
                fh.flush()
    return action
'''
    for name, path in targets.items():
        body += f"\n\ndef probe_{name}():\n    return attempt(fill({path!r}))\n"
    _, cases = probes(body, list(targets), tmpfs_bytes=cap)

    assert_denied(cases["tmp"], errnos={errno.ENOSPC})
    written = [name for name in targets if name != "tmp" and outcome(cases[name])[0]]
    assert not written, f"wrote {2 * cap} bytes (cap {cap}) outside /tmp at: {', '.join(targets[n] for n in written)}"
    for name in targets:
        assert_denied(cases[name], errnos={errno.EROFS, errno.ENOSPC, errno.EACCES, errno.EPERM})


@pytest.mark.sandbox
def test_exercise_solution_is_not_readable(probes):
    assert SOLUTION.is_file() and SOLUTION.read_text(encoding="utf-8").strip(), f"{SOLUTION} is missing on the host"
    body = f'''
import os

SOLUTION = {str(SOLUTION)!r}


def read(path):
    def action():
        with open(path, "rb") as fh:
            fh.read()
    return action


def probe_absolute_path():
    return attempt(read(SOLUTION))


def probe_via_proc_root():
    return attempt(read("/proc/1/root" + SOLUTION))


def probe_via_job_dotdot():
    return attempt(read("/job/../" + SOLUTION.lstrip("/")))


def probe_list_exercises():
    return attempt(lambda: os.listdir(os.path.dirname(SOLUTION)))


def probe_search_filesystem():
    found = 0
    for top, dirs, files in os.walk("/"):
        if top == "/":
            dirs[:] = [d for d in dirs if d not in ("proc", "sys", "dev")]
        found += sum("lesson06_mean_var" in os.path.join(top, n) or n == "solution.py" for n in dirs + files)
    return outcome(found > 0, found)
'''
    names = ["absolute_path", "via_proc_root", "via_job_dotdot", "list_exercises", "search_filesystem"]
    _, cases = probes(body, names)

    for name in ["absolute_path", "via_proc_root", "via_job_dotdot", "list_exercises"]:
        assert_denied(cases[name], errnos={errno.ENOENT, errno.EACCES, errno.EPERM})
    assert_denied(cases["search_filesystem"])


@pytest.mark.sandbox
def test_environment_secrets_do_not_leak(probes, monkeypatch, host_sleeper):
    secret = f"s3cr3t-{uuid.uuid4().hex}"
    monkeypatch.setenv("KERNELGRADE_TEST_SECRET", secret)
    # A host process whose initial environment holds the secret, as a service worker's would.
    helper = host_sleeper(f"kg-env-holder-{uuid.uuid4().hex}")
    assert secret.encode() in Path(f"/proc/{helper.pid}/environ").read_bytes()

    body = f'''
import os

SECRET = {secret!r}


def scan(path):
    """[leaked, readable]"""
    try:
        with open(path, "rb") as fh:
            return SECRET.encode() in fh.read(), True
    except OSError:
        return False, False


def probe_os_environ():
    return outcome(SECRET in repr(dict(os.environ)) or SECRET in repr(os.environb), len(os.environ))


def probe_proc_1_environ():
    return outcome(*scan("/proc/1/environ"))


def probe_proc_self_environ():
    return outcome(*scan("/proc/self/environ"))


def probe_every_proc_environ():
    results = [scan(f"/proc/{{p}}/environ") for p in os.listdir("/proc") if p.isdigit()]
    return outcome(any(leaked for leaked, _ in results), sum(readable for _, readable in results))
'''
    names = ["os_environ", "proc_1_environ", "proc_self_environ", "every_proc_environ"]
    _, cases = probes(body, names)

    for name in names:
        assert_denied(cases[name])
    # The probes did read something: the sandbox's own environment is there, just without secrets.
    assert outcome(cases["os_environ"])[1] >= 1
    assert outcome(cases["proc_self_environ"])[1] == 1.0
    assert outcome(cases["every_proc_environ"])[1] >= 1


@pytest.mark.sandbox
def test_runs_as_nobody_and_sees_no_host_processes(probes, host_sleeper):
    marker = f"kg-visible-{uuid.uuid4().hex}"
    helper = host_sleeper(marker)
    host_pids = [p for p in os.listdir("/proc") if p.isdigit()]
    assert len(host_pids) >= 10 and helper.pid in host_processes_with(marker)

    body = f'''
import os


def probe_ids():
    return torch.tensor([os.getuid(), os.geteuid(), os.getgid()], dtype=torch.float64)


def probe_pid_count():
    return torch.tensor([len([p for p in os.listdir("/proc") if p.isdigit()])], dtype=torch.float64)


def probe_capabilities():
    with open("/proc/self/status") as fh:
        cap_eff = next(int(line.split()[1], 16) for line in fh if line.startswith("CapEff:"))
    return outcome(cap_eff != 0, cap_eff & 0xFFFFFFFF)


def probe_host_marker_visible():
    seen = 0
    found = False
    for p in os.listdir("/proc"):
        if p.isdigit():
            try:
                with open(f"/proc/{{p}}/cmdline", "rb") as fh:
                    found |= {marker!r}.encode() in fh.read()
                seen += 1
            except OSError:
                pass
    return outcome(found, seen)


def probe_signal_host_pid():
    return attempt(lambda: os.kill({helper.pid}, 0))
'''
    names = ["ids", "pid_count", "capabilities", "host_marker_visible", "signal_host_pid"]
    _, cases = probes(body, names)

    assert cases["ids"].status == "ok", cases["ids"].error
    assert cases["ids"].outputs["out"].tolist() == [SANDBOX_UID] * 3
    assert cases["pid_count"].status == "ok", cases["pid_count"].error
    inside = int(cases["pid_count"].outputs["out"][0])
    assert 1 <= inside < 10, f"the sandbox sees {inside} processes (the host has {len(host_pids)})"
    assert_denied(cases["capabilities"])
    assert_denied(cases["host_marker_visible"])
    assert outcome(cases["host_marker_visible"])[1] >= 1  # it could read its own cmdline
    assert_denied(cases["signal_host_pid"], errnos={errno.ESRCH, errno.EPERM})
    assert helper.poll() is None, "the host helper process was killed from inside the sandbox"


@pytest.mark.sandbox
def test_infinite_loop_is_killed_on_time(probes):
    marker = f"kg-loop-child-{uuid.uuid4().hex}"
    body = f'''
import subprocess
import sys


def probe_loop():
    # A child too, to check that killing the sandbox takes the whole process tree down.
    subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)", {marker!r}])
    while True:
        pass


def probe_normal():
    return outcome(False, 42)
'''
    started = time.monotonic()
    result, cases = probes(body, ["loop", "normal"], case_timeout_s=3)
    wall = time.monotonic() - started

    assert cases["loop"].status == "timeout", (cases["loop"].status, cases["loop"].error)
    assert wall < 60, f"run() took {wall:.1f} s for a 3 s case timeout"
    assert outcome(cases["normal"]) == (False, 42.0)
    assert result.attempts == 2, "the case after the timeout should run in a fresh sandbox"
    deadline = time.monotonic() + 5
    while host_processes_with(marker):
        assert time.monotonic() < deadline, "a process started by the looping case outlived the sandbox"
        time.sleep(0.1)


@pytest.mark.sandbox
def test_segfault_is_a_crash_and_the_sandbox_recovers(probes):
    body = '''
import ctypes


def probe_segv():
    ctypes.string_at(0)
    return outcome(True)


def probe_normal():
    return outcome(False, 7)
'''
    result, cases = probes(body, ["segv", "normal"])
    crash = cases["segv"]
    # The sandbox says it as a code and its numbers; the trusted side puts it in words.
    assert crash.status == "crashed" and crash.said is not None, (crash.status, crash.said)
    assert crash.said.code == "sandbox.exited", crash.said
    render_run(result, "en")
    assert crash.error and re.search(r"SIG[A-Z]+|signal|exit code", crash.error), crash.error
    assert outcome(cases["normal"]) == (False, 7.0)
    assert result.attempts == 2

    # A whole new run afterwards is unaffected.
    result, cases = probes(body, ["normal"])
    assert outcome(cases["normal"]) == (False, 7.0)
    assert result.attempts == 1


@pytest.mark.sandbox
def test_crash_error_names_the_signal(probes):
    body = "import ctypes\n\ndef probe_segv():\n    ctypes.string_at(0)\n"
    result, cases = probes(body, ["segv"])
    assert cases["segv"].status == "crashed" and cases["segv"].said is not None
    assert cases["segv"].said.params.get("signal") == "SIGSEGV", cases["segv"].said
    for language in ("zh", "en"):
        assert "SIGSEGV" in (render_run(result, language).cases[0].error or ""), cases["segv"].error


TRITON_PROGRAM = '''
import triton
import triton.language as tl


@triton.jit
def _copy_kernel(x_ptr, out_ptr, offset, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offset + offs) * 2 + 1)


def _run(offset):
    x = torch.arange(16, dtype=torch.float32)
    out = torch.zeros(16, dtype=torch.float32)
    _copy_kernel[(1,)](x, out, offset, BLOCK=16)
    return out


def probe_out_of_bounds():
    return _run(1 << 40)  # no mask, ~4 TiB past the tensor


def probe_good():
    return _run(0)
'''


@pytest.mark.sandbox
def test_out_of_bounds_triton_load_does_not_pass(probes):
    expected = np.arange(16, dtype=np.float32) * 2 + 1
    _, cases = probes(TRITON_PROGRAM, ["out_of_bounds", "good"])
    assert cases["out_of_bounds"].status in ("crashed", "error"), cases["out_of_bounds"]
    assert cases["good"].status == "ok", cases["good"].error
    np.testing.assert_array_equal(cases["good"].outputs["out"], expected)

    _, cases = probes(TRITON_PROGRAM, ["good"])
    assert cases["good"].status == "ok", cases["good"].error
    np.testing.assert_array_equal(cases["good"].outputs["out"], expected)


@pytest.mark.sandbox
def test_stdout_flood_is_capped(probes):
    body = '''
import sys


def probe_flood():
    sys.stdout.write("FLOOD-START\\n")
    line = "x" * 1023 + "\\n"
    chunk = line * 1024  # 1 MiB
    for _ in range(50):
        sys.stdout.write(chunk)
    sys.stdout.write("FLOOD-END\\n")
    sys.stdout.flush()
    return outcome(False, 1)
'''
    result, cases = probes(body, ["flood"])
    assert outcome(cases["flood"]) == (False, 1.0)
    log = result.log_tail
    assert len(log) < 200_000, f"log_tail holds {len(log)} characters"
    cut = re.search(r"\[(\d+) bytes cut\]", log)
    assert cut, "no cut marker in the log tail"
    assert int(cut.group(1)) >= 50 * (1 << 20) - 200_000
    assert "FLOOD-START" in log[: log.index(cut.group(0))]
    assert "FLOOD-END" in log[log.index(cut.group(0)):]
