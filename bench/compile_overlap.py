"""The compile-ahead phase's compiles waited for before the given check (`wait-all`, the harness before
issue #20's overlap) or run on beside the given check and the cases (`overlap`, sandbox/harness.py
`_AheadCompiles`): a lesson-6 grading's sandbox run from the phase's start to its last case, on the CPU.

    python bench/compile_overlap.py [--trials 8] [--threads 2] [--case-ms 2] [--given-ms 6]

No GPU needed: Triton compiles for a CUDA target (GPUTarget("cuda", 90, 32), the H100/H200's; ptxas is
bundled) on the CPU, through the harness's own `_compile_ahead` and its resolver under `_do_compile`. Lesson
6's reference program (`N` and the row stride are constexprs: each width is a kernel of its own) with the
exercise's 17 cases in their order: the fixed widths are in the on-disk cache (as the service's shared cache
holds them after its prewarm), the three drawn widths are new in every trial (a fresh secret seed). A case
here is the harness's own work on the CPU (its guarded buffers, placed as a case places them), the entry
point's launch, which takes its kernel (compiled, waited for, or loaded) and then stops (no GPU to launch on),
and `--case-ms` of sleep for the kernel's run and the evidence on a GPU (the H100's cases: 34 ms for 17);
the given check is two launches (N = 17, 128) and `--given-ms`. Each trial: a fresh JITFunction, both arms
in turn (alternating which goes first). Prints per arm the p50/min/max of the run from the phase's start
to its last case (`total`), the phase's own calls (`compile_ahead`), the launches' waits (`compile_wait`)
and the phase's last compile's end (`compile_ahead_done`), in ms.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import platform
import random
import statistics
import sys
import tempfile
import time
from concurrent.futures import wait as wait_for
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "sandbox"))  # the harness's helpers, as it imports them from the job folder

import torch  # noqa: E402
import triton  # noqa: E402
from triton.backends.compiler import GPUTarget  # noqa: E402
from triton.runtime.driver import driver  # noqa: E402

from sandbox import harness  # noqa: E402

TARGET = GPUTarget("cuda", 90, 32)
SOLUTION = ROOT / "exercises" / "lesson06_mean_var" / "solution.py"
# (N, row stride) of lesson 6's cases in their order (exercise.yaml); None: drawn from the secret seed
FIXED = [(32, 32), (128, 128), (256, 256), (1024, 1024), (1, 1), (2, 2), (17, 17), (33, 33), None, (2049, 2049),
         (33, 40), (33, 33), (128, 128), (33, 33), None, None, (20, 24)]
DRAWN = [(129, 1100), (18, 120), (4097, 6144)]  # past_pow2, ragged, wide
GIVEN = [17, 128]


class CPUCompileDriver:
    """What JITFunction.run asks of the driver: a device, a stream, the target; a launch stops here."""

    def get_current_device(self):
        return 0

    def get_current_stream(self, device=None):
        return 0

    def get_current_target(self):
        return TARGET

    def __getattr__(self, name: str):
        raise RuntimeError(f"no GPU here (driver.{name})")


def program(folder: Path, serial: int):
    """Lesson 6's reference kernel and entry point (without its file's CUDA check), a fresh module."""
    path = folder / "lesson6.py"
    if not path.exists():
        path.write_text(SOLUTION.read_text(encoding="utf-8").split("\nfor shape in")[0], encoding="utf-8")
    spec = importlib.util.spec_from_file_location(f"lesson6_{serial}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def job(widths: list[tuple[int, int]]) -> tuple[dict, dict]:
    cases, inputs = [], {}
    for index, (n, stride) in enumerate(widths):
        case_id = f"c{index}"
        inputs[f"{case_id}.x"] = torch.randn(4, stride)
        arg: dict = {"key": f"{case_id}.x"}
        if stride != n:
            arg["columns"] = n
        cases.append({"id": case_id, "args": [arg], "outputs": ["mean", "var"]})
    return {"entry_point": "mean_var", "cases": cases}, inputs


def launch(module, args) -> None:
    try:
        module.mean_var(*args)
    except RuntimeError as exc:  # the kernel was in hand; the launch itself needs a GPU
        if "no GPU here" not in str(exc):
            raise


def one_run(module, spec: dict, inputs: dict, *, arm: str, threads: int, case_s: float, given_s: float) -> dict:
    harness._SPLIT.clear()
    started = time.perf_counter()
    with harness._timed("compile_ahead"):  # as the harness times the phase's calls
        ahead = harness._compile_ahead(spec, inputs, module, module.mean_var, torch, "cpu", threads=threads,
                                       wait_s=10.0)
    assert ahead is not None
    if arm == "wait-all":  # the harness before: every compile waited for before the given check
        wait_for(ahead.mode.raw_futures)
    for n in GIVEN:
        launch(module, (torch.randn(3, n),))
    time.sleep(given_s)
    for case in spec["cases"]:
        guards = harness._Guards(torch, "mean_var")
        args, _, _ = harness._case_args(guards, case, inputs, "cpu")
        with guards.allocations():
            launch(module, args)
        time.sleep(case_s)
    total = time.perf_counter() - started
    done = ahead.done_s()
    ahead.pool.shutdown(wait=True)
    return {"arm": arm, "total_ms": 1e3 * total, "compile_ahead_ms": 1e3 * harness._SPLIT.get("compile_ahead", 0.0),
            "compile_wait_ms": 1e3 * harness._SPLIT.get("compile_wait", 0.0),
            "compile_ahead_done_ms": None if done is None else 1e3 * done, "compiled_ahead": ahead.compiled()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--trials", type=int, default=8)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--case-ms", type=float, default=2.0)
    parser.add_argument("--given-ms", type=float, default=6.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    import gpu_compile  # the harness's compile-time hooks, installed in a GPU sandbox too

    assert gpu_compile.restrict_compile_time_calls()
    harness._resolve_compiles_ahead()
    previous = driver._active
    driver.set_active(CPUCompileDriver())
    rng = random.Random(args.seed)
    used: set[int] = set()

    def fresh(low: int, high: int) -> int:
        while True:
            width = rng.randint(low, high)
            if width not in used:
                used.add(width)
                return width

    rows: list[dict] = []
    with tempfile.TemporaryDirectory() as tmp:
        import os

        os.environ["TRITON_CACHE_DIR"] = str(Path(tmp) / "cache")
        folder = Path(tmp)
        fixed = [w for w in FIXED if w is not None]
        warm = program(folder, 0)  # the shared cache's prewarm: the fixed widths and the given check's
        for n, stride in [*fixed, *((n, n) for n in GIVEN)]:
            used.add(n)
            x = torch.randn(4, stride)[:, :n]
            launch(warm, (x,))
        harness._AHEAD = None
        serial = 1
        for trial in range(args.trials):
            arms = ["wait-all", "overlap"] if trial % 2 == 0 else ["overlap", "wait-all"]
            for arm in arms:
                widths, drawn = [], iter(DRAWN)
                for w in FIXED:
                    if w is None:
                        n = fresh(*next(drawn))
                        w = (n, n)
                    widths.append(w)
                spec, inputs = job(widths)
                module = program(folder, serial)
                serial += 1
                row = one_run(module, spec, inputs, arm=arm, threads=args.threads, case_s=args.case_ms / 1e3,
                              given_s=args.given_ms / 1e3)
                row["trial"] = trial
                rows.append(row)
                print(json.dumps(row), flush=True)
                harness._AHEAD = None
    driver._active = previous
    print(f"# {platform.node()} triton {triton.__version__} torch {torch.__version__} threads {args.threads} "
          f"case {args.case_ms} ms given {args.given_ms} ms, {args.trials} trials")
    for arm in ("wait-all", "overlap"):
        for key in ("total_ms", "compile_ahead_ms", "compile_wait_ms", "compile_ahead_done_ms"):
            values = [r[key] for r in rows if r["arm"] == arm and r[key] is not None]
            print(f"{arm:9s} {key:22s} p50 {statistics.median(values):7.1f}  min {min(values):7.1f}  "
                  f"max {max(values):7.1f}")
    if args.out:
        args.out.write_text(json.dumps(rows, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
