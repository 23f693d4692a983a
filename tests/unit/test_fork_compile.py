"""The compile-ahead phase in forked children (sandbox/harness.py `_compile_ahead` with mode "fork",
sandbox/fork_compile.py), with Triton's real compile for the GPU target (sm_90, ptxas bundled) on the
CPU: the harness's own function calls an entry point whose launches become compile requests, children
compile into the on-disk cache, and this process loads the kernels. Only the driver is this machine's
(no GPU): one that names the device, the stream and the target, as JITFunction.run(warmup=True) asks."""
from __future__ import annotations

import importlib.util
import os
import threading
import time
from pathlib import Path

import pytest
import torch
import triton
from triton.backends.compiler import GPUTarget
from triton.runtime.driver import driver

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
    """A fresh module of the kernels (fresh JITFunctions), a fresh Triton cache, the CPU driver,
    fork_compile importable as the harness imports it (from the job folder), and what the
    parent's Triton compiled: its compilation listener's calls (cache_hit, kernel name)."""
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "triton-cache"))
    monkeypatch.syspath_prepend(str(SANDBOX))
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


def job(*cases: tuple) -> tuple[dict, dict]:
    """The harness's job and inputs for cases (kernel, block): one 1-D input each."""
    spec, inputs = [], {}
    for n, (kernel, block) in enumerate(cases):
        case_id = f"c{n}"
        inputs[f"{case_id}.x"] = torch.arange(200, dtype=torch.float32)
        spec.append({"id": case_id, "args": [{"key": f"{case_id}.x"}], "kwargs": {"kernel": kernel, "block": block}})
    return {"entry_point": "entry", "cases": spec}, inputs


def ahead(module, *cases: tuple, wait_s: float = 60.0) -> int:
    spec, inputs = job(*cases)
    return harness._compile_ahead(spec, inputs, module, module.entry, torch, "cpu", threads=2, wait_s=wait_s,
                                  mode="fork")


def kernels(jit) -> list:
    return [k for caches in jit.device_caches.values() for k in caches[0].values()]


def children() -> list[int]:
    """This process's child processes (a forked compile left behind)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat", encoding="ascii") as fh:
                    ppid = int(fh.read().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            if ppid == os.getpid():
                found.append(int(entry))
    return found


def case(module, kernel: str, block: int):
    """What a case's launch compiles (or finds in the kernel cache): the launch as a compile request."""
    x = torch.arange(200, dtype=torch.float32)
    jit = getattr(module, kernel)
    if kernel == "scale":
        return jit.run(x, torch.empty_like(x), x.numel(), BLOCK=block, grid=(1,), warmup=True)
    if kernel == "slow":
        return jit.run(x, torch.empty_like(x), UNROLL=block, grid=(1,), warmup=True)
    return jit.run(x, torch.empty_like(x), BLOCK=block, grid=(1,), warmup=True)


def test_forked_compiles_leave_usable_kernels_in_the_parent(program):
    load, compiled = program
    module = load()
    assert ahead(module, ("scale", 64), ("scale", 128), ("scale", 64)) == 2
    # The parent compiled nothing: both kernels came from the cache the children wrote.
    assert compiled == [(True, "scale"), (True, "scale")]
    held = kernels(module.scale)
    assert len(held) == 2 and all(type(k).__name__ == "CompiledKernel" and k.asm["cubin"] for k in held)
    assert {k.metadata.target.arch for k in held} == {90}
    # The cases find them: no compile, the very kernels the phase left.
    assert {id(case(module, "scale", block)) for block in (64, 128)} == {id(k) for k in held}
    assert len(compiled) == 2
    assert children() == []


def test_a_kernel_that_fails_to_compile_is_left_to_its_case(program):
    load, compiled = program
    module = load()
    assert ahead(module, ("broken", 24), ("scale", 64)) == 1
    assert kernels(module.broken) == [] and len(kernels(module.scale)) == 1
    with pytest.raises(Exception) as after_phase:
        case(module, "broken", 24)  # the case compiles it itself
    fresh = load("without_phase")
    with pytest.raises(Exception) as without_phase:
        case(fresh, "broken", 24)
    assert type(after_phase.value) is type(without_phase.value)
    assert str(after_phase.value) == str(without_phase.value)
    assert "power of 2" in str(after_phase.value)
    assert children() == []


def test_a_child_still_compiling_at_the_deadline_is_killed_and_its_kernel_left(program, tmp_path):
    load, compiled = program
    module = load()
    assert ahead(module, ("slow", 100), wait_s=0.5) == 0  # its compile takes seconds
    assert children() == [], "the child was killed and reaped"
    assert kernels(module.slow) == [], "the case compiles it"
    assert compiled == []
    groups = [name for _, _, names in os.walk(tmp_path / "triton-cache") for name in names
              if name.startswith("__grp__")]
    assert groups == [], "no kernel of the killed child's in the cache"


def test_no_fork_from_another_thread_than_the_main_one(program):
    """The phase's forks come from the main thread only: elsewhere it compiles in threads."""
    found: list = []
    worker = threading.Thread(target=lambda: found.append(harness._fork_compiles(2)))
    worker.start()
    worker.join()
    assert found == [None]
    forks = harness._fork_compiles(2)
    assert forks is not None and forks.target == TARGET
    forks.shutdown()


def test_the_killed_child_and_its_process_group_are_gone(program):
    """fork_compile.ForkCompiles itself: a child compiling past the deadline is killed with its
    process group (its ptxas) and reaped; its request fails, so Triton never finalises it."""
    import fork_compile
    from triton.runtime import _async_compile

    load, compiled = program
    module = load()
    forks = fork_compile.ForkCompiles(2, TARGET)
    mode = forks.mode()
    _async_compile.active_mode.set(mode)
    try:
        case(module, "slow", 100)
    finally:
        _async_compile.active_mode.set(None)
    [child] = forks.running
    assert forks.forked == 1 and children() == [child.pid]
    forks.wait(time.monotonic() + 0.3)
    assert forks.killed == 1 and forks.running == [] and children() == []
    with pytest.raises(ProcessLookupError):
        os.killpg(child.pid, 0)
    [future] = mode.raw_futures
    assert isinstance(future.exception(), fork_compile.ChildFailed)
    # Never finalised: no CompiledKernel (Triton 3.9 keeps an unfinished placeholder, which the harness removes).
    assert all(isinstance(k, _async_compile.FutureKernel) and k.kernel is None for k in kernels(module.slow))
    assert compiled == []


def test_a_kernel_the_cache_holds_is_loaded_without_a_fork(program):
    """The cache key Triton's AsyncCompileMode passes names the folder triton.compile writes: a kernel
    already in the cache (the shared one, or compiled before) costs no child."""
    import fork_compile
    from triton.runtime import _async_compile

    load, compiled = program
    assert ahead(load(), ("scale", 64)) == 1
    module = load()  # a fresh JITFunction: its kernel cache is empty, the disk cache is not
    forks = fork_compile.ForkCompiles(2, TARGET)
    mode = forks.mode()
    _async_compile.active_mode.set(mode)
    try:
        case(module, "scale", 64)
        case(module, "scale", 128)
    finally:
        _async_compile.active_mode.set(None)
    assert forks.forked == 1, "only the width the cache lacks"
    hit, new = mode.raw_futures
    assert hit.done() and hit.result().asm["cubin"]
    forks.wait(time.monotonic() + 60)
    assert new.result().asm["cubin"] and children() == []
