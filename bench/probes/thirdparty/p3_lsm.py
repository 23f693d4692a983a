"""Third-party styles, third round, puzzle_long_softmax (the whole kernel body)."""
EXERCISE = "puzzle_long_softmax"

INDUCTOR = """XBLOCK: tl.constexpr = B0
RBLOCK: tl.constexpr = B1
xnumel = N0
rnumel = T
xoffset = tl.program_id(0) * XBLOCK
xindex = xoffset + tl.arange(0, XBLOCK)[:, None]
xmask = xindex < xnumel
rbase = tl.arange(0, RBLOCK)[None, :]
x0 = xindex
_tmp2 = tl.full([XBLOCK, RBLOCK], float("-inf"), tl.float32)
for roffset in range(0, rnumel, RBLOCK):
    rindex = roffset + rbase
    rmask = rindex < rnumel
    r1 = rindex
    tmp0 = tl.load(x_ptr + (r1 + (T * x0)), rmask & xmask, eviction_policy='evict_last', other=0.0)
    tmp1 = tl.broadcast_to(tmp0, [XBLOCK, RBLOCK])
    tmp3 = tl.maximum(_tmp2, tmp1)
    _tmp2 = tl.where(rmask & xmask, tmp3, _tmp2)
tmp2 = tl.max(_tmp2, 1)[:, None]
_tmp8 = tl.full([XBLOCK, RBLOCK], 0, tl.float32)
for roffset in range(0, rnumel, RBLOCK):
    rindex = roffset + rbase
    rmask = rindex < rnumel
    r1 = rindex
    tmp4 = tl.load(x_ptr + (r1 + (T * x0)), rmask & xmask, eviction_policy='evict_last', other=0.0)
    tmp5 = tmp4 - tmp2
    tmp6 = tl.exp(tmp5)
    tmp7 = tl.broadcast_to(tmp6, [XBLOCK, RBLOCK])
    tmp9 = _tmp8 + tmp7
    _tmp8 = tl.where(rmask & xmask, tmp9, _tmp8)
tmp8 = tl.sum(_tmp8, 1)[:, None]
for roffset in range(0, rnumel, RBLOCK):
    rindex = roffset + rbase
    rmask = rindex < rnumel
    r1 = rindex
    tmp10 = tl.load(x_ptr + (r1 + (T * x0)), rmask & xmask, eviction_policy='evict_first', other=0.0)
    tmp11 = tmp10 - tmp2
    tmp12 = tl.exp(tmp11)
    tmp13 = tmp12 / tmp8
    tl.store(z_ptr + (r1 + (T * x0)), tmp13, rmask & xmask)
"""

PROBES = [
    {"id": "lsm3.right.inductor_three_loops", "group": "right",
     "description": "Inductor's generated softmax: max loop, sum loop, output loop, 2-D _tmp accumulators",
     "fill": INDUCTOR, "expect": {"code_points": 5}, "judged": "right"},
    {"id": "lsm3.wrong.inductor_store_rmask_only", "group": "wrong",
     "description": "Inductor-like with the last store masked by rmask only (xmask dropped)",
     "fill": INDUCTOR.replace("tl.store(z_ptr + (r1 + (T * x0)), tmp13, rmask & xmask)",
                              "tl.store(z_ptr + (r1 + (T * x0)), tmp13, rmask)"),
     "expect": {"code_points": 3, "vetoes": ["coincidental_pass"], "diagnoses": ["store_out_of_bounds"]},
     "judged": "wrong when B0 does not divide N0 (probe.rows_tail: the padding rows are written past z); "
               "the given check and the regular cases pass"},
    {"id": "lsm3.right.static_range_rows_online", "group": "right",
     "description": "puzzles / CUDA habit: each of the B0 rows in tl.static_range, a scalar online max/sum, early skip by if",
     "fill": """pid = tl.program_id(0)
for i in tl.static_range(B0):
    row = pid * B0 + i
    if row < N0:
        m = -float("inf")
        s = 0.0
        for j in range(0, T, B1):
            offs = j + tl.arange(0, B1)
            x = tl.load(x_ptr + row * T + offs, mask=offs < T, other=-float("inf"))
            m_new = tl.maximum(m, tl.max(x, axis=0))
            s = s * tl.exp(m - m_new) + tl.sum(tl.exp(x - m_new), axis=0)
            m = m_new
        for j in range(0, T, B1):
            offs = j + tl.arange(0, B1)
            x = tl.load(x_ptr + row * T + offs, mask=offs < T, other=-float("inf"))
            tl.store(z_ptr + row * T + offs, tl.exp(x - m) / s, mask=offs < T)
""",
     "expect": {"code_points": 5}, "judged": "right (the scalars m, s are loop-carried float32)"},
    {"id": "lsm3.right.vllm_int64_return", "group": "right",
     "description": "vLLM: early return, int64 row offsets, exp2 with log2(e), reciprocal of s",
     "fill": """pid = tl.program_id(0)
if pid * B0 >= N0:
    return
LOG2E: tl.constexpr = 1.4426950408889634
rows = pid * B0 + tl.arange(0, B0)
rmask = rows < N0
row_off = rows.to(tl.int64) * T
m = tl.full((B0,), -float("inf"), tl.float32)
s = tl.zeros((B0,), tl.float32)
for start in range(0, T, B1):
    cols = tl.max_contiguous(tl.multiple_of(start + tl.arange(0, B1), B1), B1)
    mask = rmask[:, None] & (cols[None, :] < T)
    x = tl.load(x_ptr + row_off[:, None] + cols[None, :], mask=mask, other=-float("inf")).to(tl.float32)
    m_new = tl.maximum(m, tl.max(x, 1))
    s = s * tl.exp2((m - m_new) * LOG2E) + tl.sum(tl.exp2((x - m_new[:, None]) * LOG2E), 1)
    m = m_new
inv = 1.0 / s
for start in range(0, T, B1):
    cols = start + tl.arange(0, B1)
    mask = rmask[:, None] & (cols[None, :] < T)
    x = tl.load(x_ptr + row_off[:, None] + cols[None, :], mask=mask, other=-float("inf"))
    tl.store(z_ptr + row_off[:, None] + cols[None, :], tl.exp2((x - m[:, None]) * LOG2E) * inv[:, None], mask=mask)
""",
     "expect": {"code_points": 5}, "judged": "right (reciprocal multiply within rtol 1e-4)"},
    {"id": "lsm3.wrong.online_no_rescale", "group": "wrong",
     "description": "CUDA port of online softmax that forgets to rescale the running sum: s += sum(exp(x - m_new))",
     "fill": """pid = tl.program_id(0)
rows = pid * B0 + tl.arange(0, B0)
rmask = rows < N0
m = tl.full((B0,), -float("inf"), tl.float32)
s = tl.zeros((B0,), tl.float32)
for start in range(0, T, B1):
    cols = start + tl.arange(0, B1)
    mask = rmask[:, None] & (cols[None, :] < T)
    x = tl.load(x_ptr + rows[:, None] * T + cols[None, :], mask=mask, other=-float("inf"))
    m = tl.maximum(m, tl.max(x, 1))
    s += tl.sum(tl.exp(x - m[:, None]), 1)
for start in range(0, T, B1):
    cols = start + tl.arange(0, B1)
    mask = rmask[:, None] & (cols[None, :] < T)
    x = tl.load(x_ptr + rows[:, None] * T + cols[None, :], mask=mask, other=-float("inf"))
    tl.store(z_ptr + rows[:, None] * T + cols[None, :], tl.exp(x - m[:, None]) / s[:, None], mask=mask)
""",
     "expect": {"code_points": 0},
     "judged": "wrong whenever a later block raises the max (every multi-block row of random data, the given check included)"},
    {"id": "lsm3.hidden.ai_where_chain_nan_guard", "group": "hidden",
     "description": "AI-assistant: loads with other=0.0 and a tl.where chain that guards NaN but not the padding in the max",
     "fill": """pid = tl.program_id(0)
rows = pid * B0 + tl.arange(0, B0)
rmask = rows < N0
m = tl.full((B0,), -float("inf"), tl.float32)
for start in range(0, T, B1):
    cols = start + tl.arange(0, B1)
    mask = rmask[:, None] & (cols[None, :] < T)
    x = tl.load(x_ptr + rows[:, None] * T + cols[None, :], mask=mask, other=0.0)
    x = tl.where(x != x, -float("inf"), x)
    m = tl.maximum(m, tl.max(x, 1))
s = tl.zeros((B0,), tl.float32)
for start in range(0, T, B1):
    cols = start + tl.arange(0, B1)
    mask = rmask[:, None] & (cols[None, :] < T)
    x = tl.load(x_ptr + rows[:, None] * T + cols[None, :], mask=mask, other=0.0)
    e = tl.where(mask, tl.exp(x - m[:, None]), 0.0)
    s += tl.sum(e, 1)
for start in range(0, T, B1):
    cols = start + tl.arange(0, B1)
    mask = rmask[:, None] & (cols[None, :] < T)
    x = tl.load(x_ptr + rows[:, None] * T + cols[None, :], mask=mask, other=0.0)
    tl.store(z_ptr + rows[:, None] * T + cols[None, :], tl.where(s[:, None] > 0, tl.exp(x - m[:, None]) / s[:, None], 0.0), mask=mask)
""",
     "expect": {"code_points": 5},
     "judged": "hidden: the padding 0 enters the max (max(row, 0)) but not the sum; softmax is shift-invariant, so "
               "only rows below about -87 (exp underflow) would show it, and the exercise has none (negative: -8..-4)"},
]
