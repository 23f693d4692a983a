"""Third-party styles, fourth batch, lesson06_mean_var (one blank: the mask in tl.where)."""
EXERCISE = "lesson06_mean_var"
OLD = "centered_sq = tl.where(mask, (values - mean) * (values - mean), 0.0)"


def fill(text: str) -> dict:
    return {"old": OLD, "new": f"centered_sq = tl.where({text}, (values - mean) * (values - mean), 0.0)"}


PROBES = [
    {"id": "l6_4.right.invert_ge", "group": "right", "description": "~(cols >= N) (bitwise not of the complement)",
     "edits": [fill("~(cols >= N)")], "expect": {"code_points": 3}, "judged": "right"},
    {"id": "l6_4.right.cdiv_is_one", "group": "right",
     "description": "tl.cdiv(cols + 1, N) == 1 (true exactly for cols < N)",
     "edits": [fill("tl.cdiv(cols + 1, N) == 1")], "expect": {"code_points": 3}, "judged": "right"},
    {"id": "l6_4.wrong.cols_lt_n_minus_1", "group": "wrong", "description": "cols < N - 1 (off by one)",
     "edits": [fill("cols < N - 1")], "expect": {"code_points": 0},
     "judged": "wrong on every row: the last element's squared deviation dropped"},
    {"id": "l6_4.hidden.value_nonzero", "group": "hidden",
     "description": "values != 0 (the padding recognised by its value, other=0.0)",
     "edits": [fill("values != 0")],
     "expect": {"code_points": 2, "vetoes": ["coincidental_pass"], "diagnoses": ["value_based_mask"],
                "failing_cases": ["probe.zeros"]},
     "judged": "(first judged 3, 'no case has zeros') wrong reasoning: the mask is keyed on the value; the lesson's "
               "probe.zeros catches it and names it"},
]
