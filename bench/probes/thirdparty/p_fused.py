"""Third-party styles for fused_mean_var_atomic (three blanks). code_points of 3."""
EXERCISE = "fused_mean_var_atomic"
SQ = "tl.atomic_add(sumsqs + row, tl.sum(values * values, axis=0))"
V = "var = sumsqs / N - mean * mean"
Z = "    sums.zero_()\n    sumsqs.zero_()\n"

PROBES = [
    {"id": "fused.right.fma_neg_axis", "group": "right", "description": "tl.sum(tl.fma(values, values, 0.0), axis=-1)",
     "edits": [{"old": SQ, "new": "tl.atomic_add(sumsqs + row, tl.sum(tl.fma(values, values, 0.0), axis=-1))"}],
     "expect": {"code_points": 3}, "judged": "right"},
    {"id": "fused.right.addcmul_copy", "group": "right",
     "description": "torch.addcmul(sumsqs / N, mean, mean, value=-1) and zeroing by copy_(zeros_like)",
     "edits": [{"old": V, "new": "var = torch.addcmul(sumsqs / N, mean, mean, value=-1)"},
               {"old": Z, "new": "    sums.copy_(torch.zeros_like(sums))\n    sumsqs.copy_(torch.zeros_like(sumsqs))\n"}],
     "expect": {"code_points": 3}, "judged": "right"},
    {"id": "fused.wrong.sumsq_rsqrt", "group": "wrong", "description": "rsqrt habit from layer norm: tl.sum(values*values) * tl.rsqrt(N * 1.0)",
     "edits": [{"old": SQ, "new": "tl.atomic_add(sumsqs + row, tl.sum(values * values, axis=0) * tl.rsqrt(N * 1.0))"}],
     "expect": {"code_points": 0}, "judged": "wrong"},
    {"id": "fused.wrong.zero_with_empty_like", "group": "wrong",
     "description": "fresh scratch with torch.empty_like (Unsloth-like host code): the caller's buffers untouched and not zeroed",
     "edits": [{"old": Z, "new": "    sums = torch.empty_like(sums)\n    sumsqs = torch.empty_like(sumsqs)\n"}],
     "expect": {"code_points": 0}, "judged": "wrong: empty memory is not zero"},
]
