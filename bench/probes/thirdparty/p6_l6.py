"""Third-party styles, sixth batch, lesson06_mean_var (one blank: the mask in tl.where).

NumPy habits (`values == values` as an all-true mask, `np.abs(x) > 0` to drop the padding),
unsigned index arithmetic, an inclusive bound, `~(cols >= N)`."""
EXERCISE = "lesson06_mean_var"
OLD = "centered_sq = tl.where(mask, (values - mean) * (values - mean), 0.0)"


def fill(text: str) -> dict:
    return {"old": OLD, "new": f"centered_sq = tl.where({text}, (values - mean) * (values - mean), 0.0)"}


PROBES = [
    {"id": "l6_6.right.le_n_minus_one", "group": "right", "description": "tl.arange(0, BLOCK) <= N - 1",
     "edits": [fill("tl.arange(0, BLOCK) <= N - 1")], "expect": {"code_points": 3}, "judged": "right"},
    {"id": "l6_6.right.uint32_lanes", "group": "right", "description": "cols.to(tl.uint32) < N (unsigned lanes)",
     "edits": [fill("cols.to(tl.uint32) < N")], "expect": {"code_points": 3}, "judged": "right"},
    {"id": "l6_6.right.not_ge", "group": "right", "description": "~(cols >= N) (the mask as a negation)",
     "edits": [fill("~(cols >= N)")], "expect": {"code_points": 3}, "judged": "right"},
    {"id": "l6_6.wrong.values_eq_values", "group": "wrong",
     "description": "values == values (NumPy's not-NaN test: true on every lane, the padding included)",
     "edits": [fill("values == values")], "expect": {"code_points": 1.5, "diagnoses": ["missing_remask"]},
     "judged": "wrong wherever N is not a power of 2 (the padding's mean^2 added); the given check fails"},
    {"id": "l6_6.wrong.abs_nonzero", "group": "wrong",
     "description": "tl.abs(values) > 0 (NumPy's x[np.abs(x) > 0]: the padding recognised by its value)",
     "edits": [fill("tl.abs(values) > 0")],
     "expect": {"code_points": 2, "vetoes": ["coincidental_pass"], "diagnoses": ["value_based_mask"],
                "failing_cases": ["probe.zeros"]},
     "judged": "wrong reasoning (keyed on the value): right on data without zeros, probe.zeros catches it"},
]
