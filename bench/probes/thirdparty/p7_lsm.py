"""Third-party styles, seventh batch, puzzle_long_softmax (the whole kernel body).

A lane-wise online softmax (running max and sum kept per lane as [B0, B1] tiles in registers,
reduced once after the loop; guarded against -inf - -inf), a write pass through the log-sum-exp
(`exp(x - (m + log s))`), `tl.max(..., return_indices=True)`, the column stride taken from the
N1 argument (a CUDA port's explicit strides), a finite sentinel in the first pass and 0.0 in the
masked write pass, and the bugs: the lane-wise version without the -inf guard, the running sum
kept in fp16."""
EXERCISE = "puzzle_long_softmax"

HEAD = """pid = tl.program_id(0)
rows = pid * B0 + tl.arange(0, B0)
row_mask = rows < N0
"""


def online(*, pass1_other: str = 'float("-inf")', pass2_other: str = 'float("-inf")', col_stride: str = "",
           max_expr: str = "tl.max(x, axis=1)", s_cast: str = "", s_init: str = "tl.zeros((B0,), dtype=tl.float32)",
           write: str = "tl.exp(xv - m[:, None]) / s[:, None]") -> str:
    return HEAD + f"""m = tl.full((B0,), float("-inf"), dtype=tl.float32)
s = {s_init}
for start in range(0, T, B1):
    cols = start + tl.arange(0, B1)
    mask = row_mask[:, None] & (cols[None, :] < T)
    x = tl.load(x_ptr + rows[:, None] * T + cols[None, :]{col_stride}, mask=mask, other={pass1_other})
    m_new = tl.maximum(m, {max_expr})
    s = (s * tl.exp(m - m_new) + tl.sum(tl.exp(x - m_new[:, None]), axis=1)){s_cast}
    m = m_new
for start2 in range(0, T, B1):
    cols2 = start2 + tl.arange(0, B1)
    mask2 = row_mask[:, None] & (cols2[None, :] < T)
    xv = tl.load(x_ptr + rows[:, None] * T + cols2[None, :]{col_stride}, mask=mask2, other={pass2_other})
    tl.store(z_ptr + rows[:, None] * T + cols2[None, :]{col_stride}, {write}, mask=mask2)
"""


LANEWISE = HEAD + """m_t = tl.full((B0, B1), float("-inf"), dtype=tl.float32)
s_t = tl.zeros((B0, B1), dtype=tl.float32)
for start in range(0, T, B1):
    cols = start + tl.arange(0, B1)
    mask = row_mask[:, None] & (cols[None, :] < T)
    x = tl.load(x_ptr + rows[:, None] * T + cols[None, :], mask=mask, other=float("-inf"))
    m_new = tl.maximum(m_t, x)
    GUARDED_UPDATE
    m_t = m_new
m = tl.max(m_t, axis=1)
FINAL
for start2 in range(0, T, B1):
    cols2 = start2 + tl.arange(0, B1)
    mask2 = row_mask[:, None] & (cols2[None, :] < T)
    xv = tl.load(x_ptr + rows[:, None] * T + cols2[None, :], mask=mask2, other=float("-inf"))
    tl.store(z_ptr + rows[:, None] * T + cols2[None, :], tl.exp(xv - m[:, None]) / s[:, None], mask=mask2)
"""
GUARD = ('live = m_new > float("-inf")\n'
         '    s_t = tl.where(live, s_t * tl.exp(m_t - m_new) + tl.exp(x - m_new), 0.0)')
NO_GUARD = "s_t = s_t * tl.exp(m_t - m_new) + tl.exp(x - m_new)"
FINAL_GUARD = 's = tl.sum(tl.where(m_t > float("-inf"), s_t * tl.exp(m_t - m[:, None]), 0.0), axis=1)'
FINAL_NO_GUARD = "s = tl.sum(s_t * tl.exp(m_t - m[:, None]), axis=1)"

PROBES = [
    {"id": "lsm7.right.lanewise_online_guarded", "group": "right",
     "description": "running max and sum per lane ([B0, B1] tiles), reduced after the loop; lanes still at -inf "
                    "kept out with tl.where",
     "fill": LANEWISE.replace("GUARDED_UPDATE", GUARD).replace("FINAL", FINAL_GUARD),
     "expect": {"code_points": 5}, "judged": "right (each lane's (m, s) merged into the row's at the end)"},
    {"id": "lsm7.wrong.lanewise_online_unguarded", "group": "wrong",
     "description": "the lane-wise online softmax without the -inf guard (exp(-inf - -inf) = NaN on a lane that "
                    "never holds a valid column)",
     "fill": LANEWISE.replace("GUARDED_UPDATE", NO_GUARD).replace("FINAL", FINAL_NO_GUARD),
     "expect": {"code_points": 3, "failing_cases": ["boundary.t_short", "boundary.t_one"]},
     "judged": "wrong only where T < B1 (lanes T..B1-1 never valid: NaN in s); every case with T >= B1 gives each "
               "lane a finite max, so the regular cases and the given check pass; the probes too (T >= B1)"},
    {"id": "lsm7.right.logsumexp_write", "group": "right",
     "description": "the write pass as tl.exp(xv - (m + tl.log(s))) (through the log-sum-exp)",
     "fill": online(write="tl.exp(xv - (m + tl.log(s))[:, None])"),
     "expect": {"code_points": 5},
     "judged": "right (exp(x - m) / s; the rounding of m + log s is about 1 ulp of m, under rtol 1e-4)"},
    {"id": "lsm7.right.max_return_indices", "group": "right",
     "description": "bmax, _ = tl.max(x, axis=1, return_indices=True) (the indices unused)",
     "fill": online(max_expr="bmax").replace("    m_new = tl.maximum(m, bmax)",
                                             "    bmax, _ = tl.max(x, axis=1, return_indices=True)\n"
                                             "    m_new = tl.maximum(m, bmax)"),
     "expect": {"code_points": 5}, "judged": "right"},
    {"id": "lsm7.right.n1_column_stride", "group": "right",
     "description": "the column offset times N1 (the launch passes the column stride 1 as N1, a CUDA port's explicit strides)",
     "fill": online(col_stride=" * N1"),
     "expect": {"code_points": 5}, "judged": "right (N1 = 1 in every launch)"},
    {"id": "lsm7.right.sentinel_then_zero_other", "group": "right",
     "description": "other=-1e30 in the statistics pass, other=0.0 in the write pass (its padding is never stored)",
     "fill": online(pass1_other="-1e30", pass2_other="0.0"),
     "expect": {"code_points": 5},
     "judged": "right (exp(-1e30 - m) = 0; the write pass's padding lanes are masked off at the store)"},
    {"id": "lsm7.wrong.fp16_running_sum", "group": "wrong",
     "description": "the running sum kept in fp16: s = tl.zeros((B0,), dtype=tl.float16), each update cast .to(tl.float16)",
     "fill": online(s_init="tl.zeros((B0,), dtype=tl.float16)", s_cast=".to(tl.float16)"),
     "expect": {"code_points": 0, "diagnoses": ["half_precision_sum"]},
     "judged": "wrong everywhere: fp16 keeps 11 significant bits (relative 5e-4 per update) against rtol 1e-4"},
]
