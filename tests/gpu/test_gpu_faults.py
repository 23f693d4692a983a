"""GPU only: a kernel that faults on the device fails its case, and the GPU stays usable; under
each sandbox backend (bwrap, docker).

Skipped where no NVIDIA GPU is present (CI); run on the H200 with `pytest tests/gpu`.
"""
from __future__ import annotations

import numpy as np
import pytest

from sandbox.contract import CaseJob, DeviceMode, Limits, TensorArg
from sandbox.runner import SandboxRunner
from service.config import gpu_present

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not gpu_present(), reason="needs an NVIDIA GPU")]

PROGRAM = '''
import torch
import triton
import triton.language as tl

@triton.jit
def copy_kernel(src, dst, n, shift, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    values = tl.load(src + offs + shift, mask=offs < n)
    tl.store(dst + offs, values, mask=offs < n)

def run(x):
    out = torch.empty_like(x)
    # A wild shift (1 << 40 elements) is an illegal address on the device for the first case.
    shift = (1 << 40) if x.numel() == 5 else 0
    copy_kernel[(1,)](x, out, x.numel(), shift, BLOCK=8)
    return out
'''


def test_illegal_address_fails_its_case_and_the_gpu_stays_usable(sandbox_backend):
    runner = SandboxRunner(backend=sandbox_backend, limits=Limits(case_timeout_s=60))
    inputs = {"bad": np.arange(5, dtype=np.float32), "good": np.arange(6, dtype=np.float32)}
    cases = [CaseJob(id="bad", args=[TensorArg(key="bad")], outputs=["out"]),
             CaseJob(id="good", args=[TensorArg(key="good")], outputs=["out"])]
    result = runner.run(program=PROGRAM, given_check=None, given_seed=0, entry_point="run", cases=cases,
                        inputs=inputs, mode=DeviceMode.gpu)
    assert result.infra_error is None, result.infra_error
    by_id = {c.id: c for c in result.cases}
    assert by_id["bad"].status in ("error", "crashed"), by_id["bad"]
    assert "illegal" in (by_id["bad"].error or "").lower() or "cuda" in (by_id["bad"].error or "").lower()
    assert by_id["good"].status == "ok"
    np.testing.assert_array_equal(by_id["good"].outputs["out"], inputs["good"])

    # A whole new submission afterwards runs normally on the same GPU.
    again = runner.run(program=PROGRAM, given_check=None, given_seed=0, entry_point="run", cases=cases[1:],
                       inputs=inputs, mode=DeviceMode.gpu)
    assert again.infra_error is None and again.cases[0].status == "ok"
