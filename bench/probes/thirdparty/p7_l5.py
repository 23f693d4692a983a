"""Third-party styles, seventh batch, lesson05_row_sum (three blanks; edits of solution.py).

A CUDA programmer's lane arithmetic (`(cols - N) < 0`, a bounds test on both the lane and the row),
the additive identity written as `-0.0`, and the bugs: a mask that ORs in the block's own bound
(every lane true), a bound rounded up to an even count (a float2-vectorised load habit)."""
EXERCISE = "lesson05_row_sum"
LD = "mask=cols < N, other=0.0)"

PROBES = [
    {"id": "l5_7.right.negative_zero_other", "group": "right",
     "description": "other=-0.0 (IEEE's additive identity: x + -0.0 == x for every x)",
     "edits": [{"old": LD, "new": "mask=cols < N, other=-0.0)"}],
     "expect": {"code_points": 3}, "judged": "right (a sum of -0.0 padding changes nothing)"},
    {"id": "l5_7.right.cuda_lane_minus_n", "group": "right",
     "description": "mask=(cols - N) < 0 (CUDA's `tid - n < 0` lane arithmetic)",
     "edits": [{"old": LD, "new": "mask=(cols - N) < 0, other=0.0)"}],
     "expect": {"code_points": 3}, "judged": "right (signed int32 lanes, N < 2^31)"},
    {"id": "l5_7.right.three_way_and", "group": "right",
     "description": "mask=(cols >= 0) & (cols < N) & (row >= 0) (a CUDA bounds test on lane and row, a scalar in the chain)",
     "edits": [{"old": LD, "new": "mask=(cols >= 0) & (cols < N) & (row >= 0), other=0.0)"}],
     "expect": {"code_points": 3}, "judged": "right (the extra conditions are always true)"},
    {"id": "l5_7.wrong.or_block_bound", "group": "wrong",
     "description": "mask=(cols < N) | (cols < BLOCK) (an OR where an AND was meant: every lane true)",
     "edits": [{"old": LD, "new": "mask=(cols < N) | (cols < BLOCK), other=0.0)"}],
     "expect": {"code_points": 1.5},
     "judged": "wrong wherever N is not a power of 2 (the lanes past N read the next row; the given check (3, 17) "
               "fails: 3 of 4 regular-item cases, 1.5); right on the power-of-2 regular cases"},
    {"id": "l5_7.wrong.bound_rounded_even", "group": "wrong",
     "description": "mask=cols < tl.cdiv(N, 2) * 2 (the bound rounded up to pairs, a float2 load habit)",
     "edits": [{"old": LD, "new": "mask=cols < tl.cdiv(N, 2) * 2, other=0.0)"}],
     "expect": {"code_points": 1.5, "failing_cases": ["probe.padding_identity"]},
     "judged": "wrong on odd N > 1 (one lane of the next row added): the given check (N = 17) and probe.padding_identity "
               "(N = 33) fail; even N and N = 1 (BLOCK = 1) are right"},
]
