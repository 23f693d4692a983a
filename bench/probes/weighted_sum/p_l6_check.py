"""Two lesson-6 fills, only to prove drive.py end to end on the CPU (the interpreter refuses weighted_sum)."""
EXERCISE = "lesson06_mean_var"

PROBES = [
    {"id": "l6.right_n_gt_cols", "group": "right", "description": "N > cols", "fill": "N > cols",
     "expect": {"code_points": 3}, "judged": "right"},
    {"id": "l6.wrong_cols_lt_block", "group": "wrong", "description": "cols < BLOCK (no re-mask)",
     "fill": "cols < BLOCK", "expect": {"code_points": 1.5, "diagnoses": ["missing_remask"]}, "judged": "wrong"},
]
