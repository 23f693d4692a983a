"""Third-party styles, third round, fused_mean_var_atomic (three blanks; edits of solution.py)."""
EXERCISE = "fused_mean_var_atomic"
SQ = "tl.atomic_add(sumsqs + row, tl.sum(values * values, axis=0))"
V = "var = sumsqs / N - mean * mean"
Z = "    sums.zero_()\n    sumsqs.zero_()\n"

PROBES = [
    {"id": "fused3.right.ai_where_cast", "group": "right",
     "description": "AI-assistant: tl.sum(tl.where(mask, values.to(tl.float32) * values.to(tl.float32), 0.0), axis=0)",
     "edits": [{"old": SQ, "new": "tl.atomic_add(sumsqs + row, tl.sum(tl.where(mask, values.to(tl.float32) * values.to(tl.float32), 0.0), axis=0))"}],
     "expect": {"code_points": 3}, "judged": "right"},
    {"id": "fused3.right.fill_and_clamp", "group": "right",
     "description": "host: sums.fill_(0) / sumsqs[:] = 0; var = torch.clamp(sumsqs / N - mean * mean, min=0.0)",
     "edits": [{"old": Z, "new": "    sums.fill_(0)\n    sumsqs[:] = 0\n"},
               {"old": V, "new": "var = torch.clamp(sumsqs / N - mean * mean, min=0.0)"}],
     "expect": {"code_points": 3}, "judged": "right: the clamp only removes rounding below zero"},
    {"id": "fused3.right.inductor_full_list", "group": "right",
     "description": "Inductor: tl.sum(tl.where(mask, values * values, tl.full([BLOCK], 0, tl.float32)), 0)",
     "edits": [{"old": SQ, "new": "tl.atomic_add(sumsqs + row, tl.sum(tl.where(mask, values * values, tl.full([BLOCK], 0, tl.float32)), 0))"}],
     "expect": {"code_points": 3}, "judged": "right"},
    {"id": "fused3.wrong.zero_one_buffer", "group": "wrong",
     "description": "host: only sums.zero_() (sumsqs forgotten)",
     "edits": [{"old": Z, "new": "    sums.zero_()\n"}],
     "expect": {"code_points": 2, "vetoes": ["coincidental_pass"], "diagnoses": ["sumsq_not_zeroed"]},
     "judged": "(first judged 0) wrong on a second call on the same buffers (probe.twice); every first call passes"},
    {"id": "fused3.wrong.unbiased_habit", "group": "wrong",
     "description": "torch habit: var = (sumsqs - sums * mean) / (N - 1)",
     "edits": [{"old": V, "new": "var = (sumsqs - sums * mean) / (N - 1)"}],
     "expect": {"code_points": 1.5, "diagnoses": ["bessel"]},
     "judged": "(first judged 0) wrong: the population variance divides by N; N/(N-1) is within the article's 1e-2 "
               "on the long regular rows (N >= 1000), outside it on the given check and the short rows, NaN at N = 1"},
]
