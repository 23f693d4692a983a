"""Step 3b: the given check's verdict is recomputed on the trusted side.

The lesson's own check runs as written, inside the sandbox, in the submission's process: its
"passed" could be forged there (a patched assert_close, a forged frame). The harness records
each call of the entry point during the check (inputs before the call, outputs after) and the
check counts as passed only if every recorded output matches the float64 reference for those
inputs, within the exercise's tolerances, and the check made as many calls as it should.
Producing a record that passes means producing right outputs for the inputs recorded, which is
no forgery.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from sandbox.contract import GivenRun
from service.exercises import Exercise
from service.grading.compare import compare_outputs


def verify_given(exercise: Exercise, given: GivenRun | None) -> GivenRun | None:
    """`given`, or a failed copy of it that says why its pass does not count."""
    spec = exercise.spec
    if given is None or given.status != "passed" or spec.backward is not None:
        return given  # a check with gradients is not recomputed (its upstream gradient is drawn inside)
    expected_calls = spec.given_check.calls
    if not given.calls or (expected_calls is not None and len(given.calls) != expected_calls):
        return _failed(given, f"给定检查报告“通过”，但记录到的 {spec.entry_point} 调用是 {len(given.calls)} 次"
                              + (f"（应为 {expected_calls} 次）" if expected_calls else "")
                              + "：无法在可信一侧复核，这次给定检查不算通过。")
    outputs = spec.forward_outputs
    for index, (args, outs) in enumerate(given.calls, start=1):
        if len(args) != len(spec.args) or len(outs) != len(outputs):
            return _failed(given, f"给定检查第 {index} 次调用 {spec.entry_point} 时有 {len(args)} 个张量参数、"
                                  f"返回 {len(outs)} 个张量（应为 {len(spec.args)} 个参数、{len(outputs)} 个输出）。")
        inputs = {name: np.asarray(a, dtype=np.float64) if np.asarray(a).dtype.kind == "f" else np.asarray(a)
                  for name, a in zip(spec.args, args)}
        try:
            expected = exercise.checks.reference(**inputs)
        except Exception as exc:  # noqa: BLE001 - the exercise's reference cannot take this call
            return _failed(given, f"给定检查第 {index} 次调用 {spec.entry_point} 的输入无法在可信一侧复核（{type(exc).__name__}）。")
        result = compare_outputs(dict(zip(outputs, outs)), {name: expected[name] for name in outputs}, spec.outputs)
        if not result.passed:
            where = ""
            if (m := result.first_mismatch) is not None:
                observed = "NaN/inf" if m.observed is None else f"{m.observed:.6g}"
                where = (f"：输出 {m.output}{m.index} 是 {observed}，应为 {m.expected:.6g}"
                         f"（允许误差 {m.allowed_error:.3g}）")
            elif result.error:
                where = f"：{result.error}"
            shape = "×".join(map(str, np.asarray(args[0]).shape)) if args else "?"
            return _failed(given, f"给定检查在沙箱里报告“通过”，但在可信一侧按它第 {index} 次调用 {spec.entry_point} 的输入"
                                  f"（形状 {shape}）重新计算，结果不对{where}。")
    return given


def _failed(given: GivenRun, reason: str) -> GivenRun:
    output = (given.output + "\n" if given.output else "") + reason
    return dataclasses.replace(given, status="failed", output=output)
