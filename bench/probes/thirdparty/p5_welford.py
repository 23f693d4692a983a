"""Third-party styles, fifth batch, welford_merge (three expression blanks; edits of solution.py).

The count as a boolean sum (`tl.sum(mask.to(tl.float32))`, an int32 count), M2_b as a product of two
re-masked deviations, the correction in Welford's own form (delta times the updated mean's distance),
and the bugs: M2_b over the padding lanes, the count off by one, Bessel's n - 1 in the merge, the
count keyed on the values (values != 0)."""
EXERCISE = "welford_merge"
NB = "n_b = tl.sum(tl.where(mask, 1.0, 0.0), axis=0)"
M2 = "m2_b = tl.sum(tl.where(mask, (values - mean_b) * (values - mean_b), 0.0), axis=0)"
C = "m2 = m2 + m2_b + delta * delta * n * n_b / n_new"

PROBES = [
    {"id": "wf5.right.count_bool_sum", "group": "right",
     "description": "n_b = tl.sum(mask.to(tl.float32), axis=0) (the mask's lanes as 1.0)",
     "edits": [{"old": NB, "new": "n_b = tl.sum(mask.to(tl.float32), axis=0)"}],
     "expect": {"code_points": 3}, "judged": "right"},
    {"id": "wf5.right.count_int32", "group": "right",
     "description": "n_b = tl.sum(mask.to(tl.int32), axis=0) (an integer count; n + n_b promotes to float32)",
     "edits": [{"old": NB, "new": "n_b = tl.sum(mask.to(tl.int32), axis=0)"}],
     "expect": {"code_points": 3}, "judged": "right"},
    {"id": "wf5.right.m2_product_of_where", "group": "right",
     "description": "m2_b = tl.sum(tl.where(mask, values - mean_b, 0.0) * tl.where(mask, values - mean_b, 0.0), axis=0)",
     "edits": [{"old": M2, "new": "m2_b = tl.sum(tl.where(mask, values - mean_b, 0.0) * tl.where(mask, values - mean_b, 0.0), axis=0)"}],
     "expect": {"code_points": 3}, "judged": "right"},
    {"id": "wf5.right.correction_welford_form", "group": "right",
     "description": "the correction as delta * (mean_b - mean) * n_b (mean is already updated: mean_b - mean = delta * n / n_new)",
     "edits": [{"old": C, "new": "m2 = m2 + m2_b + delta * (mean_b - mean) * n_b"}],
     "expect": {"code_points": 3}, "judged": "right (algebraically delta^2 n n_b / n_new)"},
    {"id": "wf5.wrong.m2_over_padding", "group": "wrong",
     "description": "m2_b = tl.sum((values - mean_b) * (values - mean_b), axis=0): the padding lanes (0.0) add mean_b^2 each",
     "edits": [{"old": M2, "new": "m2_b = tl.sum((values - mean_b) * (values - mean_b), axis=0)"}],
     "expect": {"code_points": 1, "diagnoses": ["chunk_m2_not_remasked"]},
     "judged": "wrong wherever the last chunk is partial"},
    {"id": "wf5.wrong.count_plus_one", "group": "wrong",
     "description": "n_b = tl.sum(tl.where(mask, 1.0, 0.0), axis=0) + 1 (the count off by one)",
     "edits": [{"old": NB, "new": "n_b = tl.sum(tl.where(mask, 1.0, 0.0), axis=0) + 1"}],
     "expect": {"code_points": 0, "diagnoses": ["chunk_count_plus_one"], "not_diagnosed": ["unexplained"]},
     "judged": "wrong everywhere (first 'matches none', now chunk_count_plus_one: the mean pulled to mean·N/(N + chunks))"},
    {"id": "wf5.wrong.bessel_merge", "group": "wrong",
     "description": "Bessel's habit in the merge: delta * delta * n * n_b / (n_new - 1)",
     "edits": [{"old": C, "new": "m2 = m2 + m2_b + delta * delta * n * n_b / (n_new - 1)"}],
     "expect": {"code_points": 2, "vetoes": ["coincidental_pass"], "diagnoses": ["nonfinite_output"]},
     "judged": "(first judged 0) wrong: N = 1 divides 0 by 0 (NaN); with many chunks the error is (n_new/(n_new-1) - 1) "
               "of each correction, within the tolerance on the given check and the regular rows, beyond it on "
               "block_plus_one, strided, chunk_steps, strided_count"},
    {"id": "wf5.hidden.count_nonzero_values", "group": "hidden",
     "description": "n_b = tl.sum(tl.where(values != 0, 1.0, 0.0), axis=0) (the padding recognised by its value)",
     "edits": [{"old": NB, "new": "n_b = tl.sum(tl.where(values != 0, 1.0, 0.0), axis=0)"}],
     "expect": {"code_points": 3},
     "judged": "wrong reasoning (a zero in x is not counted); right on data without exact zeros: caught only if a "
               "case holds zeros"},
]
