"""A compiler that crashes on the student's kernel is the kernel's compile error, on every device.

Inline asm whose constraints do not match its arguments makes LLVM abort the process (`number of
input constraints does not match number of parameters`, `UNREACHABLE executed at ...`) instead of
raising. On the interpreter the gate (sandbox/gpu_compile.py) compiles in a forked child and says
so; on a GPU the compile runs in the harness's own process, which dies, and the runner tells it from
the sandbox's log (sandbox/runner.py, compiler_crash). This file runs the GPU's side on the CPU: the
entry point compiles the kernel for sm_90 in the harness's process, as a GPU launch does. Each phase
it ends is a compile error (status `error`, the compiler's words, zh and en) and spends no restart;
a process that dies otherwise (an abort without a compiler's words, the OOM killer's SIGKILL, a
compiler out of memory) is still a crash, as before.
"""
from __future__ import annotations

import numpy as np
import pytest

from sandbox.contract import CaseJob, DeviceMode, TensorArg
from service.grading.sandbox_text import render_run

pytestmark = pytest.mark.sandbox

PROGRAM = '''
import os, signal, sys
import torch
import triton
import triton.language as tl
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
from triton.runtime.jit import JITFunction


def _kernel(x_ptr, out_ptr, B: tl.constexpr):
    rows = tl.arange(0, B)
    x = tl.load(x_ptr + rows)
    y = tl.inline_asm_elementwise("mov.b32 $0, $1;", "=r,r,r", [x], dtype=tl.float32, is_pure=True, pack=1)
    tl.store(out_ptr + rows, y)


def compile_on_gpu(x):
    # What a GPU's launch does: Triton's compile, in the harness's process.
    src = ASTSource(JITFunction(_kernel), {"x_ptr": "*fp32", "out_ptr": "*fp32", "B": "constexpr"}, {"B": 16})
    triton.compile(src, target=GPUTarget("cuda", 90, 32))
    return x


def abort(x):  # a process that ends with SIGABRT for another reason (a corrupted heap, say)
    os.write(2, b"corrupted double-linked list\\n")
    os.abort()


def killed(x):  # the compiler's words, but the process was killed (the OOM killer, the runner): no compile error
    os.write(2, b"UNREACHABLE executed at /llvm/Error.h:779!\\n")
    os.kill(os.getpid(), signal.SIGKILL)


def out_of_memory(x):  # a compiler that ran out of memory under RLIMIT_AS: the limit, not the kernel
    os.write(2, b"LLVM ERROR: out of memory\\n")
    os.abort()
'''

CASES = [CaseJob(id=f"c{i}", args=[TensorArg(key="x")], outputs=["y"]) for i in range(3)]
LLVM_SAYS = "number of input constraints does not match number of parameters"


def _run(runner, entry_point: str):
    result = runner.run(program=PROGRAM, given_check=None, given_seed=0, entry_point=entry_point, cases=CASES,
                        inputs={"x": np.arange(16, dtype=np.float32)}, mode=DeviceMode.interpreter)
    assert result.infra_error is None, result.infra_error
    return result


def test_a_compile_that_crashes_the_process_is_a_compile_error_of_each_phase(bwrap_runner):
    runner = bwrap_runner(case_timeout_s=60, max_restarts=1)  # fewer restarts than the crashes: none is spent
    result = _run(runner, "compile_on_gpu")
    assert [c.status for c in result.cases] == ["error"] * 3, [(c.id, c.status, c.error, c.said) for c in result.cases]
    assert result.compile_crashes == result.attempts == 3
    zh = render_run(result, "zh")
    for case in zh.cases:
        assert case.said is None and LLVM_SAYS in case.error, case.error
        assert "编译器在为 GPU 编译你的 kernel 时崩溃" in case.error and "SIGABRT" in case.error, case.error
        assert "inline_asm_elementwise" in case.error and "进程异常退出" not in case.error, case.error
        assert case.error.rstrip().endswith(LLVM_SAYS)  # the reason is the line a case's summary shows
        assert "/llvm-project/" not in case.error and "Error.h:779" in case.error  # the file's name, not its path
    en = render_run(_run(runner, "compile_on_gpu"), "en")
    assert all("Triton's compiler crashed compiling your kernel" in c.error and
               "one output plus one input per argument" in c.error and LLVM_SAYS in c.error for c in en.cases)


@pytest.mark.parametrize(("entry_point", "signal"), [("abort", "SIGABRT"), ("killed", "SIGKILL"),
                                                     ("out_of_memory", "SIGABRT")])
def test_a_process_that_dies_otherwise_is_still_a_crash(bwrap_runner, entry_point, signal):
    result = _run(bwrap_runner(case_timeout_s=60, max_restarts=1), entry_point)
    assert result.compile_crashes == 0
    statuses = [c.status for c in result.cases]
    assert statuses == ["crashed", "crashed", "skipped"], [(c.id, c.status, c.said) for c in result.cases]
    crashed = result.cases[0]
    assert crashed.said is not None and crashed.said.code == "sandbox.exited", crashed.said
    assert crashed.said.params["signal"] == signal
