"""Where a sandbox's start-up goes, and how fast a warm pool refills under a burst (issue #20.4).

    python bench/sandbox_startup.py --device auto --runs 3 --burst 8 --out bench-out/startup [--shared-cache]

Everything runs in the real bwrap sandbox, with the argv, mounts, environment, seccomp filter
and host uid of a grading sandbox (the backend's own launch), one after the other:
- stages: a probe in the job folder does what the harness does before its hello, timing each
  step (numpy, torch, triton, triton.language, safetensors, CUDA init on a GPU, the GPU-compile
  gate, the canary's first launch and a second one), then leaves with os._exit (a sandbox is
  killed, never torn down); `outside` is the wall clock from spawn to exit, split into spawn to
  the probe's first line (bwrap, the interpreter's start), the stages, and the last line to exit
  (the kernel freeing the process); an empty `python -c pass` in the same sandbox beside it;
- importtime: `python -X importtime` of the harness's imports in the same sandbox, self time
  summed per top-level package (what a template that has imported them would save);
- burst: a warm pool of `--burst` sandboxes started at once (`--starts`: at most that many
  starting at a time, 0 = the pool's default), timing each hello from the pool's start; then
  the same number taken out at once and the time until the pool is full again. `--start
  fresh,fork`: once with fresh sandboxes, once forked from a template (KERNELGRADE_SANDBOX_START
  =fork; the template's own start is timed apart, before the pool's). `--burst-only`: no stages.
Writes startup.json and prints Markdown tables.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sandbox.backends import make_backend  # noqa: E402
from sandbox.backends.base import TritonCacheMount  # noqa: E402
from sandbox.backends.bwrap import BwrapBackend  # noqa: E402
from sandbox.contract import DeviceMode, Limits  # noqa: E402
from sandbox.forkserver import ForkServer, UidTemplates, fork_server  # noqa: E402
from sandbox.host_uids import lease_host_uid  # noqa: E402
from sandbox.pool import WarmPool, copy_harness  # noqa: E402
from service.config import Settings  # noqa: E402

# Runs inside the sandbox, in the job folder next to the harness's files: the harness's start-up,
# step by step (harness.py, main(), up to the hello).
PROBE = r'''
import time
first = time.monotonic()  # CLOCK_MONOTONIC is the host's in every sandbox (no time namespace)
import json, os, sys
sys.path.insert(0, "/job")
mode = sys.argv[1]
stages = []
t = time.perf_counter()
def mark(name):
    global t
    now = time.perf_counter()
    stages.append([name, now - t])
    t = now
import wire, exits
mark("harness modules (wire, exits)")
import numpy
mark("import numpy")
import torch
mark("import torch")
import triton
mark("import triton")
import triton.language as tl
mark("import triton.language")
from safetensors.torch import load_file, save
mark("import safetensors.torch")
device = "cuda" if mode == "gpu" else "cpu"
if mode == "gpu":
    torch.cuda.init()
    torch.cuda.get_device_name(0)
    mark("CUDA init")
@triton.jit
def _canary(out, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out + offs, offs * 2 + 1, mask=offs < n)
import gpu_compile
gpu_compile.restrict_compile_time_calls()
gate = None
if mode == "interpreter":
    gate = gpu_compile.CompileGate()
    gate.install()
mark("gpu_compile gate")
canary = torch.zeros(16, dtype=torch.int32, device=device)
_canary[(1,)](canary, 13, BLOCK=16)
canary.cpu().tolist()
mark("canary, first launch")
_canary[(1,)](canary, 13, BLOCK=16)
canary.cpu().tolist()
mark("canary, second launch")
print(json.dumps({"stages": stages, "threads": len(os.listdir("/proc/self/task")), "first": first,
                  "last": time.monotonic()}), flush=True)
os._exit(0)  # no interpreter teardown: a sandbox is killed, never exits through it
'''

IMPORTS = "import numpy, torch, triton, triton.language, safetensors.torch"


def _job_dir() -> Path:
    job = Path(tempfile.mkdtemp(prefix="kg-job-bench-"))
    copy_harness(job)
    (job / "startup_probe.py").write_text(PROBE, encoding="utf-8")
    os.chmod(job / "startup_probe.py", 0o644)
    return job


def in_sandbox(backend: BwrapBackend, mode: DeviceMode, job: Path, command: list[str]) -> tuple[float, bytes, bytes]:
    """(wall seconds from spawn to exit, stdout, stderr) of `command` in a grading sandbox on `job`."""
    unprivileged = backend.unprivileged(mode, 0, job.parent)
    lease = lease_host_uid() if unprivileged else None
    try:
        spec = backend._spec(job_dir=job, verdict_fd=1, mode=mode, device_index=0, limits=Limits(), control_fd=None,
                             host_uid=lease.uid if lease else None, command=command, seccomp=True)
        started = time.monotonic()
        done = subprocess.run(spec.argv, env=spec.env, pass_fds=spec.pass_fds, capture_output=True, timeout=300,
                              umask=0o022)
        wall = time.monotonic() - started
        in_sandbox.started, in_sandbox.ended = started, started + wall  # type: ignore[attr-defined]
    finally:
        if lease is not None:
            lease.release()
        for fd in spec.pass_fds:
            os.close(fd)
    if done.returncode != 0:
        raise RuntimeError(f"the probe failed ({done.returncode}): {done.stdout[-800:]!r} {done.stderr[-2000:]!r}")
    return wall, done.stdout, done.stderr


def stage_runs(backend: BwrapBackend, mode: DeviceMode, runs: int) -> list[dict]:
    job = _job_dir()
    rows = []
    try:
        if backend.triton_cache is not None:  # fill the shared cache once (the canary and its launcher), untimed
            host_dir = backend.triton_cache.host_dir
            os.chmod(host_dir, 0o777)  # the sandbox may run as a leased unprivileged uid
            writable = backend.with_triton_cache(TritonCacheMount(host_dir, writable=True))
            in_sandbox(writable, mode, job, [backend.python, "-I", "-B", "/job/startup_probe.py", mode.value])
            os.chmod(host_dir, 0o755)
        for _ in range(runs):
            wall, out, _ = in_sandbox(backend, mode, job, [backend.python, "-I", "-B", "/job/startup_probe.py",
                                                           mode.value])
            probe = json.loads(out.decode().strip().splitlines()[-1])
            before = probe["first"] - in_sandbox.started  # type: ignore[attr-defined]
            after = in_sandbox.ended - probe["last"]  # type: ignore[attr-defined]
            empty, _, _ = in_sandbox(backend, mode, job, [backend.python, "-I", "-B", "-c", "pass"])
            rows.append({"outside_s": wall, "stages": probe["stages"], "threads": probe["threads"], "empty_s": empty,
                         "before_s": before, "after_s": after})
    finally:
        subprocess.run(["rm", "-rf", str(job)], check=False)
    return rows


def import_times(backend: BwrapBackend, mode: DeviceMode) -> dict:
    """-X importtime of the harness's imports: self microseconds summed per top-level package."""
    job = _job_dir()
    try:
        wall, _, err = in_sandbox(backend, mode, job, [backend.python, "-I", "-B", "-X", "importtime", "-c", IMPORTS])
    finally:
        subprocess.run(["rm", "-rf", str(job)], check=False)
    per_package: dict[str, int] = defaultdict(int)
    modules = 0
    for line in err.decode(errors="replace").splitlines():
        if not line.startswith("import time:") or "self [us]" in line:
            continue
        self_us, _, name = (part.strip() for part in line[len("import time:"):].split("|"))
        per_package[name.strip().split(".")[0]] += int(self_us)
        modules += 1
    top = sorted(per_package.items(), key=lambda kv: -kv[1])
    return {"wall_s": wall, "modules": modules, "total_s": sum(per_package.values()) / 1e6,
            "packages": [(name, us / 1e6) for name, us in top[:12]]}


def burst(backend: BwrapBackend, mode: DeviceMode, size: int, starts: int, start: str = "fresh") -> dict:
    """A pool of `size` started at once; then all taken at once and refilled. `start` fork: the
    pool's sandboxes are forked from a template (KERNELGRADE_SANDBOX_START=fork), started first
    and timed apart."""
    work = Path(tempfile.mkdtemp(prefix="kg-bench-pool-"))
    forks = None
    result: dict = {"size": size, "start": start}
    if start == "fork":
        why = ForkServer.unavailable_reason(backend, mode)
        if why is not None:
            return {**result, "skipped": why}
        forks = fork_server(backend=backend, limits=Limits(), mode=mode, device_index=0)
        began = time.perf_counter()
        if isinstance(forks, UidTemplates):  # no pids cgroup: a template per host uid, all side by side
            result["templates"] = "one per host uid"
            forks.start(size)
            for template in list(forks.templates):
                template.start()  # waits for the one started in the background
        else:
            result["templates"] = "one"
            forks.start()
        result["template_s"] = time.perf_counter() - began
    pool = WarmPool(backend=backend, limits=Limits(), mode=mode, device_index=0, size=size, work_root=work,
                    max_starting=starts or None, forks=forks)
    result["max_starting"] = pool.max_starting
    try:
        started = time.perf_counter()
        pool.start()
        ready_at = _ready_times(pool, size, started)
        result["fill"] = ready_at
        taken = [pool.acquire() for _ in range(size)]
        refill_started = time.perf_counter()
        for sandbox in taken:
            if sandbox is not None:
                sandbox.kill()
        result["refill"] = _ready_times(pool, size, refill_started)
        if forks is not None:
            result["template_memory_mib"] = _template_memory(forks)
        result["peak_starting"] = pool.peak_starting
        result["forked"] = pool.forked_total
        result["started"] = pool.started_total
    finally:
        pool.close()
        if forks is not None:
            forks.close()
        subprocess.run(["rm", "-rf", str(work)], check=False)
    return result


def _template_memory(forks) -> list[dict[str, float]]:
    """Each template's python process (under its bwrap and bwrap's init): RSS, PSS and private
    memory in MiB, from /proc/PID/smaps_rollup (children share its pages copy-on-write)."""
    found = []
    for template in getattr(forks, "templates", [forks]):
        pid = template._proc.pid if template._proc is not None else None
        for _ in range(2):  # bwrap -> bwrap's init -> the template
            try:
                pid = int(Path(f"/proc/{pid}/task/{pid}/children").read_text().split()[0])
            except (OSError, IndexError, ValueError):
                pid = None
                break
        if pid is None:
            continue
        fields = {}
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines()[1:]:
            name, value = line.split(":", 1)
            fields[name] = int(value.split()[0]) / 1024
        found.append({"rss": fields.get("Rss", 0.0), "pss": fields.get("Pss", 0.0),
                      "private": fields.get("Private_Clean", 0.0) + fields.get("Private_Dirty", 0.0)})
    return found


def _ready_times(pool: WarmPool, size: int, since: float, timeout_s: float = 600) -> list[float]:
    seen: list[float] = []
    deadline = time.perf_counter() + timeout_s
    while len(seen) < size and time.perf_counter() < deadline:
        ready = pool.ready_count()
        while len(seen) < ready:
            seen.append(time.perf_counter() - since)
        time.sleep(0.02)
    return seen


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", choices=["auto", "gpu", "interpreter"], default="auto")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--burst", type=int, default=4, help="pool size for the burst (0: skip)")
    parser.add_argument("--starts", default="0", help="comma-separated max_starting values to try (0: the default)")
    parser.add_argument("--start", default="fresh",
                        help="comma-separated: fresh, fork (the burst's pool forked from a template)")
    parser.add_argument("--burst-only", action="store_true", help="skip the stages and -X importtime")
    parser.add_argument("--out", type=Path, default=Path("bench-out/startup"))
    parser.add_argument("--shared-cache", action="store_true",
                        help="GPU: mount a shared compile cache read-only, as the service does, filled by one "
                             "untimed run first (without it every sandbox compiles the canary and Triton's launcher)")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    settings = Settings(device=args.device, sandbox="bwrap")
    mode = settings.device_mode()
    backend = make_backend("bwrap", python=settings.sandbox_python, hidden_paths=settings.hidden_paths())
    assert isinstance(backend, BwrapBackend)
    backend.check()
    if args.shared_cache:
        cache = Path(tempfile.mkdtemp(prefix="kg-bench-triton-shared-"))
        os.chmod(cache, 0o755)
        backend = backend.with_triton_cache(TritonCacheMount(cache))
    results: dict = {"date": datetime.now(UTC).isoformat(timespec="seconds"), "mode": mode.value,
                     "shared_cache": args.shared_cache,
                     "machine": {"cpus": os.cpu_count(), "python": platform.python_version(),
                                 "kernel": platform.release(), "load": os.getloadavg()}}
    if not args.burst_only:
        results["stages"] = stage_runs(backend, mode, args.runs)
        results["importtime"] = import_times(backend, mode)
    results["bursts"] = [burst(backend, mode, args.burst, int(s), start) for start in args.start.split(",")
                         for s in args.starts.split(",")] if args.burst else []
    (args.out / "startup.json").write_text(json.dumps(results, indent=2))

    print(f"\n{mode.value}, {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}, {results['date']}; "
          f"p50 of {args.runs} sandboxes\n")
    if not args.burst_only:
        print_stages(results)
    for entry in results["bursts"]:
        if "skipped" in entry:
            print(f"\nburst: pool {entry['size']}, {entry['start']}: skipped ({entry['skipped']})")
            continue
        fill, refill = entry["fill"], entry["refill"]
        template = (f"template(s) ({entry['templates']}) started in {entry['template_s']:.2f} s first; "
                    if "template_s" in entry else "")
        print(f"\nburst: pool {entry['size']}, {entry['start']} ({entry['forked']} of {entry['started']} forked), "
              f"at most {entry['max_starting']} starting at once "
              f"(peak {entry['peak_starting']}): {template}first ready {fill[0]:.2f} s, all {fill[-1]:.2f} s "
              f"({len(fill) / fill[-1]:.2f}/s); refill after taking all: first {refill[0]:.2f} s, "
              f"all {refill[-1]:.2f} s ({len(refill) / refill[-1]:.2f}/s)" if fill and refill else
              f"\nburst: pool {entry['size']}: not all ready ({entry})")
        memory = entry.get("template_memory_mib")
        if memory:
            print(f"templates: {len(memory)}, each RSS {max(m['rss'] for m in memory):.0f} MiB, PSS "
                  f"{max(m['pss'] for m in memory):.0f} MiB, private {max(m['private'] for m in memory):.0f} MiB "
                  f"(the most of any); all together PSS {sum(m['pss'] for m in memory):.0f} MiB")
    return 0


def print_stages(results: dict) -> None:
    print("| stage | p50 | share |\n| --- | --- | --- |")
    names = [name for name, _ in results["stages"][0]["stages"]]
    total = statistics.median(r["outside_s"] for r in results["stages"])
    inside = 0.0
    for index, name in enumerate(names):
        value = statistics.median(r["stages"][index][1] for r in results["stages"])
        inside += value
        print(f"| {name} | {value:.3f} s | {value / total:.0%} |")
    empty = statistics.median(r["empty_s"] for r in results["stages"])
    before = statistics.median(r["before_s"] for r in results["stages"])
    after = statistics.median(r["after_s"] for r in results["stages"])
    print(f"| spawn to the probe's first line (bwrap, interpreter start) | {before:.3f} s | {before / total:.0%} |")
    print(f"| the probe's last line to exit (the kernel freeing the process) | {after:.3f} s | {after / total:.0%} |")
    print(f"| (an empty sandbox running `python -c pass`, spawn to exit) | {empty:.3f} s | {empty / total:.0%} |")
    print(f"| **spawn to exit** | **{total:.3f} s** | |")
    print(f"\nthreads in the sandbox after the canary: {results['stages'][0]['threads']}")
    imp = results["importtime"]
    print(f"\n-X importtime: {imp['modules']} modules, {imp['total_s']:.2f} s self time in all (the flag's own cost "
          f"included); by package:\n")
    print("| package | self time |\n| --- | --- |")
    for name, seconds in imp["packages"]:
        print(f"| {name} | {seconds:.3f} s |")


if __name__ == "__main__":
    sys.exit(main())
