"""Third-party styles, second batch, puzzle_long_softmax."""
EXERCISE = "puzzle_long_softmax"
LAUNCH = "softmax_kernel[(triton.cdiv(N0, B0),)](x, z, N0, 1, T, B0=B0, B1=B1)"

PROBES = [
    {"id": "lsm2.outside.num_warps", "group": "outside",
     "description": "tutorial launch options num_warps=4, num_stages=2 added to the host launch (outside the blank)",
     "edits": [{"old": LAUNCH, "new": "softmax_kernel[(triton.cdiv(N0, B0),)](x, z, N0, 1, T, B0=B0, B1=B1, num_warps=4, num_stages=2)"}],
     "expect": {"code_points": 5, "vetoes": ["modified_outside_blank"]},
     "judged": "an edit outside the blank: the template's launch runs instead (the body is right: 5), vetoed, not "
               "passed (first written as 0)"},
    {"id": "lsm2.wrong.second_pass_block_max", "group": "wrong",
     "description": "second pass normalises with the current block's max instead of the row's max m",
     "edits": [{"old": "        z = tl.exp2(log2_e * (xv - m[:, None])) / s[:, None]",
                "new": "        z = tl.exp2(log2_e * (xv - tl.max(xv, axis=1)[:, None])) / s[:, None]"}],
     "expect": {"code_points": 0},
     "judged": "wrong wherever a row has >1 block with different maxima"},
]
