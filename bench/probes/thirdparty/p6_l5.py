"""Third-party styles, sixth batch, lesson05_row_sum (three blanks; edits of solution.py).

A NumPy person (a block of zeros from the pointer's dtype as `other=`, `>= 0 &` guards), integer
index arithmetic (the row stride as an int64 or uint32 scalar), and the bugs: NaN as the padding
value, a bound one past the row (`cols < N + 1`)."""
EXERCISE = "lesson05_row_sum"
S1 = "row_start = x + row * stride_m"
LD = "mask=cols < N, other=0.0)"

PROBES = [
    {"id": "l5_6.right.int64_full_stride", "group": "right",
     "description": "row * tl.full([], stride_m, tl.int64) (a 0-d int64 stride)",
     "edits": [{"old": S1, "new": "row_start = x + row * tl.full([], stride_m, tl.int64)"}],
     "expect": {"code_points": 3}, "judged": "right"},
    {"id": "l5_6.right.numpy_zeros_block_other", "group": "right",
     "description": "mask=(cols >= 0) & (cols < N), other=tl.zeros([BLOCK], dtype=x.dtype.element_ty) (a block of zeros)",
     "edits": [{"old": LD, "new": "mask=(cols >= 0) & (cols < N), other=tl.zeros([BLOCK], dtype=x.dtype.element_ty))"}],
     "expect": {"code_points": 3},
     "judged": "right (refused at main: `x.dtype.element_ty` was an attribute walk; a name's dtype is allowed now)"},
    {"id": "l5_6.right.le_n_minus_one_uint32", "group": "right",
     "description": "mask=cols.to(tl.uint32) <= N - 1 (unsigned lanes, an inclusive bound)",
     "edits": [{"old": LD, "new": "mask=cols.to(tl.uint32) <= N - 1, other=0.0)"}],
     "expect": {"code_points": 3}, "judged": "right (N >= 1 in every case: N - 1 never wraps)"},
    {"id": "l5_6.wrong.other_nan", "group": "wrong",
     "description": "other=float('nan') (NumPy's nan-as-missing habit, meant for nansum)",
     "edits": [{"old": LD, "new": "mask=cols < N, other=float('nan'))"}],
     "expect": {"code_points": 1.5, "diagnoses": ["nonfinite_output"]},
     "judged": "wrong wherever N is not a power of 2 (NaN sums); the given check (3, 17) fails. (first judged "
               "padding_infinite; nonfinite_output names a non-finite padding value among its causes: settled for the grader)"},
    {"id": "l5_6.wrong.mask_n_plus_one", "group": "wrong",
     "description": "mask=cols < N + 1 (one lane past the row: the next row's first element, the last row past x)",
     "edits": [{"old": LD, "new": "mask=cols < N + 1, other=0.0)"}],
     "expect": {"code_points": 1.5},
     "judged": "wrong on ragged rows (the next row's first value added); on power-of-2 rows lane N is past BLOCK, "
               "so the regular cases pass"},
]
