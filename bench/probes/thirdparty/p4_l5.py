"""Third-party styles, fourth batch, lesson05_row_sum (three blanks; edits of solution.py)."""
EXERCISE = "lesson05_row_sum"
S1 = "row_start = x + row * stride_m"
LD = "mask=cols < N, other=0.0)"

PROBES = [
    {"id": "l5_4.right.where_int_mask", "group": "right",
     "description": "a mask built by tl.where: tl.where(cols < N, 1, 0).to(tl.int1)",
     "edits": [{"old": LD, "new": "mask=tl.where(cols < N, 1, 0).to(tl.int1), other=0.0)"}],
     "expect": {"code_points": 3}, "judged": "right"},
    {"id": "l5_4.right.other_zero_tensor", "group": "right",
     "description": "other=cols * 0.0 (a zero tensor of the block's shape, fp32 by promotion)",
     "edits": [{"old": LD, "new": "mask=cols < N, other=cols * 0.0)"}],
     "expect": {"code_points": 3}, "judged": "right"},
    {"id": "l5_4.right.reversed_compare_cdiv_stride", "group": "right",
     "description": "N > cols (the comparison reversed) and the stride written tl.cdiv(stride_m, 1)",
     "edits": [{"old": S1, "new": "row_start = x + row * tl.cdiv(stride_m, 1)"},
               {"old": LD, "new": "mask=N > cols, other=0.0)"}],
     "expect": {"code_points": 3}, "judged": "right"},
    {"id": "l5_4.wrong.stride_rounded_to_block", "group": "wrong",
     "description": "row stride rounded up to the block: tl.cdiv(stride_m, BLOCK) * BLOCK (a padded-layout habit)",
     "edits": [{"old": S1, "new": "row_start = x + row * (tl.cdiv(stride_m, BLOCK) * BLOCK)"}],
     "expect": {"code_points": 1.5},
     "judged": "wrong wherever the stride is not a power of 2 (N = 17 ...); power-of-2 strides (128) pass"},
    {"id": "l5_4.wrong.mask_n_minus_one", "group": "wrong",
     "description": "off-by-one: mask=cols < N - 1 (the last column dropped)",
     "edits": [{"old": LD, "new": "mask=cols < N - 1, other=0.0)"}],
     "expect": {"code_points": 0}, "judged": "wrong on every row: x[:, N-1] missing"},
    {"id": "l5_4.wrong.other_index", "group": "wrong",
     "description": "other=cols * 1.0 (the padding lane's own index)",
     "edits": [{"old": LD, "new": "mask=cols < N, other=cols * 1.0)"}],
     "expect": {"code_points": 1.5},
     "judged": "wrong on every ragged row (adds N + ... + BLOCK-1); N a power of 2 passes"},
]
