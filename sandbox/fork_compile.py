"""Runs inside the sandbox (GPU mode): the compile-ahead phase's compiles in forked children
(sandbox/harness.py `_compile_ahead`, KERNELGRADE_COMPILE_AHEAD_MODE=fork). Copied into each job
folder next to the harness (pool.HARNESS_FILES), which imports it as `fork_compile`.

Triton's compile of one specialisation spends most of its time in Python (the AST's code generation)
holding the GIL: in threads, three drawn widths of lesson 6 overlapped hardly at all (docs/benchmarks.md,
issue #20). Here each new specialisation's compile runs in a child forked from the harness, which
compiles into Triton's on-disk cache (the sandbox's private $TRITON_CACHE_DIR; Triton writes each file,
the group file last, by an atomic rename) and leaves with `os._exit`; the parent then loads each
kernel from that cache (Triton's own compile, a cache hit), so its JITFunction's kernel cache holds
a normal CompiledKernel, as after a compile in a thread.

A child never touches CUDA (the parent has initialised it; CUDA is not fork-safe for a child that
uses it): Triton's compile for a given target calls no driver function but `get_current_target`
(`tl.target_info`), and the child's driver is replaced by one that answers the parent's target and
raises on anything else (torch's CUDA calls raise in a forked child by themselves). Children are
forked from the main thread only, and only while no compile has run in the parent during the phase
(a kernel found in the cache is loaded at once: no compiler runs for it); a fork that fails turns
this executor into a thread pool for the rest of the phase (no fork after a thread has compiled).

Only a speed-up: a child that fails, crashes or is still running at the deadline (it is killed, with
its process group: its ptxas) leaves its kernel to the case, which compiles it and reports exactly
what it would have without the phase.
"""
from __future__ import annotations

import contextlib
import gc
import hashlib
import json
import os
import select
import signal
import threading
import time
from concurrent.futures import Executor, Future, ThreadPoolExecutor

MAX_REPLY_BYTES = 1 << 16  # a child's reply: {"hash": ..., "compiled": n}


class ChildFailed(RuntimeError):
    """A forked compile that did not leave a kernel in the cache (its case compiles it)."""


class _CompileOnlyDriver:
    """The child's Triton driver: the parent's target, and nothing that reaches CUDA."""

    def __init__(self, target) -> None:
        self.target = target

    def get_current_target(self):
        return self.target

    def __getattr__(self, name: str):
        raise RuntimeError(f"a forked compile does not use the GPU driver (driver.{name})")


def _in_cache(key: str) -> bool:
    """Whether Triton's cache (the private one, or the shared one a SharedFirstCacheManager reads first)
    already holds the kernel whose cache key is `key` (`triton.compile`'s: the hash of it names its folder)."""
    from triton.runtime.cache import get_cache_manager

    manager = get_cache_manager(hashlib.sha256(key.encode("utf-8")).hexdigest())
    for folder in (getattr(manager, "shared_dir", None), getattr(manager, "cache_dir", None)):
        if folder:
            with contextlib.suppress(OSError):
                if any(name.startswith("__grp__") for name in os.listdir(folder)):
                    return True
    return False


def cache_writable() -> bool:
    """Whether this process can write Triton's on-disk cache (fork mode's only way back)."""
    from triton import knobs

    folder = knobs.cache.dir
    try:
        os.makedirs(folder, exist_ok=True)
    except OSError:
        return False
    return os.access(folder, os.W_OK | os.X_OK)


class _Child:
    __slots__ = ("pid", "fd", "fn", "future", "reply")

    def __init__(self, pid: int, fd: int, fn, future: Future) -> None:
        self.pid, self.fd, self.fn, self.future = pid, fd, fn, future
        self.reply = b""


class ForkCompiles(Executor):
    """An executor for Triton's AsyncCompileMode (use `mode()`): each submitted compile runs in a
    forked child, at most `children` at once (the rest wait in order); `wait(deadline)` waits for
    them, kills what still runs at the deadline, and loads each compiled kernel here."""

    def __init__(self, children: int, target) -> None:
        self.children = max(1, children)
        self.target = target
        self.main = threading.main_thread()
        self.running: list[_Child] = []
        self.queued: list[tuple] = []  # (fn, future), forked as running ones end
        self.finished: list[_Child] = []  # ended well: loaded here by wait()
        self.threads: ThreadPoolExecutor | None = None  # once a fork failed: the rest compiles in threads
        self.forked = 0
        self.killed = 0
        self.compiled = 0  # kernels the children compiled (their put_group), for the harness's counts
        self._key: str | None = None  # the cache key of the compile being submitted (the mode's)
        self._closed = False

    def mode(self, *, ignore_errors: bool = True):
        """Triton's AsyncCompileMode over this executor, telling it each compile's cache key (a kernel
        already in the cache is loaded here at once instead of forking a child for it)."""
        from triton.runtime import _async_compile

        executor = self

        class ForkCompileMode(_async_compile.AsyncCompileMode):
            def submit(self, key, compile_fn, *rest):
                executor._key = key
                try:
                    return super().submit(key, compile_fn, *rest)
                finally:
                    executor._key = None

        return ForkCompileMode(self, ignore_errors=ignore_errors)

    # -- submitting --------------------------------------------------------------------------------
    def submit(self, fn, /, *args, **kwargs) -> Future:
        key, self._key = self._key, None
        call = (lambda: fn(*args, **kwargs)) if args or kwargs else fn
        future: Future = Future()
        if self._closed:
            future.set_exception(ChildFailed("the compile-ahead phase is over"))
            return future
        if self.threads is not None:
            return self.threads.submit(call)
        if threading.current_thread() is not self.main:
            # Student code's own thread launching: no fork from there (another thread may hold any lock).
            future.set_exception(ChildFailed("a compile requested from another thread than the main one"))
            return future
        if key is not None and _in_cache(key):
            _run_into(future, call)  # a cache hit: a load, no compiler runs
            return future
        self._reap(block=False)
        if len(self.running) < self.children:
            self._fork(call, future)
        else:
            self.queued.append((call, future))
        return future

    def _fork(self, fn, future: Future) -> None:
        try:
            read_fd, write_fd = os.pipe()
        except OSError:
            self._to_threads(fn, future)
            return
        # The harness's alarm (its stop of student code) must not land between the fork and the
        # bookkeeping: a child nobody knows of would outlive the phase.
        blocked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM})
        try:
            try:
                pid = os.fork()
            except OSError:  # out of processes (the sandbox's cap) or memory: threads from here on
                os.close(read_fd)
                os.close(write_fd)
                self._to_threads(fn, future)
                return
            if pid == 0:
                _child(fn, read_fd, write_fd, self.target, blocked)  # never returns
            os.close(write_fd)
            os.set_blocking(read_fd, False)
            self.forked += 1
            self.running.append(_Child(pid, read_fd, fn, future))
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, blocked)

    def _to_threads(self, fn, future: Future) -> None:
        """A fork failed: this compile and every later one (the queued ones too) in threads."""
        if self.threads is None:
            self.threads = ThreadPoolExecutor(self.children, thread_name_prefix="compile-ahead")
        queued, self.queued = [(fn, future), *self.queued], []
        for call, waiting in queued:
            _chain(self.threads.submit(call), waiting)

    # -- waiting -----------------------------------------------------------------------------------
    def _read(self, child: _Child) -> bool:
        """Read what the child wrote; True at the end of its pipe (it has ended)."""
        while True:
            try:
                chunk = os.read(child.fd, MAX_REPLY_BYTES)
            except BlockingIOError:
                return False
            except OSError:
                return True
            if not chunk:
                return True
            child.reply = (child.reply + chunk)[:MAX_REPLY_BYTES]

    def _ended(self, child: _Child) -> None:
        os.close(child.fd)
        try:
            _, status = os.waitpid(child.pid, 0)
        except ChildProcessError:  # reaped by someone else (a stray-process sweep): no verdict
            status = -1
        self.running.remove(child)
        reply = None
        if status == 0:
            with contextlib.suppress(ValueError):
                reply = json.loads(child.reply)
        if not isinstance(reply, dict) or not _group_written(reply.get("hash")):
            child.future.set_exception(ChildFailed(f"the compile child ended with status {status}"))
            return
        self.compiled += int(reply.get("compiled") or 0)
        self.finished.append(child)

    def _reap(self, *, block: bool, timeout: float = 0.0) -> None:
        """The children that have ended; with `block`, wait up to `timeout` s for one to end first."""
        if not self.running:
            return
        if block:
            with contextlib.suppress(InterruptedError, OSError):
                select.select([c.fd for c in self.running], [], [], max(0.0, timeout))
        for child in list(self.running):
            if self._read(child):
                self._ended(child)

    def wait(self, deadline: float) -> None:
        """Wait until every compile has ended or `deadline` (time.monotonic()) has passed: children
        still running then are killed, queued compiles never start (their cases compile them); then
        each kernel a child compiled is loaded here from the cache (its future's result)."""
        while self.running or self.queued:
            while self.queued and len(self.running) < self.children and self.threads is None:
                self._fork(*self.queued.pop(0))
            left = deadline - time.monotonic()
            if left <= 0:
                break
            self._reap(block=True, timeout=left)
        self.close()
        for child in self.finished:  # every child has ended: loading here can no longer precede a fork
            _run_into(child.future, child.fn)
        self.finished = []

    def close(self) -> None:
        """Kill the children still running (and their process groups: ptxas), and end the queued compiles."""
        self._closed = True
        for child in list(self.running):
            if self._read(child):  # it ended by itself (not seen yet): its kernel is there
                self._ended(child)
                continue
            try:
                os.killpg(child.pid, signal.SIGKILL)  # with its ptxas
            except OSError:  # its own group not made yet: the child alone
                with contextlib.suppress(OSError):
                    os.kill(child.pid, signal.SIGKILL)
            self.killed += 1
            self._ended(child)  # status: killed, so a failure (and not loaded)
        for _, future in self.queued:
            future.set_exception(ChildFailed("not started before the compile-ahead phase's deadline"))
        self.queued = []

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        self.close()
        if self.threads is not None:
            self.threads.shutdown(wait=wait, cancel_futures=cancel_futures)


def _run_into(future: Future, fn) -> None:
    try:
        future.set_result(fn())
    except BaseException as exc:  # noqa: BLE001 - the compile's own failure: its case says it
        future.set_exception(exc)


def _chain(source: Future, target: Future) -> None:
    def copy(done: Future) -> None:
        exc = done.exception()
        if exc is None:
            target.set_result(done.result())
        else:
            target.set_exception(exc)

    source.add_done_callback(copy)


def _group_written(kernel_hash) -> bool:
    """Whether the cache folder of the kernel hash a child sent holds its group (written last, atomically)."""
    if not isinstance(kernel_hash, str) or not kernel_hash.isalnum():
        return False
    from triton.runtime.cache import get_cache_manager

    folder = getattr(get_cache_manager(kernel_hash), "cache_dir", None)
    with contextlib.suppress(OSError):
        return bool(folder) and any(name.startswith("__grp__") for name in os.listdir(folder))
    return False


def _child(fn, read_fd: int, write_fd: int, target, sigmask) -> None:
    """The forked child: compile into the cache, reply with the kernel's hash, and leave with os._exit
    (no exit handlers, no flushing of the parent's buffers, nothing of CUDA's)."""
    code = 1
    try:
        gc.disable()  # a collection would touch every object the parent has, copying its pages: it leaves soon anyway
        os.close(read_fd)
        with contextlib.suppress(OSError):
            os.setpgid(0, 0)  # its own process group: a kill at the deadline ends its ptxas too
        signal.signal(signal.SIGALRM, signal.SIG_DFL)  # the parent's stop of student code is not ours
        signal.pthread_sigmask(signal.SIG_SETMASK, sigmask)
        from triton.runtime import _async_compile

        _async_compile.active_mode.set(None)  # this compile is the request: nothing more to defer
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, 1)  # what the compiler writes is the case's to write, when it compiles again
        os.dup2(null, 2)
        from triton.runtime.driver import driver

        driver.set_active(_CompileOnlyDriver(target))
        counts = _cache_counts()
        before = counts.get("compiled", 0)
        kernel = fn()
        reply = json.dumps({"hash": kernel.hash, "compiled": counts.get("compiled", 0) - before}).encode()
        os.write(write_fd, reply)
        code = 0
    finally:
        os._exit(code)


def _cache_counts() -> dict:
    import sys

    cache = sys.modules.get("shared_triton_cache")  # the sandbox's cache manager, when it is in use
    return getattr(cache, "counts", None) or {}
