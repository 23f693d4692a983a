"""KERNELGRADE_SANDBOX_START=fork: sandboxes forked from a template that has imported torch (bwrap only).

One template per (mode, device index) runs sandbox/forkserver_template.py in a bwrap sandbox
(BwrapBackend.template_spec). Per attempt, `ForkServer.spawn` makes the job's cgroups (the same
`confine` as a fresh sandbox), its pipes, and sends them with a header on the control socket; the
job's files (harness included) go through the job pipe into the child's own /job. The child is
handed to the runner as a `Sandbox` whose `proc` is a `ForkedProcess`: its host pid (from the
kernel, with its "ready": SCM_CREDENTIALS), its exit status as the template reports it, and the process
group the child leads (what `Sandbox.kill` signals). All children of one template share its host
uid: where a pids cgroup holds, one template serves them all; where none does (root: the H200),
`UidTemplates` keeps templates that each run as an unprivileged host uid of their own and fork
one child at a time, so that uid's RLIMIT_NPROC is one job's. See docs/forkserver.md.
"""
from __future__ import annotations

import json
import logging
import os
import select
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from sandbox.backends.base import SandboxUnavailable
from sandbox.cgroups import host_pids_cgroups
from sandbox.contract import DeviceMode, Job, Limits
from sandbox.host_uids import UidLease, lease_host_uid
from sandbox.pool import HARNESS_FILES, Sandbox, _LogSink
from sandbox.seccomp import filter_program
from sandbox.wire import FrameReader

log = logging.getLogger("kernelgrade.sandbox.forkserver")
START_ENV = "KERNELGRADE_SANDBOX_START"
_PACKAGE_DIR = Path(__file__).resolve().parent


def start_mode() -> str:
    """`fresh` (a bwrap sandbox per attempt, the default) or `fork`."""
    value = os.environ.get(START_ENV, "fresh").strip().lower() or "fresh"
    if value not in ("fresh", "fork"):
        raise SandboxUnavailable(f"{START_ENV} must be 'fresh' or 'fork', not {value!r}")
    return value


class ForkedProcess:
    """What the runner needs of a `subprocess.Popen`, for a child of the template."""

    def __init__(self, server: ForkServer, ns_pid: int, host_pid: int, generation: int) -> None:
        self._server, self._ns_pid, self.pid, self._generation = server, ns_pid, host_pid, generation
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            self.returncode = self._server.exit_code(self._ns_pid, self._generation)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            if deadline is not None and time.monotonic() >= deadline:
                raise subprocess.TimeoutExpired("forked sandbox", timeout or 0.0)
            self._server.wait_exit(0.05)
        assert self.returncode is not None
        return self.returncode


class ForkServer:
    """The template of one (mode, device index) and the children it forks."""

    def __init__(self, *, backend, limits: Limits, mode: DeviceMode, device_index: int,
                 own_uid: bool = False) -> None:
        self.backend, self.limits, self.mode, self.device_index = backend, limits, mode, device_index
        # no pids cgroup (UidTemplates): the template runs as a host uid of its own, leased at its
        # start, and forks one child at a time
        self.own_uid = own_uid
        self._lease: UidLease | None = None
        self._live = 0  # children started whose exit the template has not reported yet
        self.claimed = False  # UidTemplates: taken for a spawn
        self._lock = threading.Lock()  # one spawn at a time on the control socket
        # close() against a template's launch (never held while waiting): close() may come from
        # another thread at any point of a start under `_lock`, and a template launched after it
        # would be owned by nobody (docs/forkserver.md, "Closing")
        self._state = threading.Lock()
        self._exits: dict[int, int] = {}
        self._started: dict[int, int] = {}
        self._cond = threading.Condition()
        self._proc: subprocess.Popen | None = None
        self._control: socket.socket | None = None
        self._folder: Path | None = None
        self._sequence = 0
        self._generation = 0  # templates started so far (a child belongs to one)
        self._closed = threading.Event()  # set by close(): the keeper thread (and so the template) may end
        self._shut = False  # close() was called: no template is started again (a waiting spawn fails)

    @staticmethod
    def available() -> bool:
        """A pids cgroup per child, and a Python the child can still see (unavailable_reason)."""
        return ForkServer.unavailable_reason() is None

    @staticmethod
    def unavailable_reason(backend=None, mode: DeviceMode = DeviceMode.interpreter,
                           device_index: int = 0) -> str | None:
        """Why no child can be forked here, or None. A child needs a pids cgroup of its own, or
        (root) a template of its own running as an unprivileged host uid where one can start a
        sandbox with these mounts (`backend`, probed for `mode`; without a backend only the cheap
        checks), and a Python it can still see: it mounts a fresh /tmp and /dev/shm over the
        template's, which would hide an interpreter or virtualenv kept there (a checkout under
        /tmp: every module not imported before the fork would be gone)."""
        covered = ("/tmp", "/dev/shm")
        roots = {sys.prefix, sys.base_prefix, sys.exec_prefix}
        for root in roots:
            for top in covered:
                if Path(root).resolve().is_relative_to(top):
                    return f"the Python environment {root} lies under {top}, which a forked child covers"
        if host_pids_cgroups() is not None:
            return None
        if os.geteuid() != 0:  # the children of one template share its host uid, and none can be leased
            return "no writable pids cgroup, and not root (no host uid of its own for each template)"
        if backend is not None and not backend.unprivileged(mode, device_index):
            return ("no writable pids cgroup, and an unprivileged host uid cannot start a sandbox here "
                    "(the warning of kernelgrade.sandbox.bwrap says why)")
        return None

    # --- the template ------------------------------------------------------------------------

    def start(self) -> None:
        """Start the template now, if it is not running (else the first spawn does)."""
        with self._lock:
            self._ensure_template()

    def _ensure_template(self) -> None:
        """Called with the lock held: a running template, started anew if it died (never after
        close(): a spawn that waited for the lock while the server closed would start a template
        nobody closes — the H200 found one alive after its runner had closed; a close() that
        comes while the template starts is checked again by `_launch_template`)."""
        if self._shut:
            raise SandboxUnavailable("the fork server is closed")
        if self._proc is None or self._proc.poll() is not None:
            if self._proc is not None:
                log.warning("the fork-server template for %s/%d died (exit %s): starting a new one",
                            self.mode.value, self.device_index, self._proc.returncode)
            self._stop_template()
            self._start_template()

    def _start_template(self) -> None:
        """Started from a thread of this server's own that lives until close(): bwrap's
        --die-with-parent follows the thread that started it, and a grading thread may end first
        (the template, and every child with it, would die under a running job)."""
        outcome: list[BaseException | None] = []
        done = threading.Event()
        with self._state:  # this template's keeper ends when it is stopped (set by _stop_template)
            closed = self._closed = threading.Event()
            if self._shut:
                closed.set()

        def keep() -> None:
            try:
                self._launch_template()
                outcome.append(None)
            except BaseException as exc:  # noqa: BLE001 - handed to the caller
                outcome.append(exc)
            done.set()
            if outcome[0] is None:
                closed.wait()

        threading.Thread(target=keep, name=f"forkserver-keeper-{self.mode.value}", daemon=True).start()
        done.wait()
        if outcome[0] is not None:
            raise outcome[0]

    def _launch_template(self) -> None:
        with self._cond:  # a new template: its namespace numbers its children afresh
            self._generation += 1
            self._exits.clear()
            self._started.clear()
            self._proc_dead = False
            self._live = 0
        folder = Path(tempfile.mkdtemp(prefix="kg-forkserver-"))
        os.chmod(folder, 0o755)
        shutil.copyfile(_PACKAGE_DIR / "forkserver_template.py", folder / "forkserver_template.py")
        program = filter_program()
        if program is not None:
            (folder / "seccomp.bpf").write_bytes(program)
        for path in folder.iterdir():
            os.chmod(path, 0o644)
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        lease: UidLease | None = None
        try:
            lease = lease_host_uid() if self.own_uid else None
            spec = self.backend.template_spec(template_dir=folder, control_fd=theirs.fileno(), mode=self.mode,
                                              device_index=self.device_index, limits=self.limits,
                                              **({"host_uid": lease.uid} if lease else {}))
            with self._state:  # close() came while this template was being prepared: it is not started
                if self._shut:
                    raise SandboxUnavailable("the fork server is closed")
                self._lease, lease = lease, None
                self._proc = subprocess.Popen(spec.argv, env=spec.env, stdin=subprocess.DEVNULL,
                                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                              pass_fds=(theirs.fileno(),), start_new_session=True, umask=0o022)
                self._control, self._folder = ours, folder
        except BaseException:
            ours.close()
            shutil.rmtree(folder, ignore_errors=True)
            if lease is not None:
                lease.release()
            self._stop_template()
            raise
        finally:
            theirs.close()
        self._template_log = _LogSink(self._proc.stdout, 64 << 10)
        ready = self._receive(self.limits.startup_timeout_s)
        with self._state:
            shut = self._shut  # closed while it started: close() killed it, or kills it now
        if shut or ready is None or ready.get("type") != "ready":
            self._stop_template()
            if shut:
                raise SandboxUnavailable("the fork server is closed")
            raise SandboxUnavailable(f"the fork-server template did not start: {self._template_log.text()[-2000:]}")
        threading.Thread(target=self._read_loop, args=(self._generation, ours), name=f"forkserver-{self.mode.value}",
                         daemon=True).start()
        log.info("fork-server template for %s/%d ready (its imports took %.2f s)", self.mode.value,
                 self.device_index, float(ready.get("startup_s", 0.0)))

    def _receive(self, timeout_s: float) -> dict | None:
        control = self._control
        if control is None:  # stopped meanwhile (close())
            return None
        try:
            readable, _, _ = select.select([control], [], [], timeout_s)
            data = control.recv(1 << 16) if readable else b""
        except (OSError, ValueError):  # closed by close() from another thread
            return None
        return json.loads(data) if data else None

    def _read_loop(self, generation: int, control: socket.socket) -> None:
        """The template's reports; its end marks its children dead, unless a newer template has
        replaced it meanwhile (this loop may see its socket closed only after the restart)."""
        while True:
            try:
                data = control.recv(1 << 16)
            except OSError:
                data = b""
            if not data:
                with self._cond:
                    if generation == self._generation:
                        self._proc_dead = True
                    self._cond.notify_all()
                return
            message = json.loads(data)
            with self._cond:
                if generation != self._generation:  # a report of a replaced template: its pids mean nothing now
                    return
                if message.get("type") == "exit":
                    self._exits[int(message["pid"])] = int(message["code"])
                    self._live -= 1
                elif message.get("type") == "started":
                    self._started[int(message["id"])] = int(message["pid"])
                    self._live += 1
                self._cond.notify_all()

    _proc_dead = False

    def exit_code(self, ns_pid: int, generation: int) -> int | None:
        """The child's exit status, once (ForkedProcess keeps it): the template's namespace may
        give its pid to a later child. A child of an earlier template died with it (a warm child
        that waited while its template was replaced must not look alive)."""
        with self._cond:
            if generation != self._generation:
                return -9
            if ns_pid in self._exits:
                return self._exits.pop(ns_pid)
            return -9 if self._proc_dead else None  # the template died: its children died with it

    def idle(self) -> bool:
        """No child of this template is alive (as far as it has reported; the template itself
        waits for everything of the last job to be gone before it forks again)."""
        with self._cond:
            return self._live <= 0 or self._proc_dead

    def wait_exit(self, timeout_s: float) -> None:
        with self._cond:
            self._cond.wait(timeout_s)

    def close(self) -> None:
        """The template and its children end, for good: when close() returns none of them is
        left (a template per host uid: no process of its uid), and a template whose start was
        under way is killed by that start as soon as it is launched (docs/forkserver.md)."""
        with self._state:
            self._shut = True
        self._stop_template()

    def _stop_template(self) -> None:
        with self._state:  # taken once: close() and a failed start may stop the same template at once
            self._closed.set()
            control, self._control = self._control, None
            proc, folder, self._folder = self._proc, self._folder, None
            lease, self._lease = self._lease, None
        if control is not None:
            control.close()
        if proc is not None and proc.poll() is None:
            try:
                os.killpg(proc.pid, 9)
            except ProcessLookupError:
                pass
        if proc is not None:
            try:
                proc.wait()
            except ChildProcessError:
                pass
        if folder is not None:
            shutil.rmtree(folder, ignore_errors=True)
        if lease is not None:
            # bwrap's own init and the template die of bwrap's --die-with-parent, and every child
            # with them (their pid namespaces), after the bwrap waited for above: the uid is only
            # given back once nothing of it is left (no later template shares its RLIMIT_NPROC),
            # and nothing outlives close() (the adversarial kit looks right after it)
            _kill_uid(lease.uid, timeout_s=max(5.0, self.limits.kill_grace_s))
            lease.release()

    # --- one child ---------------------------------------------------------------------------

    def spawn(self, *, job_root: Path, files: list[str], job: Job) -> Sandbox:
        """A child running `job` (files from `job_root`, the harness's own from this package)."""
        sources = [(_PACKAGE_DIR / name, name) for name in HARNESS_FILES]
        sources += [(job_root / name, name) for name in [*files, "job.json"]]
        return self._spawn(sources, job_root=job_root, warm=False)

    def spawn_warm(self, *, job_dir: Path) -> Sandbox:
        """A warm child (the pool's): it gets the harness's files only, and waits after its hello
        for its job, which the runner streams into it with `send_job` (docs/forkserver.md, "Warm
        children"). `job_dir` is only the Sandbox's folder of record: nothing is read from it."""
        return self._spawn([(_PACKAGE_DIR / name, name) for name in HARNESS_FILES], job_root=job_dir, warm=True)

    def _spawn(self, sources: list[tuple[Path, str]], *, job_root: Path, warm: bool) -> Sandbox:
        limits = self.limits
        with self._lock:
            self._ensure_template()
            if self.own_uid and not self.idle():  # its uid's RLIMIT_NPROC is one job's: never two at once
                raise SandboxUnavailable("the template's last child has not ended")
            template_uid = self._lease.uid if self._lease is not None else None
            confinement = self.backend.confine(limits=limits, mode=self.mode, device_index=self.device_index,
                                               job_dir=job_root, **({"template_uid": template_uid}
                                                                    if template_uid is not None else {}))
            if confinement.host_uid is not None or (template_uid is None and confinement.cgroups is None):
                confinement.close(limits.kill_grace_s)
                raise SandboxUnavailable("fork mode needs a pids cgroup per sandbox, or a template per host uid")
            pipes = {name: os.pipe() for name in ("verdict", "log", "job")}
            pipes["ready"] = _credentials_pair()
            # a template per host uid where no controller is writable (the H200): no cgroup to join
            joined = confinement.cgroups.children if confinement.cgroups is not None else []
            procs = [os.open(c.procs_file, os.O_WRONLY) for c in joined]
            ours = {"verdict": pipes["verdict"][0], "log": pipes["log"][0], "job": pipes["job"][1],
                    "ready": pipes["ready"][0]}
            theirs = {"verdict": pipes["verdict"][1], "log": pipes["log"][1], "job": pipes["job"][0],
                      "ready": pipes["ready"][1], **{f"cgroup{i}": fd for i, fd in enumerate(procs)}}
            self._sequence += 1
            job_bytes = sum(path.stat().st_size for path, _ in sources) + (1 << 20)
            header = {"id": self._sequence, "fds": list(theirs), "cgroups": [f"cgroup{i}" for i in range(len(procs))],
                      "tmpfs_bytes": limits.tmpfs_bytes,
                      "tmpfs_files": limits.tmpfs_files, "job_bytes": job_bytes, "cpu_time_s": limits.cpu_time_s,
                      "hidden": [str(path) for path in self.backend.covered_paths()],
                      "warm": warm, "mode": self.mode.value}
            try:
                if self._control is None:  # closed since _ensure_template (close() from another thread)
                    raise SandboxUnavailable("the fork server is closed")
                self._control.sendmsg([json.dumps(header).encode()],
                                      [(socket.SOL_SOCKET, socket.SCM_RIGHTS, struct.pack(f"{len(theirs)}i",
                                                                                          *theirs.values()))])
            except BaseException:
                for fd in [*ours.values(), *theirs.values()]:
                    os.close(fd)
                confinement.close(limits.kill_grace_s)
                raise
            for fd in theirs.values():
                os.close(fd)
            generation = self._generation
            try:
                ns_pid = self._wait_started(self._sequence)
            except BaseException:
                confinement.close(limits.kill_grace_s)
                for fd in ours.values():
                    os.close(fd)
                raise
        keep_job = warm  # a warm child's job pipe stays open: its job comes through it later
        try:
            host_pid = self._host_pid(ours["ready"], confinement, uid=template_uid)
            _stream(ours["job"], sources, deadline=time.monotonic() + limits.startup_timeout_s)
        except BaseException:
            confinement.close(limits.kill_grace_s)  # kills the child, whatever it got to
            for name in ("verdict", "log"):
                os.close(ours[name])
            keep_job = False
            raise
        finally:
            for name in ("ready", *(() if keep_job else ("job",))):
                try:
                    os.close(ours[name])
                except OSError:
                    pass
        process = ForkedProcess(self, ns_pid, host_pid, generation)
        return Sandbox(proc=process, read_fd=ours["verdict"], control_fd=None, job_dir=job_root,  # type: ignore[arg-type]
                       owns_job_dir=False, confinement=confinement, process_limit=confinement.process_limit,
                       memory_limit=confinement.memory_limit, job_fd=ours["job"] if warm else None, start="forked",
                       reader=FrameReader(max_blob_bytes=limits.case_output_bytes,
                                          max_total_bytes=limits.output_bytes),
                       log=_LogSink(open(ours["log"], "rb"), limits.log_bytes))

    def _wait_started(self, sequence: int) -> int:
        deadline = time.monotonic() + 30
        with self._cond:
            while sequence not in self._started:
                if self._proc_dead or time.monotonic() >= deadline:
                    raise SandboxUnavailable("the fork-server template did not fork: "
                                             + self._template_log.text()[-2000:])
                self._cond.wait(0.1)
            return self._started.pop(sequence)

    def _host_pid(self, ready_fd: int, confinement, *, uid: int | None) -> int:
        """The child's pid on this side, as the kernel says it with the child's "ready" (its
        SCM_CREDENTIALS, in our pid namespace), once it joined its cgroups; checked against its
        host uid (the template's) and its pids cgroup, where there is one."""
        with socket.socket(fileno=os.dup(ready_fd)) as ready:
            ready.settimeout(30)
            try:
                data, ancillary, _, _ = ready.recvmsg(1, socket.CMSG_SPACE(_CREDENTIALS.size))
            except TimeoutError:
                data, ancillary = b"", []
        found = [_CREDENTIALS.unpack(cdata[:_CREDENTIALS.size]) for level, kind, cdata in ancillary
                 if level == socket.SOL_SOCKET and kind == socket.SCM_CREDENTIALS]
        if data != b"r" or len(found) != 1:
            raise OSError("the forked child did not join its cgroups")
        pid, child_uid, _ = found[0]
        if child_uid != (os.geteuid() if uid is None else uid):
            raise OSError(f"the forked child said ready as host uid {child_uid}")
        if confinement.cgroups is not None and pid not in confinement.cgroups.children[0].pids():
            raise OSError("the forked child is not in its cgroup")
        return pid


class UidTemplates:
    """Root without a pids cgroup: templates that each run as an unprivileged host uid of their
    own and fork one child at a time (`ForkServer(own_uid=True)`), so that RLIMIT_NPROC of that
    uid bounds exactly one job (plus the template). A spawn takes an idle template; one more is
    kept started ahead, so that a refill does not wait for a template's imports; there are as
    many as sandboxes were ever alive at once, plus that one."""

    def __init__(self, *, backend, limits: Limits, mode: DeviceMode, device_index: int) -> None:
        self.backend, self.limits, self.mode, self.device_index = backend, limits, mode, device_index
        self.templates: list[ForkServer] = []
        self._lock = threading.Lock()
        self._closed = False

    def start(self, count: int = 1) -> None:
        """Start `count` templates now, side by side (each a fresh sandbox's imports)."""
        with self._lock:
            for _ in range(count - len(self.templates)):
                self._ahead()

    def spawn(self, *, job_root: Path, files: list[str], job: Job) -> Sandbox:
        return self._spawn("spawn", {"job_root": job_root, "files": files, "job": job})

    def spawn_warm(self, *, job_dir: Path) -> Sandbox:
        return self._spawn("spawn_warm", {"job_dir": job_dir})

    def _spawn(self, how: str, job: dict) -> Sandbox:
        with self._lock:
            if self._closed:
                raise SandboxUnavailable("the fork-server templates are closed")
            template = next((t for t in self.templates if not t.claimed and t.idle()), None)
            if template is None:
                template = self._new()
            template.claimed = True
            if not any(not t.claimed and t.idle() for t in self.templates):
                self._ahead()
        try:
            return getattr(template, how)(**job)
        except BaseException:
            self._drop(template)  # it did not fork (or its child failed to start): a new one next time
            raise
        finally:
            template.claimed = False

    def _new(self) -> ForkServer:
        """Called with the lock held."""
        template = ForkServer(backend=self.backend, limits=self.limits, mode=self.mode,
                              device_index=self.device_index, own_uid=True)
        self.templates.append(template)
        return template

    def _ahead(self) -> None:
        """A template started in the background (called with the lock held)."""
        template = self._new()  # a spawn that takes it meanwhile waits for its start (its lock)

        def start() -> None:
            try:
                template.start()
                if self._closed:
                    template.close()
            except Exception as exc:  # noqa: BLE001 - logged; the next spawn starts another (closed: none)
                if not self._closed:
                    log.warning("a fork-server template (host uid of its own) did not start: %r", exc)
                self._drop(template)

        threading.Thread(target=start, name=f"forkserver-ahead-{self.mode.value}", daemon=True).start()

    def _drop(self, template: ForkServer) -> None:
        with self._lock:
            if template in self.templates:
                self.templates.remove(template)
        template.close()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            templates, self.templates = self.templates, []
        for template in templates:
            template.close()


def fork_server(*, backend, limits: Limits, mode: DeviceMode, device_index: int) -> ForkServer | UidTemplates:
    """The fork server of one (mode, device index): one template where a pids cgroup per child
    holds, else templates of a host uid each (ForkServer.unavailable_reason said which can run)."""
    if host_pids_cgroups() is not None:
        return ForkServer(backend=backend, limits=limits, mode=mode, device_index=device_index)
    return UidTemplates(backend=backend, limits=limits, mode=mode, device_index=device_index)


_CREDENTIALS = struct.Struct("3i")  # struct ucred: pid, uid, gid


def _uid_processes(uid: int) -> list[int]:
    """Live processes whose real uid is `uid` (zombies are gone already)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/status", "rb") as status:
                fields = dict(line.split(b":", 1) for line in status.read().splitlines() if b":" in line)
        except (OSError, ValueError):
            continue
        if int(fields.get(b"Uid", b"-1 ").split()[0]) == uid and not fields.get(b"State", b"").strip().startswith(b"Z"):
            found.append(int(entry))
    return found


def _kill_uid(uid: int, *, timeout_s: float) -> None:
    """SIGKILL every process of a leased host uid and wait until none is left. The uid is this
    template's alone while it holds the lease (host_uids.py), so each one is the template's or a
    child's: bwrap's, the template's own, and whatever a job left that outlived its pid namespace
    (none should)."""
    deadline = time.monotonic() + timeout_s
    while True:
        left = _uid_processes(uid)
        if not left:
            return
        for pid in left:
            try:
                os.kill(pid, 9)
            except (ProcessLookupError, PermissionError):
                pass
        if time.monotonic() >= deadline:
            log.error("processes of host uid %d outlived their template's close: %s", uid, left)
            return
        time.sleep(0.02)


def _credentials_pair() -> tuple[int, int]:
    """(ours, theirs) of a socket pair on which the kernel tells us the sender's pid and uid."""
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    ours.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
    return ours.detach(), theirs.detach()

def _stream(job_fd: int, sources: list[tuple[Path, str]], *, deadline: float, prefix: bytes = b"") -> None:
    chunks = [prefix]
    for path, name in sources:
        data = path.read_bytes()
        encoded = name.encode()
        chunks += [struct.pack("<HQ", len(encoded), len(data)) + encoded, data]
    chunks.append(struct.pack("<HQ", 0, 0))
    os.set_blocking(job_fd, False)
    for chunk in chunks:
        view = memoryview(chunk)
        while view:
            left = deadline - time.monotonic()
            _, writable, _ = select.select([], [job_fd], [], max(0.0, left))
            if not writable:
                raise OSError("the sandbox did not read its job within the start-up timeout")
            try:
                view = view[os.write(job_fd, view[: 1 << 20]):]
            except BlockingIOError:
                continue


def send_job(job_fd: int, sources: list[tuple[Path, str]], *, deadline: float) -> None:
    """A warm child's job: its total size (the child sizes its /job by it), then the files."""
    total = sum(path.stat().st_size + len(name.encode()) + 10 for path, name in sources)
    _stream(job_fd, sources, deadline=deadline, prefix=struct.pack("<Q", total))
