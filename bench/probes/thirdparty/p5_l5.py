"""Third-party styles, fifth batch, lesson05_row_sum (three blanks; edits of solution.py)."""
EXERCISE = "lesson05_row_sum"
S1 = "row_start = x + row * stride_m"
LD = "mask=cols < N, other=0.0)"

PROBES = [
    {"id": "l5_5.right.int64_stride_cast", "group": "right",
     "description": "tl.cast(stride_m, tl.int64) (an int64 row offset, the cast inside the blank)",
     "edits": [{"old": S1, "new": "row_start = x + row * tl.cast(stride_m, tl.int64)"}],
     "expect": {"code_points": 3}, "judged": "right"},
    {"id": "l5_5.right.arange_mask_int_other", "group": "right",
     "description": "mask=tl.arange(0, BLOCK) < N, other=0 (an int literal)",
     "edits": [{"old": LD, "new": "mask=tl.arange(0, BLOCK) < N, other=0)"}],
     "expect": {"code_points": 3}, "judged": "right"},
    {"id": "l5_5.wrong.mask_block", "group": "wrong",
     "description": "mask=cols < BLOCK (always true: the sum runs over the padding lanes, reading past the row)",
     "edits": [{"old": LD, "new": "mask=cols < BLOCK, other=0.0)"}],
     "expect": {"code_points": 1.5, "diagnoses": ["nonfinite_output"]},
     "judged": "wrong wherever N is not a power of 2 (reads the next row; the last row reads past x: NaN). First "
               "judged mask_too_wide, whose message is about strided rows read as NaN; nonfinite_output says to "
               "check the data read outside the row (the mask): true, if less specific (left)"},
    {"id": "l5_5.wrong.other_big_negative", "group": "wrong",
     "description": "other=-1e9 (a max's sentinel habit in a sum)",
     "edits": [{"old": LD, "new": "mask=cols < N, other=-1e9)"}],
     "expect": {"code_points": 1.5, "diagnoses": ["padding_not_identity"]},
     "judged": "wrong on every ragged row"},
    {"id": "l5_5.wrong.stride_minus_one", "group": "wrong",
     "description": "row * (stride_m - 1) (an off-by-one of the stride)",
     "edits": [{"old": S1, "new": "row_start = x + row * (stride_m - 1)"}],
     "expect": {"code_points": 0}, "judged": "wrong on every row after the first"},
]
