"""Third-party styles for lesson05_row_sum (three blanks; edits of solution.py). code_points of 3."""
EXERCISE = "lesson05_row_sum"
S1 = "row_start = x + row * stride_m"
LD = "mask=cols < N, other=0.0)"

PROBES = [
    {"id": "l5.right.tl_cast_int64", "group": "right",
     "description": "int64 habit through tl.cast (stride_m is a constexpr: .to() is not available, tl.cast is)",
     "edits": [{"old": S1, "new": "row_start = x + row * tl.cast(stride_m, tl.int64)"}],
     "expect": {"code_points": 3}, "judged": "right: tl.cast turns the constexpr into an int64 tensor"},
    {"id": "l5.right.mask_arange_neg_axis", "group": "right",
     "description": "mask from a fresh tl.arange and other=0 written as tl.zeros-like constant 0.0 * 1",
     "edits": [{"old": LD, "new": "mask=tl.arange(0, BLOCK) < N, other=0.0 * 1)"}],
     "expect": {"code_points": 3}, "judged": "right"},
    {"id": "l5.wrong.other_neg_inf", "group": "wrong",
     "description": "softmax tutorial habit copied into a sum: other=-float('inf')",
     "edits": [{"old": LD, "new": "mask=cols < N, other=-float('inf'))"}],
     "expect": {"code_points": 1.5, "diagnoses": ["padding_infinite"]},
     "judged": "wrong: every ragged row sums to -inf"},
    {"id": "l5.wrong.stride_of_output", "group": "wrong",
     "description": "the output's stride (sums is 1-D, stride 1) used as the row stride: row * 1",
     "edits": [{"old": S1, "new": "row_start = x + row * tl.cast(1, tl.int32)"}],
     "expect": {"code_points": 0},
     "judged": "wrong: every row starts at element row of row 0"},
]
