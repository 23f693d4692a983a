"""Third-party styles, fifth batch, fused_mean_var_atomic (kernel blank + two host blanks)."""
EXERCISE = "fused_mean_var_atomic"
K = "tl.atomic_add(sumsqs + row, tl.sum(values * values, axis=0))"
V = "var = sumsqs / N - mean * mean"
Z = "    sums.zero_()\n    sumsqs.zero_()\n"

PROBES = [
    {"id": "fused5.right.where_squares_fill", "group": "right",
     "description": "kernel: tl.sum(tl.where(mask, values * values, 0.0), axis=0); host: sums.fill_(0); sumsqs[:] = 0",
     "edits": [{"old": K, "new": "tl.atomic_add(sumsqs + row, tl.sum(tl.where(mask, values * values, 0.0), axis=0))"},
               {"old": Z, "new": "    sums.fill_(0)\n    sumsqs[:] = 0\n"}],
     "expect": {"code_points": 3}, "judged": "right"},
    {"id": "fused5.right.var_clamped_pow", "group": "right",
     "description": "host: var = torch.clamp_min(sumsqs / N - mean ** 2, 0.0) (negative rounding clamped)",
     "edits": [{"old": V, "new": "var = torch.clamp_min(sumsqs / N - mean ** 2, 0.0)"}],
     "expect": {"code_points": 3}, "judged": "right"},
    {"id": "fused5.wrong.bessel_host", "group": "wrong",
     "description": "host: var = (sumsqs - N * mean * mean) / (N - 1) (the sample variance)",
     "edits": [{"old": V, "new": "var = (sumsqs - N * mean * mean) / (N - 1)"}],
     "expect": {"code_points": 1.5, "diagnoses": ["bessel"]},
     "judged": "wrong on short rows (N = 1: 0/0; N = 2: twice), long rows pass within 1e-2"},
    {"id": "fused5.wrong.zero_only_sums_via_mul", "group": "wrong",
     "description": "host: sums.mul_(0); sumsqs.mul_(0) (NaN or inf garbage stays NaN)",
     "edits": [{"old": Z, "new": "    sums.mul_(0)\n    sumsqs.mul_(0)\n"}],
     "expect": {"code_points": 3},
     "judged": "right on finite garbage; wrong on NaN/inf garbage (the catalogue's wrong.fresh_empty_mul_zero "
               "is torch.empty * 0): judged by the cases"},
]
