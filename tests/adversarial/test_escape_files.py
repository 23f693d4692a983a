"""Files: the solutions, a database, the worker's /proc and environment, the secret seed, writes
outside the private /tmp, and traps planted for a careless trusted side.

Readers compare what they read with a digest or a transformed value embedded in the attack (the
attack's own source lies in /job, so it never holds the plain secret it looks for).
"""
from __future__ import annotations

import errno
import hashlib
import os
import shutil
import sqlite3
import subprocess
import sys
import sysconfig
import time
import uuid
from pathlib import Path

import pytest

from service.config import REPO_ROOT
from tests.adversarial.kit import (
    ADV_EXERCISES, ADV_ID, LESSON06_SOLUTION, SECRET_ENV, SECRET_SEED, assert_denied, assert_graded_normally,
    denied_details, grade, guarded, make_grader, solution_sha256, warm_forked,
)

pytestmark = [pytest.mark.sandbox, pytest.mark.adversarial]

READ_FILES = '''
import hashlib


def attack(x, y):
    denied = 0
    for path in @PATHS@:
        try:
            with open(path, "rb") as fh:
                digest = hashlib.sha256(fh.read()).hexdigest()
        except OSError:
            denied += 1
            continue
        if digest in @DIGESTS@:
            return True, 0
    for folder in @FOLDERS@:
        try:
            os.listdir(folder)
        except OSError:
            denied += 1
    return False, denied
'''


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_exercise_solutions_are_unreadable(host):
    own = ADV_EXERCISES / ADV_ID
    targets = {
        str(LESSON06_SOLUTION): solution_sha256(),
        str(own / "solution.py"): sha256(own / "solution.py"),
        str(own / "checks.py"): sha256(own / "checks.py"),
    }
    paths = []
    for target in targets:
        relative = target.lstrip("/")
        paths += [target, f"/proc/1/root/{relative}", f"/proc/self/root/{relative}", f"/job/../{relative}",
                  f"/proc/1/cwd/{relative}", f"/tmp/../{relative}"]
    folders = [str(LESSON06_SOLUTION.parent), str(own), str(REPO_ROOT / "exercises"), str(REPO_ROOT / "service")]
    report = grade(guarded(READ_FILES, PATHS=paths, DIGESTS=sorted(set(targets.values())), FOLDERS=folders))
    assert_denied(report, details={float(len(paths) + len(folders))})
    host.assert_untouched()
    assert_graded_normally()


def test_worker_proc_does_not_lead_to_the_host(host):
    """Through /proc/1 (bwrap's init inside the namespace) and the parent: no host file, no host memory."""
    readme = REPO_ROOT / "README.md"
    paths = [f"/proc/1/root{readme}", f"/proc/self/root{readme}", "/proc/1/root/proc/1/environ",
             "/proc/1/exe", "/proc/1/mem"]
    report = grade(guarded('''
import hashlib


def attack(x, y):
    denied = 0
    for path in @PATHS@:
        try:
            with open(path, "rb") as fh:
                data = fh.read(1 << 20)
        except OSError:
            denied += 1
            continue
        if hashlib.sha256(data).hexdigest() == @README@ or @SECRET_REVERSED@[::-1].encode() in data:
            return True, 0
    # The host's pids are nowhere in the sandbox's /proc (its own processes are).
    pids = [int(p) for p in os.listdir("/proc") if p.isdigit()]
    if any(p == @TEST_PID@ for p in pids) or len(pids) > 20:
        return True, len(pids)
    # /proc/1 is the sandbox's init, not the host's: its root is the sandbox's root.
    if os.path.exists("/proc/1/root" + @REPO@ + "/service"):
        return True, 1
    return False, denied
''', PATHS=paths, README=sha256(readme), SECRET_REVERSED=host.secret[::-1], TEST_PID=os.getpid(),
                           REPO=str(REPO_ROOT)))
    # Two paths open, harmlessly: /proc/1/exe (bwrap's binary) and /proc/1/root/proc/1/environ
    # (the sandbox's own init: PATH only). The host's README and /proc/1/mem stay out of reach.
    # A warm forked child's init is in a user namespace beside the harness's: none of /proc/1 opens.
    assert_denied(report, details={float(len(paths) - (0 if warm_forked() else 2))})
    host.assert_untouched()
    assert_graded_normally()


@pytest.fixture
def databases(host, tmp_path):
    """Two SQLite databases holding a secret row: one in the host's tmp, one in a data folder
    inside the bound Python environment (hidden by an empty tmpfs over it)."""
    secret = f"dbsecret{uuid.uuid4().hex}"
    venv_data = Path(sys.prefix) / f"kg-adv-data-{host.token}"
    made = []
    try:
        for folder in (tmp_path / "data", venv_data):
            folder.mkdir(parents=True)
            made.append(folder)
            with sqlite3.connect(folder / "kernelgrade.db") as db:
                db.execute("create table secrets (value text)")
                db.execute("insert into secrets values (?)", (secret,))
        yield secret, made
    finally:
        shutil.rmtree(venv_data, ignore_errors=True)


def test_database_files_are_unreadable(host, databases):
    secret, (tmp_data, venv_data) = databases
    assert (venv_data / "kernelgrade.db").is_file() and secret.encode() in (venv_data / "kernelgrade.db").read_bytes()
    for data_dir in (tmp_data, venv_data):
        grader = make_grader(settings={"data_dir": data_dir})
        assert data_dir.resolve() in grader.runner.backend.hidden_paths
        paths = [str(data_dir / "kernelgrade.db"), f"/proc/1/root{data_dir}/kernelgrade.db"]
        report = grade(guarded('''
import sqlite3


def attack(x, y):
    denied = 0
    for path in @PATHS@:
        try:
            with open(path, "rb") as fh:
                if @SECRET_REVERSED@[::-1].encode() in fh.read():
                    return True, 0
        except OSError:
            denied += 1
        try:
            with sqlite3.connect("file:" + path + "?mode=ro", uri=True) as db:
                rows = db.execute("select value from secrets").fetchall()
            if any(@SECRET_REVERSED@[::-1] in str(row) for row in rows):
                return True, 0
        except sqlite3.Error:
            denied += 1
    return False, denied
''', PATHS=paths, SECRET_REVERSED=secret[::-1]), grader=grader)
        assert_denied(report, details={float(2 * len(paths))})
    host.assert_untouched()
    assert_graded_normally()


@pytest.fixture
def secret_holder(host):
    """A host process started with the secret in its initial environment (/proc/PID/environ shows
    only that; this process's own monkeypatched variable is not in its /proc/self/environ)."""
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)", f"kg-secret-holder-{uuid.uuid4().hex}"],
                            env=dict(os.environ))
    deadline = time.monotonic() + 10
    while host.secret.encode() not in Path(f"/proc/{proc.pid}/environ").read_bytes():
        assert time.monotonic() < deadline, "the helper did not start"
        time.sleep(0.05)
    yield proc
    proc.kill()
    proc.wait()


def test_environment_secret_is_unreadable(host, secret_holder):
    assert os.environ[SECRET_ENV] == host.secret  # set in this process, which starts the sandbox
    report = grade(guarded('''
def attack(x, y):
    secret = @SECRET_REVERSED@[::-1]
    if secret in repr(dict(os.environ)) or secret.encode() in repr(os.environb).encode():
        return True, 0
    sources = ["/proc/self/environ", "/proc/1/environ", "/proc/%d/environ" % os.getppid(),
               "/proc/self/cmdline", "/proc/1/cmdline"]
    sources += ["/proc/%s/environ" % p for p in os.listdir("/proc") if p.isdigit()]
    readable = 0
    for path in sources:
        try:
            with open(path, "rb") as fh:
                data = fh.read()
        except OSError:
            continue
        readable += 1
        if secret.encode() in data:
            return True, 0
    # detail: the sources that could be read (the sandbox's own environment is there, without it)
    return False, min(readable, 3)
''', SECRET_REVERSED=host.secret[::-1]))
    assert_denied(report, details={3.0})
    host.assert_untouched()
    assert_graded_normally()


def test_secret_seed_is_not_discoverable(host):
    mask = 0x5A5A_1234_0F0F_7777
    report = grade(guarded('''
def attack(x, y):
    seed = @MASKED@ ^ @MASK@
    needles = [str(seed).encode(), ("%x" % seed).encode(), ("%X" % seed).encode(),
               seed.to_bytes(8, "little"), seed.to_bytes(8, "big")]
    files = []
    for top, dirs, names in os.walk("/job"):
        files += [os.path.join(top, n) for n in names]
    files += ["/proc/%s/%s" % (p, part) for p in os.listdir("/proc") if p.isdigit() for part in ("cmdline", "environ")]
    scanned = 0
    for path in files:
        try:
            with open(path, "rb") as fh:
                data = fh.read()
        except OSError:
            continue
        scanned += 1
        if any(n in data for n in needles):
            return True, 0
    if any(n.decode("latin-1") in " ".join(sys.argv) + repr(dict(os.environ)) for n in needles):
        return True, 0
    # detail: the job folder was really read (harness, wire, submission, check, job, inputs)
    return False, float(len([f for f in files if f.startswith("/job/")]) >= 6)
''', MASKED=SECRET_SEED ^ mask, MASK=mask))
    assert report.seeds is not None and report.seeds.secret == SECRET_SEED
    assert_denied(report, details={1.0})
    host.assert_untouched()
    assert_graded_normally()


def test_writes_outside_the_private_tmp(host):
    site = Path(sysconfig.get_paths()["purelib"])
    targets = [
        str(host.repo_marker), str(host.tmp_marker), f"/job/escaped-{host.token}.txt", "/job/submission.py",
        "/job/harness.py", f"/escaped-{host.token}.txt", f"/usr/escaped-{host.token}.txt",
        str(site / f"escaped-{host.token}.pth"), f"/etc/escaped-{host.token}", f"/dev/escaped-{host.token}",
        f"/proc/1/root/tmp/escaped-{host.token}",
        str(LESSON06_SOLUTION), str(REPO_ROOT / ".git" / f"escaped-{host.token}"),
    ]
    report = grade(guarded('''
def attack(x, y):
    def write(path):
        def action():
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "a") as fh:
                fh.write("escaped " + @TOKEN@ + "\\n")
        return action
    # The control: the private /tmp is writable (so the refusals below are not a broken sandbox).
    if not attempt(write("/tmp/scratch-ok"))[0]:
        return False, 0
    denied = 0
    for path in @TARGETS@:
        worked, code = attempt(write(path))
        if worked and not path.startswith(("/tmp/", "/proc/1/root/tmp/")):
            return True, 0  # paths under /tmp land in the private tmpfs: the host check decides
        denied += not worked
    # The /job folder cannot be changed in place either.
    for action in (lambda: os.chmod("/job/harness.py", 0o777), lambda: os.rename("/job/job.json", "/job/x"),
                   lambda: os.symlink("/tmp", "/job/" + @TOKEN@), lambda: os.link("/job/wire.py", "/tmp/wire-link")):
        worked, code = attempt(action)
        if worked:
            return True, 0
        denied += 1
    return False, denied
''', TOKEN=host.token, TARGETS=targets))
    # Paths under /tmp (the host's pytest tmp_path is one) reach only the sandbox's private tmpfs,
    # where writing is allowed: the host checks below say whether anything got out.
    # (The repository itself lies under /tmp when CI clones it there.)
    private = [t for t in targets if t.startswith(("/tmp/", "/proc/1/root/tmp/"))]
    assert len(private) >= 2, private
    # Writes into the private /tmp may work or not (bwrap's own mount-point folders): any count
    # from "only the non-private targets refused" to "all refused"; the host checks decide.
    assert_denied(report, details={float(n) for n in range(len(targets) - len(private) + 4, len(targets) + 5)})
    assert sha256(LESSON06_SOLUTION) == solution_sha256()
    assert not list(site.glob(f"*{host.token}*"))
    host.assert_untouched()
    assert_graded_normally()


PRINTK_RATELIMIT = Path("/proc/sys/kernel/printk_ratelimit")


@pytest.mark.skipif(not PRINTK_RATELIMIT.exists(), reason="no /proc/sys/kernel/printk_ratelimit on this kernel")
def test_global_kernel_settings_are_not_writable(host):
    original = PRINTK_RATELIMIT.read_text()
    wanted = str(int(original) + 1)
    try:
        report = grade(guarded('''
def attack(x, y):
    # Opening the host's core_pattern for writing shows it could be replaced; nothing is written to it.
    core, core_errno = attempt(lambda: os.close(os.open("/proc/sys/kernel/core_pattern", os.O_WRONLY)))

    def set_ratelimit():
        with open("/proc/sys/kernel/printk_ratelimit", "w") as fh:
            fh.write(@VALUE@)
    changed, changed_errno = attempt(set_ratelimit)
    return core or changed, changed_errno or core_errno
''', VALUE=wanted))
        after = PRINTK_RATELIMIT.read_text()
    finally:
        if PRINTK_RATELIMIT.read_text() != original:
            PRINTK_RATELIMIT.write_text(original)  # undo the breach (only possible as root)
    host.assert_untouched()
    assert_graded_normally()
    # The breach: the submission passes (it returns 2x only if a write worked) and the host sees it.
    assert after == original, f"the sandbox changed the host's kernel.printk_ratelimit from {original!r} to {after!r}"
    assert_denied(report, errnos={errno.EACCES, errno.EROFS, errno.EPERM})


def test_symlinks_and_fifos_planted_in_tmp_are_not_followed(host):
    """Traps where a careless trusted side might look for outputs: nothing on the host opens them
    (a FIFO would tell its writer), nothing appears on the host, and grading does not hang."""
    started = time.monotonic()
    report = grade(guarded('''
def attack(x, y):
    def plant():
        planted = 0
        links = {"/tmp/out.safetensors": "/etc/shadow", "/tmp/result.json": "/proc/1/environ",
                 "/tmp/" + @TOKEN@ + "-link": "/job/inputs.safetensors", "/dev/shm/out.safetensors": "/etc/passwd",
                 "/tmp/triton-cache": "/job"}
        for link, target in links.items():
            if attempt(lambda: os.symlink(target, link))[0]:
                planted += 1
        fifos = ["/tmp/" + @TOKEN@ + ".fifo", "/tmp/verdict.fifo", "/dev/shm/" + @TOKEN@ + ".fifo"]
        for fifo in fifos:
            if attempt(lambda: os.mkfifo(fifo))[0]:
                planted += 1
        for path in ("/job/out.safetensors", "/job/" + @TOKEN@ + ".fifo"):
            if attempt(lambda: os.symlink("/etc/shadow", path))[0] or attempt(lambda: os.mkfifo(path))[0]:
                return None  # planted where the trusted side reads: a breach on its own
        return planted, fifos
    planted = once("planted", plant)
    if planted is None:
        return True, 0
    count, fifos = planted
    # Does anyone open the FIFOs for reading? (opening the write end without a reader: ENXIO)
    deadline = time.monotonic() + 0.5
    while time.monotonic() < deadline:
        for fifo in fifos:
            try:
                fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
            except OSError:
                continue
            os.close(fd)
            return True, 0
        time.sleep(0.05)
    return False, count
''', TOKEN=host.token))
    # 8 traps planted; 7 on a GPU, where Triton's own cache already occupies /tmp/triton-cache (EEXIST).
    assert_denied(report, details={7.0, 8.0} if os.path.exists("/dev/nvidia0") else {8.0})
    assert time.monotonic() - started < 60
    host.assert_untouched()
    assert_graded_normally()


def test_state_does_not_survive_into_the_next_attempt_or_submission(host):
    """Files the given check plants in /tmp and /dev/shm, then a crash: the restarted sandbox (the
    cases) must not find them; neither must the next submission."""
    plant = guarded('''
def attack(x, y):
    paths = ["/tmp/" + @TOKEN@, "/dev/shm/" + @TOKEN@, "/tmp/triton-cache/" + @TOKEN@]
    if in_given_check():
        for path in paths:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w") as fh:
                fh.write("planted")
        os._exit(17)  # a crash: the cases run in a fresh sandbox
    found = [p for p in paths if os.path.exists(p)]
    return bool(found), 3 - len(found)
''', TOKEN=host.token)
    report = grade(plant)
    assert report.given_check.status == "crashed" and "exit code 17" in report.given_check.output
    assert report.timing["attempts"] == 2
    assert not report.score.passed
    assert denied_details(report) == [3.0, 3.0]
    host.assert_untouched()
    assert_graded_normally()
