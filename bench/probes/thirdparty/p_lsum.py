"""Third-party styles for puzzle_long_sum (whole body). Judged verdicts in `expect` (code_points of 5)."""
EXERCISE = "puzzle_long_sum"

PROBES = [
    {"id": "lsum.right.tutorial_persistent", "group": "right",
     "description": "softmax-tutorial shape: a persistent loop over row blocks with tl.range(pid, n, nprog, num_stages=2), "
                    "int64 offsets, eviction_policy/cache_modifier, an inner tl.range over T",
     "fill": """pid = tl.program_id(0)
num_pids = tl.num_programs(0)
n_blocks = tl.cdiv(N0, B0)
for rb in tl.range(pid, n_blocks, num_pids, num_stages=2):
    rows = rb.to(tl.int64) * B0 + tl.arange(0, B0)
    row_mask = rows < N0
    acc = tl.zeros((B0,), dtype=tl.float32)
    for start in tl.range(0, T, B1, num_stages=3):
        cols = start + tl.arange(0, B1)
        mask = row_mask[:, None] & (cols[None, :] < T)
        x = tl.load(x_ptr + rows[:, None] * T + cols[None, :], mask=mask, other=0.0,
                    eviction_policy="evict_first", cache_modifier=".cg")
        acc += tl.sum(x, axis=-1)
    tl.store(z_ptr + rows, acc, mask=row_mask)
""",
     "expect": {"code_points": 5}, "judged": "right"},
    {"id": "lsum.right.liger_scalar_rows", "group": "right",
     "description": "Liger style: one scalar row at a time (static_range over B0, `if row < N0`), int64 row offset, "
                    "x.to(tl.float32, bitcast=False), tl.sum(x, axis=0) per block",
     "fill": """pid = tl.program_id(0).to(tl.int64)
for r in tl.static_range(B0):
    row = pid * B0 + r
    if row < N0:
        row_ptr = x_ptr + row * T
        total = 0.0
        for start in range(0, T, B1):
            offs = start + tl.arange(0, B1)
            x = tl.load(row_ptr + offs, mask=offs < T, other=0.0).to(tl.float32, bitcast=False)
            total += tl.sum(x, axis=0)
        tl.store(z_ptr + row, total)
""",
     "expect": {"code_points": 5}, "judged": "right"},
    {"id": "lsum.right.tile_acc_fma", "group": "right",
     "description": "attorch style: a (B0, B1) tile accumulator with tl.fma(x, 1.0, acc), reduced once after the loop; "
                    "tl.debug_barrier; tl.static_assert on the block",
     "fill": """tl.static_assert(B1 > 0)
pid = tl.program_id(0)
rows = pid * B0 + tl.arange(0, B0)
acc = tl.zeros((B0, B1), dtype=tl.float32)
for start in range(0, T, B1):
    cols = start + tl.arange(0, B1)
    x = tl.load(x_ptr + rows[:, None] * T + cols[None, :],
                mask=(rows[:, None] < N0) & (cols[None, :] < T), other=0.0)
    acc = tl.fma(x, 1.0, acc)
tl.debug_barrier()
tl.store(z_ptr + rows, tl.sum(acc, axis=1), mask=rows < N0)
""",
     "expect": {"code_points": 5}, "judged": "right"},
    {"id": "lsum.right.padding_option_where", "group": "right",
     "description": "FlagGems style: unmasked-other load then tl.where(mask, x, 0.0), a 1-D row mask built with "
                    "tl.where(rows < N0, True, False)",
     "fill": """pid = tl.program_id(0)
rows = pid * B0 + tl.arange(0, B0)
row_ok = rows < N0
acc = tl.zeros([B0], dtype=tl.float32)
for k in range(tl.cdiv(T, B1)):
    cols = k * B1 + tl.arange(0, B1)
    m = row_ok[:, None] & (cols[None, :] < T)
    x = tl.load(x_ptr + rows[:, None] * T + cols[None, :], mask=m)
    acc += tl.sum(tl.where(m, x, 0.0), axis=1)
tl.store(z_ptr + rows, acc, mask=row_ok)
""",
     "expect": {"code_points": 5}, "judged": "right: masked lanes are undefined but replaced by where"},
    {"id": "lsum.wrong.persistent_no_row_mask", "group": "wrong",
     "description": "persistent loop over row blocks; the tail row block's store (and load) not masked by rows",
     "fill": """pid = tl.program_id(0)
for rb in tl.range(pid, tl.cdiv(N0, B0), tl.num_programs(0)):
    rows = rb * B0 + tl.arange(0, B0)
    acc = tl.zeros((B0,), dtype=tl.float32)
    for start in tl.range(0, T, B1):
        cols = start + tl.arange(0, B1)
        x = tl.load(x_ptr + rows[:, None] * T + cols[None, :], mask=(rows[:, None] < N0) & (cols[None, :] < T), other=0.0)
        acc += tl.sum(x, axis=1)
    tl.store(z_ptr + rows, acc)
""",
     "expect": {"code_points": 3, "vetoes": ["coincidental_pass"], "failing_cases": ["probe.rows_tail"]},
     "judged": "wrong: writes past z when N0 % B0 != 0 (rows_tail); the store lacks the row mask; the given check passes, "
               "so coincidental_pass (suspected) is the lesson's rule (first written without the veto)"},
    {"id": "lsum.wrong.fp16_accumulator", "group": "wrong",
     "description": "fp16 accumulation: acc in tl.float16, each block's sum cast down",
     "fill": """pid = tl.program_id(0)
rows = pid * B0 + tl.arange(0, B0)
row_mask = rows < N0
acc = tl.zeros((B0,), dtype=tl.float16)
for start in range(0, T, B1):
    cols = start + tl.arange(0, B1)
    mask = row_mask[:, None] & (cols[None, :] < T)
    x = tl.load(x_ptr + rows[:, None] * T + cols[None, :], mask=mask, other=0.0)
    acc += tl.sum(x, axis=1).to(tl.float16)
tl.store(z_ptr + rows, acc, mask=row_mask)
""",
     "expect": {"code_points": 0, "diagnoses": ["half_precision_accumulator"], "not_diagnosed": ["padding_not_zero"]},
     "judged": "wrong: fp16 keeps ~3 decimal digits, errors ~1e-2 > atol 1e-4 on every case with T > 1"},
    {"id": "lsum.wrong.fp16_acc_loop_carried", "group": "wrong",
     "description": "fp16 accumulator re-assigned fp32 in the loop (acc += fp32 sum): a GPU compile rejects the loop-carried type change",
     "fill": """pid = tl.program_id(0)
rows = pid * B0 + tl.arange(0, B0)
row_mask = rows < N0
acc = tl.zeros((B0,), dtype=tl.float16)
for start in range(0, T, B1):
    cols = start + tl.arange(0, B1)
    mask = row_mask[:, None] & (cols[None, :] < T)
    x = tl.load(x_ptr + rows[:, None] * T + cols[None, :], mask=mask, other=0.0)
    acc += tl.sum(x, axis=1)
tl.store(z_ptr + rows, acc, mask=row_mask)
""",
     "expect": {"code_points": 0},
     "judged": "wrong on a GPU (compile error: loop-carried acc fp16 -> fp32); the interpreter must say the same"},
    {"id": "lsum.wrong.reduce_axis0", "group": "wrong",
     "description": "reduction over the wrong axis: tl.sum(x, axis=0) gives (B1,) added to a (B0,) accumulator",
     "fill": """pid = tl.program_id(0)
rows = pid * B0 + tl.arange(0, B0)
row_mask = rows < N0
acc = tl.zeros((B0,), dtype=tl.float32)
for start in range(0, T, B1):
    cols = start + tl.arange(0, B1)
    mask = row_mask[:, None] & (cols[None, :] < T)
    x = tl.load(x_ptr + rows[:, None] * T + cols[None, :], mask=mask, other=0.0)
    acc += tl.sum(x, axis=0)
tl.store(z_ptr + rows, acc, mask=row_mask)
""",
     "expect": {"code_points": 0},
     "judged": "wrong: shape error (B0 != B1) on every case; message should name the shapes"},
    {"id": "lsum.wrong.stride_of_z", "group": "wrong",
     "description": "row stride taken from the output's layout (z is 1-D: stride 1 = N1) instead of x's T",
     "fill": """pid = tl.program_id(0)
rows = pid * B0 + tl.arange(0, B0)
row_mask = rows < N0
acc = tl.zeros((B0,), dtype=tl.float32)
for start in range(0, T, B1):
    cols = start + tl.arange(0, B1)
    mask = row_mask[:, None] & (cols[None, :] < T)
    x = tl.load(x_ptr + rows[:, None] * N1 + cols[None, :], mask=mask, other=0.0)
    acc += tl.sum(x, axis=1)
tl.store(z_ptr + rows * N1, acc, mask=row_mask)
""",
     "expect": {"code_points": 0},
     "judged": "wrong: every row reads from offset row*1 (overlapping windows of row 0)"},
]
