"""Third-party styles for welford_merge (three blanks). code_points of 3."""
EXERCISE = "welford_merge"
NB = "n_b = tl.sum(tl.where(mask, 1.0, 0.0), axis=0)"
M2 = "m2_b = tl.sum(tl.where(mask, (values - mean_b) * (values - mean_b), 0.0), axis=0)"
C = "m2 = m2 + m2_b + delta * delta * n * n_b / n_new"

PROBES = [
    {"id": "welford.right.sum_bool_mask", "group": "right", "description": "n_b = tl.sum(mask, axis=0) (int1 summed as int32)",
     "edits": [{"old": NB, "new": "n_b = tl.sum(mask.to(tl.int32), axis=0).to(tl.float32)"}],
     "expect": {"code_points": 3}, "judged": "right"},
    {"id": "welford.right.fma_correction", "group": "right", "description": "tl.fma(delta * delta, n * n_b / n_new, 0.0)",
     "edits": [{"old": C, "new": "m2 = m2 + m2_b + tl.fma(delta * delta, n * n_b / n_new, 0.0)"}],
     "expect": {"code_points": 3}, "judged": "right"},
    {"id": "welford.right.m2_where_sq", "group": "right", "description": "Liger layer-norm style: d = where(mask, x - mean, 0); sum(d * d, axis=-1)",
     "edits": [{"old": M2, "new": "m2_b = tl.sum(tl.where(mask, values - mean_b, 0.0) * tl.where(mask, values - mean_b, 0.0), axis=-1)"}],
     "expect": {"code_points": 3}, "judged": "right"},
    {"id": "welford.wrong.naive_m2", "group": "wrong", "description": "m2_b = Σx² − n_b·mean_b² (one-pass, catastrophic cancellation)",
     "edits": [{"old": M2, "new": "m2_b = tl.sum(values * values, axis=0) - n_b * mean_b * mean_b"}],
     "expect": {"code_points": 2, "vetoes": ["coincidental_pass"], "diagnoses": ["cancellation"], "failing_cases": ["probe.large_mean"]},
     "judged": "wrong numerically: cancellation on large means (the probe targets it)"},
    {"id": "welford.wrong.m2_unmasked_sq", "group": "wrong", "description": "tl.sum((values - mean_b) * (values - mean_b), axis=0): padding lanes add mean_b^2",
     "edits": [{"old": M2, "new": "m2_b = tl.sum((values - mean_b) * (values - mean_b), axis=0)"}],
     "expect": {"code_points": 1, "diagnoses": ["chunk_m2_not_remasked"]},
     "judged": "wrong on ragged rows (aligned regular cases pass: first written as 0)"},
]
