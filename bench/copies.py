"""The cost of the copied-answers comparison (service/grades/copies.py) for a class.

    python bench/copies.py --students 1000 --attempts 3 --out copies.json

Stores `students` × `attempts` submissions of puzzle_outer_add for one assignment through the real
store (a fresh SQLite file), each with its own written answer (sentences drawn from a pool, in their
own order) and its own whole-body fill (a kernel whose constants and names vary), plus `rings`
groups of 3 students who copied one answer and one kernel; then times `find_copies` (what
GET /v1/review/copies and the TA page run), `--repeat` times, and checks that exactly the rings were
found. Prints and optionally writes (--out) the timings and counts.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from service.config import REPO_ROOT
from service.db import store
from service.db.base import Base
from service.db.session import make_engine, make_sessionmaker
from service.exercises import ExerciseCatalog
from service.grades.copies import find_copies
from service.submission import Submission as SubmissionBody
from tests.support.copies_class import ASSIGNMENT, EXERCISE, body

SENTENCES = [
    "z 的两个维度相互独立", "所以用二维 grid", "program_id(0) 走 x 的块", "program_id(1) 走 y 的块",
    "最后一块会越过 N0", "最后一块会越过 N1", "load 的 mask 只保证不读越界", "越界的 lane 仍然会算出值",
    "store 不屏蔽会写到下一行", "越过 N1 的行会写到 z 之外", "所以 store 也要二维 mask", "mask_y[:, None] & mask_x[None, :]",
    "广播成 [B1, B0] 的块", "地址是 offs_y * N0 + offs_x", "块大小不一定整除", "哨兵值会发现越界写入",
    "the blocks of x and y are independent", "the last block can run past the end", "a masked load reads nothing out of range",
    "the store needs the 2-D mask too", "otherwise it writes into the next row", "the grid has one axis per input",
    "each program computes one tile of z", "offsets broadcast into a tile", "padding lanes still compute a value",
    "the sentinel after z catches a write past the end", "B0 and B1 need not divide N0 and N1",
]


def kernel(rng: random.Random, tag: int) -> str:
    """A whole-body fill of its own: the structure and names vary, and a constant carries `tag`."""
    a, b, c = rng.choice(["i", "cols", "ox", "offs_x"]), rng.choice(["j", "rows", "oy", "offs_y"]), rng.choice(["m", "ok", "both"])
    other = f"{tag}.0"
    if rng.random() < 0.5:
        return (f"    {a} = tl.program_id(0) * B0 + tl.arange(0, B0)\n    {b} = tl.program_id(1) * B1 + tl.arange(0, B1)\n"
                f"    xv = tl.load(x_ptr + {a}, mask={a} < N0, other={other})\n    yv = tl.load(y_ptr + {b}, mask={b} < N1, other=0.0)\n"
                f"    {c} = ({b}[:, None] < N1) & ({a}[None, :] < N0)\n"
                f"    tl.store(z_ptr + {b}[:, None] * N0 + {a}[None, :], xv[None, :] + yv[:, None], mask={c})")
    return (f"    p0 = tl.program_id(0)\n    p1 = tl.program_id(1)\n    {a} = p0 * B0 + tl.arange(0, B0)\n"
            f"    {b} = p1 * B1 + tl.arange(0, B1)\n    xv = tl.load(x_ptr + {a}, mask={a} < N0, other={other})\n"
            f"    yv = tl.load(y_ptr + {b}, mask={b} < N1)\n    z = yv[:, None] + xv[None, :]\n"
            f"    tl.store(z_ptr + {b}[:, None] * N0 + {a}[None, :], z, mask=({b}[:, None] < N1) & ({a}[None, :] < N0))")


def answer(rng: random.Random) -> str:
    return "，".join(rng.sample(SENTENCES, 9)) + "。"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--students", type=int, default=1000)
    parser.add_argument("--attempts", type=int, default=3)
    parser.add_argument("--rings", type=int, default=5, help="groups of 3 students who copied each other")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    rng = random.Random(21)
    with tempfile.TemporaryDirectory() as tmp:
        engine = make_engine(f"sqlite:///{tmp}/copies.db")
        Base.metadata.create_all(engine)
        sessions = make_sessionmaker(engine)
        started = time.perf_counter()
        with sessions() as session:
            store.create_course(session, "bench", "bench")
            rings = [(answer(rng), kernel(rng, 10_000 + r)) for r in range(args.rings)]
            copied = {s: rings[s // 3] for s in range(args.rings * 3)}
            for attempt in range(1, args.attempts + 1):
                for s in range(args.students):
                    text, fill = (copied[s] if s in copied and attempt == args.attempts
                                  else (answer(rng), kernel(rng, s * 10 + attempt)))
                    submission = SubmissionBody.model_validate(body(f"s{s:05d}", fill, text, attempt=attempt))
                    store.create_submission(session, course_id="bench", body=submission, callback_url=None, idempotency_key=None)
        stored_s = time.perf_counter() - started
        catalog = ExerciseCatalog(REPO_ROOT / "exercises")
        timings, cpu, report = [], [], None
        for _ in range(args.repeat):
            with sessions() as session:
                started, started_cpu = time.perf_counter(), time.process_time()
                report = find_copies(session, catalog, "bench", ASSIGNMENT)
                timings.append(time.perf_counter() - started)
                cpu.append(time.process_time() - started_cpu)
        engine.dispose()
    assert report is not None
    found = sorted((c.kind, tuple(m.student_id for m in c.members)) for c in report.clusters)
    expected = sorted((kind, tuple(f"s{s:05d}" for s in range(r * 3, r * 3 + 3))) for r in range(args.rings)
                      for kind in ("code", "text"))
    result = {"exercise": EXERCISE, "students": report.students, "submissions_stored": args.students * args.attempts,
              "submissions_compared": report.submissions_compared, "clusters": len(report.clusters),
              "exactly_the_rings_found": found == expected, "store_s": round(stored_s, 1),
              "find_copies_s": [round(t, 2) for t in timings], "find_copies_median_s": round(statistics.median(timings), 2),
              "find_copies_cpu_s": [round(t, 2) for t in cpu], "find_copies_cpu_median_s": round(statistics.median(cpu), 2),
              "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024), "load_average": os.getloadavg()[0]}
    print(json.dumps(result, indent=2))
    if args.out:
        args.out.write_text(json.dumps(result, indent=2) + "\n")
    return 0 if found == expected else 1


if __name__ == "__main__":
    raise SystemExit(main())
