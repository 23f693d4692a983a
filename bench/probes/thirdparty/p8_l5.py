"""Third-party styles, eighth batch, lesson05_row_sum (three blanks; edits of solution.py).

A 64-bit row offset through `tl.cast` of the constexpr stride (an int64 habit), the bound written
`cols <= N - 1` and `cols < tl.minimum(N, BLOCK)` (a defensive clamp), and the bug: a "safe" mask
`cols < tl.maximum(N, stride_m)` (the larger of width and stride, which reads the gap of a strided row)."""
EXERCISE = "lesson05_row_sum"
LD = "mask=cols < N, other=0.0)"
ST = "row_start = x + row * stride_m"

PROBES = [
    {"id": "l5_8.right.cast_int64_stride", "group": "right",
     "description": "row offset row * tl.cast(stride_m, tl.int64) (64-bit offsets, a large-tensor habit)",
     "edits": [{"old": ST, "new": "row_start = x + row * tl.cast(stride_m, tl.int64)"}],
     "expect": {"code_points": 3}, "judged": "right (the same offsets in int64)"},
    {"id": "l5_8.right.mask_le_n_minus_one_where", "group": "right",
     "description": "mask=tl.where(cols <= N - 1, True, False) (a jnp.where habit: the boolean spelled out)",
     "edits": [{"old": LD, "new": "mask=tl.where(cols <= N - 1, True, False), other=0.0)"}],
     "expect": {"code_points": 3}, "judged": "right (cols <= N - 1 is cols < N for integers)"},
    {"id": "l5_8.right.mask_min_block", "group": "right",
     "description": "mask=cols < tl.minimum(N, BLOCK) (a defensive clamp of the bound to the block)",
     "edits": [{"old": LD, "new": "mask=cols < tl.minimum(N, BLOCK), other=0.0)"}],
     "expect": {"code_points": 3}, "judged": "right (BLOCK = next_power_of_2(N) >= N)"},
    {"id": "l5_8.wrong.mask_max_stride", "group": "wrong",
     "description": "mask=cols < tl.maximum(N, stride_m) (the larger of width and stride: 'never too few lanes')",
     "edits": [{"old": LD, "new": "mask=cols < tl.maximum(N, stride_m), other=0.0)"}],
     "expect": {"code_points": 2, "vetoes": ["coincidental_pass"], "failing_cases": ["probe.strided"],
                "diagnoses": ["mask_too_wide"]},
     "judged": "wrong on a strided view (stride 40 > N = 33: lanes 33..39 read the gap between rows); right wherever "
               "stride = N (the given check, every regular and boundary case): probe.strided alone fails"},
]
