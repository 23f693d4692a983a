"""Third-party styles, fifth batch, puzzle_long_sum (the whole kernel body; edits of solution.py for
helpers outside it).

A tutorial author (keyword arguments everywhere, `tl.range` with num_stages and loop_unroll_factor),
a CUDA programmer (a `while` loop over a block counter, a pointer block advanced by `+= B1`, the row
length taken from N1 as in a shape [N0, N1]), a JAX/Pallas person (`tl.reduce` with a jit combine
function's dtype keyword, a float64 accumulator, a cumsum scan), an LLM (tensor methods, an early
return, tl.where after a load without other=), and their bugs: a column mask
computed once outside the loop, a `while` bound one block short, the store without its mask."""
EXERCISE = "puzzle_long_sum"

KERNEL = "@triton.jit\ndef sum_kernel(x_ptr, z_ptr, N0, N1, T, B0: tl.constexpr, B1: tl.constexpr):\n"
BODY = """    pid = tl.program_id(0)
    rows = pid * B0 + tl.arange(0, B0)
    row_mask = rows < N0
    acc = tl.zeros((B0,), dtype=tl.float32)
    for start in range(0, T, B1):
        cols = start + tl.arange(0, B1)
        mask = row_mask[:, None] & (cols[None, :] < T)
        x = tl.load(x_ptr + rows[:, None] * T + cols[None, :], mask=mask, other=0.0)
        acc += tl.sum(x, axis=1)
    tl.store(z_ptr + rows, acc, mask=row_mask)
"""


PROBES = [
    {"id": "lsum5.right.tutorial_keywords", "group": "right",
     "description": "a tutorial author's keyword arguments everywhere: tl.program_id(axis=0), tl.arange(start=, end=), "
                    "tl.load(pointer=, mask=, other=), tl.sum(input=, axis=), tl.store(pointer=, value=, mask=)",
     "fill": """pid = tl.program_id(axis=0)
row_offsets = pid * B0 + tl.arange(start=0, end=B0)
row_mask = row_offsets < N0
acc = tl.zeros(shape=(B0,), dtype=tl.float32)
for col_start in range(0, T, B1):
    col_offsets = col_start + tl.arange(start=0, end=B1)
    tile = tl.load(pointer=x_ptr + row_offsets[:, None] * T + col_offsets[None, :],
                   mask=row_mask[:, None] & (col_offsets[None, :] < T), other=0.0)
    acc += tl.sum(input=tile, axis=1)
tl.store(pointer=z_ptr + row_offsets, value=acc, mask=row_mask)
""",
     "expect": {"code_points": 5}, "judged": "right"},
    {"id": "lsum5.right.tl_range_unroll", "group": "right",
     "description": "tl.range(0, T, B1, num_stages=3, loop_unroll_factor=2) (software pipelining and unrolling hints)",
     "fill": """pid = tl.program_id(0)
rows = pid * B0 + tl.arange(0, B0)
rmask = rows < N0
acc = tl.zeros((B0,), dtype=tl.float32)
for start in tl.range(0, T, B1, num_stages=3, loop_unroll_factor=2):
    cols = start + tl.arange(0, B1)
    x = tl.load(x_ptr + rows[:, None] * T + cols[None, :], mask=rmask[:, None] & (cols[None, :] < T), other=0.0)
    acc += tl.sum(x, axis=1)
tl.store(z_ptr + rows, acc, mask=rmask)
""",
     "expect": {"code_points": 5}, "judged": "right"},
    {"id": "lsum5.right.cuda_while_block_counter", "group": "right",
     "description": "a CUDA port: `blk = 0; while blk * B1 < T:` with the counter incremented at the end, int64 row offsets",
     "fill": """pid = tl.program_id(0)
rows = pid.to(tl.int64) * B0 + tl.arange(0, B0)
row_ok = rows < N0
acc = tl.zeros((B0,), dtype=tl.float32)
blk = 0
while blk * B1 < T:
    cols = blk * B1 + tl.arange(0, B1)
    ok = row_ok[:, None] & (cols[None, :] < T)
    acc = acc + tl.sum(tl.load(x_ptr + rows[:, None] * T + cols[None, :], mask=ok, other=0.0), axis=1)
    blk += 1
tl.store(z_ptr + rows, acc, mask=row_ok)
""",
     "expect": {"code_points": 5}, "judged": "right"},
    {"id": "lsum5.right.pointer_block_advance", "group": "right",
     "description": "a pointer block built once and advanced with `ptrs += B1`, the column index advanced beside it",
     "fill": """pid = tl.program_id(0)
rows = pid * B0 + tl.arange(0, B0)
cols = tl.arange(0, B1)
ptrs = x_ptr + rows[:, None] * T + cols[None, :]
acc = tl.zeros((B0,), dtype=tl.float32)
for _ in range(0, tl.cdiv(T, B1)):
    m = (rows[:, None] < N0) & (cols[None, :] < T)
    acc += tl.sum(tl.load(ptrs, mask=m, other=0.0), axis=1)
    ptrs += B1
    cols += B1
tl.store(z_ptr + rows, acc, mask=rows < N0)
""",
     "expect": {"code_points": 5}, "judged": "right"},
    {"id": "lsum5.right.pallas_sum_dtype_f64", "group": "right",
     "description": "a JAX/Pallas habit: tl.sum(x, axis=1, dtype=tl.float64) (the reduction's dtype by keyword) into a "
                    "float64 accumulator, stored .to(tl.float32)",
     "fill": """pid = tl.program_id(0)
rows = pid * B0 + tl.arange(0, B0)
acc = tl.zeros((B0,), dtype=tl.float64)
for start in range(0, T, B1):
    cols = start + tl.arange(0, B1)
    x = tl.load(x_ptr + rows[:, None] * T + cols[None, :], mask=(rows[:, None] < N0) & (cols[None, :] < T), other=0.0)
    acc += tl.sum(x, axis=1, dtype=tl.float64)
tl.store(z_ptr + rows, acc.to(tl.float32), mask=rows < N0)
""",
     "expect": {"code_points": 5}, "judged": "right"},
    {"id": "lsum5.right.method_sum", "group": "right",
     "description": "the reduction as a tensor method: acc += x.sum(axis=1) (and rows.to(tl.int64) by method too)",
     "fill": """pid = tl.program_id(0)
rows = (pid * B0 + tl.arange(0, B0)).to(tl.int64)
acc = tl.zeros((B0,), dtype=tl.float32)
for start in range(0, T, B1):
    cols = start + tl.arange(0, B1)
    x = tl.load(x_ptr + rows[:, None] * T + cols[None, :], mask=(rows[:, None] < N0) & (cols[None, :] < T), other=0.0)
    acc += x.sum(axis=1)
tl.store(z_ptr + rows, acc, mask=rows < N0)
""",
     "expect": {"code_points": 5},
     "judged": "right (first graded 0 on the interpreter: the gate could not compile a tensor method from a @jit "
               "function, fixed)"},
    {"id": "lsum5.right.cumsum_last_column", "group": "right",
     "description": "a JAX person's scan: tl.cumsum(x, axis=1) per block and the block's total read from its last "
                    "column with tl.sum(tl.where(lane == B1 - 1, scan, 0.0), axis=1)",
     "fill": """pid = tl.program_id(0)
rows = pid * B0 + tl.arange(0, B0)
lane = tl.arange(0, B1)
acc = tl.zeros((B0,), dtype=tl.float32)
for start in range(0, T, B1):
    cols = start + lane
    x = tl.load(x_ptr + rows[:, None] * T + cols[None, :], mask=(rows[:, None] < N0) & (cols[None, :] < T), other=0.0)
    scan = tl.cumsum(x, axis=1)
    acc += tl.sum(tl.where(lane[None, :] == B1 - 1, scan, 0.0), axis=1)
tl.store(z_ptr + rows, acc, mask=rows < N0)
""",
     "expect": {"code_points": 5}, "judged": "right (the scan's last column is the block's sum; padding lanes are 0)"},
    {"id": "lsum5.right.llm_early_return_where", "group": "right",
     "description": "an LLM's kernel: `if pid * B0 >= N0: return`, loads masked without other=, the padding zeroed "
                    "with tl.where",
     "fill": """pid = tl.program_id(0)
if pid * B0 >= N0:
    return
rows = pid * B0 + tl.arange(0, B0)
acc = tl.zeros((B0,), dtype=tl.float32)
for start in range(0, T, B1):
    cols = start + tl.arange(0, B1)
    valid = (rows[:, None] < N0) & (cols[None, :] < T)
    tile = tl.load(x_ptr + rows[:, None] * T + cols[None, :], mask=valid)
    acc += tl.sum(tl.where(valid, tile, 0.0), axis=1)
tl.store(z_ptr + rows, acc, mask=rows < N0)
""",
     "expect": {"code_points": 5}, "judged": "right (masked lanes replaced by tl.where, whatever the load left there)"},
    {"id": "lsum5.wrong.col_mask_hoisted", "group": "wrong",
     "description": "the column mask computed once before the loop (tl.arange(0, B1) < T), never moved with `start`",
     "fill": """pid = tl.program_id(0)
rows = pid * B0 + tl.arange(0, B0)
lanes = tl.arange(0, B1)
col_mask = lanes < T
acc = tl.zeros((B0,), dtype=tl.float32)
for start in range(0, T, B1):
    x = tl.load(x_ptr + rows[:, None] * T + (start + lanes)[None, :],
                mask=(rows[:, None] < N0) & col_mask[None, :], other=0.0)
    acc += tl.sum(x, axis=1)
tl.store(z_ptr + rows, acc, mask=rows < N0)
""",
     "expect": {"code_points": 2, "diagnoses": ["next_row_leak"]},
     "judged": "(first judged 3 with coincidental_pass: the given check fails on T = 200, so no veto and the failed "
               "given check costs a point) wrong wherever T > B1 is not a multiple of B1: the last block is unmasked "
               "and reads the next row; T < B1 and multiples of B1 pass"},
    {"id": "lsum5.wrong.while_one_short", "group": "wrong",
     "description": "a CUDA port's while bound `while off + B1 < T` (one block short whenever the last block starts "
                    "at or after T - B1)",
     "fill": """pid = tl.program_id(0)
rows = pid * B0 + tl.arange(0, B0)
acc = tl.zeros((B0,), dtype=tl.float32)
off = 0
while off + B1 < T:
    cols = off + tl.arange(0, B1)
    acc += tl.sum(tl.load(x_ptr + rows[:, None] * T + cols[None, :], mask=(rows[:, None] < N0) & (cols[None, :] < T), other=0.0), axis=1)
    off += B1
tl.store(z_ptr + rows, acc, mask=rows < N0)
""",
     "expect": {"code_points": 0, "diagnoses": ["loop_stops_early"]},
     "judged": "wrong everywhere: the last block is always dropped (T <= B1: nothing summed)"},
    {"id": "lsum5.wrong.store_unmasked", "group": "wrong",
     "description": "every load masked, the store not (`tl.store(z_ptr + rows, acc)`)",
     "fill": BODY.replace("    ", "", 1).replace("\n    ", "\n").replace(", mask=row_mask)\n", ")\n"),
     "expect": {"code_points": 3, "vetoes": ["coincidental_pass"], "diagnoses": ["store_out_of_bounds"]},
     "judged": "(first judged 3.5 without a veto) wrong where N0 is not a multiple of B0: the last program writes "
               "past z (probe.rows_tail only; the given check's B0 = 1 passes, hence coincidental_pass)"},
    {"id": "lsum5.wrong.row_length_n1", "group": "wrong",
     "description": "a CUDA programmer's shape [N0, N1]: the row stride taken from N1 (the launch passes N1 = 1), "
                    "the column bound from T",
     "fill": BODY.replace("    ", "", 1).replace("\n    ", "\n").replace("rows[:, None] * T", "rows[:, None] * N1"),
     "expect": {"code_points": 0, "diagnoses": ["row_stride_wrong"], "not_diagnosed": ["unexplained_sum"]},
     "judged": "wrong everywhere rows > 1 (row r sums x.flat[r : r + T]): 'matches none' at main, now row_stride_wrong"},
]
