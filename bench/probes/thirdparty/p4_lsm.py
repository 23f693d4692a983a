"""Third-party styles, fourth batch, puzzle_long_softmax (the whole kernel body).

Row-pointer style, keep_dims running statistics ((B0, 1) m and s), tl.where on offsets instead of
load masks, three passes (max, sum, write), a running max started at 0, tl.static_assert, an
associative-scan helper outside the blank; reductions without axis, store masks missing a direction,
the write pass divided by the block's sum."""
EXERCISE = "puzzle_long_softmax"

KERNEL = "@triton.jit\ndef softmax_kernel(x_ptr, z_ptr, N0, N1, T, B0: tl.constexpr, B1: tl.constexpr):\n"

PROBES = [
    {"id": "lsm4.right.row_pointer_three_pass", "group": "right",
     "description": "row-pointer style (x_ptr += pid * B0 * T), three passes: row max, then sum of exp, then the write",
     "fill": """pid = tl.program_id(0)
x_ptr += pid * B0 * T
z_ptr += pid * B0 * T
r = tl.arange(0, B0)
rmask = (pid * B0 + r) < N0
m = tl.full((B0,), -float("inf"), tl.float32)
for off in range(0, T, B1):
    c = off + tl.arange(0, B1)
    msk = rmask[:, None] & (c[None, :] < T)
    m = tl.maximum(m, tl.max(tl.load(x_ptr + r[:, None] * T + c[None, :], mask=msk, other=-float("inf")), axis=1))
s = tl.zeros((B0,), tl.float32)
for off in range(0, T, B1):
    c = off + tl.arange(0, B1)
    msk = rmask[:, None] & (c[None, :] < T)
    s += tl.sum(tl.exp(tl.load(x_ptr + r[:, None] * T + c[None, :], mask=msk, other=-float("inf")) - m[:, None]), axis=1)
for off in range(0, T, B1):
    c = off + tl.arange(0, B1)
    msk = rmask[:, None] & (c[None, :] < T)
    v = tl.load(x_ptr + r[:, None] * T + c[None, :], mask=msk, other=-float("inf"))
    tl.store(z_ptr + r[:, None] * T + c[None, :], tl.exp(v - m[:, None]) / s[:, None], mask=msk)
""",
     "expect": {"code_points": 5}, "judged": "right"},
    {"id": "lsm4.right.keepdims_online", "group": "right",
     "description": "online softmax with (B0, 1) statistics from keep_dims=True reductions, int64 row offsets",
     "fill": """pid = tl.program_id(0).to(tl.int64)
rows = (pid * B0 + tl.arange(0, B0))[:, None]
m = tl.full((B0, 1), float("-inf"), tl.float32)
s = tl.zeros((B0, 1), tl.float32)
for start in range(0, T, B1):
    cols = (start + tl.arange(0, B1))[None, :]
    msk = (rows < N0) & (cols < T)
    x = tl.load(x_ptr + rows * T + cols, mask=msk, other=float("-inf"))
    m_new = tl.maximum(m, tl.max(x, axis=1, keep_dims=True))
    s = s * tl.exp(m - m_new) + tl.sum(tl.exp(x - m_new), axis=1, keep_dims=True)
    m = m_new
for start in range(0, T, B1):
    cols = (start + tl.arange(0, B1))[None, :]
    msk = (rows < N0) & (cols < T)
    x = tl.load(x_ptr + rows * T + cols, mask=msk, other=float("-inf"))
    tl.store(z_ptr + rows * T + cols, tl.exp(x - m) / s, mask=msk)
""",
     "expect": {"code_points": 5},
     "judged": "right (rows past N0: m = -inf, exp(nan) in masked lanes only, never stored)"},
    {"id": "lsm4.right.where_safe_offsets", "group": "right",
     "description": "loads without masks at offsets made safe by tl.where, then tl.where(valid, x, -inf); store masked",
     "fill": """pid = tl.program_id(0)
rows = pid * B0 + tl.arange(0, B0)
m = tl.full((B0,), float("-inf"), tl.float32)
s = tl.zeros((B0,), tl.float32)
for start in range(0, T, B1):
    cols = start + tl.arange(0, B1)
    valid = (rows[:, None] < N0) & (cols[None, :] < T)
    x = tl.load(x_ptr + tl.where(valid, rows[:, None] * T + cols[None, :], 0))
    x = tl.where(valid, x, float("-inf"))
    m_new = tl.maximum(m, tl.max(x, axis=1))
    s = s * tl.exp(m - m_new) + tl.sum(tl.exp(x - m_new[:, None]), axis=1)
    m = m_new
for start in range(0, T, B1):
    cols = start + tl.arange(0, B1)
    valid = (rows[:, None] < N0) & (cols[None, :] < T)
    x = tl.load(x_ptr + tl.where(valid, rows[:, None] * T + cols[None, :], 0))
    tl.store(z_ptr + rows[:, None] * T + cols[None, :], tl.exp(x - m[:, None]) / s[:, None], mask=valid)
""",
     "expect": {"code_points": 5}, "judged": "right"},
    {"id": "lsm4.right.max_from_zero", "group": "right",
     "description": "running max initialised with 0 instead of -inf (tl.zeros for m): the shift still cancels",
     "fill": """pid = tl.program_id(0)
rows = pid * B0 + tl.arange(0, B0)
m = tl.zeros((B0,), tl.float32)
s = tl.zeros((B0,), tl.float32)
for start in range(0, T, B1):
    cols = start + tl.arange(0, B1)
    msk = (rows[:, None] < N0) & (cols[None, :] < T)
    x = tl.load(x_ptr + rows[:, None] * T + cols[None, :], mask=msk, other=float("-inf"))
    m_new = tl.maximum(m, tl.max(x, axis=1))
    s = s * tl.exp(m - m_new) + tl.sum(tl.exp(x - m_new[:, None]), axis=1)
    m = m_new
for start in range(0, T, B1):
    cols = start + tl.arange(0, B1)
    msk = (rows[:, None] < N0) & (cols[None, :] < T)
    x = tl.load(x_ptr + rows[:, None] * T + cols[None, :], mask=msk, other=float("-inf"))
    tl.store(z_ptr + rows[:, None] * T + cols[None, :], tl.exp(x - m[:, None]) / s[:, None], mask=msk)
""",
     "expect": {"code_points": 5},
     "judged": "right for the course's logits (any shift >= the row max is exact; exp underflows only below about -87)"},
    {"id": "lsm4.wrong.sum_no_axis", "group": "wrong",
     "description": "tl.sum(tl.exp(x - m_new[:, None])) without axis=: the block's rows summed together into every row's s",
     "fill": """pid = tl.program_id(0)
rows = pid * B0 + tl.arange(0, B0)
m = tl.full((B0,), float("-inf"), tl.float32)
s = tl.zeros((B0,), tl.float32)
for start in range(0, T, B1):
    cols = start + tl.arange(0, B1)
    msk = (rows[:, None] < N0) & (cols[None, :] < T)
    x = tl.load(x_ptr + rows[:, None] * T + cols[None, :], mask=msk, other=float("-inf"))
    m_new = tl.maximum(m, tl.max(x, axis=1))
    s = s * tl.exp(m - m_new) + tl.sum(tl.where(msk, tl.exp(x - m_new[:, None]), 0.0))
    m = m_new
for start in range(0, T, B1):
    cols = start + tl.arange(0, B1)
    msk = (rows[:, None] < N0) & (cols[None, :] < T)
    x = tl.load(x_ptr + rows[:, None] * T + cols[None, :], mask=msk, other=float("-inf"))
    tl.store(z_ptr + rows[:, None] * T + cols[None, :], tl.exp(x - m[:, None]) / s[:, None], mask=msk)
""",
     "expect": {"code_points": 2, "vetoes": ["coincidental_pass"]},
     "judged": "(first judged 0) wrong wherever B0 > 1: the given check (B0 = 1) and regular.one_row_per_program pass, "
               "every other case fails: 2 and coincidental_pass. The diagnosis is 'matches none of the known "
               "misconceptions' (no signature for a reduction without axis=; noted, not added)"},
    {"id": "lsm4.wrong.store_row_mask_only", "group": "wrong",
     "description": "the write pass stores with the row mask only (column mask missing): the tail lanes write 0 "
                    "into the next row's head",
     "fill": """pid = tl.program_id(0)
rows = pid * B0 + tl.arange(0, B0)
rmask = rows < N0
m = tl.full((B0,), float("-inf"), tl.float32)
s = tl.zeros((B0,), tl.float32)
for start in range(0, T, B1):
    cols = start + tl.arange(0, B1)
    msk = rmask[:, None] & (cols[None, :] < T)
    x = tl.load(x_ptr + rows[:, None] * T + cols[None, :], mask=msk, other=float("-inf"))
    m_new = tl.maximum(m, tl.max(x, axis=1))
    s = s * tl.exp(m - m_new) + tl.sum(tl.exp(x - m_new[:, None]), axis=1)
    m = m_new
for start in range(0, T, B1):
    cols = start + tl.arange(0, B1)
    msk = rmask[:, None] & (cols[None, :] < T)
    x = tl.load(x_ptr + rows[:, None] * T + cols[None, :], mask=msk, other=float("-inf"))
    tl.store(z_ptr + rows[:, None] * T + cols[None, :], tl.exp(x - m[:, None]) / s[:, None], mask=rmask[:, None])
""",
     "expect": {"code_points": 2, "diagnoses": ["store_cols_out_of_bounds"]},
     "judged": "(first judged 3: the given check fails too) wrong when B1 does not divide T (given, t_short, t_one, "
               "ragged probes); the aligned regular cases pass"},
    {"id": "lsm4.wrong.block_sum_in_write", "group": "wrong",
     "description": "the write pass divides by the current block's sum of exp (a local normaliser) instead of the row's s",
     "fill": """pid = tl.program_id(0)
rows = pid * B0 + tl.arange(0, B0)
m = tl.full((B0,), float("-inf"), tl.float32)
for start in range(0, T, B1):
    cols = start + tl.arange(0, B1)
    msk = (rows[:, None] < N0) & (cols[None, :] < T)
    m = tl.maximum(m, tl.max(tl.load(x_ptr + rows[:, None] * T + cols[None, :], mask=msk, other=float("-inf")), axis=1))
for start in range(0, T, B1):
    cols = start + tl.arange(0, B1)
    msk = (rows[:, None] < N0) & (cols[None, :] < T)
    x = tl.load(x_ptr + rows[:, None] * T + cols[None, :], mask=msk, other=float("-inf"))
    e = tl.exp(x - m[:, None])
    tl.store(z_ptr + rows[:, None] * T + cols[None, :], e / tl.sum(e, axis=1)[:, None], mask=msk)
""",
     "expect": {"code_points": 0},
     "judged": "(first judged 2; the boundary item also holds the probes) wrong whenever a row has more than one "
               "block: only t_short and t_one (T <= B1) pass. Diagnosis 'matches none' (the row sums to the number "
               "of blocks, which it says)"},
    {"id": "lsm4.right.static_assert_exp2", "group": "right",
     "description": "tl.static_assert(B1 % 16 == 0) and exp2 with a constexpr LOG2E, reciprocal multiply",
     "fill": """tl.static_assert(B1 % 16 == 0)
LOG2E: tl.constexpr = 1.4426950408889634
pid = tl.program_id(0)
rows = pid * B0 + tl.arange(0, B0)
m = tl.full((B0,), float("-inf"), tl.float32)
s = tl.zeros((B0,), tl.float32)
for start in range(0, T, B1):
    cols = start + tl.arange(0, B1)
    msk = (rows[:, None] < N0) & (cols[None, :] < T)
    x = tl.load(x_ptr + rows[:, None] * T + cols[None, :], mask=msk, other=float("-inf"))
    m_new = tl.maximum(m, tl.max(x, axis=1))
    s = s * tl.exp2((m - m_new) * LOG2E) + tl.sum(tl.exp2((x - m_new[:, None]) * LOG2E), axis=1)
    m = m_new
inv = 1.0 / s
for start in range(0, T, B1):
    cols = start + tl.arange(0, B1)
    msk = (rows[:, None] < N0) & (cols[None, :] < T)
    x = tl.load(x_ptr + rows[:, None] * T + cols[None, :], mask=msk, other=float("-inf"))
    tl.store(z_ptr + rows[:, None] * T + cols[None, :], tl.exp2((x - m[:, None]) * LOG2E) * inv[:, None], mask=msk)
""",
     "expect": {"code_points": 5}, "judged": "right (B1 is 16, 32 or 64 in every case)"},
    {"id": "lsm4.outside.heuristics_decorator", "group": "outside",
     "description": "@triton.heuristics({'EVEN_T': lambda args: args['T'] % args['B1'] == 0}) above the kernel, "
                    "and the body branching on EVEN_T (a name the program that runs does not have)",
     "edits": [{"old": KERNEL, "new": "@triton.heuristics({\"EVEN_T\": lambda args: args[\"T\"] % args[\"B1\"] == 0})\n"
                + KERNEL.replace("B1: tl.constexpr):", "B1: tl.constexpr, EVEN_T: tl.constexpr = False):")}],
     "expect": {"code_points": 5, "vetoes": ["modified_outside_blank"]},
     "judged": "edits outside the blank (decorator, signature): not run; the body is the reference's (5), vetoed"},
    {"id": "lsm4.wrong.m_update_before_rescale", "group": "wrong",
     "description": "online update order bug: m = new max first, then s = s * exp(m - m) + ... (the rescale is always 1)",
     "fill": """pid = tl.program_id(0)
rows = pid * B0 + tl.arange(0, B0)
m = tl.full((B0,), float("-inf"), tl.float32)
s = tl.zeros((B0,), tl.float32)
for start in range(0, T, B1):
    cols = start + tl.arange(0, B1)
    msk = (rows[:, None] < N0) & (cols[None, :] < T)
    x = tl.load(x_ptr + rows[:, None] * T + cols[None, :], mask=msk, other=float("-inf"))
    m_old = m
    m = tl.maximum(m, tl.max(x, axis=1))
    s = s * tl.exp(m - m) + tl.sum(tl.exp(x - m[:, None]), axis=1)
for start in range(0, T, B1):
    cols = start + tl.arange(0, B1)
    msk = (rows[:, None] < N0) & (cols[None, :] < T)
    x = tl.load(x_ptr + rows[:, None] * T + cols[None, :], mask=msk, other=float("-inf"))
    tl.store(z_ptr + rows[:, None] * T + cols[None, :], tl.exp(x - m[:, None]) / s[:, None], mask=msk)
""",
     "expect": {"code_points": 0, "diagnoses": ["no_rescale"], "failing_cases": ["probe.rising"]},
     "judged": "(first judged 2) wrong when the max rises after the first block (random data: almost always, the "
               "given check too); named as the missing rescale"},
]
