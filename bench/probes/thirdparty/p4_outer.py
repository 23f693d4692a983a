"""Third-party styles, fourth batch, puzzle_outer_add (the whole kernel body).

Row-pointer style (`z_ptr += pid_1 * B1 * N0`), tl.where-made safe offsets, an inner loop over
sub-tiles of the y block, tl.static_assert, keep-dims 2-D loads; program axes swapped, the block
size as the row stride, the store mask missing x (a race on a GPU), an fp16 result."""
EXERCISE = "puzzle_outer_add"

PROBES = [
    {"id": "outer4.right.row_pointer", "group": "right",
     "description": "row-pointer style: z_ptr += pid_1 * B1 * N0, x_ptr += pid_0 * B0, bounds shifted to the block",
     "fill": """pid_0 = tl.program_id(0)
pid_1 = tl.program_id(1)
x_ptr += pid_0 * B0
y_ptr += pid_1 * B1
z_ptr += pid_1 * B1 * N0 + pid_0 * B0
i = tl.arange(0, B0)
j = tl.arange(0, B1)
mi = i < N0 - pid_0 * B0
mj = j < N1 - pid_1 * B1
x = tl.load(x_ptr + i, mask=mi, other=0.0)
y = tl.load(y_ptr + j, mask=mj, other=0.0)
tl.store(z_ptr + j[:, None] * N0 + i[None, :], y[:, None] + x[None, :], mask=mj[:, None] & mi[None, :])
""",
     "expect": {"code_points": 5}, "judged": "right"},
    {"id": "outer4.right.where_safe_offsets", "group": "right",
     "description": "loads at tl.where(mask, offs, 0) without load masks; the store masked",
     "fill": """offs_x = tl.program_id(0) * B0 + tl.arange(0, B0)
offs_y = tl.program_id(1) * B1 + tl.arange(0, B1)
x = tl.load(x_ptr + tl.where(offs_x < N0, offs_x, 0))
y = tl.load(y_ptr + tl.where(offs_y < N1, offs_y, 0))
tl.store(z_ptr + offs_y[:, None] * N0 + offs_x[None, :], x[None, :] + y[:, None],
         mask=(offs_y[:, None] < N1) & (offs_x[None, :] < N0))
""",
     "expect": {"code_points": 5}, "judged": "right"},
    {"id": "outer4.right.subtile_loop", "group": "right",
     "description": "2-D tiled loop: the y block walked in sub-tiles of 8 rows (for jj in range(0, B1, 8)), tl.static_assert(B1 % 8 == 0)",
     "fill": """tl.static_assert(B1 % 8 == 0)
offs_x = tl.program_id(0) * B0 + tl.arange(0, B0)
mx = offs_x < N0
x = tl.load(x_ptr + offs_x, mask=mx, other=0.0)
for jj in range(0, B1, 8):
    offs_y = tl.program_id(1) * B1 + jj + tl.arange(0, 8)
    my = offs_y < N1
    y = tl.load(y_ptr + offs_y, mask=my, other=0.0)
    tl.store(z_ptr + offs_y[:, None] * N0 + offs_x[None, :], x[None, :] + y[:, None], mask=my[:, None] & mx[None, :])
""",
     "expect": {"code_points": 5}, "judged": "right (B1 is 8, 16 or 32 in every case)"},
    {"id": "outer4.right.int64_cdiv_guard", "group": "right",
     "description": "int64 program ids, an early return for programs past tl.cdiv(N1, B1), tl.fma(y, 1.0, x) as the add",
     "fill": """pid_0 = tl.program_id(0).to(tl.int64)
pid_1 = tl.program_id(1).to(tl.int64)
if pid_1 >= tl.cdiv(N1, B1):
    return
offs_x = pid_0 * B0 + tl.arange(0, B0)
offs_y = pid_1 * B1 + tl.arange(0, B1)
x = tl.load(x_ptr + offs_x, mask=offs_x < N0, other=0.0)
y = tl.load(y_ptr + offs_y, mask=offs_y < N1, other=0.0)
tl.store(z_ptr + offs_y[:, None] * N0 + offs_x[None, :], tl.fma(y[:, None], 1.0, x[None, :]),
         mask=(offs_y[:, None] < N1) & (offs_x[None, :] < N0))
""",
     "expect": {"code_points": 5}, "judged": "right"},
    {"id": "outer4.wrong.axes_swapped", "group": "wrong",
     "description": "program axes swapped: pid for x from program_id(1), for y from program_id(0)",
     "fill": """pid_x = tl.program_id(1)
pid_y = tl.program_id(0)
offs_x = pid_x * B0 + tl.arange(0, B0)
offs_y = pid_y * B1 + tl.arange(0, B1)
x = tl.load(x_ptr + offs_x, mask=offs_x < N0, other=0.0)
y = tl.load(y_ptr + offs_y, mask=offs_y < N1, other=0.0)
tl.store(z_ptr + offs_y[:, None] * N0 + offs_x[None, :], x[None, :] + y[:, None],
         mask=(offs_y[:, None] < N1) & (offs_x[None, :] < N0))
""",
     "expect": {"code_points": 0, "diagnoses": ["program_ids_swapped"], "not_diagnosed": ["unexplained_outer_add"]},
     "judged": "wrong wherever the grid is not square in blocks (both regular cases); one_by_one and small_ragged "
               "(one block each) pass (first no diagnosis; now program_ids_swapped)"},
    {"id": "outer4.wrong.block_as_row_stride", "group": "wrong",
     "description": "stride mixup: offs_y[:, None] * B0 (the block width) as z's row stride",
     "fill": """offs_x = tl.program_id(0) * B0 + tl.arange(0, B0)
offs_y = tl.program_id(1) * B1 + tl.arange(0, B1)
x = tl.load(x_ptr + offs_x, mask=offs_x < N0, other=0.0)
y = tl.load(y_ptr + offs_y, mask=offs_y < N1, other=0.0)
tl.store(z_ptr + offs_y[:, None] * B0 + offs_x[None, :], x[None, :] + y[:, None],
         mask=(offs_y[:, None] < N1) & (offs_x[None, :] < N0))
""",
     "expect": {"code_points": 0}, "judged": "wrong wherever N0 != B0 (one_by_one: N1 = 1, row 0 only: passes)"},
    {"id": "outer4.gpu_check.store_mask_y_only", "group": "gpu-check",
     "description": "the store masked by y only (x's direction missing): x-tail lanes write into the next row's head",
     "fill": """offs_x = tl.program_id(0) * B0 + tl.arange(0, B0)
offs_y = tl.program_id(1) * B1 + tl.arange(0, B1)
x = tl.load(x_ptr + offs_x, mask=offs_x < N0, other=0.0)
y = tl.load(y_ptr + offs_y, mask=offs_y < N1, other=0.0)
tl.store(z_ptr + offs_y[:, None] * N0 + offs_x[None, :], x[None, :] + y[:, None], mask=offs_y[:, None] < N1)
""",
     "expect": {"code_points": 2, "diagnoses": ["store_out_of_bounds"]},
     "judged": "(first judged 3: the given check fails) wrong when B0 does not divide N0 (given 100x90, small_ragged, cols_tail): the tail writes y + 0 over "
               "the next row's first cells (a race between programs on a GPU; grid order on the interpreter) and "
               "past z on the last row; regular cases divide evenly (GPU check)"},
    {"id": "outer4.wrong.fp16_result", "group": "wrong",
     "description": "half-precision habit: (x + y).to(tl.float16) stored into the float32 z",
     "fill": """offs_x = tl.program_id(0) * B0 + tl.arange(0, B0)
offs_y = tl.program_id(1) * B1 + tl.arange(0, B1)
x = tl.load(x_ptr + offs_x, mask=offs_x < N0, other=0.0)
y = tl.load(y_ptr + offs_y, mask=offs_y < N1, other=0.0)
tl.store(z_ptr + offs_y[:, None] * N0 + offs_x[None, :], (x[None, :] + y[:, None]).to(tl.float16),
         mask=(offs_y[:, None] < N1) & (offs_x[None, :] < N0))
""",
     "expect": {"code_points": 0}, "judged": "wrong: fp16 rounding (~5e-4 relative) beyond atol/rtol 1e-5"},
]
