"""Inline asm that compiles for a GPU is refused on the interpreter by the gate, which read it from the kernel it
compiled (sandbox/gpu_compile.py, GPU_ONLY_ASM_CODE), and the trusted side tells that refusal (and only it) from a
compile error (service/grading/sandbox_text.py, gpu_only_shown): the grading is then not_gradable (pipeline.py).
Real bwrap sandbox, interpreter mode. The op's name elsewhere (a tl.device_print prefix, the asm text of a kernel
that does not compile) or the gate's mark in a kernel's own message is no such refusal."""
from __future__ import annotations

import numpy as np
import pytest

from sandbox.contract import CaseJob, DeviceMode, TensorArg
from service.grading.sandbox_text import gpu_only_shown, render_run

pytestmark = pytest.mark.sandbox

PROGRAM = '''
import torch
import triton
import triton.language as tl


@triton.jit
def _identity(x_ptr, out_ptr, B: tl.constexpr):
    rows = tl.arange(0, B)
    x = tl.load(x_ptr + rows)
    y = tl.inline_asm_elementwise("mov.b32 $0, $1;", "=r,r", [x], dtype=tl.float32, is_pure=True, pack=1)
    tl.store(out_ptr + rows, y)


@triton.jit
def _printed(x_ptr, out_ptr, B: tl.constexpr):
    rows = tl.arange(0, B)
    x = tl.load(x_ptr + rows)
    if B < 0:
        tl.device_print("tt.elementwise_inline_asm", x)
    tl.store(out_ptr + rows, x)


@triton.jit
def _bad_ptx(x_ptr, out_ptr, B: tl.constexpr):
    rows = tl.arange(0, B)
    x = tl.load(x_ptr + rows)
    y = tl.inline_asm_elementwise("tt.elementwise_inline_asm $0, $1;", "=r,r", [x], dtype=tl.float32,
                                  is_pure=True, pack=1)
    tl.store(out_ptr + rows, y)


@triton.jit
def _forged(x_ptr, out_ptr, B: tl.constexpr):
    tl.static_assert(B < 0, "«kg:sandbox.gpu_only.inline_asm|target=cuda sm_90»")
    tl.store(out_ptr + tl.arange(0, B), tl.load(x_ptr + tl.arange(0, B)))


@triton.jit
def _forged_line(x_ptr, out_ptr, B: tl.constexpr):
    tl.static_assert(B < 0, "wrong\\nGPUCompileError: «kg:sandbox.gpu_only.inline_asm|target=cuda sm_90»")
    tl.store(out_ptr + tl.arange(0, B), tl.load(x_ptr + tl.arange(0, B)))


def _launch(kernel, x):
    out = torch.empty_like(x)
    kernel[(1,)](x, out, B=16)
    return out


def identity(x):
    return _launch(_identity, x)


def printed(x):
    return _launch(_printed, x)


def bad_ptx(x):
    return _launch(_bad_ptx, x)


def forged(x):
    return _launch(_forged, x)


def forged_line(x):
    return _launch(_forged_line, x)
'''

CASES = [CaseJob(id=f"c{i}", args=[TensorArg(key="x")], outputs=["y"]) for i in range(2)]
X = np.arange(16, dtype=np.float32)


def _run(runner, entry_point: str):
    result = runner.run(program=PROGRAM, given_check=None, given_seed=0, entry_point=entry_point, cases=CASES,
                        inputs={"x": X}, mode=DeviceMode.interpreter)
    assert result.infra_error is None, result.infra_error
    return result


def test_inline_asm_that_compiles_is_refused_as_gpu_only(bwrap_runner):
    result = _run(bwrap_runner(case_timeout_s=60, max_restarts=1), "identity")
    assert [c.status for c in result.cases] == ["error"] * 2, [(c.id, c.status, c.error) for c in result.cases]
    assert all("not supported in interpreter mode" not in (c.error or "") for c in result.cases)
    assert gpu_only_shown(result) and all(c.gpu_only for c in result.cases)
    rendered = render_run(result, "en")
    assert gpu_only_shown(rendered)  # from the text as the sandbox wrote it, before or after its marks are said
    assert all("Your kernel uses inline PTX assembly" in (c.error or "") for c in rendered.cases), rendered.cases


@pytest.mark.parametrize(("entry_point", "status", "says"), [
    ("printed", "ok", None),  # the op's name in a string is no op: the kernel runs
    ("bad_ptx", "error", "ptxas"),  # asm a GPU cannot assemble: a compile error on every device, graded
    ("forged", "error", "static_assert"),  # the gate's mark inside a compile error is the kernel's words
    # ... and so is the gate's whole line at the end of one (the message's line break kept): the last line of
    # the case's error was the refusal, which made any failing kernel not_gradable before the harness's field
    ("forged_line", "error", "static_assert"),
])
def test_no_other_kernel_is_gpu_only(bwrap_runner, entry_point, status, says):
    result = render_run(_run(bwrap_runner(case_timeout_s=60, max_restarts=1), entry_point), "en")
    assert [c.status for c in result.cases] == [status] * 2, [(c.id, c.status, c.error) for c in result.cases]
    if says is not None:
        assert all(says in (c.error or "") for c in result.cases), [c.error for c in result.cases]
    assert not gpu_only_shown(result) and not any(c.gpu_only for c in result.cases)
