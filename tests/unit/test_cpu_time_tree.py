"""sandbox/cpu_time.py `tree_cpu_seconds`: a process tree's CPU time from /proc, read at every phase's start
where a sandbox has no cgroup CPU counter (the H100 hosts). Read with os.open/os.read since 2026-12-06: the
same sums as before, on a real process tree and on a /proc laid out by hand."""
from __future__ import annotations

import os
import subprocess
import sys
import time

from sandbox.cpu_time import _TICKS, tree_cpu_seconds


def _own_ticks(pid: int) -> int:
    with open(f"/proc/{pid}/stat", encoding="ascii") as fh:
        fields = fh.read().rpartition(")")[2].split()
    return sum(int(fields[i]) for i in (11, 12, 13, 14))


def test_a_real_tree_counts_a_busy_child():
    child = subprocess.Popen([sys.executable, "-c", "import time\nt = time.process_time()\n"
                              "while time.process_time() - t < 0.3: pass\nimport sys; sys.stdin.read()"],
                             stdin=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 30
        while _own_ticks(child.pid) < 0.3 * _TICKS and time.monotonic() < deadline:
            time.sleep(0.05)
        child_s = _own_ticks(child.pid) / _TICKS
        total = tree_cpu_seconds(os.getpid())
        assert total is not None
        assert total >= child_s + _own_ticks(os.getpid()) / _TICKS - 0.05  # (this process ticks on meanwhile)
        assert tree_cpu_seconds(child.pid) is not None and abs(tree_cpu_seconds(child.pid) - child_s) < 0.1
    finally:
        child.stdin.close()
        child.wait()
    assert tree_cpu_seconds(child.pid) is None  # reaped: gone


def _stat(pid: int, name: str, ppid: int, utime: int, stime: int, cutime: int, cstime: int) -> str:
    # pid (comm) state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime cutime cstime ...
    return f"{pid} ({name}) S {ppid} 1 1 0 -1 0 0 0 0 0 {utime} {stime} {cutime} {cstime} 20 0 1 0\n"


def test_a_tree_laid_out_by_hand(tmp_path):
    """Names with spaces and parentheses, children of several threads, a child that is gone."""
    layout = {10: ("bwrap", 1, (1, 2, 3, 4), {"10": "11"}),
              11: ("python ) (x", 10, (100, 50, 0, 0), {"11": "12", "13": "14 99"}),
              12: ("ptxas", 11, (7, 3, 0, 0), {"12": ""}),
              14: ("a b", 11, (5, 5, 0, 0), {"14": ""})}
    for pid, (name, ppid, (u, s, cu, cs), tasks) in layout.items():
        (tmp_path / str(pid)).mkdir()
        (tmp_path / str(pid) / "stat").write_text(_stat(pid, name, ppid, u, s, cu, cs), encoding="ascii")
        for tid, children in tasks.items():
            (tmp_path / str(pid) / "task" / tid).mkdir(parents=True)
            (tmp_path / str(pid) / "task" / tid / "children").write_text(children, encoding="ascii")
    assert tree_cpu_seconds(10, proc=tmp_path) == (10 + 150 + 10 + 10) / _TICKS
    assert tree_cpu_seconds(12, proc=str(tmp_path)) == 10 / _TICKS
    assert tree_cpu_seconds(99, proc=tmp_path) is None
