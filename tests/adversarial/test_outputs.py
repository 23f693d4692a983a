"""Outputs that lie: huge, mis-shaped, mis-typed, NaN-filled, subclassed, lazy, on the meta
device, not tensors at all. Each holds the right values in some wrong form (so a lax reader would
pass it); none may pass. One correct solution is graded at the end of the module.
"""
from __future__ import annotations

import pytest

from tests.adversarial.kit import (
    GOOD_WRAPPER_HEAD, REGULAR_CASES, assert_failed, assert_graded_normally, case, grade, submission,
)

pytestmark = [pytest.mark.sandbox, pytest.mark.adversarial]

MiB = 1 << 20


def returning(expression: str, *, setup: str = "") -> str:
    """A submission whose wrapper computes the right y = 2x and returns `expression` instead."""
    return submission(wrapper=GOOD_WRAPPER_HEAD + setup + f"\nreturn {expression}\n")


def case_errors(report) -> list[str]:
    errors = []
    for case_id in REGULAR_CASES:
        c = case(report, case_id)
        assert not c.passed, f"{case_id} passed"
        errors.append(c.error or "")
    return errors


def assert_rejected(report, *, error_contains: str) -> None:
    """Never a pass; every case failed with the expected reason; the given check failed too."""
    assert_failed(report)
    assert report.status == "graded" and report.program.ran
    assert report.given_check.status != "passed"
    for error in case_errors(report):
        assert error_contains in error, error[-600:]


def test_output_over_the_size_cap(host):
    # The right values first, then 4 MiB more: over a 1 MiB cap for one case's tensors.
    report = grade(returning("torch.cat([y.flatten(), torch.zeros(1 << 20, device=y.device)])"),
                   case_output_bytes=1 * MiB)
    assert_failed(report)
    for error in case_errors(report):
        assert "超出上限" in error or "exceeds the cap" in error, error
    host.assert_untouched()


def test_output_of_an_expanded_view_of_terabytes(host):
    # A stride-0 view claiming 2**40 elements: materialising it must fail inside, not on our side.
    report = grade(returning("y.flatten()[:1].expand(1 << 40)"))
    assert_rejected(report, error_contains="Error")
    host.assert_untouched()


@pytest.mark.parametrize("expression", [
    "y.flatten()",
    "y[None]",
    "y.reshape(y.shape[1], y.shape[0])",
    "torch.cat([y, y[:, :1]], dim=1)",
], ids=["flattened", "leading-axis", "transposed-shape", "extra-column"])
def test_mis_shaped_output(host, expression):
    report = grade(returning(expression))
    assert_rejected(report, error_contains="形状")
    host.assert_untouched()


@pytest.mark.parametrize("expression, reason", [
    ("y.to(torch.complex64)", "期望浮点数"),  # the right real parts
    ("y.view(torch.int32)", "期望浮点数"),  # the right bits, read as integers
    ("y.to(torch.bfloat16)", "无法解析"),  # no bfloat16 in numpy: the trusted side cannot read it
], ids=["complex", "int-bits", "bfloat16"])
def test_mis_typed_output(host, expression, reason):
    report = grade(returning(expression))
    assert_rejected(report, error_contains=reason)
    host.assert_untouched()


@pytest.mark.parametrize("expression", [
    "torch.full_like(y, float('nan'))",
    "torch.full_like(y, float('inf'))",
    "torch.where(torch.arange(y.numel(), device=y.device).reshape(y.shape) == 0, float('nan'), y)",
], ids=["all-nan", "all-inf", "one-nan"])
def test_non_finite_output(host, expression):
    report = grade(returning(expression))
    assert_failed(report)
    for c in REGULAR_CASES:
        mismatch = case(report, c).first_mismatch
        assert mismatch is not None and mismatch.observed is None, case(report, c)  # reported as NaN/inf
        assert mismatch.index == [0, 0]
    host.assert_untouched()


SUBCLASS = '''
class Liar(torch.Tensor):
    # Holds y + 1 but answers every conversion the harness might make with the right y.
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        result = super().__torch_function__(func, types, args, kwargs or {})
        if getattr(func, "__name__", "") in ("detach", "to", "contiguous", "clone", "cpu", "numpy", "__reduce_ex__"):
            return torch.Tensor(result) - 1 if isinstance(result, torch.Tensor) else result
        return result
lie = (y + 1).as_subclass(Liar)
'''


@pytest.mark.parametrize("expression, setup, reason", [
    ("lie", SUBCLASS, "is a Liar"),
    ("torch.empty_like(y, device='meta')", "", "meta tensor"),
    ("y.cpu().numpy()", "", "is a ndarray"),
    ("y.tolist()", "", "values, expected 1"),  # a list: its rows taken as outputs
    ("y.to_sparse()", "", "Error"),
    ("(x for x in [y])", "", "is a generator"),
], ids=["subclass", "meta", "numpy", "list", "sparse", "generator"])
def test_outputs_that_are_not_plain_tensors(host, expression, setup, reason):
    report = grade(returning(expression, setup=setup))
    assert_failed(report)
    assert report.status == "graded" and report.program.ran
    for error in case_errors(report):
        assert reason in error, error[-600:]
    host.assert_untouched()


def test_zz_next_submission_is_graded_normally(host):
    assert_graded_normally()
    host.assert_untouched()
