"""Third-party styles, eighth batch, lesson06_mean_var (one blank: the mask in tl.where).

A jnp.where habit (the boolean written `tl.where(cond, True, False)`), int64 lanes in the compare,
a mask that also drops lanes equal to the mean (which add 0 anyway), and the bugs of a CUDA port that
compares global element offsets: `row * stride_m + cols < N` (right on row 0 only) and
`row * stride_m + cols < (row + 1) * N` (right where stride = N)."""
EXERCISE = "lesson06_mean_var"
OLD = "centered_sq = tl.where(mask, (values - mean) * (values - mean), 0.0)"


def fill(text: str) -> dict:
    return {"old": OLD, "new": f"centered_sq = tl.where({text}, (values - mean) * (values - mean), 0.0)"}


PROBES = [
    {"id": "l6_8.right.jnp_where_bool", "group": "right", "description": "tl.where(cols < N, True, False)",
     "edits": [fill("tl.where(cols < N, True, False)")], "expect": {"code_points": 3}, "judged": "right"},
    {"id": "l6_8.right.int64_lanes", "group": "right", "description": "cols.to(tl.int64) < N",
     "edits": [fill("cols.to(tl.int64) < N")], "expect": {"code_points": 3}, "judged": "right"},
    {"id": "l6_8.right.and_not_mean", "group": "right",
     "description": "mask & (values != mean) (a lane equal to the mean is dropped: it adds 0 anyway)",
     "edits": [fill("mask & (values != mean)")],
     "expect": {"code_points": 3, "not_diagnosed": ["value_based_mask"]},
     "judged": "right: a dropped valid lane contributes (mean - mean)^2 = 0, padding lanes stay out"},
    {"id": "l6_8.wrong.global_offset_vs_n", "group": "wrong",
     "description": "row * stride_m + cols < N (a CUDA global index compared with the row length)",
     "edits": [fill("row * stride_m + cols < N")], "expect": {"code_points": 0, "diagnoses": ["row_dependent_mask"]},
     "judged": "wrong on every row but the first (no lane kept: var 0); the given check fails"},
    {"id": "l6_8.wrong.global_offset_vs_row_end", "group": "wrong",
     "description": "row * stride_m + cols < (row + 1) * N (the row's end as (row + 1) * N, a contiguous assumption)",
     "edits": [fill("row * stride_m + cols < (row + 1) * N")],
     "expect": {"code_points": 2, "vetoes": ["coincidental_pass"], "failing_cases": ["boundary.strided", "probe.strided_pad"],
                "diagnoses": ["row_dependent_mask"]},
     "judged": "wrong on strided views: with stride > N row r keeps N - r(stride - N) lanes; right where stride = N "
               "(the given check, the regular cases)"},
]
