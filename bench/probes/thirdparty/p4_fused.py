"""Third-party styles, fourth batch, fused_mean_var_atomic (kernel blank + two host blanks)."""
EXERCISE = "fused_mean_var_atomic"
K = "tl.atomic_add(sumsqs + row, tl.sum(values * values, axis=0))"
V = "var = sumsqs / N - mean * mean"
Z = "    sums.zero_()\n    sumsqs.zero_()\n"

PROBES = [
    {"id": "fused4.right.fma_no_axis", "group": "right",
     "description": "tl.sum(tl.fma(values, values, 0.0)) (no axis: 1-D block)",
     "edits": [{"old": K, "new": "tl.atomic_add(sumsqs + row, tl.sum(tl.fma(values, values, 0.0)))"}],
     "expect": {"code_points": 3}, "judged": "right"},
    {"id": "fused4.right.var_from_sums", "group": "right",
     "description": "host: var = (sumsqs - sums * sums / N) / N",
     "edits": [{"old": V, "new": "var = (sumsqs - sums * sums / N) / N"}],
     "expect": {"code_points": 3}, "judged": "right"},
    {"id": "fused4.right.torch_zero_fn", "group": "right",
     "description": "host: torch.zero_(sums); torch.nn.init.zeros_(sumsqs)",
     "edits": [{"old": Z, "new": "    torch.zero_(sums)\n    torch.nn.init.zeros_(sumsqs)\n"}],
     "expect": {"code_points": 3}, "judged": "right (both zero the caller's buffers in place)"},
    {"id": "fused4.wrong.var_mean_not_squared_sums", "group": "wrong",
     "description": "host: var = (sumsqs - sums) / N (the square of the mean forgotten, sums instead)",
     "edits": [{"old": V, "new": "var = (sumsqs - sums) / N"}],
     "expect": {"code_points": 0}, "judged": "wrong everywhere"},
    {"id": "fused4.wrong.zero_by_subtract", "group": "wrong",
     "description": "host: sums -= sums; sumsqs -= sumsqs (NaN or inf left in a reused buffer stays NaN)",
     "edits": [{"old": Z, "new": "    sums -= sums\n    sumsqs -= sumsqs\n"}],
     "expect": {"code_points": 3},
     "judged": "right on finite garbage, wrong on NaN/inf garbage; judged by the cases (unknown whether a case "
               "hands NaN-filled buffers: first judged 3)"},
]
