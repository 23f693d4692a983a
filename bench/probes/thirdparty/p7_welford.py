"""Third-party styles, seventh batch, welford_merge (three expression blanks; edits of solution.py).

The count as the last valid lane's index + 1 (`tl.max(tl.where(mask, lane + 1, 0))`) and as the
last element of a `tl.cumsum` of the mask, the correction through the updated mean (West's
`delta * (mean_b - mean_new) * n_b`), the correction with tl.fma, and the bugs: M2_b as
Σ(x − mean_b)·x (equal in exact arithmetic, cancelling in fp32), Welford's per-element update
`delta * (mean_b - mean_new)` applied to a whole chunk (n_b left out)."""
EXERCISE = "welford_merge"
NB = "n_b = tl.sum(tl.where(mask, 1.0, 0.0), axis=0)"
M2 = "m2_b = tl.sum(tl.where(mask, (values - mean_b) * (values - mean_b), 0.0), axis=0)"
C = "m2 = m2 + m2_b + delta * delta * n * n_b / n_new"

PROBES = [
    {"id": "wf7.right.count_last_lane", "group": "right",
     "description": "n_b = tl.max(tl.where(mask, tl.arange(0, BLOCK) + 1, 0), axis=0) * 1.0 (the last valid lane + 1)",
     "edits": [{"old": NB, "new": "n_b = tl.max(tl.where(mask, tl.arange(0, BLOCK) + 1, 0), axis=0) * 1.0"}],
     "expect": {"code_points": 3}, "judged": "right (the valid lanes are a prefix of the block)"},
    {"id": "wf7.right.count_cumsum", "group": "right",
     "description": "n_b = tl.max(tl.cumsum(mask.to(tl.float32), axis=0), axis=0) (a running count's last value)",
     "edits": [{"old": NB, "new": "n_b = tl.max(tl.cumsum(mask.to(tl.float32), axis=0), axis=0)"}],
     "expect": {"code_points": 3}, "judged": "right"},
    {"id": "wf7.right.correction_updated_mean", "group": "right",
     "description": "correction delta * (mean_b - mean) * n_b, mean already updated (West's form: delta * n / n_new * n_b)",
     "edits": [{"old": C, "new": "m2 = m2 + m2_b + delta * (mean_b - mean) * n_b"}],
     "expect": {"code_points": 3},
     "judged": "right: the template updates mean before this line, so mean_b - mean = delta * n / n_new"},
    {"id": "wf7.right.correction_fma", "group": "right",
     "description": "correction tl.fma(delta, delta * n * n_b / n_new, 0.0)",
     "edits": [{"old": C, "new": "m2 = m2 + m2_b + tl.fma(delta, delta * n * n_b / n_new, 0.0)"}],
     "expect": {"code_points": 3}, "judged": "right"},
    {"id": "wf7.wrong.m2_centred_times_x", "group": "wrong",
     "description": "m2_b = Σ(x − mean_b)·x (equal to Σ(x − mean_b)² in exact arithmetic: Σ(x − mean_b) = 0)",
     "edits": [{"old": M2, "new": "m2_b = tl.sum(tl.where(mask, (values - mean_b) * values, 0.0), axis=0)"}],
     "expect": {"code_points": 2, "vetoes": ["coincidental_pass"], "failing_cases": ["probe.large_mean"]},
     "judged": "wrong in fp32 near a large mean: the rounding of mean_b leaves Σ(x − mean_b) ≈ 64·6e-4, times "
               "x ≈ 1e4, against a true M2_b near 0.0064 (probe.large_mean); negligible on the other cases"},
    {"id": "wf7.wrong.per_element_welford_correction", "group": "wrong",
     "description": "correction delta * (mean_b - mean) (Welford's one-element update applied to a chunk: n_b left out)",
     "edits": [{"old": C, "new": "m2 = m2 + m2_b + delta * (mean_b - mean)"}],
     "expect": {"code_points": 0, "not_diagnosed": ["delta_term_missing"]},
     "judged": "wrong wherever a row has two chunks or more (the correction n_b times too small): every multi-chunk "
               "case, the given check among them; only one-chunk rows (regular.one_chunk, n1, short_row) pass. Not 'the correction term missing': there is one, n_b times too small (at main named on regular.n1000 and n2048, where 1/128 of the term is within the match's slack, while probe.chunk_steps, 72 tolerances from it, contradicts it; unexplained now)"},
]
