"""A bounded soak: `kernelgrade serve` on loopback under a steady stream of submissions for a fixed
time, watching the server for leaks (memory, file descriptors, processes) while the queue drains.

    python bench/soak.py --minutes 10 --rate 5 --out soak.json

Starts its own server (fresh data dir, SQLite, in-process workers, bwrap sandbox) so it knows the
pid to watch; POSTs at `--rate` per second from a second process (the lesson-6 solution and its
mutants, each with a distinct Idempotency-Key and distinct written answers, so that the free text
is graded every time); samples every `--sample-s` seconds the server's RSS, its open file
descriptors, its live descendant processes and the submissions still queued; after the sending
window, waits for the queue to drain, then samples again once idle. Exits 1 if a submission was
lost or a leak is seen (descendants left once idle, descriptors or RSS growing through the second
half of the run beyond the slack given).
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.burst import FINAL, bodies, percentile  # noqa: E402


def descendants(pid: int) -> list[int]:
    """Live descendant pids of `pid`, from /proc (children files need CONFIG_PROC_CHILDREN)."""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat", encoding="utf-8") as fh:
                    fields = fh.read().rsplit(")", 1)[1].split()
                parents[int(entry)] = int(fields[1])
            except (OSError, IndexError, ValueError):
                continue
    found, frontier = [], [pid]
    while frontier:
        current = frontier.pop()
        children = [p for p, parent in parents.items() if parent == current]
        found += children
        frontier += children
    return found


def rss_bytes(pid: int) -> int:
    with open(f"/proc/{pid}/status", encoding="utf-8") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def sample(pid: int, client: httpx.Client, started: float, sent: int, done: int) -> dict:
    queue = None
    try:
        metrics = client.get("/metrics").text
        queue = sum(float(line.rsplit(" ", 1)[1]) for line in metrics.splitlines()
                    if line.startswith("kernelgrade_queue_depth{"))
    except (httpx.HTTPError, ValueError):
        pass
    return {"t_s": round(time.perf_counter() - started, 1), "rss_mb": round(rss_bytes(pid) / 2**20, 1),
            "fds": len(os.listdir(f"/proc/{pid}/fd")), "descendants": len(descendants(pid)),
            "queue": queue, "sent": sent, "finished": done}


def slope_per_min(points: list[tuple[float, float]]) -> float:
    """Least-squares slope of (t_s, value), per minute."""
    if len(points) < 2:
        return 0.0
    ts, vs = [p[0] for p in points], [p[1] for p in points]
    mt, mv = statistics.mean(ts), statistics.mean(vs)
    den = sum((t - mt) ** 2 for t in ts) or 1.0
    return 60 * sum((t - mt) * (v - mv) for t, v in zip(ts, vs)) / den


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--minutes", type=float, default=10.0, help="how long to keep sending")
    parser.add_argument("--rate", type=float, default=5.0, help="submissions per second")
    parser.add_argument("--sample-s", type=float, default=10.0)
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--exercise", default="lesson06_mean_var")
    parser.add_argument("--drain-minutes", type=float, default=30.0, help="give up waiting for the queue after this")
    parser.add_argument("--rss-slack-mb-per-min", type=float, default=2.0, help="RSS growth in the second half that counts as a leak")
    parser.add_argument("--warmup-s", type=float, default=30.0, help="idle time before the baseline sample (warm pool filled)")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()

    data_dir = Path(tempfile.mkdtemp(prefix="kg-soak-"))
    env = {**os.environ, "KERNELGRADE_DATA_DIR": str(data_dir),
           "KERNELGRADE_RATE_LIMIT_PER_MINUTE": "1000000",  # the poller reads every submission; this is not a rate-limit test
           "KERNELGRADE_MAX_QUEUE": "100000"}
    server = subprocess.Popen([sys.executable, "-c", "from service.cli import main; main()", "serve", "--port",
                               str(args.port), "--bootstrap-demo"], cwd=REPO, env=env,
                              stdout=subprocess.DEVNULL, stderr=open(data_dir / "serve.log", "wb"))
    base = f"http://127.0.0.1:{args.port}"
    try:
        for _ in range(600):
            try:
                if httpx.get(f"{base}/healthz", timeout=2).status_code == 200 and (data_dir / "demo-key.txt").exists():
                    break
            except httpx.HTTPError:
                pass
            time.sleep(0.5)
        key = (data_dir / "demo-key.txt").read_text().strip()
        time.sleep(args.warmup_s)
        client = httpx.Client(base_url=base, headers={"Authorization": f"Bearer {key}"}, timeout=60)
        pool = bodies(args.exercise)
        run = uuid.uuid4().hex[:8]
        accepted: list[str] = []
        latencies: list[float] = []
        codes: dict[int, int] = {}
        finished: dict[str, str] = {}
        lock = threading.Lock()
        stop = threading.Event()
        started = time.perf_counter()

        def poll() -> None:  # follows the queue from its own client, as a platform would
            poller = httpx.Client(base_url=base, headers=client.headers, timeout=60)
            while not stop.is_set():
                with lock:
                    pending = [s for s in accepted if s not in finished]
                for submission_id in pending[:200]:
                    response = poller.get(f"/v1/submissions/{submission_id}")
                    if response.status_code != 200:
                        print(f"poll: {response.status_code} {response.text[:200]}", file=sys.stderr, flush=True)
                        break
                    if (status := response.json()["status"]) in FINAL:
                        with lock:
                            finished[submission_id] = status
                stop.wait(1.0)

        poller = threading.Thread(target=poll, daemon=True)
        poller.start()
        samples = [sample(server.pid, client, started, 0, 0)]
        print(json.dumps(samples[-1]), flush=True)
        next_sample = time.perf_counter() + args.sample_s
        i = 0
        deadline = started + args.minutes * 60
        while time.perf_counter() < deadline:
            due = started + i / args.rate
            if (wait := due - time.perf_counter()) > 0:
                time.sleep(wait)
            body = dict(pool[i % len(pool)], answers={"q1": f"第 {i} 份：mask 保证 padding lane 不参与求和。"})
            t0 = time.perf_counter()
            response = client.post("/v1/submissions", json=body, headers={"Idempotency-Key": f"soak-{run}-{i}"})
            latencies.append(time.perf_counter() - t0)
            codes[response.status_code] = codes.get(response.status_code, 0) + 1
            if response.status_code in (200, 202):
                with lock:
                    accepted.append(response.json()["id"])
            i += 1
            if time.perf_counter() >= next_sample:
                next_sample += args.sample_s
                with lock:
                    samples.append(sample(server.pid, client, started, len(accepted), len(finished)))
                print(json.dumps(samples[-1]), flush=True)
        sending_s = time.perf_counter() - started
        drain_deadline = time.perf_counter() + args.drain_minutes * 60
        while time.perf_counter() < drain_deadline:
            with lock:
                if len(finished) == len(accepted):
                    break
            time.sleep(args.sample_s)
            with lock:
                samples.append(sample(server.pid, client, started, len(accepted), len(finished)))
            print(json.dumps(samples[-1]), flush=True)
        drained_s = time.perf_counter() - started
        stop.set()
        poller.join()
        time.sleep(5)  # idle: sandboxes of the last job gone, warm pool refilled
        idle = sample(server.pid, client, started, len(accepted), len(finished))
        samples.append(idle)

        second_half = [s for s in samples if args.minutes * 30 <= s["t_s"] <= sending_s]
        rss_slope = slope_per_min([(s["t_s"], s["rss_mb"]) for s in second_half])
        fd_slope = slope_per_min([(s["t_s"], s["fds"]) for s in second_half])
        lost = len(accepted) - len(finished)
        summary = {
            "minutes": args.minutes, "rate_per_s": args.rate, "sent": i, "accepted": len(accepted), "status_codes": codes,
            "finished": len(finished), "lost": lost,
            "outcomes": {s: list(finished.values()).count(s) for s in FINAL},
            "post_p50_ms": percentile(latencies, 0.5) * 1000, "post_p99_ms": percentile(latencies, 0.99) * 1000,
            "sending_s": sending_s, "drained_after_s": drained_s,
            "graded_per_s": len(finished) / drained_s,
            "rss_mb": {"start": samples[0]["rss_mb"], "max": max(s["rss_mb"] for s in samples), "idle_end": idle["rss_mb"],
                       "second_half_slope_per_min": round(rss_slope, 2)},
            "fds": {"start": samples[0]["fds"], "max": max(s["fds"] for s in samples), "idle_end": idle["fds"],
                    "second_half_slope_per_min": round(fd_slope, 2)},
            "descendants": {"start": samples[0]["descendants"], "max": max(s["descendants"] for s in samples),
                            "idle_end": idle["descendants"]},
            "samples": samples,
        }
        leaks = []
        if lost:
            leaks.append(f"{lost} submissions never finished")
        if idle["descendants"] > samples[0]["descendants"]:
            leaks.append(f"{idle['descendants']} descendant processes once idle (started with {samples[0]['descendants']})")
        if rss_slope > args.rss_slack_mb_per_min:
            leaks.append(f"RSS grows {rss_slope:.2f} MB/min through the second half")
        if idle["fds"] > samples[0]["fds"] + 16:  # the slope is reported; in-flight requests make it noisy
            leaks.append(f"file descriptors grow ({samples[0]['fds']} -> {idle['fds']}, {fd_slope:.2f}/min)")
        summary["problems"] = leaks
        print(json.dumps({k: v for k, v in summary.items() if k != "samples"}, indent=2))
        if args.out:
            args.out.write_text(json.dumps(summary, indent=2))
        sys.exit(1 if leaks else 0)
    finally:
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(30)
        except subprocess.TimeoutExpired:
            server.kill()


if __name__ == "__main__":
    main()
