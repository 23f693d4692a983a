"""Third-party styles, sixth batch, welford_merge (three expression blanks; edits of solution.py).

The count as a sum of booleans or as `tl.minimum(N - start, BLOCK)`, M2_b as NumPy's
`(d * d * mask).sum()`, the correction through libdevice's pow, and the bugs: M2_b centred on a
mean over BLOCK, the correction divided by the old count n."""
EXERCISE = "welford_merge"
NB = "n_b = tl.sum(tl.where(mask, 1.0, 0.0), axis=0)"
M2 = "m2_b = tl.sum(tl.where(mask, (values - mean_b) * (values - mean_b), 0.0), axis=0)"
C = "m2 = m2 + m2_b + delta * delta * n * n_b / n_new"

PROBES = [
    {"id": "wf6.right.count_bool_sum_cast_after", "group": "right",
     "description": "n_b = tl.sum(mask, axis=0).to(tl.float32) (booleans summed, then cast)",
     "edits": [{"old": NB, "new": "n_b = tl.sum(mask, axis=0).to(tl.float32)"}],
     "expect": {"code_points": 3}, "judged": "right (tl.sum promotes int1 to int32)"},
    {"id": "wf6.right.count_minimum", "group": "right",
     "description": "n_b = tl.minimum(N - start, BLOCK) * 1.0 (integer arithmetic on the bounds)",
     "edits": [{"old": NB, "new": "n_b = tl.minimum(N - start, BLOCK) * 1.0"}],
     "expect": {"code_points": 3}, "judged": "right"},
    {"id": "wf6.right.m2_times_mask", "group": "right",
     "description": "m2_b = tl.sum((values - mean_b) * (values - mean_b) * mask, axis=0) (NumPy's * mask)",
     "edits": [{"old": M2, "new": "m2_b = tl.sum((values - mean_b) * (values - mean_b) * mask, axis=0)"}],
     "expect": {"code_points": 3}, "judged": "right"},
    {"id": "wf6.right.libdevice_pow", "group": "right",
     "description": "m2 = m2 + m2_b + libdevice.pow(delta, 2.0) * n * n_b / n_new (tl.extra.cuda.libdevice)",
     "edits": [{"old": C, "new": "m2 = m2 + m2_b + tl.extra.cuda.libdevice.pow(delta, 2.0) * n * n_b / n_new"}],
     "expect": {"code_points": 0, "rejected": True},
     "judged": "(first judged 3) refused by the blank's rule on a GPU as well (a module walk). At main the interpreter "
               "said 'not gradable here, not your mistake, submit where a GPU grades', where the GPU refuses it: "
               "the fill rule now comes first, and its message names the function, not 'the method .pow'"},
    {"id": "wf6.wrong.m2_about_block_mean", "group": "wrong",
     "description": "M2_b about tl.sum(values) / BLOCK (a mean over BLOCK, not n_b)",
     "edits": [{"old": M2, "new": "m2_b = tl.sum(tl.where(mask, (values - tl.sum(values, axis=0) / BLOCK) * "
                                  "(values - tl.sum(values, axis=0) / BLOCK), 0.0), axis=0)"}],
     "expect": {"code_points": 1},
     "judged": "wrong wherever the last chunk is partial (M2_b grows by n_b·(mean_b - s/BLOCK)^2); "
               "full chunks are right"},
    {"id": "wf6.wrong.correction_over_n", "group": "wrong",
     "description": "m2 = m2 + m2_b + delta * delta * n * n_b / n (divided by the old count)",
     "edits": [{"old": C, "new": "m2 = m2 + m2_b + delta * delta * n * n_b / n"}],
     "expect": {"code_points": 0, "diagnoses": ["nonfinite_output"]},
     "judged": "wrong everywhere: the first chunk has n = 0, 0/0 = NaN"},
]
