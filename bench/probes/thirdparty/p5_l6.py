"""Third-party styles, fifth batch, lesson06_mean_var (one blank: the mask in tl.where)."""
EXERCISE = "lesson06_mean_var"
OLD = "centered_sq = tl.where(mask, (values - mean) * (values - mean), 0.0)"


def fill(text: str) -> dict:
    return {"old": OLD, "new": f"centered_sq = tl.where({text}, (values - mean) * (values - mean), 0.0)"}


PROBES = [
    {"id": "l6_5.right.arange_lt_n", "group": "right", "description": "tl.arange(0, BLOCK) < N (the mask rebuilt)",
     "edits": [fill("tl.arange(0, BLOCK) < N")], "expect": {"code_points": 3}, "judged": "right"},
    {"id": "l6_5.right.n_gt_cols_eq_true", "group": "right", "description": "(N > cols) == True",
     "edits": [fill("(N > cols) == True")], "expect": {"code_points": 3}, "judged": "right"},
    {"id": "l6_5.wrong.cols_lt_block", "group": "wrong", "description": "cols < BLOCK (every lane: the padding's mean^2 added)",
     "edits": [fill("cols < BLOCK")], "expect": {"code_points": 1.5, "diagnoses": ["missing_remask"]},
     "judged": "wrong wherever N is not a power of 2"},
    {"id": "l6_5.wrong.cols_le_n", "group": "wrong", "description": "cols <= N (one padding lane too many)",
     "edits": [fill("cols <= N")], "expect": {"code_points": 1.5, "diagnoses": ["off_by_one_le"]},
     "judged": "wrong wherever N is not a power of 2 (one padding lane's mean^2)"},
]
