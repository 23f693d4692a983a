"""Grade probe submissions ("kernels written otherwise") through kernelgrade's real pipeline.

Kept for a GPU session (D=bench/probes/weighted_sum, README there). Run from the repository root
with PYTHONPATH set to it:

    python3 $D/drive.py --device gpu --out $OUT/wsum.jsonl          # the weighted-sum probes, on a GPU
    python3 $D/drive.py --static                                    # fill extraction + fill rules only
    python3 $D/drive.py --probes p_l6_check.py --exercise lesson06_mean_var --device interpreter --out r.jsonl

As the earlier rounds did (docs/benchmarks.md, "Kernels written otherwise"): one warm grader
(bwrap, the exercise's example written answers and explanation, claimed output "仅静态审查",
--secret-seed 99), the probes graded in parallel from a thread pool (each grading runs in its own
sandbox process; warm_pool = jobs), one JSON line per probe. Probe files are found next to this file
(or by path). A probe is a dict like a catalogue mutant (fill / fills / edits / file) with `expect`
(the verdict judged right, MutantExpectation's fields) and `judged` (words); the line carries the
grader's verdict and `expect_problems`, what differs from the judged verdict (validate's check_mutant).
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
import threading
import time
import traceback
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
CLAIMED = "仅静态审查"


def load_probes(path: Path) -> tuple[str, list[dict]]:
    spec = importlib.util.spec_from_file_location(f"probes_{path.stem}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.EXERCISE, list(module.PROBES)


def resolve(name: str) -> Path:
    path = Path(name)
    if not path.is_absolute() and not path.exists():
        path = HERE / name
    return path.resolve()


def first_line(text: str | None, limit: int = 300) -> str:
    if not text:
        return ""
    line = next((ln for ln in text.strip().splitlines() if ln.strip()), "")
    return line[:limit]


def last_line(text: str | None, limit: int = 300) -> str:
    """A traceback's last line that says something (the exception), not its first frame, nor a
    compile error's caret line."""
    if not text:
        return ""
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip().strip("^~ ")]
    return lines[-1][:limit] if lines else ""


def mutant_of(probe: dict):
    from service.exercises.spec import Mutant, MutantExpectation

    expect = MutantExpectation(**probe.get("expect", {"code_points": 0}))
    source = {k: probe[k] for k in ("fill", "fills", "edits", "file") if k in probe}
    return Mutant(id=probe["id"], description=probe.get("description", ""),
                  expect=expect, **source)


def static_line(exercise, probe: dict) -> dict:
    """Fill extraction and the fill rules only: what can be checked without running anything."""
    from service.grading.extract import extract
    from service.grading.fills import rejected_fill

    code = exercise.mutant_code(mutant_of(probe))
    extraction = extract(exercise.template, code, language="en")
    refused = extraction.error or (None if any(f is None for f in extraction.fills)
                                   else rejected_fill(exercise, extraction, "en"))
    return {"id": probe["id"], "group": probe.get("group"), "exercise": exercise.id,
            "fills": extraction.fill_sources, "edits": [f"{e.kind}:{e.rule}:{first_line(e.submission_text, 120)}"
                                                       for e in extraction.edits],
            "accepted": refused is None, "refused": first_line(refused, 400) if refused else None,
            "expect_rejected": bool(probe.get("expect", {}).get("rejected", False))}


def report_line(exercise, probe: dict, report, elapsed: float) -> dict:
    from service.grading.validate import check_mutant, code_points

    mutant = mutant_of(probe)
    items = {i.id: i.points for i in report.items}
    case_items = [i for i in report.items if i.id.startswith("code.")]
    failed = [{"id": c.id, "error": last_line(c.error, 300) if c.error else None,
               "ratio": c.error_ratio, "oob": [f"{o.buffer}:{o.side}:{o.changed}" for o in c.out_of_bounds],
               "mismatch": (f"{c.first_mismatch.output}{c.first_mismatch.index} obs={c.first_mismatch.observed} "
                            f"exp={c.first_mismatch.expected:.6g}") if c.first_mismatch else None}
              for c in report.cases if not c.passed]
    program = report.program
    return {
        "id": probe["id"], "group": probe.get("group"), "exercise": exercise.id,
        "status": report.status, "message": first_line(getattr(report, "message", None)),
        "total": report.score.total if report.score else None,
        "passed": report.score.passed if report.score else None,
        "provisional": report.score.provisional if report.score else None,
        "code_points": code_points(report, exercise) if report.status == "graded" else None,
        "items": items,
        "vetoes": [f"{v.rule}:{v.status}" for v in report.vetoes],
        "diagnoses": [d.id for d in report.diagnoses],
        "diagnoses_en": [first_line((d.evidence.get("messages") or {}).get("en") or d.message, 400)
                         for d in report.diagnoses],
        "feedback": {i.id: first_line(i.feedback, 240) for i in case_items},
        "given": report.given_check.status if getattr(report, "given_check", None) else None,
        "given_output": last_line(report.given_check.output, 300) if getattr(report, "given_check", None) else None,
        "failed_cases": failed,
        "fills": program.fills if program else None,
        "ran": program.ran if program else None,
        "not_run_reason": first_line(program.not_run_reason, 300) if program and program.not_run_reason else None,
        "edits": [f"{e.kind}:{e.rule}" for e in program.edits] if program else [],
        "expect": probe.get("expect"),
        "expect_problems": [last_line(p, 300) if "\n" in p else p for p in check_mutant(exercise, mutant, report)]
        if report.status == "graded"
        else [f"not graded: {first_line(getattr(report, 'message', ''))}"],
        "judged": probe.get("judged"),
        "elapsed_s": round(elapsed, 2),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--probes", nargs="*", default=["p_wsum.py"], help="probe files (next to this file, or paths)")
    ap.add_argument("--exercise", default=None, help="override the probe files' EXERCISE")
    ap.add_argument("--only", nargs="*", default=None, help="probe ids to run (default: all)")
    ap.add_argument("--device", choices=["gpu", "interpreter", "auto"], default="auto")
    ap.add_argument("--sandbox", default="bwrap")
    ap.add_argument("--out", default=None, help="JSON lines here (default: stdout)")
    ap.add_argument("--secret-seed", type=int, default=99)
    ap.add_argument("--jobs", type=int, default=None, help="gradings at once (default: 6 on a GPU, 2 otherwise)")
    ap.add_argument("--timeout", type=float, default=170.0, help="per probe, seconds from its start")
    ap.add_argument("--deadline", type=float, default=290.0, help="the whole run, seconds; then stop")
    ap.add_argument("--reports", default=None, help="also write each probe's full report as JSON in this folder")
    ap.add_argument("--static", action="store_true", help="fill extraction + fill rules only, nothing runs")
    ap.add_argument("--allow-block-pointers", action="store_true",
                    help="local check with a Triton 3.6 sandbox python on the interpreter: skip the trusted side's "
                         "'block pointers removed' refusal (use with KERNELGRADE_EXERCISES_DIR pointing at a copy "
                         "without requires_gpu)")
    args = ap.parse_args()

    from service.config import Settings
    from service.exercises import ExerciseCatalog
    from service.submission import Submission

    started = time.monotonic()
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    out = open(args.out, "w", encoding="utf-8") if args.out else sys.stdout  # noqa: SIM115
    lock = threading.Lock()

    def write(line: dict) -> None:
        with lock:
            out.write(json.dumps(line, ensure_ascii=False) + "\n")
            out.flush()

    work: list[tuple[object, dict]] = []
    catalog = ExerciseCatalog(Settings().exercises_dir)
    for name in args.probes:
        exercise_id, probes = load_probes(resolve(name))
        exercise = catalog.get(args.exercise or exercise_id)
        for probe in probes:
            if args.only is None or probe["id"] in args.only:
                work.append((exercise, probe))
    print(f"{len(work)} probes, exercises {sorted({e.id for e, _ in work})}", file=sys.stderr)

    if args.static:
        for exercise, probe in work:
            try:
                write(static_line(exercise, probe))
            except Exception as exc:  # noqa: BLE001
                write({"id": probe["id"], "static_error": repr(exc)})
        return 0

    if args.allow_block_pointers:
        import service.grading.pipeline as pipeline

        pipeline.block_pointers_removed = lambda: False  # type: ignore[assignment]

    from service.bootstrap import build_grader

    jobs = args.jobs or (6 if args.device == "gpu" else 2)
    overrides = {} if args.device == "auto" else {"device": args.device}
    settings = Settings(**overrides, sandbox=args.sandbox, warm_pool=jobs, compile_cache_prewarm=False)
    grader = build_grader(settings)
    print(f"grader: {grader.mode.value}, {grader.runner.backend.name}, jobs {jobs}, seed {args.secret_seed}",
          file=sys.stderr)
    grader.start()
    examples: dict[str, dict] = {}
    for exercise, _ in work:
        path = exercise.root / "example_submission.json"
        examples[exercise.id] = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}

    running: dict[str, float] = {}  # probe id -> start time
    done: set[str] = set()

    def grade(item: tuple[object, dict]) -> None:
        exercise, probe = item
        pid = probe["id"]
        if time.monotonic() - started > args.deadline:
            return
        with lock:
            running[pid] = time.monotonic()
        t0 = time.monotonic()
        try:
            example = examples[exercise.id]
            code = exercise.mutant_code(mutant_of(probe))
            sub = Submission(exercise=exercise.id, code=code, answers=example.get("answers") or {},
                             explanation=example.get("explanation") or "", claimed_output=CLAIMED)
            report = grader.grade(sub, secret_seed=args.secret_seed)
            line = report_line(exercise, probe, report, time.monotonic() - t0)
            if args.reports:
                Path(args.reports).mkdir(parents=True, exist_ok=True)
                (Path(args.reports) / f"{pid}.json").write_text(report.to_json(), encoding="utf-8")
        except Exception as exc:  # noqa: BLE001 - one probe's failure is a line, not the end of the run
            line = {"id": pid, "group": probe.get("group"), "exercise": exercise.id, "status": "driver_error",
                    "error": repr(exc), "trace": traceback.format_exc()[-1500:],
                    "elapsed_s": round(time.monotonic() - t0, 2)}
        with lock:
            if pid in done:  # already written off as timed out
                return
            done.add(pid)
        write(line)
        mark = "ok" if not line.get("expect_problems") else "DIFF"
        with lock:
            print(f"[{len(done)}/{len(work)}] {mark} {pid}: {line.get('status')} code={line.get('code_points')} "
                  f"total={line.get('total')} vetoes={line.get('vetoes')} diag={line.get('diagnoses')} "
                  f"{line.get('elapsed_s')}s", file=sys.stderr, flush=True)

    pool = ThreadPoolExecutor(jobs, thread_name_prefix="probe")
    futures = [pool.submit(grade, item) for item in work]
    timed_out = False
    while not all(f.done() for f in futures):
        with lock:
            if len(done) >= len(work):  # every probe has its line (some written off as timed out)
                break
        time.sleep(1.0)
        now = time.monotonic()
        with lock:
            late = [pid for pid, t in running.items() if pid not in done and now - t > args.timeout]
            over = now - started > args.deadline
            for pid in late:
                done.add(pid)
        for pid in late:
            write({"id": pid, "status": "driver_timeout", "after_s": args.timeout})
            timed_out = True
        if over:
            with lock:
                left = [p["id"] for _, p in work if p["id"] not in done]
                done.update(left)
            for pid in left:
                write({"id": pid, "status": "driver_deadline", "after_s": args.deadline})
            timed_out = True
            break
    elapsed = time.monotonic() - started
    print(f"done in {elapsed:.1f}s", file=sys.stderr, flush=True)
    if timed_out:  # a grading still running cannot be joined: leave without waiting for it (the
        out.flush()  # sandboxes are bwrap --die-with-parent: they end with this process)
        sys.stderr.flush()
        os._exit(3)
    pool.shutdown(wait=True)
    grader.close()
    if out is not sys.stdout:
        out.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
