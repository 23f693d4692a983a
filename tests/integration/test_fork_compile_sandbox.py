"""The compile-ahead phase's fork mode (sandbox/fork_compile.py) inside the real sandbox: bubblewrap's
namespaces and the seccomp filter allow what it does (fork, a pipe, setpgid, select, killpg, waitpid),
and the private Triton cache ($TRITON_CACHE_DIR on the sandbox's /tmp) takes the children's writes.

The phase runs on a GPU only; here its executor runs as the harness would run it, with a stand-in for
Triton's compile (a child writes a kernel's group file into Triton's cache through Triton's own cache
manager, or outlives the deadline), from the program the interpreter sandbox loads. The compile
itself, for the GPU target, is tests/unit/test_fork_compile.py's."""
from __future__ import annotations

import pytest

pytestmark = pytest.mark.sandbox_backends("bwrap")

BODY = '''
import os
import time
from concurrent.futures import wait


class Compiled:
    def __init__(self, hash):
        self.hash = hash


def compile_into_cache():
    from triton.runtime.cache import get_cache_manager

    key = "f" * 64
    manager = get_cache_manager(key)
    path = manager.put("{}", "k.json", binary=False)
    manager.put_group("k.json", {"k.json": path})
    return Compiled(key)


def compile_forever():
    time.sleep(60)


def probe_forked():
    import fork_compile  # from the job folder, as the harness imports it

    assert fork_compile.cache_writable()
    forks = fork_compile.ForkCompiles(2, target=None)
    good, slow = forks.submit(compile_into_cache), forks.submit(compile_forever)
    pids = [child.pid for child in forks.running]
    forks.wait(time.monotonic() + 3.0)
    wait([good, slow], timeout=5)
    loaded = good.exception() is None and good.result().hash == "f" * 64
    left = [p for p in pids if os.path.exists(f"/proc/{p}")]
    return torch.tensor([float(loaded), float(forks.forked), float(forks.killed), float(len(left)),
                         float(isinstance(slow.exception(), fork_compile.ChildFailed))], dtype=torch.float64)
'''


def test_fork_mode_runs_in_the_sandbox(probes):
    result, cases = probes(BODY, ["forked"])
    case = cases["forked"]
    assert case.status == "ok", (case.status, case.error)
    loaded, forked, killed, left, slow_failed = case.outputs["out"].tolist()
    assert (loaded, forked, killed, left, slow_failed) == (1.0, 2.0, 1.0, 0.0, 1.0)
