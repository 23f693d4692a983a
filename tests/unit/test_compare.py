from __future__ import annotations

import numpy as np

from service.exercises import Tolerance
from service.grading.compare import compare_outputs

TOL = {"y": Tolerance(atol=1e-4, rtol=1e-4)}


def test_within_tolerance_passes_and_reports_the_margin():
    ref = np.array([1.0, 100.0])
    obs = (ref + np.array([0.5e-4, 0.0])).astype(np.float32)
    result = compare_outputs({"y": obs}, {"y": ref}, TOL)
    assert result.passed and result.first_mismatch is None
    assert 0.2 < result.error_ratio < 0.3  # 0.5e-4 of 2e-4 allowed at y = 1


def test_first_mismatch_names_output_index_and_sizes():
    ref = np.array([1.0, 2.0, 3.0])
    obs = np.array([1.0, 2.5, 3.0], dtype=np.float32)
    result = compare_outputs({"y": obs}, {"y": ref}, TOL)
    assert not result.passed
    m = result.first_mismatch
    assert (m.output, m.index, m.observed, m.expected) == ("y", [1], 2.5, 2.0)
    assert abs(m.allowed_error - (1e-4 + 2e-4)) < 1e-12
    assert result.max_abs_err == 0.5 and result.error_ratio > 1000


def test_nan_where_the_reference_is_finite_fails():
    result = compare_outputs({"y": np.array([np.nan], dtype=np.float32)}, {"y": np.array([0.0])}, TOL)
    assert not result.passed and result.first_mismatch.observed is None


def test_wrong_shape_and_dtype_are_errors_not_crashes():
    shape = compare_outputs({"y": np.zeros(3, np.float32)}, {"y": np.zeros(2)}, TOL)
    dtype = compare_outputs({"y": np.zeros(2, np.int32)}, {"y": np.zeros(2)}, TOL)
    missing = compare_outputs({}, {"y": np.zeros(2)}, TOL)
    assert "形状" in shape.error and "类型" in dtype.error and "缺少" in missing.error
    assert not (shape.passed or dtype.passed or missing.passed)


def test_an_infinite_reference_is_matched_only_by_the_same_infinity():
    """rtol * |inf| allowed any value there (inf <= inf): a finite value, or the opposite infinity,
    passed wherever the reference overflowed."""
    ref = np.array([np.inf, -np.inf, np.nan, 1.0])
    same = compare_outputs({"y": np.array([np.inf, -np.inf, np.nan, 1.0], dtype=np.float32)}, {"y": ref}, TOL)
    assert same.passed
    for wrong in ([0.0, -np.inf, np.nan, 1.0], [np.inf, np.inf, np.nan, 1.0], [np.inf, -np.inf, 0.0, 1.0]):
        result = compare_outputs({"y": np.array(wrong, dtype=np.float32)}, {"y": ref}, TOL)
        assert not result.passed, wrong
