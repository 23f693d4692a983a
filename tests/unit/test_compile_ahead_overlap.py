"""The compile-ahead phase's compiles run on beside the given check and the cases (sandbox/harness.py
`_compile_ahead`, `_AheadCompiles`, `_resolve_compiles_ahead`; issue #20): a launch waits for its own
kernel only, takes the phase's compile of it (never compiles it twice), compiles it itself where no
thread has begun it yet, and compiles it again itself where the phase's compile failed, raising exactly
what a run without the phase raises. With Triton's real compile for the GPU target (sm_90, ptxas
bundled) on the CPU: only the driver is this machine's (no GPU), one that names the device, the stream
and the target, as JITFunction.run(warmup=True) asks; a launch here is that compile request."""
from __future__ import annotations

import importlib.util
import subprocess
import threading
import time
from concurrent.futures import Future, wait
from pathlib import Path

import pytest
import torch
import triton
from triton.backends.compiler import GPUTarget
from triton.runtime import _async_compile
from triton.runtime.driver import driver
from triton.runtime.jit import JITFunction

from sandbox import harness

SANDBOX = Path(harness.__file__).resolve().parent
TARGET = GPUTarget("cuda", 90, 32)

KERNELS = '''
import torch
import triton
import triton.language as tl


@triton.jit
def scale(x, out, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out + offs, tl.load(x + offs, mask=offs < n) * 2, mask=offs < n)


@triton.jit
def broken(x, out, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)  # BLOCK = 24 is no power of 2: it does not compile
    tl.store(out + offs, tl.load(x + offs))


@triton.jit
def slow(x, out, UNROLL: tl.constexpr):
    acc = tl.zeros((16,), tl.float32)
    for i in tl.static_range(UNROLL):  # seconds to compile
        acc += tl.load(x + i + tl.arange(0, 16))
    tl.store(out + tl.arange(0, 16), acc)


def entry(x, kernel, block):
    out = torch.empty_like(x)
    if kernel == "scale":
        scale[(1,)](x, out, x.numel(), BLOCK=block)
    elif kernel == "broken":
        broken[(1,)](x, out, BLOCK=block)
    else:
        slow[(1,)](x, out, UNROLL=block)
    return out
'''


class CPUDriver:
    """JITFunction.run(warmup=True)'s questions, answered without a GPU."""

    def get_current_device(self):
        return 0

    def get_current_stream(self, device=None):
        return 0

    def get_current_target(self):
        return TARGET

    def __getattr__(self, name: str):
        raise RuntimeError(f"no GPU in this test (driver.{name})")


@pytest.fixture
def program(tmp_path, monkeypatch):
    """A fresh module of the kernels, a fresh Triton cache, the CPU driver, the harness's resolver under
    `_do_compile` (undone after the test), and what Triton compiled: its listener's (cache_hit, kernel name)."""
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "triton-cache"))
    monkeypatch.syspath_prepend(str(SANDBOX))
    monkeypatch.setattr(JITFunction, "_do_compile", JITFunction._do_compile)
    monkeypatch.setattr(subprocess.Popen, "__init__", subprocess.Popen.__init__)
    monkeypatch.setattr(harness, "_AHEAD", None)
    monkeypatch.setattr(harness, "_SPLIT", {})
    harness._resolve_compiles_ahead()
    (tmp_path / "kernels.py").write_text(KERNELS, encoding="utf-8")
    made: list = []

    def load(name: str = "kernels_under_test"):
        spec = importlib.util.spec_from_file_location(f"{name}_{len(made)}", tmp_path / "kernels.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        made.append(module)
        return module

    compiled: list = []

    def listener(*, src, metadata, metadata_group, times, cache_hit):
        compiled.append((cache_hit, metadata["name"]))

    monkeypatch.setattr(triton.knobs.compilation, "listener", listener)
    previous = driver._active
    driver.set_active(CPUDriver())
    try:
        yield load, compiled
    finally:
        driver._active = previous
        if harness._AHEAD is not None:  # nothing of a test's phase outlives it
            for future in harness._AHEAD.mode.raw_futures:
                future.cancel()
            harness._AHEAD.pool.shutdown(wait=True)


def ahead(module, *cases: tuple, threads: int = 2, wait_s: float = 60.0):
    spec, inputs = [], {}
    for n, (kernel, block) in enumerate(cases):
        inputs[f"c{n}.x"] = torch.arange(200, dtype=torch.float32)
        spec.append({"id": f"c{n}", "args": [{"key": f"c{n}.x"}], "kwargs": {"kernel": kernel, "block": block}})
    return harness._compile_ahead({"entry_point": "entry", "cases": spec}, inputs, module, module.entry, torch, "cpu",
                                  threads=threads, wait_s=wait_s)


def begun(phase, *, within_s: float = 60.0):
    """Wait until each of the phase's compiles has left the pool's queue (a thread runs it or it ended): on a
    loaded machine a pool thread may pick its job after the test's launch, which then (rightly) cancels the
    queued compile and compiles it itself, not what these tests are about."""
    deadline = time.monotonic() + within_s
    while any(not (f.running() or f.done()) for f in phase.mode.raw_futures) and time.monotonic() < deadline:
        time.sleep(0.005)
    return phase


def launch(module, kernel: str, block: int):
    """A case's launch of `kernel`: the compile request a real launch makes first (warmup=True)."""
    x = torch.arange(200, dtype=torch.float32)
    jit = getattr(module, kernel)
    if kernel == "scale":
        return jit.run(x, torch.empty_like(x), x.numel(), BLOCK=block, grid=(1,), warmup=True)
    if kernel == "slow":
        return jit.run(x, torch.empty_like(x), UNROLL=block, grid=(1,), warmup=True)
    return jit.run(x, torch.empty_like(x), BLOCK=block, grid=(1,), warmup=True)


def kernels(jit) -> list:
    return [k for caches in jit.device_caches.values() for k in caches[0].values()]


def test_a_case_takes_its_kernel_while_another_still_compiles(program):
    load, compiled = program
    module = load()
    phase = begun(ahead(module, ("slow", 300), ("scale", 64)))
    assert phase is harness._AHEAD and phase.running(), "the phase returns before its compiles end"
    assert kernels(module.slow) == [] and kernels(module.scale) == []  # no placeholder left (Triton 3.9)
    kernel = launch(module, "scale", 64)  # waits for scale's compile alone
    assert type(kernel).__name__ == "CompiledKernel" and kernel.asm["cubin"]
    assert kernels(module.scale) == [kernel], "finalised into its kernel cache by Triton's own finalize"
    assert phase.running(), "the slow kernel still compiles: the case did not wait for it"
    assert launch(module, "scale", 64) is kernel  # the next launch finds it in the cache
    slow = launch(module, "slow", 300)  # waits for the phase's compile of it: never a second compile
    assert kernels(module.slow) == [slow] and not phase.running()
    assert sorted(compiled) == [(False, "scale"), (False, "slow")], "each kernel compiled once"
    assert phase.compiled() == 2
    assert harness._SPLIT["compile_wait"] > 0
    assert phase.done_s() is not None and phase.done_s() > 0


def test_a_compile_no_thread_has_begun_is_compiled_by_its_launch(program):
    load, compiled = program
    module = load()
    phase = ahead(module, ("slow", 300), ("scale", 128), threads=1)  # scale queued behind slow
    kernel = launch(module, "scale", 128)
    assert type(kernel).__name__ == "CompiledKernel" and kernels(module.scale) == [kernel]
    assert phase.running(), "slow still compiles in its thread"
    [slow_future, scale_future] = phase.mode.raw_futures
    assert scale_future.cancelled() and not slow_future.cancelled()
    launch(module, "slow", 300)
    assert sorted(compiled) == [(False, "scale"), (False, "slow")]
    assert phase.compiled() == 1  # the phase's own: slow


def test_a_kernel_that_fails_to_compile_is_left_to_its_case(program):
    load, compiled = program
    fresh = load("without_phase")
    with pytest.raises(Exception) as without_phase:  # a run without the phase
        launch(fresh, "broken", 24)
    module = load()
    phase = ahead(module, ("broken", 24), ("scale", 64))
    wait(phase.mode.raw_futures)  # the phase's compile of broken failed before its launch
    with pytest.raises(Exception) as after_phase:
        launch(module, "broken", 24)  # the phase's compile failed: the launch compiles it itself
    assert kernels(module.broken) == []
    assert type(after_phase.value) is type(without_phase.value)
    assert str(after_phase.value) == str(without_phase.value)
    assert "power of 2" in str(after_phase.value)
    assert type(launch(module, "scale", 64)).__name__ == "CompiledKernel"
    assert phase.compiled() == 1


def test_the_same_specialisation_asked_twice_compiles_once(program):
    load, compiled = program
    module = load()
    phase = ahead(module, ("scale", 64), ("scale", 64), ("scale", 128))
    assert len(phase.mode.raw_futures) == 2
    first = launch(module, "scale", 64)
    assert launch(module, "scale", 64) is first and type(launch(module, "scale", 128)).__name__ == "CompiledKernel"
    assert sorted(compiled) == [(False, "scale"), (False, "scale")]


def test_processes_the_compile_threads_start_are_spared_while_a_compile_runs(program):
    """The sweeps between phases kill every other process of the sandbox; a compile thread's own (ptxas)
    are spared while a compile runs, and no longer once every compile has ended."""
    from concurrent.futures import ThreadPoolExecutor

    pending: Future = Future()
    mode = _async_compile.AsyncCompileMode(ThreadPoolExecutor(1), ignore_errors=True)
    mode.raw_futures.append(pending)
    phase = harness._AheadCompiles(mode, mode.executor, 0.0)
    harness._AHEAD = phase
    started: dict = {}

    def start(name: str) -> None:
        started[name] = subprocess.Popen(["sleep", "30"])

    try:
        for name in (f"{harness.AHEAD_THREAD_PREFIX}_0", "student"):
            worker = threading.Thread(target=start, args=(name,), name=name)
            worker.start()
            worker.join()
        ours = started[f"{harness.AHEAD_THREAD_PREFIX}_0"].pid
        assert phase.spared() == {ours}, "the compile thread's process only, not another thread's"
        pending.set_result(None)
        assert phase.spared() == set() and phase.pids == set()
    finally:
        for proc in started.values():
            proc.kill()
            proc.wait()
        mode.executor.shutdown()


def test_a_compile_threads_prints_stay_out_of_the_given_checks_output(program):
    """The given check's output (shown in the report, compared with a claimed output) holds what the check
    printed, not a kernel's static_print from a compile-ahead thread compiling beside it."""
    import contextlib
    import io

    captured, aside = io.StringIO(), io.StringIO()
    assert harness._AheadAside.around(captured, aside) is captured  # no phase ran: the plain capture
    load, _ = program
    ahead(load(), ("scale", 64))
    proxy = harness._AheadAside.around(captured, aside)
    with contextlib.redirect_stdout(proxy):
        print("the check's own line")
        worker = threading.Thread(target=print, args=("static_print from a compile",),
                                  name=f"{harness.AHEAD_THREAD_PREFIX}_1")
        worker.start()
        worker.join()
    assert captured.getvalue() == "the check's own line\n"
    assert aside.getvalue() == "static_print from a compile\n"
