"""The compile-ahead phase's compiles one after another, in threads, and in forked children (issue #20).

    python bench/compile_ahead_modes.py [--widths 513,1500,5000] [--trials 5] [--threads 2]

No GPU needed: Triton compiles for a CUDA target (GPUTarget("cuda", 90, 32), the H100/H200's; ptxas is
bundled) on the CPU, as sandbox/gpu_compile.py does. Lesson 6's reference kernel (its `N` is a constexpr:
each width is a kernel of its own) is compiled at each width through `JITFunction.run(warmup=True)`, as the
harness's compile-ahead phase calls it (sandbox/harness.py `_compile_ahead`), each trial with a fresh,
empty TRITON_CACHE_DIR and a fresh JITFunction, after one compile of another width in this process (the
harness's canary pays the compiler's cold start the same way), with the harness's compile-time hooks installed
(sandbox/gpu_compile.py `restrict_compile_time_calls`, as in a GPU sandbox; `--no-hooks` leaves them out):
- seq: no AsyncCompileMode, one width after the other (a grading without the phase);
- thread: Triton's AsyncCompileMode over a ThreadPoolExecutor of `--threads` (KERNELGRADE_COMPILE_AHEAD_MODE=thread);
- fork: the same mode over sandbox/fork_compile.py's ForkCompiles, at most `--threads` children at once, each
  compiling into the on-disk cache, then this process loading each kernel from it
  (KERNELGRADE_COMPILE_AHEAD_MODE=fork).
Each line: the mode's wall time per trial (from the first request to every kernel usable in this process's
kernel cache), and the p50/min/max, with the CPU time spent (this process's and its children's: ptxas, the
forks); the modes alternate within a trial, so a noisy neighbour hits them alike.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import wait as wait_for
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402  (the harness's process has it imported too: a fork copies its pages)
import triton  # noqa: E402
from triton.backends.compiler import GPUTarget  # noqa: E402
from triton.runtime import _async_compile  # noqa: E402
from triton.runtime.driver import driver  # noqa: E402

from sandbox.fork_compile import ForkCompiles  # noqa: E402

TARGET = GPUTarget("cuda", 90, 32)
SOLUTION = ROOT / "exercises" / "lesson06_mean_var" / "solution.py"


class CPUCompileDriver:
    """What JITFunction.run asks of the driver with warmup=True: a device, a stream, the target."""

    def get_current_device(self):
        return 0

    def get_current_stream(self, device=None):
        return 0

    def get_current_target(self):
        return TARGET

    def __getattr__(self, name: str):
        raise RuntimeError(f"no GPU here (driver.{name})")


def kernel_file(folder: Path) -> Path:
    """Lesson 6's reference kernel alone (its file's check runs on CUDA)."""
    text = SOLUTION.read_text(encoding="utf-8").split("\ndef mean_var(")[0]
    path = folder / "lesson6_kernel.py"
    path.write_text(text, encoding="utf-8")
    return path


def fresh_kernel(path: Path, serial: int):
    """A fresh JITFunction (no kernel cache in memory) of the same source."""
    spec = importlib.util.spec_from_file_location(f"lesson6_kernel_{serial}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.mean_var_kernel


def request(kernel, width: int) -> object:
    rows = 4
    x = torch.empty((rows, width))
    means, variances = torch.empty(rows), torch.empty(rows)
    return kernel.run(x, means, variances, width, x.stride(0), BLOCK=triton.next_power_of_2(width),
                      grid=(rows,), warmup=True)


def usable(kernel, count: int) -> None:
    """Every width's kernel is a CompiledKernel with its cubin, in the JITFunction's kernel cache."""
    cached = [k for caches in kernel.device_caches.values() for k in caches[0].values()]
    assert len(cached) == count and all("cubin" in k.asm for k in cached), cached


def seq(kernel, widths: list[int], threads: int) -> None:
    for width in widths:
        request(kernel, width)


def thread(kernel, widths: list[int], threads: int) -> None:
    pool = ThreadPoolExecutor(threads)
    mode = _async_compile.AsyncCompileMode(pool, ignore_errors=True)
    _async_compile.active_mode.set(mode)
    try:
        for width in widths:
            request(kernel, width)
    finally:
        _async_compile.active_mode.set(None)
    wait_for(mode.raw_futures)
    for future in mode.raw_futures:
        mode.future_kernels[future._key].result()
    pool.shutdown()


def fork(kernel, widths: list[int], threads: int) -> None:
    pool = ForkCompiles(threads, TARGET)
    mode = pool.mode()
    _async_compile.active_mode.set(mode)
    try:
        for width in widths:
            request(kernel, width)
    finally:
        _async_compile.active_mode.set(None)
    pool.wait(time.monotonic() + 60)
    for future in mode.raw_futures:
        mode.future_kernels[future._key].result()
    assert pool.forked == len(widths) and pool.threads is None, (pool.forked, pool.threads)
    pool.shutdown()


MODES = {"seq": seq, "thread": thread, "fork": fork}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--widths", default="513,1500,5000", help="lesson 6's N, one kernel each")
    parser.add_argument("--trials", type=int, default=5)
    parser.add_argument("--threads", type=int, default=2, help="threads, or children at once")
    parser.add_argument("--modes", default="seq,thread,fork")
    parser.add_argument("--out", type=Path, help="the figures as JSON")
    parser.add_argument("--no-hooks", action="store_true",
                        help="leave out the harness's compile-time hooks (gpu_compile.restrict_compile_time_calls)")
    args = parser.parse_args()
    if not args.no_hooks:  # the harness installs them in GPU mode too: more Python in each compile's front end
        from sandbox import gpu_compile

        assert gpu_compile.restrict_compile_time_calls()
    widths = [int(w) for w in args.widths.split(",")]
    modes = args.modes.split(",")
    driver.set_active(CPUCompileDriver())
    times: dict[str, list[float]] = {m: [] for m in modes}
    cpu: dict[str, list[float]] = {m: [] for m in modes}  # this process's CPU and its waited-for children's (ptxas, forks)
    with tempfile.TemporaryDirectory() as tmp:
        path = kernel_file(Path(tmp))
        serial = 0
        os.environ["TRITON_CACHE_DIR"] = str(Path(tmp) / "warm-cache")
        started = time.perf_counter()
        request(fresh_kernel(path, serial), 17)  # the compiler's cold start, in this process (the canary's)
        print(f"cold start (N=17, in this process): {time.perf_counter() - started:.3f} s", flush=True)
        for trial in range(args.trials):
            for mode in modes:
                serial += 1
                os.environ["TRITON_CACHE_DIR"] = str(Path(tmp) / f"cache{serial}")  # fresh and empty
                kernel = fresh_kernel(path, serial)
                started, cpu_before = time.perf_counter(), sum(os.times()[:4])
                MODES[mode](kernel, widths, args.threads)
                usable(kernel, len(widths))
                times[mode].append(time.perf_counter() - started)
                cpu[mode].append(sum(os.times()[:4]) - cpu_before)
            print(f"trial {trial + 1}: " + ", ".join(f"{m} {times[m][-1]:.3f} s" for m in modes), flush=True)
    summary = {m: {"p50_s": statistics.median(v), "min_s": min(v), "max_s": max(v), "runs_s": v,
                   "cpu_p50_s": statistics.median(cpu[m])} for m, v in times.items()}
    print(f"python {platform.python_version()} torch {torch.__version__} triton {triton.__version__}, "
          f"{os.cpu_count()} CPUs, widths {widths}, {args.threads} threads/children, {args.trials} trials, "
          f"compile-time hooks {'off' if args.no_hooks else 'on'}, load average {os.getloadavg()[0]:.2f}")
    print("| mode | p50 s | min s | max s | CPU s p50 |\n| --- | --- | --- | --- | --- |")
    for mode, row in summary.items():
        print(f"| {mode} | {row['p50_s']:.3f} | {row['min_s']:.3f} | {row['max_s']:.3f} | {row['cpu_p50_s']:.3f} |")
    if args.out:
        args.out.write_text(json.dumps({"triton": triton.__version__, "widths": widths, "threads": args.threads,
                                        "modes": summary}, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
