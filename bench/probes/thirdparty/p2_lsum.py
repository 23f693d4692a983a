"""Third-party styles, second batch, puzzle_long_sum."""
EXERCISE = "puzzle_long_sum"

PROBES = [
    {"id": "lsum2.gpu_only.block_ptr", "group": "gpu-only",
     "description": "attorch/Liger style with tl.make_block_ptr, boundary_check=(0, 1), padding_option='zero', tl.advance",
     "fill": """pid = tl.program_id(0)
x_blk = tl.make_block_ptr(x_ptr, shape=(N0, T), strides=(T, 1), offsets=(pid * B0, 0),
                          block_shape=(B0, B1), order=(1, 0))
acc = tl.zeros((B0,), dtype=tl.float32)
for _ in range(0, T, B1):
    acc += tl.sum(tl.load(x_blk, boundary_check=(0, 1), padding_option="zero"), axis=1)
    x_blk = tl.advance(x_blk, (0, B1))
rows = pid * B0 + tl.arange(0, B0)
tl.store(z_ptr + rows, acc, mask=rows < N0)
""",
     "expect": {"code_points": 5},
     "judged": "right on a GPU (Triton 3.6); the interpreter's 3.9 removed block pointers: not gradable here, at no cost"},
    {"id": "lsum2.right.unroll_multiple_of", "group": "right",
     "description": "tl.range(..., loop_unroll_factor=2) and start = tl.multiple_of(start, B1) (a true hint)",
     "fill": """pid = tl.program_id(0)
rows = pid * B0 + tl.arange(0, B0)
row_mask = rows < N0
acc = tl.zeros((B0,), dtype=tl.float32)
for start in tl.range(0, T, B1, loop_unroll_factor=2):
    start = tl.multiple_of(start, B1)
    cols = start + tl.arange(0, B1)
    x = tl.load(x_ptr + rows[:, None] * T + cols[None, :], mask=row_mask[:, None] & (cols[None, :] < T), other=0.0)
    acc += tl.sum(x, axis=1)
tl.store(z_ptr + rows, acc, mask=row_mask)
""",
     "expect": {"code_points": 5}, "judged": "right"},
    {"id": "lsum2.wrong.acc_reset_in_loop", "group": "wrong",
     "description": "tutorial bug: acc = tl.zeros(...) inside the loop, so only the last block is kept",
     "fill": """pid = tl.program_id(0)
rows = pid * B0 + tl.arange(0, B0)
row_mask = rows < N0
for start in range(0, T, B1):
    acc = tl.zeros((B0,), dtype=tl.float32)
    cols = start + tl.arange(0, B1)
    x = tl.load(x_ptr + rows[:, None] * T + cols[None, :], mask=row_mask[:, None] & (cols[None, :] < T), other=0.0)
    acc += tl.sum(x, axis=1)
tl.store(z_ptr + rows, acc, mask=row_mask)
""",
     "expect": {"code_points": 0},
     "judged": "wrong: acc is first defined inside the loop; the GPU compile rejects it (NameError at the store), "
               "on every device (first written with last_block_only)"},
    {"id": "lsum2.right.persistent_redundant", "group": "right",
     "description": "persistent loop stepping by 1, not by num_programs: every program redoes all later blocks (same values)",
     "fill": """pid = tl.program_id(0)
for rb in tl.range(pid, tl.cdiv(N0, B0)):
    rows = rb * B0 + tl.arange(0, B0)
    rm = rows < N0
    acc = tl.zeros((B0,), dtype=tl.float32)
    for start in range(0, T, B1):
        cols = start + tl.arange(0, B1)
        acc += tl.sum(tl.load(x_ptr + rows[:, None] * T + cols[None, :], mask=rm[:, None] & (cols[None, :] < T), other=0.0), axis=1)
    tl.store(z_ptr + rows, acc, mask=rm)
""",
     "expect": {"code_points": 5}, "judged": "right (wasteful: identical values written several times)"},
]
