"""Resource attacks: fork bomb, memory bomb, disk fill, descriptors, endless loops and sleeps,
processes that try to outlive the sandbox, and attacks on the sandbox's parent. Small Limits keep
each one quick; after each, the correct solution is graded normally.
"""
from __future__ import annotations

import errno
import os
import subprocess
import sys
import time
import uuid

import pytest

from sandbox.backends.bwrap import BwrapBackend
from sandbox.cgroups import host_memory_cgroups, host_pids_cgroups
from sandbox.contract import DeviceMode, Limits
from tests.adversarial.kit import (
    DENIED, REGULAR_CASES, assert_denied, assert_failed, assert_graded_normally, case, denied_details, device_mode, grade,
    guarded, host_processes_with, interpreter_only, submission,
)

pytestmark = [pytest.mark.sandbox, pytest.mark.adversarial]

MiB = 1 << 20
GiB = 1 << 30
# run_timeout_s leaves room for three cold starts (a container's is slower than bwrap's): what is
# tested here is the per-case deadline, not the run's budget.
TIMEOUT_LIMITS = dict(case_timeout_s=1.5, run_timeout_s=120, kill_grace_s=2)
# A kernel's first launch now compiles it for a GPU target before the interpreter runs it (0.1 to
# 0.4 s per specialization on a loaded machine): the given check, which must pass, gets more room.
KERNEL_LOOP_TIMEOUT_S = 5.0

FORK_LIMIT = 16


def test_what_a_case_starts_ends_with_the_case(host):
    """A process the submission starts in one case is gone (killed and reaped) when the next case
    runs: a bomb in the given check or an early case cannot spend the later cases' process budget
    (on the GPU, each new specialization needs a process for Triton's ptxas)."""
    report = grade(guarded('''
def attack(x, y):
    def start():
        pid = os.fork()
        if pid == 0:
            try:
                os.execv("/usr/bin/sleep", [@TOKEN@, "60"])
            finally:
                os._exit(0)
        return [pid, 0]
    state = once("sleeper", start)
    state[1] += 1
    if state[1] == 1:
        return False, 1.0  # the call that started it
    try:
        os.kill(state[0], 0)
    except OSError as exc:
        return False, 2.0 + (exc.errno == 3)  # 3.0: ESRCH, no such process any more
    return True, 0.0  # still there, or a zombie nobody reaped
''', TOKEN=host.token))
    host.assert_untouched()
    details = denied_details(report)
    # the given check calls it first; every later call (each regular case) finds the sleeper gone
    assert details and all(d == 3.0 for d in details), details


def test_fork_bomb_is_bounded_by_the_process_limit(host):
    """Limits.processes holds: a pids cgroup per sandbox where the service can write one (it binds
    for root too), RLIMIT_NPROC elsewhere (which the kernel does not apply to root: there, as root,
    this test fails, and it should). The cap is the submission's budget plus the runtime's own
    tasks (CUDA's threads on the GPU), the same on every backend. Where the limit does not hold, all
    the forks succeed and the attack passes its cases; where it holds, the children end with the
    case that started them, so the later cases compile and run (on the GPU, Triton's ptxas needs a
    process of its own) and show the denial too."""
    cap = Limits(processes=FORK_LIMIT).process_cap(device_mode())
    # Bounded on purpose (2 x cap children, each exec'd into `sleep` with the token as its argv[0]):
    # enough to show whether the cap holds, without risking the machine if it does not.
    report = grade(guarded('''
def attack(x, y):
    def bomb():
        started = 0
        for _ in range(@ATTEMPTS@):
            try:
                pid = os.fork()
            except OSError:
                break
            if pid == 0:
                try:
                    os.execv("/usr/bin/sleep", [@TOKEN@, "60"])
                finally:
                    os._exit(0)
            started += 1
        return started
    started = once("forks", bomb)
    return started >= @ATTEMPTS@, started
''', ATTEMPTS=2 * cap, TOKEN=host.token), processes=FORK_LIMIT)
    # Whatever happened inside, every child is gone once the grading is over.
    host.assert_untouched()
    assert_graded_normally()
    # The attack ran to its end in every case (not a sandbox that could not start) and was refused.
    started = assert_denied(report)
    assert all(0 <= n < cap for n in started), (started, cap)
    # The report says which limit held.
    expected = "pids cgroup" if host_pids_cgroups() else BwrapBackend(python=sys.executable, hidden_paths=[]).process_limit(device_mode())
    if host.backend == "docker":
        assert report.environment.process_limit == "docker pids_limit"
    elif expected == "RLIMIT_NPROC (a host uid of its own)":  # each sandbox names its own uid
        assert report.environment.process_limit.startswith("RLIMIT_NPROC (host uid "), report.environment
    else:
        assert report.environment.process_limit == expected


MEMORY_OUTSIDE_THE_CAPS = '''
import ctypes
import errno


def attack(x, y):
    # memfd pages count against no rlimit; a nested user namespace may mount a tmpfs of any size.
    refused = 0
    try:
        fd = os.memfd_create("kg")
        os.ftruncate(fd, 1 << 20)
        os.write(fd, b"x" * (1 << 20))
    except OSError as exc:
        refused += exc.errno == errno.ENOSYS
    libc = ctypes.CDLL(None, use_errno=True)
    for flags in (0x10000000, 0x10000000 | 0x00020000):  # CLONE_NEWUSER, with CLONE_NEWNS
        if libc.unshare(flags) != 0:
            refused += ctypes.get_errno() in (errno.EPERM, errno.ENOSPC)
    return refused < 3, refused
'''


# bwrap only: under docker memfd pages are charged to the container's memory cgroup (no way around
# its cap, so not refused) and the engine's seccomp profile refuses unshare; and the docker backend
# does not take memory_cgroup_bytes (its cap is memory_bytes, environment.memory_limit says so).
@pytest.mark.sandbox_backends("bwrap")
def test_memfd_and_nested_user_namespaces_are_refused(host):
    """The two ways around every memory cap that the second red team used (1.4 GiB written into a
    tmpfs mounted in a nested user namespace): memfd_create and unshare(CLONE_NEWUSER) fail."""
    report = grade(guarded(MEMORY_OUTSIDE_THE_CAPS))
    assert_denied(report, details={3.0})
    host.assert_untouched()
    assert_graded_normally()


def test_the_kernel_keyrings_are_refused(host):
    """Keys live in the kernel's keyrings, kept and counted per uid rather than per sandbox: memory
    no sandbox limit counts, and a message to the next job run as the same host uid. add_key,
    keyctl and request_key fail with EPERM (bwrap: our seccomp filter; docker: the engine's default
    profile)."""
    report = grade(guarded('''
import ctypes
import errno


def attack(x, y):
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    calls = (
        (248, b"user", b"kg-key", b"payload", 7, ctypes.c_long(-3)),  # add_key into the session keyring
        (250, 0, ctypes.c_long(-3), 0),  # keyctl(KEYCTL_GET_KEYRING_ID, session keyring)
        (249, b"user", b"kg-key", None, ctypes.c_long(0)),  # request_key
    )
    refused = 0
    for number, *args in calls:
        if libc.syscall(number, *args) < 0:
            refused += ctypes.get_errno() == errno.EPERM
    return refused < 3, refused
'''))
    assert_denied(report, details={3.0})
    host.assert_untouched()
    assert_graded_normally()


@pytest.mark.sandbox_backends("bwrap")
def test_memory_past_the_cgroup_limit_ends_the_sandbox(host):
    """1.5 GiB of plain memory, within RLIMIT_AS (interpreter) or with no RLIMIT_AS at all (GPU),
    against a memory cgroup of 1 GiB: the sandbox is killed, the case says why, the host is fine."""
    if host_memory_cgroups() is None:
        pytest.fail("no writable memory cgroup here: nothing bounds a sandbox's memory on a GPU "
                    "(and only RLIMIT_AS on the interpreter); the report says so in environment.memory_limit")
    report = grade(guarded('''
def attack(x, y):
    block = bytearray(1536 << 20)
    for i in range(0, len(block), 4096):
        block[i] = 1
    return True, len(block) >> 20
'''), memory_cgroup_bytes=GiB)
    assert_failed(report)
    assert report.environment.memory_limit.startswith("memory cgroup 1 GiB"), report.environment
    for case_id in REGULAR_CASES:
        c = case(report, case_id)
        assert c.error and "超出内存上限" in c.error and "Out of memory" in c.error, c
    host.assert_untouched()
    assert_graded_normally()


def test_memory_bomb_is_refused(host):
    """bwrap: RLIMIT_AS (interpreter only: CUDA reserves huge address ranges), so reserving or touching
    memory past the limit fails with an exception the attack sees. docker: the memory cgroup, on
    the GPU too; it counts the pages a process touches, not its address space, so a reservation
    alone is no breach there and is not tried, and touching past the limit gets the sandbox
    OOM-killed: the attack never sees a refusal, its cases crash, and each says out of memory
    with the limit (the engine's State.OOMKilled and the container's cgroup, as the launcher reports
    them: never anything the container wrote)."""
    limit = 2 * GiB
    if host.backend == "bwrap" and device_mode() is DeviceMode.gpu:
        pytest.skip("bwrap: RLIMIT_AS is set only on the interpreter (CUDA reserves huge address ranges)")
    report = grade(guarded('''
def attack(x, y):
    # Reserve twice the limit at once (untouched), then touch memory in chunks up to twice the limit.
    if @RESERVE@:
        try:
            reserved = torch.empty(2 * @LIMIT@, dtype=torch.uint8)
            return True, 0
        except (RuntimeError, MemoryError):
            pass
    chunks = []
    try:
        while len(chunks) * (128 << 20) < 2 * @LIMIT@:
            chunks.append(torch.ones(128 << 20, dtype=torch.uint8))
    except (RuntimeError, MemoryError):
        pass
    touched = len(chunks) * (128 << 20)
    del chunks
    return touched >= @LIMIT@, 12
''', LIMIT=limit, RESERVE=host.backend == "bwrap"), memory_bytes=limit, run_timeout_s=240)
    if host.backend == "bwrap":
        assert_denied(report, details={12.0})
    else:
        # Each phase in its own container (run_timeout_s: three cold starts), ended at the memory
        # cgroup's limit: OOM-killed, or stopped at the case's time limit when the kernel first
        # reclaims the container's file pages (torch's code) and the process thrashes on them (seen
        # on a loaded 2-core machine; sandbox/limit_watch.py). Either way never past the limit (the
        # attack's cases would then pass, and none does), and the student is told out of memory.
        assert_failed(report)
        assert report.environment.memory_limit == "docker memory cgroup 2 GiB, no swap", report.environment
        given = report.given_check
        assert given.status in ("crashed", "timeout"), given
        assert "超出内存上限" in given.output and "Out of memory" in given.output, given
        for case_id in REGULAR_CASES:
            c = case(report, case_id)
            assert not c.passed and c.first_mismatch is None, c
            assert c.error and "超出内存上限" in c.error and "Out of memory" in c.error, c
    host.assert_untouched()
    assert_graded_normally()


def test_disk_fill_stops_at_the_tmpfs_cap(host):
    cap = 8 * MiB
    report = grade(guarded('''
def attack(x, y):
    codes = []
    for path in ("/tmp/fill.bin", "/dev/shm/fill.bin", "/tmp/triton-cache/fill.bin"):
        written = 0
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "wb") as fh:
                for _ in range(4 * @CAP@ // (1 << 20)):
                    fh.write(b"x" * (1 << 20))
                    fh.flush()
                    written += 1 << 20
        except OSError as exc:
            codes.append(exc.errno)
        finally:
            if os.path.exists(path):
                os.unlink(path)
        if written > @CAP@:
            return True, 0
    return False, codes[0] if len(set(codes)) == 1 and len(codes) == 3 else 0
''', CAP=cap), tmpfs_bytes=cap)
    assert_denied(report, errnos={errno.ENOSPC})
    host.assert_untouched()
    assert_graded_normally()


def test_file_size_limit(host):
    limit = 4 * MiB
    report = grade(guarded('''
def attack(x, y):
    written = 0
    try:
        with open("/tmp/big.bin", "wb") as fh:
            for _ in range(4 * @LIMIT@ // (1 << 20)):
                fh.write(b"x" * (1 << 20))
                fh.flush()
                written += 1 << 20
    except OSError as exc:
        return written > @LIMIT@, exc.errno
    finally:
        os.unlink("/tmp/big.bin")
    return True, 0
''', LIMIT=limit), file_size_bytes=limit, tmpfs_bytes=64 * MiB)
    assert_denied(report, errnos={errno.EFBIG})
    host.assert_untouched()
    assert_graded_normally()


def test_open_file_limit(host):
    limit = 64
    report = grade(guarded('''
def attack(x, y):
    fds = []
    try:
        for _ in range(4 * @LIMIT@):
            fds.append(os.open("/dev/null", os.O_RDONLY))
    except OSError as exc:
        code = exc.errno
    else:
        code = 0
    for fd in fds:
        os.close(fd)
    return len(fds) >= @LIMIT@, code
''', LIMIT=limit), open_files=limit)
    assert_denied(report, errnos={errno.EMFILE})
    host.assert_untouched()
    assert_graded_normally()


def assert_timed_out(report, *, given: bool, cases: tuple[str, ...], started: float,
                     case_timeout_s: float = TIMEOUT_LIMITS["case_timeout_s"]) -> None:
    """The hanging phases ended as timeouts (each costing a fresh sandbox), within a bounded time."""
    assert_failed(report)
    assert report.status == "graded" and report.program.ran
    if given:
        assert report.given_check.status == "timeout", report.given_check
    for case_id in cases:
        c = case(report, case_id)
        assert not c.passed and "超时" in (c.error or ""), c
    assert report.timing["attempts"] == 1 + given + len(cases)
    # Bounded by the sandboxes' own start-ups plus each hang's deadline and kill: nothing waited
    # for the hang itself (an hour's sleep, an endless loop).
    elapsed = time.monotonic() - started
    hangs = int(given) + len(cases)
    per_hang = case_timeout_s + TIMEOUT_LIMITS["kill_grace_s"]
    bound = report.timing.get("startup_s", 0.0) + hangs * per_hang + 20
    assert elapsed < bound, f"{hangs} timeouts of {case_timeout_s} s took {elapsed:.1f} s (bound {bound:.0f} s)"


# Hangs in the given check and in the first case (regular.n32, the only 4 x 32 input); the last
# case returns normally in the fresh sandbox that follows.
HANGS_HERE = "in_given_check() or tuple(x.shape) == (4, 32)"


def test_endless_python_loop_is_killed_on_time(host):
    started = time.monotonic()
    report = grade(guarded(f'''
def attack(x, y):
    while {HANGS_HERE}:
        pass
    return False, 7
'''), **TIMEOUT_LIMITS)
    assert_timed_out(report, given=True, cases=("regular.n32",), started=started)
    assert case(report, "regular.n17").first_mismatch.observed == DENIED + 7
    host.assert_untouched()
    assert_graded_normally()


# True only while the harness compiles a GPU job's kernels ahead (sandbox/harness.py `_compile_ahead`
# turns Triton's launches into compile requests): the only time the wrapper hangs.
IN_COMPILE_AHEAD = 'JITFunction.run.__name__ == "compile_only"'


@pytest.mark.skipif(device_mode() is not DeviceMode.gpu, reason="GPU only: the compile-ahead phase runs on a GPU")
@pytest.mark.parametrize("swallows, attempts", [(False, 1), (True, 2)], ids=["hangs", "swallows-the-stop"])
def test_a_hang_in_the_compile_ahead_phase_costs_no_verdict(host, swallows, attempts):
    """Student code hangs only while the kernels compile ahead (a speed-up, before the given check):
    the phase stops the call at its deadline and the given check and every case run as usual; code
    that swallows that stop ends its sandbox at the time limit, and the next sandbox runs without
    the phase. Either way the given check is run (it was lost, `not_run`, before)."""
    hang = ("try:\n            while True:\n                pass\n        except BaseException:\n            pass"
            if swallows else "pass")
    report = grade(guarded(f'''
def attack(x, y):
    from triton.runtime.jit import JITFunction
    while {IN_COMPILE_AHEAD}:
        {hang}
    return True, 0
'''), **{**TIMEOUT_LIMITS, "case_timeout_s": KERNEL_LOOP_TIMEOUT_S})
    assert report.status == "graded" and report.given_check.status == "passed", report.given_check
    assert all(c.passed for c in report.cases), [(c.id, c.error) for c in report.cases if not c.passed]
    assert report.timing["attempts"] == attempts, report.timing
    if not swallows:  # the phase ran (and was stopped, not ended by a timeout)
        assert report.timing.get("kernels_compiled_ahead", 0) >= 1, report.timing
    host.assert_untouched()


@interpreter_only("an endless loop in a kernel is tested where it cannot hang a GPU")
def test_endless_loop_inside_the_kernel_is_killed_on_time(host):
    # A loop Triton compiles for a GPU too (every launch is compiled for sm_90 first): N is a
    # constexpr, `i` a loop-carried value that never grows, so only N = 32 loops (0 < 1 forever; any
    # other N gives a bound of at most 0).
    started = time.monotonic()
    report = grade(submission(kernel='''
row = tl.program_id(0)
cols = tl.arange(0, BLOCK)
mask = cols < N
i = row * 0
while i < 1 - (N - 32) * (N - 32):
    i = i * 1
values = tl.load(x + row * N + cols, mask=mask, other=0.0)
tl.store(y + row * N + cols, values * 2, mask=mask)
'''), **{**TIMEOUT_LIMITS, "case_timeout_s": KERNEL_LOOP_TIMEOUT_S})
    # Only regular.n32 (N = 32) loops; the given check and regular.n17 are right.
    assert_timed_out(report, given=False, cases=("regular.n32",), started=started, case_timeout_s=KERNEL_LOOP_TIMEOUT_S)
    assert "编译" not in case(report, "regular.n32").error  # the kernel ran (it compiled): not said as the compile's
    assert report.given_check.status == "passed" and case(report, "regular.n17").passed
    host.assert_untouched()
    assert_graded_normally()


def test_a_compile_past_the_time_limit_is_said_as_the_compile(host):
    """A `tl.static_range` of 200 000 unrolls into 200 000 copies of its body: Triton's compiler
    (the GPU compile before each interpreter launch, or the JIT on a GPU) runs for minutes on it.
    It ends at the case's time limit like any hang, and the student is told it was the compile of
    `double_kernel` that ran out of time, not the kernel's run (both said only "still running
    after 5 s" before: an endless loop and an unrolled one read the same)."""
    started = time.monotonic()
    report = grade(submission(kernel='''
row = tl.program_id(0)
cols = tl.arange(0, BLOCK)
mask = cols < N
values = tl.load(x + row * N + cols, mask=mask, other=0.0)
for i in tl.static_range(1 + (N == 32) * 199999):
    values = values + 0.0
tl.store(y + row * N + cols, values * 2, mask=mask)
'''), **{**TIMEOUT_LIMITS, "case_timeout_s": KERNEL_LOOP_TIMEOUT_S})
    # Only regular.n32 (N = 32) unrolls 200 000 times; the given check and regular.n17 compile at once.
    assert_timed_out(report, given=False, cases=("regular.n32",), started=started, case_timeout_s=KERNEL_LOOP_TIMEOUT_S)
    assert report.given_check.status == "passed" and case(report, "regular.n17").passed
    error = case(report, "regular.n32").error
    for said in ("为 GPU 编译 kernel double_kernel", "tl.static_range", "while compiling kernel double_kernel"):
        assert said in error, error
    host.assert_untouched()
    assert_graded_normally()


def test_sleeping_past_the_timeout_is_killed(host):
    started = time.monotonic()
    report = grade(guarded('''
def attack(x, y):
    if in_given_check():
        time.sleep(3600)
    return False, 7
'''), **TIMEOUT_LIMITS)
    assert_timed_out(report, given=True, cases=(), started=started)
    assert denied_details(report) == [7.0, 7.0]
    host.assert_untouched()
    assert_graded_normally()


DAEMON = '''
import os
import subprocess


def daemonize():
    # setsid + double fork + exec: a daemon in its own session with the token in its argv and env.
    pid = os.fork()
    if pid == 0:
        os.setsid()
        if os.fork() == 0:
            os.execve("/usr/bin/sleep", [@TOKEN@, "300"], {"KG_ADV": @TOKEN@})
        os._exit(0)
    os.waitpid(pid, 0)
    subprocess.Popen(["/usr/bin/sleep", "300", @TOKEN@], start_new_session=True, env={"KG_ADV": @TOKEN@})
    return 2


started = once("daemons", daemonize)
'''


def test_daemons_do_not_outlive_the_sandbox(host):
    """Daemons (setsid, double fork) started in the given check, which then hangs until the sandbox
    is killed; and again in the fresh sandbox of the cases, which return normally. None survives."""
    started = time.monotonic()
    report = grade(guarded(DAEMON.replace("@TOKEN@", repr(host.token)) + '''
def attack(x, y):
    while in_given_check():
        time.sleep(1)
    return False, started
'''), **TIMEOUT_LIMITS)
    assert_timed_out(report, given=True, cases=(), started=started)
    assert denied_details(report) == [2.0, 2.0]
    host.assert_untouched()  # no process with the token in its argv or environment is left
    assert_graded_normally()


@pytest.fixture
def host_sleeper(host):
    """A host process the sandbox must not be able to signal (its pid is given to the attack)."""
    marker = f"kg-host-sleeper-{uuid.uuid4().hex}"  # not the token: it is meant to survive
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)", marker])
    proc.marker = marker
    yield proc
    proc.kill()
    proc.wait()


def test_signals_do_not_reach_the_parent_or_the_host(host, host_sleeper):
    report = grade(guarded('''
import signal


def attack(x, y):
    # The sandbox's parent (bwrap as its pid 1) and everything it may signal: only its own.
    for target in (os.getppid(), 1, -1):
        for sig in (signal.SIGTERM, signal.SIGSTOP, signal.SIGKILL):
            attempt(lambda: os.kill(target, sig))
    denied = 0
    for pid in (@SLEEPER@, @RUNNER@):
        for sig in (0, signal.SIGKILL):
            worked, code = attempt(lambda: os.kill(pid, sig))
            if worked:
                return True, 0
            denied += code == 3  # ESRCH: no such process in this pid namespace
    return False, denied
''', SLEEPER=host_sleeper.pid, RUNNER=os.getpid()))
    assert_denied(report, details={4.0})
    assert host_sleeper.poll() is None, "the host process was killed from inside the sandbox"
    assert host_processes_with(host_sleeper.marker)
    host.assert_untouched()
    assert_graded_normally()


def test_ptrace_and_memory_of_the_parent(host, host_sleeper):
    """Host processes (the runner, a sleeper) cannot be traced or read. The sandbox's own init (bwrap,
    pid 1 inside, its parent) can be: no seccomp filter forbids it, but it holds no capability and the
    same uid, so tracing it gains nothing; the attack checks that too."""
    report = grade(guarded('''
import ctypes


def attack(x, y):
    libc = ctypes.CDLL(None, use_errno=True)
    libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
    libc.ptrace.restype = ctypes.c_long
    PTRACE_ATTACH, PTRACE_SEIZE, PTRACE_DETACH = 16, 0x4206, 17
    denied = 0
    for pid in (@SLEEPER@, @RUNNER@):
        for request in (PTRACE_ATTACH, PTRACE_SEIZE):
            if libc.ptrace(request, pid, None, None) == 0:
                libc.ptrace(PTRACE_DETACH, pid, None, None)
                return True, 0
            denied += ctypes.get_errno() == 3  # ESRCH: not in this pid namespace
        worked, code = attempt(lambda: open("/proc/%d/mem" % pid, "rb").close())
        if worked:
            return True, 0
        denied += code == 2  # ENOENT
    # Under docker the harness is the container's pid 1: it has no parent inside (getppid() is 0).
    for pid in {1, os.getppid()} - {0}:
        with open("/proc/%d/status" % pid) as fh:
            status = dict(line.split(":", 1) for line in fh.read().splitlines() if ":" in line)
        if int(status["CapEff"], 16) != 0 or status["Uid"].split() != [str(os.getuid())] * 4:
            return True, 0  # the parent is more privileged than us: tracing it would escalate
    return False, denied
''', SLEEPER=host_sleeper.pid, RUNNER=os.getpid()))
    assert_denied(report, details={6.0})
    assert host_sleeper.poll() is None
    host.assert_untouched()
    assert_graded_normally()


def test_stdout_and_stderr_floods_are_capped(host):
    started = time.monotonic()
    report = grade(guarded('''
def attack(x, y):
    chunk = ("flood " + @TOKEN@ + " ") * 8192
    for _ in range(40):  # about 9 MB on each stream, through Python and straight to the fds
        print(chunk)
        print(chunk, file=sys.stderr)
    for _ in range(40):
        os.write(1, chunk.encode())
        os.write(2, chunk.encode())
    return False, 1
''', TOKEN=host.token))
    assert_denied(report, details={1.0})
    assert len(report.to_json()) < 200_000, f"the report holds {len(report.to_json())} characters"
    assert len(report.given_check.output) < 20_000
    assert time.monotonic() - started < 60
    host.assert_untouched()
    assert_graded_normally()
