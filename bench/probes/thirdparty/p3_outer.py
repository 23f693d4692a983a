"""Third-party styles, third round, puzzle_outer_add (the whole kernel body)."""
EXERCISE = "puzzle_outer_add"

PROBES = [
    {"id": "outer3.right.inductor_xy_tiles", "group": "right",
     "description": "Inductor 2-D pointwise: xoffset/yoffset, xindex[None, :], yindex[:, None], xmask & ymask, tl.broadcast_to",
     "fill": """XBLOCK: tl.constexpr = B0
YBLOCK: tl.constexpr = B1
xnumel = N0
ynumel = N1
xoffset = tl.program_id(0) * XBLOCK
xindex = xoffset + tl.arange(0, XBLOCK)[None, :]
xmask = xindex < xnumel
yoffset = tl.program_id(1) * YBLOCK
yindex = yoffset + tl.arange(0, YBLOCK)[:, None]
ymask = yindex < ynumel
x0 = xindex
y0 = yindex
tmp0 = tl.load(x_ptr + (x0), xmask, eviction_policy='evict_last')
tmp1 = tl.load(y_ptr + (y0), ymask, eviction_policy='evict_last')
tmp2 = tmp0 + tmp1
tl.store(z_ptr + (x0 + (xnumel * y0)), tl.broadcast_to(tmp2, [YBLOCK, XBLOCK]), xmask & ymask)
""",
     "expect": {"code_points": 5}, "judged": "right"},
    {"id": "outer3.right.puzzles_static_range_rows", "group": "right",
     "description": "triton-puzzles / CUDA habit: one output row at a time in tl.static_range(B1), scalar y load",
     "fill": """pid_x = tl.program_id(0)
pid_y = tl.program_id(1)
offs_x = pid_x * B0 + tl.arange(0, B0)
mx = offs_x < N0
x = tl.load(x_ptr + offs_x, mask=mx, other=0.0)
for j in tl.static_range(B1):
    row = pid_y * B1 + j
    if row < N1:
        yv = tl.load(y_ptr + row)
        tl.store(z_ptr + row * N0 + offs_x, x + yv, mask=mx)
""",
     "expect": {"code_points": 5}, "judged": "right"},
    {"id": "outer3.right.vllm_int64_hints", "group": "right",
     "description": "vLLM: int64 row offsets, tl.multiple_of/max_contiguous on the column offsets, cache_modifier='.ca'",
     "fill": """pid_x = tl.program_id(0)
pid_y = tl.program_id(1)
offs_x = tl.max_contiguous(tl.multiple_of(pid_x * B0 + tl.arange(0, B0), B0), B0)
offs_y = pid_y * B1 + tl.arange(0, B1)
x = tl.load(x_ptr + offs_x, mask=offs_x < N0, other=0.0, cache_modifier=".ca")
y = tl.load(y_ptr + offs_y, mask=offs_y < N1, other=0.0, cache_modifier=".ca")
z_off = offs_y.to(tl.int64)[:, None] * N0 + offs_x[None, :]
tl.store(z_ptr + z_off, y[:, None] + x[None, :], mask=(offs_y[:, None] < N1) & (offs_x[None, :] < N0))
""",
     "expect": {"code_points": 5}, "judged": "right"},
    {"id": "outer3.wrong.ai_chained_mask", "group": "wrong",
     "description": "AI-assistant / student: mask = offs_y[:, None] < N1 & offs_x[None, :] < N0 (precedence: a chained comparison)",
     "fill": """pid_x = tl.program_id(0)
pid_y = tl.program_id(1)
offs_x = pid_x * B0 + tl.arange(0, B0)
offs_y = pid_y * B1 + tl.arange(0, B1)
x = tl.load(x_ptr + offs_x, mask=offs_x < N0, other=0.0)
y = tl.load(y_ptr + offs_y, mask=offs_y < N1, other=0.0)
mask = offs_y[:, None] < N1 & offs_x[None, :] < N0
tl.store(z_ptr + offs_y[:, None] * N0 + offs_x[None, :], y[:, None] + x[None, :], mask=mask)
""",
     "expect": {"code_points": 0},
     "judged": "wrong: `a < N1 & b < N0` is the chained comparison a < (N1 & b) < N0, which Triton refuses to compile"},
    {"id": "outer3.wrong.cuda_column_major", "group": "wrong",
     "description": "CUDA column-major habit: z index offs_x[None, :] * N1 + offs_y[:, None]",
     "fill": """pid_x = tl.program_id(0)
pid_y = tl.program_id(1)
offs_x = pid_x * B0 + tl.arange(0, B0)
offs_y = pid_y * B1 + tl.arange(0, B1)
x = tl.load(x_ptr + offs_x, mask=offs_x < N0, other=0.0)
y = tl.load(y_ptr + offs_y, mask=offs_y < N1, other=0.0)
mask = (offs_y[:, None] < N1) & (offs_x[None, :] < N0)
tl.store(z_ptr + offs_x[None, :] * N1 + offs_y[:, None], y[:, None] + x[None, :], mask=mask)
""",
     "expect": {"code_points": 0},
     "judged": "wrong unless N0 = N1 = 1 (boundary.one_by_one): z transposed in memory"},
    {"id": "outer3.wrong.scalar_loop_no_row_guard", "group": "wrong",
     "description": "puzzles habit: tl.static_range(B1) over rows without the row < N1 guard (column mask only)",
     "fill": """pid_x = tl.program_id(0)
pid_y = tl.program_id(1)
offs_x = pid_x * B0 + tl.arange(0, B0)
mx = offs_x < N0
x = tl.load(x_ptr + offs_x, mask=mx, other=0.0)
for j in tl.static_range(B1):
    row = pid_y * B1 + j
    yv = tl.load(y_ptr + row)
    tl.store(z_ptr + row * N0 + offs_x, x + yv, mask=mx)
""",
     "expect": {"code_points": 2},
     "judged": "wrong when B1 does not divide N1: rows past N1 are written into the sentinels (an error); given (100, 90) B1=32 too"},
    {"id": "outer3.right.cuda_min_clamped_loads", "group": "right",
     "description": "CUDA port: loads at min(offs, N - 1) (no load masks, Python's min), the store masked",
     "fill": """pid_x = tl.program_id(0)
pid_y = tl.program_id(1)
offs_x = pid_x * B0 + tl.arange(0, B0)
offs_y = pid_y * B1 + tl.arange(0, B1)
x = tl.load(x_ptr + min(offs_x, N0 - 1))
y = tl.load(y_ptr + min(offs_y, N1 - 1))
tl.store(z_ptr + offs_y[:, None] * N0 + offs_x[None, :], y[:, None] + x[None, :],
         mask=(offs_y[:, None] < N1) & (offs_x[None, :] < N0))
""",
     "expect": {"code_points": 5},
     "judged": "right on a GPU (min of a tensor is element-wise there, tl.core.builtin_min)"},
    {"id": "outer3.right.ai_device_print_left_in", "group": "right",
     "description": "AI-assistant debugging left in: tl.device_print of the program ids (prints on every device)",
     "fill": """pid_x = tl.program_id(0)
pid_y = tl.program_id(1)
tl.device_print("pid", pid_x, pid_y)
offs_x = pid_x * B0 + tl.arange(0, B0)
offs_y = pid_y * B1 + tl.arange(0, B1)
x = tl.load(x_ptr + offs_x, mask=offs_x < N0, other=0.0)
y = tl.load(y_ptr + offs_y, mask=offs_y < N1, other=0.0)
tl.store(z_ptr + offs_y[:, None] * N0 + offs_x[None, :], y[:, None] + x[None, :],
         mask=(offs_y[:, None] < N1) & (offs_x[None, :] < N0))
""",
     "expect": {"code_points": 5}, "judged": "right (noisy)"},
    {"id": "outer3.right.python_and_store_mask", "group": "right",
     "description": "Python habit: the 2-D store mask written with and: (offs_y[:, None] < N1) and (offs_x[None, :] < N0)",
     "fill": """pid_x = tl.program_id(0)
pid_y = tl.program_id(1)
offs_x = pid_x * B0 + tl.arange(0, B0)
offs_y = pid_y * B1 + tl.arange(0, B1)
x = tl.load(x_ptr + offs_x, mask=offs_x < N0, other=0.0)
y = tl.load(y_ptr + offs_y, mask=offs_y < N1, other=0.0)
tl.store(z_ptr + offs_y[:, None] * N0 + offs_x[None, :], y[:, None] + x[None, :],
         mask=(offs_y[:, None] < N1) and (offs_x[None, :] < N0))
""",
     "expect": {"code_points": 5},
     "judged": "right on a GPU (logical_and of the two masks, element-wise)"},
]
