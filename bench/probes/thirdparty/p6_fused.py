"""Third-party styles, sixth batch, fused_mean_var_atomic (kernel blank + two host blanks).

A NumPy person (`values * values * mask` instead of tl.where, `(sumsqs - sums**2 / N) / N` on the
host, `torch.zero_` and slice assignment), and the bugs: `**` on a Triton tensor, Σx² over the
block size instead of N's share, the variance divided by N - 1 through torch.var's habit."""
EXERCISE = "fused_mean_var_atomic"
K = "tl.atomic_add(sumsqs + row, tl.sum(values * values, axis=0))"
V = "var = sumsqs / N - mean * mean"
Z = "    sums.zero_()\n    sumsqs.zero_()\n"

PROBES = [
    {"id": "fused6.right.times_mask", "group": "right",
     "description": "kernel: tl.sum(values * values * mask, axis=0) (NumPy's x * mask, the bool promoted)",
     "edits": [{"old": K, "new": "tl.atomic_add(sumsqs + row, tl.sum(values * values * mask, axis=0))"}],
     "expect": {"code_points": 3}, "judged": "right"},
    {"id": "fused6.right.host_sums_form", "group": "right",
     "description": "host: var = (sumsqs - sums * sums / N) / N",
     "edits": [{"old": V, "new": "var = (sumsqs - sums * sums / N) / N"}],
     "expect": {"code_points": 3}, "judged": "right (the same identity, one rounding order)"},
    {"id": "fused6.right.torch_zero_slices", "group": "right",
     "description": "host: torch.zero_(sums); sumsqs[...] = 0.0",
     "edits": [{"old": Z, "new": "    torch.zero_(sums)\n    sumsqs[...] = 0.0\n"}],
     "expect": {"code_points": 3}, "judged": "right"},
    {"id": "fused6.wrong.pow_on_tensor", "group": "wrong",
     "description": "kernel: tl.sum(values ** 2, axis=0) (NumPy's ** on a Triton tensor)",
     "edits": [{"old": K, "new": "tl.atomic_add(sumsqs + row, tl.sum(values ** 2, axis=0))"}],
     "expect": {"code_points": 0},
     "judged": "a compile error if Triton's tensor has no __pow__ (to be seen; right if it has one)"},
    {"id": "fused6.wrong.sumsq_over_block", "group": "wrong",
     "description": "kernel: tl.sum(values * values, axis=0) / BLOCK (a per-block mean of squares added)",
     "edits": [{"old": K, "new": "tl.atomic_add(sumsqs + row, tl.sum(values * values, axis=0) / BLOCK)"}],
     "expect": {"code_points": 0}, "judged": "wrong everywhere (Σx² scaled by 1/BLOCK: var far below 0)"},
]
