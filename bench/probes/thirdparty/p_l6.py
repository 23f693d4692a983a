"""Third-party styles for lesson06_mean_var (one blank). code_points of 3."""
EXERCISE = "lesson06_mean_var"
B = "centered_sq = tl.where(mask, (values - mean)"


def fill(f: str) -> dict:
    return {"old": B, "new": f"centered_sq = tl.where({f}, (values - mean)"}


PROBES = [
    {"id": "l6.right.cols_lt_n_int64", "group": "right", "description": "cols.to(tl.int64) < N",
     "edits": [fill("cols.to(tl.int64) < N")], "expect": {"code_points": 3}, "judged": "right"},
    {"id": "l6.right.mask_ne_zero_int", "group": "right", "description": "mask.to(tl.int32) != 0",
     "edits": [fill("mask.to(tl.int32) != 0")], "expect": {"code_points": 3}, "judged": "right"},
    {"id": "l6.wrong.cols_le_n", "group": "wrong", "description": "cols <= N (one padding lane kept)",
     "edits": [fill("cols <= N")], "expect": {"code_points": 1.5, "diagnoses": ["off_by_one_le"]},
     "judged": "(power-of-two N pass: first written as 0) wrong: one padding lane adds mean^2 when N < BLOCK"},
]
