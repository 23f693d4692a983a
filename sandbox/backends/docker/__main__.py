"""`python -m sandbox.backends.docker run ...` (the launcher) and `... reap CONTAINER` (the reaper)."""
from __future__ import annotations

import argparse
import json
import sys


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m sandbox.backends.docker")
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run one sandbox container (the runner starts this)")
    run.add_argument("--verdict-fd", type=int, required=True)
    run.add_argument("--output-cap", type=int, required=True)
    run.add_argument("--timeout", type=float, required=True)
    run.add_argument("--kill-grace", type=float, required=True)
    run.add_argument("--spec", required=True)
    run.add_argument("--control-fd", type=int, default=None, help="a warm start: forwarded to the container's stdin")
    run.add_argument("--memory-fd", type=int, default=None,
                     help="where to report the container's memory cgroup counters (memory.py)")
    reap_cmd = sub.add_parser("reap", help="remove CONTAINER unless told `done` on stdin (the launcher starts this)")
    reap_cmd.add_argument("container_id")
    args = parser.parse_args(argv)

    if args.command == "reap":
        from sandbox.backends.docker import engine
        from sandbox.backends.docker.reaper import reap

        def remove() -> None:
            api = engine.client()
            try:
                api.api.remove_container(args.container_id, force=True)
            except Exception:  # noqa: BLE001 - gone already; the sweep catches anything else
                pass
            finally:
                api.close()

        reap(sys.stdin.buffer, remove)
        return 0

    from sandbox.backends.docker.launcher import main as launcher_main

    return launcher_main(spec=json.loads(args.spec), verdict_fd=args.verdict_fd, output_cap=args.output_cap,
                         timeout_s=args.timeout, kill_grace_s=args.kill_grace, control_fd=args.control_fd,
                         memory_fd=args.memory_fd)


if __name__ == "__main__":
    sys.exit(main())
