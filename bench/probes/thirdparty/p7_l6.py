"""Third-party styles, seventh batch, lesson06_mean_var (one blank: the mask in tl.where).

A redundant conjunction with the block's bound, lane arithmetic in element offsets scaled by the
stride (a CUDA byte-offset habit), an OR that a value test cannot widen (the padding is 0 after
other=0.0), and the bug: an off-by-one bound (`cols < N - 1`)."""
EXERCISE = "lesson06_mean_var"
OLD = "centered_sq = tl.where(mask, (values - mean) * (values - mean), 0.0)"


def fill(text: str) -> dict:
    return {"old": OLD, "new": f"centered_sq = tl.where({text}, (values - mean) * (values - mean), 0.0)"}


PROBES = [
    {"id": "l6_7.right.and_block_bound", "group": "right", "description": "mask & (cols < BLOCK) (a redundant AND)",
     "edits": [fill("mask & (cols < BLOCK)")], "expect": {"code_points": 3}, "judged": "right"},
    {"id": "l6_7.right.scaled_offsets", "group": "right",
     "description": "cols * stride_m < N * stride_m (offsets compared in units of the row stride)",
     "edits": [fill("cols * stride_m < N * stride_m")], "expect": {"code_points": 3},
     "judged": "right (stride_m >= N > 0; no int32 overflow at these sizes)"},
    {"id": "l6_7.right.or_nonzero_value", "group": "right",
     "description": "(cols < N) | (values != 0) (an OR with a value test: the padding loaded as 0.0 stays out)",
     "edits": [fill("(cols < N) | (values != 0)")], "expect": {"code_points": 3,
                                                               "not_diagnosed": ["value_based_mask", "missing_remask"]},
     "judged": "right: a valid lane is kept by cols < N whatever its value, a padding lane is 0.0, so the OR "
               "adds nothing; probe.zeros (real zeros) passes"},
    {"id": "l6_7.wrong.n_minus_one", "group": "wrong",
     "description": "cols < N - 1 (an off-by-one: the last element left out of the variance)",
     "edits": [fill("cols < N - 1")], "expect": {"code_points": 0},
     "judged": "wrong on every N > 1 (the last (x - mean)^2 dropped: var low by about var/N, past 2e-4 at N = 1024 "
               "too); N = 1 is right (var 0). The given check fails"},
]
