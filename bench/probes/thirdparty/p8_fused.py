"""Third-party styles, eighth batch, fused_mean_var_atomic (kernel blank + two host blanks).

The squares kept out of the padding with tl.where (JAX's where everywhere), the variance rearranged
as (Σx² − (Σx)²/N)/N, the scratch zeroed by slice assignment (a NumPy habit), and the bugs: Σx²/N −
(Σx)²/N (one /N short on the square), each program's sum of squares cast to fp16 before the atomic."""
EXERCISE = "fused_mean_var_atomic"
K = "tl.atomic_add(sumsqs + row, tl.sum(values * values, axis=0))"
V = "var = sumsqs / N - mean * mean"
Z = "    sums.zero_()\n    sumsqs.zero_()\n"

PROBES = [
    {"id": "fused8.right.where_masked_squares", "group": "right",
     "description": "kernel: tl.sum(tl.where(mask, values * values, 0.0), axis=0)",
     "edits": [{"old": K, "new": "tl.atomic_add(sumsqs + row, tl.sum(tl.where(mask, values * values, 0.0), axis=0))"}],
     "expect": {"code_points": 3}, "judged": "right (the padding is 0.0 already; the where changes nothing)"},
    {"id": "fused8.right.var_rearranged", "group": "right",
     "description": "host: var = (sumsqs - sums * sums / N) / N",
     "edits": [{"old": V, "new": "var = (sumsqs - sums * sums / N) / N"}],
     "expect": {"code_points": 3}, "judged": "right (the same identity, rounded differently)"},
    {"id": "fused8.right.zero_slice_assign", "group": "right",
     "description": "host: sums[:] = 0; sumsqs[:] = 0.0 (NumPy's in-place fill)",
     "edits": [{"old": Z, "new": "    sums[:] = 0\n    sumsqs[:] = 0.0\n"}],
     "expect": {"code_points": 3}, "judged": "right (in place: the caller's buffers are zeroed)"},
    {"id": "fused8.wrong.sumsq_minus_sum_sq_over_n", "group": "wrong",
     "description": "host: var = sumsqs / N - sums * sums / N ((Σx)² divided by N once, not N²)",
     "edits": [{"old": V, "new": "var = sumsqs / N - sums * sums / N"}],
     "expect": {"code_points": 0, "diagnoses": ["combine_scale_wrong"]},
     "judged": "wrong wherever N > 1 (var = E[x²] − N·mean²); N = 1 gives 0, right, but the given check fails"},
    {"id": "fused8.wrong.fp16_block_sum", "group": "wrong",
     "description": "kernel: tl.sum(values * values, axis=0).to(tl.float16) (each program's sum of squares in fp16)",
     "edits": [{"old": K, "new": "tl.atomic_add(sumsqs + row, tl.sum(values * values, axis=0).to(tl.float16))"}],
     "expect": {"code_points": 2, "code_points_min": 0, "vetoes_may": ["coincidental_pass"],
                "failing_cases": ["probe.large_mean"], "diagnoses": ["half_overflow"]},
     "judged": "wrong: a block of 256 squares near 1600 sums past 65504 (inf in fp16) in probe.large_mean; elsewhere "
               "the fp16 rounding of a block's sum (relative 5e-4) is amplified by E[x²] - mean² and may fail "
               "regular cases too"},
]
