"""Third-party styles for puzzle_long_softmax (whole body). Judged verdicts in `expect` (code_points of 5)."""
EXERCISE = "puzzle_long_softmax"

PROBES = [
    {"id": "lsm.right.tutorial_where_inf", "group": "right",
     "description": "tutorial style: load with other=0.0 then tl.where(mask, x, -float('inf')); tl.range with num_stages; "
                    "online max/sum with tl.exp; tl.max(..., axis=-1)",
     "fill": """pid = tl.program_id(0)
rows = pid * B0 + tl.arange(0, B0)
row_mask = rows < N0
m = tl.full((B0,), -float("inf"), tl.float32)
d = tl.zeros((B0,), tl.float32)
for start in tl.range(0, T, B1, num_stages=2):
    cols = start + tl.arange(0, B1)
    mask = row_mask[:, None] & (cols[None, :] < T)
    x = tl.load(x_ptr + rows[:, None] * T + cols[None, :], mask=mask, other=0.0)
    x = tl.where(mask, x, -float("inf"))
    m_new = tl.maximum(m, tl.max(x, axis=-1))
    d = d * tl.exp(m - m_new) + tl.sum(tl.exp(x - m_new[:, None]), axis=-1)
    m = m_new
for start in tl.range(0, T, B1, num_stages=2):
    cols = start + tl.arange(0, B1)
    mask = row_mask[:, None] & (cols[None, :] < T)
    x = tl.load(x_ptr + rows[:, None] * T + cols[None, :], mask=mask, other=-float("inf"))
    tl.store(z_ptr + rows[:, None] * T + cols[None, :], tl.exp(x - m[:, None]) / d[:, None], mask=mask)
""",
     "expect": {"code_points": 5}, "judged": "right"},
    {"id": "lsm.right.liger_scalar_online", "group": "right",
     "description": "Liger cross-entropy style: one scalar row at a time, int64 row offset, scalar m/d, "
                    "tl.max(X, axis=0) with other=float('-inf'), reciprocal multiply",
     "fill": """pid = tl.program_id(0).to(tl.int64)
for r in tl.static_range(B0):
    row = pid * B0 + r
    if row < N0:
        x_row = x_ptr + row * T
        z_row = z_ptr + row * T
        m = float("-inf")
        d = 0.0
        for i in range(0, T, B1):
            offs = i + tl.arange(0, B1)
            X = tl.load(x_row + offs, mask=offs < T, other=float("-inf")).to(tl.float32)
            block_max = tl.max(X, axis=0)
            m_new = tl.maximum(m, block_max)
            d = d * tl.exp(m - m_new) + tl.sum(tl.exp(X - m_new), axis=0)
            m = m_new
        inv_d = 1.0 / d
        for i in range(0, T, B1):
            offs = i + tl.arange(0, B1)
            X = tl.load(x_row + offs, mask=offs < T, other=float("-inf")).to(tl.float32)
            tl.store(z_row + offs, tl.exp(X - m) * inv_d, mask=offs < T)
""",
     "expect": {"code_points": 5}, "judged": "right: 1/d times exp is within rtol 1e-4"},
    {"id": "lsm.right.exp2_libmath", "group": "right",
     "description": "FlagGems style: exp2 with log2(e) folded in, tl.math.exp2, keep_dims max, a 2-D mask built with broadcasting",
     "fill": """LOG2E: tl.constexpr = 1.4426950408889634
pid = tl.program_id(0)
r = pid * B0 + tl.arange(0, B0)[:, None]
m = tl.full((B0, 1), float("-inf"), dtype=tl.float32)
s = tl.zeros((B0, 1), dtype=tl.float32)
for off in range(0, T, B1):
    c = off + tl.arange(0, B1)[None, :]
    msk = (r < N0) & (c < T)
    x = tl.load(x_ptr + r * T + c, mask=msk, other=float("-inf"))
    mn = tl.maximum(m, tl.max(x, axis=1, keep_dims=True))
    s = s * tl.math.exp2((m - mn) * LOG2E) + tl.sum(tl.math.exp2((x - mn) * LOG2E), axis=1, keep_dims=True)
    m = mn
for off in range(0, T, B1):
    c = off + tl.arange(0, B1)[None, :]
    msk = (r < N0) & (c < T)
    x = tl.load(x_ptr + r * T + c, mask=msk, other=float("-inf"))
    tl.store(z_ptr + r * T + c, tl.math.exp2((x - m) * LOG2E) / s, mask=msk)
""",
     "expect": {"code_points": 5}, "judged": "right"},
    {"id": "lsm.wrong.other_zero_under_max", "group": "wrong",
     "description": "tutorial code with other=0 and no tl.where before the max (the blog's padding_option='zero' habit), Liger scalar-row style",
     "fill": """pid = tl.program_id(0)
for r in tl.static_range(B0):
    row = pid * B0 + r
    if row < N0:
        m = float("-inf")
        d = 0.0
        for i in range(0, T, B1):
            offs = i + tl.arange(0, B1)
            X = tl.load(x_ptr + row * T + offs, mask=offs < T, other=0.0)
            m_new = tl.maximum(m, tl.max(X, axis=0))
            d = d * tl.exp(m - m_new) + tl.sum(tl.exp(X - m_new), axis=0)
            m = m_new
        for i in range(0, T, B1):
            offs = i + tl.arange(0, B1)
            X = tl.load(x_ptr + row * T + offs, mask=offs < T, other=0.0)
            tl.store(z_ptr + row * T + offs, tl.exp(X - m) / d, mask=offs < T)
""",
     "expect": {"code_points": 2, "diagnoses": ["zero_padding"], "failing_cases": ["given", "probe.negative_ragged"]},
     "judged": "wrong: padding 0 enters the sum (and the max on all-negative rows); the given check's T=200 is ragged, "
               "so it fails too (first written as 3)"},
    {"id": "lsm.wrong.persistent_store_tail_unmasked", "group": "wrong",
     "description": "persistent loop over row blocks; the second pass stores without the cols < T mask",
     "fill": """pid = tl.program_id(0)
for rb in tl.range(pid, tl.cdiv(N0, B0), tl.num_programs(0)):
    rows = rb * B0 + tl.arange(0, B0)
    rm = rows < N0
    m = tl.full((B0,), float("-inf"), tl.float32)
    d = tl.zeros((B0,), tl.float32)
    for start in range(0, T, B1):
        cols = start + tl.arange(0, B1)
        mask = rm[:, None] & (cols[None, :] < T)
        x = tl.load(x_ptr + rows[:, None] * T + cols[None, :], mask=mask, other=float("-inf"))
        mn = tl.maximum(m, tl.max(x, axis=1))
        d = d * tl.exp(m - mn) + tl.sum(tl.exp(x - mn[:, None]), axis=1)
        m = mn
    for start in range(0, T, B1):
        cols = start + tl.arange(0, B1)
        mask = rm[:, None] & (cols[None, :] < T)
        x = tl.load(x_ptr + rows[:, None] * T + cols[None, :], mask=mask, other=float("-inf"))
        tl.store(z_ptr + rows[:, None] * T + cols[None, :], tl.exp(x - m[:, None]) / d[:, None], mask=rm[:, None])
""",
     "expect": {"code_points": 2, "diagnoses": ["store_cols_out_of_bounds"]},
     "judged": "wrong: the tail block writes 0s into the next row's head / past z; ragged T cases fail"},
    {"id": "lsm.wrong.fp16_exp", "group": "wrong",
     "description": "half-precision habit: logits cast to fp16 before exp (x.to(tl.float16)), sums in fp32",
     "fill": """pid = tl.program_id(0)
rows = pid * B0 + tl.arange(0, B0)
row_mask = rows < N0
m = tl.full((B0,), float("-inf"), dtype=tl.float32)
s = tl.zeros((B0,), dtype=tl.float32)
for start in range(0, T, B1):
    cols = start + tl.arange(0, B1)
    mask = row_mask[:, None] & (cols[None, :] < T)
    x = tl.load(x_ptr + rows[:, None] * T + cols[None, :], mask=mask, other=float("-inf"))
    m_new = tl.maximum(m, tl.max(x, axis=1))
    p = tl.exp((x - m_new[:, None]).to(tl.float16)).to(tl.float32)
    s = s * tl.exp(m - m_new) + tl.sum(p, axis=1)
    m = m_new
for start in range(0, T, B1):
    cols = start + tl.arange(0, B1)
    mask = row_mask[:, None] & (cols[None, :] < T)
    x = tl.load(x_ptr + rows[:, None] * T + cols[None, :], mask=mask, other=float("-inf"))
    z = tl.exp((x - m[:, None]).to(tl.float16)).to(tl.float32) / s[:, None]
    tl.store(z_ptr + rows[:, None] * T + cols[None, :], z, mask=mask)
""",
     "expect": {"code_points": 0},
     "judged": "wrong: fp16 relative error ~5e-4 > rtol 1e-4 on every case"},
    {"id": "lsm.wrong.max_axis0", "group": "wrong",
     "description": "reduction over the wrong axis: tl.max(x, axis=0) (the column max, (B1,)) into a (B0,) running max",
     "fill": """pid = tl.program_id(0)
rows = pid * B0 + tl.arange(0, B0)
row_mask = rows < N0
m = tl.full((B0,), float("-inf"), dtype=tl.float32)
s = tl.zeros((B0,), dtype=tl.float32)
for start in range(0, T, B1):
    cols = start + tl.arange(0, B1)
    mask = row_mask[:, None] & (cols[None, :] < T)
    x = tl.load(x_ptr + rows[:, None] * T + cols[None, :], mask=mask, other=float("-inf"))
    m_new = tl.maximum(m, tl.max(x, axis=0))
    s = s * tl.exp(m - m_new) + tl.sum(tl.exp(x - m_new[:, None]), axis=1)
    m = m_new
for start in range(0, T, B1):
    cols = start + tl.arange(0, B1)
    mask = row_mask[:, None] & (cols[None, :] < T)
    x = tl.load(x_ptr + rows[:, None] * T + cols[None, :], mask=mask, other=float("-inf"))
    tl.store(z_ptr + rows[:, None] * T + cols[None, :], tl.exp(x - m[:, None]) / s[:, None], mask=mask)
""",
     "expect": {"code_points": 0},
     "judged": "wrong: shape error on every case where B0 != B1 (all of them)"},
    {"id": "lsm.right.device_assert_static_print", "group": "right",
     "description": "debug leftovers: tl.static_print of the blocks and tl.device_assert(d > 0) in a correct kernel",
     "fill": """tl.static_print("B0, B1 =", B0, B1)
pid = tl.program_id(0)
rows = pid * B0 + tl.arange(0, B0)
row_mask = rows < N0
m = tl.full((B0,), float("-inf"), dtype=tl.float32)
d = tl.zeros((B0,), dtype=tl.float32)
for start in range(0, T, B1):
    cols = start + tl.arange(0, B1)
    mask = row_mask[:, None] & (cols[None, :] < T)
    x = tl.load(x_ptr + rows[:, None] * T + cols[None, :], mask=mask, other=float("-inf"))
    m_new = tl.maximum(m, tl.max(x, axis=1))
    d = d * tl.exp(m - m_new) + tl.sum(tl.exp(x - m_new[:, None]), axis=1)
    m = m_new
tl.device_assert((d > 0) | (rows >= N0), "empty row")
for start in range(0, T, B1):
    cols = start + tl.arange(0, B1)
    mask = row_mask[:, None] & (cols[None, :] < T)
    x = tl.load(x_ptr + rows[:, None] * T + cols[None, :], mask=mask, other=float("-inf"))
    tl.store(z_ptr + rows[:, None] * T + cols[None, :], tl.exp(x - m[:, None]) / d[:, None], mask=mask)
""",
     "expect": {"code_points": 5},
     "judged": "right: static_print prints at compile time, device_assert holds"},
]
