"""Third-party styles, eighth batch, welford_merge (three expression blanks; edits of solution.py).

An integer count (`tl.sum(tl.where(mask, 1, 0))`, promoted where it meets floats), M2_b with the
centred values kept by tl.where twice, a shifted-data one-pass M2_b (K = the chunk's max:
Σ(x − K)² − n_b(mean_b − K)², stable), and the bugs: the one-pass (Σx²/n_b − mean_b²)·n_b (the
cancellation the lesson warns of), the same shifted formula with the running mean as K (0 on the
first chunk), the correction with n_b where n was meant (a copy-paste)."""
EXERCISE = "welford_merge"
NB = "n_b = tl.sum(tl.where(mask, 1.0, 0.0), axis=0)"
M2 = "m2_b = tl.sum(tl.where(mask, (values - mean_b) * (values - mean_b), 0.0), axis=0)"
C = "m2 = m2 + m2_b + delta * delta * n * n_b / n_new"

PROBES = [
    {"id": "wf8.right.int_count", "group": "right",
     "description": "n_b = tl.sum(tl.where(mask, 1, 0), axis=0) (an int32 count)",
     "edits": [{"old": NB, "new": "n_b = tl.sum(tl.where(mask, 1, 0), axis=0)"}],
     "expect": {"code_points": 3}, "judged": "right (int / float and float + int promote to float32)"},
    {"id": "wf8.right.m2_where_twice", "group": "right",
     "description": "m2_b = tl.sum(tl.where(mask, values - mean_b, 0.0) * tl.where(mask, values - mean_b, 0.0), axis=0)",
     "edits": [{"old": M2, "new": "m2_b = tl.sum(tl.where(mask, values - mean_b, 0.0) * tl.where(mask, values - mean_b, 0.0), axis=0)"}],
     "expect": {"code_points": 3}, "judged": "right"},
    {"id": "wf8.right.shifted_by_block_max", "group": "right",
     "description": "m2_b = Σ(x − K)² − n_b(mean_b − K)² with K = tl.max(values) (shifted-data one pass)",
     "edits": [{"old": M2, "new": "m2_b = tl.sum(tl.where(mask, (values - tl.max(values, axis=0)) * (values - tl.max(values, axis=0)), 0.0), axis=0) - n_b * (mean_b - tl.max(values, axis=0)) * (mean_b - tl.max(values, axis=0))"}],
     "expect": {"code_points": 3},
     "judged": "right: any K gives M2_b in exact arithmetic; with K inside the chunk's range the squares are of "
               "the spread, not of the mean (near 1e4 the rounding of mean_b moves var by < 1e-4, under atol 2e-4)"},
    {"id": "wf8.wrong.shifted_by_running_mean", "group": "wrong",
     "description": "m2_b = Σ(x − mean)² − n_b(mean_b − mean)² with the running mean as the shift (0 on the first chunk)",
     "edits": [{"old": M2, "new": "m2_b = tl.sum(tl.where(mask, (values - mean) * (values - mean), 0.0), axis=0) - n_b * (mean_b - mean) * (mean_b - mean)"}],
     "expect": {"code_points": 2, "vetoes": ["coincidental_pass"], "failing_cases": ["probe.large_mean"],
                "diagnoses": ["cancellation"]},
     "judged": "wrong near a large mean: the first chunk's shift is 0 (mean starts at 0), so it is Σx² − n_b·mean_b², "
               "the cancellation (probe.large_mean); exact in real arithmetic, right on the regular cases"},
    {"id": "wf8.wrong.one_pass_normalised", "group": "wrong",
     "description": "m2_b = (tl.sum(values * values, axis=0) / n_b - mean_b * mean_b) * n_b (E[x²] − E[x]², times n_b)",
     "edits": [{"old": M2, "new": "m2_b = (tl.sum(values * values, axis=0) / n_b - mean_b * mean_b) * n_b"}],
     "expect": {"code_points": 2, "vetoes": ["coincidental_pass"], "failing_cases": ["probe.large_mean"],
                "diagnoses": ["cancellation"]},
     "judged": "wrong near a large mean: E[x²] ≈ 1e8, float32 keeps 1e8 to about 8, the variance is 1e-4 "
               "(probe.large_mean); the padding is 0.0 and adds nothing to Σx²; right on the regular cases"},
    {"id": "wf8.wrong.correction_nb_for_n", "group": "wrong",
     "description": "correction delta * delta * n_b * n_b / n_new (n_b where n was meant)",
     "edits": [{"old": C, "new": "m2 = m2 + m2_b + delta * delta * n_b * n_b / n_new"}],
     "expect": {"code_points": 0},
     "judged": "wrong nearly everywhere: on the first chunk (n = 0) it adds n_b·mean_b² where the right term is 0, "
               "and later chunks weigh delta² by n_b²/n_new instead of n·n_b/n_new; the given check fails"},
]
