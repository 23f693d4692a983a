"""Third-party styles, seventh batch, fused_mean_var_atomic (kernel blank + two host blanks).

Float64 accumulation of the squares (cast back for the float32 atomic), a clamp of the variance
at 0 on the host (`torch.clamp(..., min=0.0)`), the scratch zeroed in a loop over the two buffers,
the scratch replaced by fresh tensors (a local rebinding), and the bug: the squares summed in fp16."""
EXERCISE = "fused_mean_var_atomic"
K = "tl.atomic_add(sumsqs + row, tl.sum(values * values, axis=0))"
V = "var = sumsqs / N - mean * mean"
Z = "    sums.zero_()\n    sumsqs.zero_()\n"

PROBES = [
    {"id": "fused7.right.float64_squares", "group": "right",
     "description": "kernel: tl.sum(values.to(tl.float64) * values.to(tl.float64), axis=0).to(tl.float32)",
     "edits": [{"old": K, "new": "tl.atomic_add(sumsqs + row, tl.sum(values.to(tl.float64) * values.to(tl.float64), "
                                 "axis=0).to(tl.float32))"}],
     "expect": {"code_points": 3}, "judged": "right (the block's sum of squares in float64, added as float32)"},
    {"id": "fused7.right.host_clamp_zero", "group": "right",
     "description": "host: var = torch.clamp(sumsqs / N - mean * mean, min=0.0) (cancellation never negative)",
     "edits": [{"old": V, "new": "var = torch.clamp(sumsqs / N - mean * mean, min=0.0)"}],
     "expect": {"code_points": 3}, "judged": "right (a population variance is >= 0; the clamp only removes rounding below 0)"},
    {"id": "fused7.right.zero_in_loop", "group": "right",
     "description": "host: for buf in (sums, sumsqs): buf.zero_()",
     "edits": [{"old": Z, "new": "    for buf in (sums, sumsqs):\n        buf.zero_()\n"}],
     "expect": {"code_points": 3}, "judged": "right"},
    {"id": "fused7.right.fresh_scratch_rebound", "group": "right",
     "description": "host: sums = torch.zeros_like(sums); sumsqs = torch.zeros_like(sumsqs) (new buffers, names rebound)",
     "edits": [{"old": Z, "new": "    sums = torch.zeros_like(sums)\n    sumsqs = torch.zeros_like(sumsqs)\n"}],
     "expect": {"code_points": 3},
     "judged": "right in its outputs: the kernel and finalize both use the rebound zeroed tensors, each call (probe.twice) "
               "starts from zero; the caller's buffers are left alone, which the returned mean and var do not need"},
    {"id": "fused7.wrong.fp16_squares", "group": "wrong",
     "description": "kernel: tl.sum((values * values).to(tl.float16), axis=0) (the squares summed in fp16)",
     "edits": [{"old": K, "new": "tl.atomic_add(sumsqs + row, tl.sum((values * values).to(tl.float16), axis=0))"}],
     "expect": {"code_points": 2, "code_points_min": 0, "vetoes_may": ["coincidental_pass"],
                "failing_cases": ["probe.large_mean"], "diagnoses": ["half_overflow"]},
     "judged": "wrong: a block of 256 squares near 1600 passes 65504 in fp16 (inf) in probe.large_mean; elsewhere fp16's "
               "rounding (about 1e-3 relative) is amplified by E[x²] - mean² and may fail regular cases too. (first judged without the veto: where the regular cases pass, coincidental_pass is right, probe.large_mean being the only failure; 2 with the veto on the 3.9 interpreter)"},
]
