"""Third-party styles, sixth batch, puzzle_long_softmax (the whole kernel body).

Int64 program ids, a loop-carried (m, s) tuple over `tl.range`, the block maximum taken from
`tl.sort` (its last column), exp through `tl.math.exp2` with a clamped exponent (`tl.clamp`), a
`tl.where` chain after an other=0 load, z written twice (unnormalised, then rescaled in place),
and the bugs: the sum overwritten per block, the store's column bound one short (`< T - 1`)."""
EXERCISE = "puzzle_long_softmax"

PASS2 = """for start in range(0, T, B1):
    cols = start + tl.arange(0, B1)
    msk = rmask[:, None] & (cols[None, :] < T)
    x = tl.load(x_ptr + rows[:, None] * T + cols[None, :], mask=msk, other=-float('inf'))
    tl.store(z_ptr + rows[:, None] * T + cols[None, :], tl.exp(x - m[:, None]) / s[:, None], mask=msk)
"""
HEAD = """pid = tl.program_id(0).to(tl.int64)
rows = pid * B0 + tl.arange(0, B0)
rmask = rows < N0
m = tl.full([B0], -float('inf'), tl.float32)
s = tl.zeros([B0], tl.float32)
"""
PASS1 = """for start in range(0, T, B1):
    cols = start + tl.arange(0, B1)
    msk = rmask[:, None] & (cols[None, :] < T)
    x = tl.load(x_ptr + rows[:, None] * T + cols[None, :], mask=msk, other=-float('inf'))
    m_new = tl.maximum(m, tl.max(x, axis=1))
    s = s * tl.exp(m - m_new) + tl.sum(tl.exp(x - m_new[:, None]), axis=1)
    m = m_new
"""

PROBES = [
    {"id": "lsm6.right.int64_pid_tuple_range", "group": "right",
     "description": "int64 program id; the online state as a loop-carried tuple over tl.range(0, T, B1)",
     "fill": HEAD + """for start in tl.range(0, T, B1):
    cols = start + tl.arange(0, B1)
    msk = rmask[:, None] & (cols[None, :] < T)
    x = tl.load(x_ptr + rows[:, None] * T + cols[None, :], mask=msk, other=-float('inf'))
    m_new = tl.maximum(m, tl.max(x, axis=1))
    m, s = m_new, s * tl.exp(m - m_new) + tl.sum(tl.exp(x - m_new[:, None]), axis=1)
""" + PASS2,
     "expect": {"code_points": 5}, "judged": "right"},
    {"id": "lsm6.right.sort_last_column_max", "group": "right",
     "description": "the block max as tl.sort(x, dim=1)'s last column, picked by tl.where on the lane index",
     "fill": HEAD + PASS1.replace(
         "    m_new = tl.maximum(m, tl.max(x, axis=1))\n",
         "    srt = tl.sort(x, dim=1)\n"
         "    last = tl.arange(0, B1)[None, :] == B1 - 1\n"
         "    m_new = tl.maximum(m, tl.max(tl.where(last, srt, -float('inf')), axis=1))\n") + PASS2,
     "expect": {"code_points": 5}, "judged": "right (the sorted block's last column is its max)"},
    {"id": "lsm6.right.exp2_clamped_exponent", "group": "right",
     "description": "exp through tl.math.exp2 with the exponent clamped: tl.clamp((x - m) * log2(e), -126.0, 0.0)",
     "fill": HEAD + PASS1 + PASS2.replace(
         "tl.exp(x - m[:, None]) / s[:, None]",
         "tl.math.exp2(tl.clamp((x - m[:, None]) * 1.4426950408889634, -126.0, 0.0)) / s[:, None]"),
     "expect": {"code_points": 5},
     "judged": "right (a clamped lane's 2^-126 is below the atol 1e-6; masked lanes are not stored)"},
    {"id": "lsm6.right.where_chain_after_zero_load", "group": "right",
     "description": "loads with other=0.0, then x = tl.where(msk, x, float('-inf')) in both passes",
     "fill": (HEAD + PASS1 + PASS2).replace(
         "mask=msk, other=-float('inf'))\n",
         "mask=msk, other=0.0)\n    x = tl.where(msk, x, float('-inf'))\n"),
     "expect": {"code_points": 5}, "judged": "right"},
    {"id": "lsm6.right.z_written_twice", "group": "right",
     "description": "pass 2 stores exp(x - m) into z; pass 3 loads z back and divides by s in place",
     "fill": HEAD + PASS1 + PASS2.replace(" / s[:, None]", "") + """for start in range(0, T, B1):
    cols = start + tl.arange(0, B1)
    msk = rmask[:, None] & (cols[None, :] < T)
    zp = z_ptr + rows[:, None] * T + cols[None, :]
    tl.store(zp, tl.load(zp, mask=msk, other=0.0) / s[:, None], mask=msk)
""",
     "expect": {"code_points": 5}, "judged": "right (each program reads back only what it wrote)"},
    {"id": "lsm6.wrong.sum_overwritten", "group": "wrong",
     "description": "s = tl.sum(tl.exp(x - m_new[:, None]), axis=1) (the last block's sum only)",
     "fill": HEAD + PASS1.replace("s = s * tl.exp(m - m_new) + tl.sum(", "s = tl.sum(") + PASS2,
     "expect": {"code_points": 0},
     "judged": "wrong wherever T > B1 (the denominator is the last block's)"},
    {"id": "lsm6.wrong.store_cols_t_minus_one", "group": "wrong",
     "description": "the store's mask cols < T - 1 (off by one: the last column never written)",
     "fill": HEAD + PASS1 + PASS2.replace(
         "mask=msk)\n", "mask=rmask[:, None] & (cols[None, :] < T - 1))\n"),
     "expect": {"code_points": 0, "diagnoses": ["tail_columns_unwritten"]},
     "judged": "wrong everywhere (z's last column keeps the buffer's NaN)"},
]
