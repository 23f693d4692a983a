"""A case's `layout` (service/exercises/spec.py, `Layout`): inputs given as strided views of a larger
storage. The trusted side lays the data out (service/grading/inputs.py, `laid_out`), the harness takes
the view of the storage it placed between guards (sandbox/harness.py, `_case_args`), and the inputs
check compares only the view's elements (service/grading/overwrite.py). Real kernels on these views:
tests/integration/test_case_layouts.py."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from pydantic import ValidationError

from sandbox.harness import _case_args, _Guards
from service.exercises import CaseSpec, Layout
from service.grading.inputs import laid_out
from service.grading.overwrite import changed_input
from tests.unit.test_guards import checked, wider


@pytest.mark.parametrize(("layout", "shape", "strides"), [
    ({}, (3, 5), (5, 1)),
    ({"row_stride": 8}, (3, 5), (8, 1)),
    ({"col_stride": 2}, (3, 5), (10, 2)),
    ({"col_stride": 2, "row_stride": 9}, (3, 5), (9, 2)),  # row 1 starts just past row 0's last element
    ({"transposed": True}, (3, 5), (1, 3)),
    ({"transposed": True, "col_stride": 4}, (3, 5), (1, 4)),
    ({"col_stride": 3}, (7,), (3,)),
])
def test_a_layout_gives_the_strides_of_the_view(layout, shape, strides):
    assert Layout(**layout).check(shape) == strides


@pytest.mark.parametrize(("layout", "shape"), [
    ({"row_stride": 4}, (3, 5)),  # rows of 5 one every 4 elements: they overlap
    ({"col_stride": 2, "row_stride": 8}, (3, 5)),
    ({"transposed": True, "col_stride": 2}, (3, 5)),
    ({"row_stride": 8}, (7,)),  # a 1-D input has one stride
])
def test_a_layout_whose_elements_would_share_memory_is_refused(layout, shape):
    with pytest.raises(ValueError):
        Layout(**layout).check(shape)


def test_a_case_names_its_layout_once():
    with pytest.raises(ValidationError, match="not beside it"):
        CaseSpec(id="c", kind="regular", rows=2, cols=4, stride=8, seed=1, description="d",
                 layout={"x": {"row_stride": 8}})


@pytest.mark.parametrize("layout", [{"col_stride": 2, "offset": 3}, {"transposed": True}, {"row_stride": 9}])
def test_the_storage_holds_the_data_in_the_view_and_nan_elsewhere(layout):
    data = np.arange(1, 13, dtype=np.float32).reshape(3, 4)
    flat, view = laid_out(Layout(**layout), data)
    assert flat.ndim == 1
    seen = np.lib.stride_tricks.as_strided(flat[view["offset"]:], shape=view["shape"],
                                           strides=[4 * s for s in view["strides"]])
    assert np.array_equal(seen, data)
    assert int(np.isnan(flat).sum()) == flat.size - data.size


def test_integer_storage_holds_the_dtype_minimum_outside_the_view():
    flat, _ = laid_out(Layout(col_stride=2), np.arange(4, dtype=np.int32))
    assert flat.tolist() == [0, -(1 << 31), 1, -(1 << 31), 2, -(1 << 31), 3]


def test_the_harness_hands_the_entry_point_the_strided_view_of_a_guarded_storage():
    data = np.random.default_rng(0).standard_normal((4, 6)).astype(np.float32)
    flat, view = laid_out(Layout(col_stride=2, offset=1), data)
    guards = _Guards(torch, "f")
    case = {"id": "c", "args": [{"key": "c.x", "view": view, "requires_grad": True}]}
    args, leaves, placed = _case_args(guards, case, {"c.x": torch.from_numpy(flat)}, "cpu")
    [x] = args
    assert x.shape == (4, 6) and x.stride() == (12, 2) and x.is_leaf and x.requires_grad
    assert torch.equal(x.detach(), torch.from_numpy(data)) and leaves["c.x"] is x
    assert placed["c.x"].shape == (flat.size,)  # the whole storage goes back for the inputs check
    assert checked(guards) == []
    wider(placed["c.x"], 0, 1)[-1] = 1.0  # one past the storage: the guard sees it
    [breach] = checked(guards)
    assert (breach["buffer"], breach["side"], breach["distance"]) == ("x", "after", 0)


def test_a_view_that_does_not_fit_its_storage_is_refused_by_the_harness():
    guards = _Guards(torch, "f")
    case = {"id": "c", "args": [{"key": "c.x", "view": {"shape": [4, 6], "strides": [12, 2], "offset": 5}}]}
    with pytest.raises(ValueError, match="does not fit"):
        _case_args(guards, case, {"c.x": torch.zeros(48)}, "cpu")


def test_only_the_views_elements_count_as_an_overwritten_input():
    data = np.arange(6, dtype=np.float32).reshape(2, 3)
    flat, view = laid_out(Layout(col_stride=2), data)
    gap = flat.copy()
    gap[1] = 7.0  # between two of the view's elements: storage the kernel was never given as x
    assert changed_input("c", "x", flat, gap, view=view) is None
    inside = flat.copy()
    inside[2] = 7.0  # x[0, 1]
    change = changed_input("c", "x", flat, inside, view=view)
    assert change is not None
    assert (change["changed"], change["index"], change["shape"], change["after"]) == (1, [0, 1], [2, 3], "7.0")
