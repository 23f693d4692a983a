"""Third-party styles for puzzle_outer_add (whole body). Judged verdicts in `expect` (code_points of 5)."""
EXERCISE = "puzzle_outer_add"

PROBES = [
    {"id": "outer.right.tutorial_2d_int64", "group": "right",
     "description": "matmul-tutorial style: pid_m/pid_n from program_id(0/1) as int64, offs_m/offs_n, 2-D pointers "
                    "with [:, None]/[None, :], eviction_policy, mask built once",
     "fill": """pid_m = tl.program_id(1).to(tl.int64)
pid_n = tl.program_id(0).to(tl.int64)
offs_m = pid_m * B1 + tl.arange(0, B1)
offs_n = pid_n * B0 + tl.arange(0, B0)
x = tl.load(x_ptr + offs_n, mask=offs_n < N0, other=0.0, eviction_policy="evict_last")
y = tl.load(y_ptr + offs_m, mask=offs_m < N1, other=0.0, eviction_policy="evict_last")
z_ptrs = z_ptr + offs_m[:, None] * N0 + offs_n[None, :] * 1
tl.store(z_ptrs, y[:, None] + x[None, :], mask=(offs_m[:, None] < N1) & (offs_n[None, :] < N0))
""",
     "expect": {"code_points": 5}, "judged": "right"},
    {"id": "outer.right.clamp_offsets_float", "group": "right",
     "description": "no load masks: offsets clamped with tl.minimum(offs, N - 1) (a Liger habit); the store is masked",
     "fill": """i = tl.program_id(0) * B0 + tl.arange(0, B0)
j = tl.program_id(1) * B1 + tl.arange(0, B1)
xi = tl.load(x_ptr + tl.minimum(i, N0 - 1))
yj = tl.load(y_ptr + tl.minimum(j, N1 - 1))
tl.store(z_ptr + j[:, None] * N0 + i[None, :], xi[None, :] + yj[:, None], mask=(j[:, None] < N1) & (i[None, :] < N0))
""",
     "expect": {"code_points": 5}, "judged": "right"},
    {"id": "outer.right.clamp_int_offsets", "group": "right-or-split",
     "description": "offsets clamped with tl.clamp(i, 0, N0 - 1) on integers; store masked",
     "fill": """i = tl.program_id(0) * B0 + tl.arange(0, B0)
j = tl.program_id(1) * B1 + tl.arange(0, B1)
xi = tl.load(x_ptr + tl.clamp(i, 0, N0 - 1))
yj = tl.load(y_ptr + tl.clamp(j, 0, N1 - 1))
tl.store(z_ptr + j[:, None] * N0 + i[None, :], xi[None, :] + yj[:, None], mask=(j[:, None] < N1) & (i[None, :] < N0))
""",
     "expect": {"code_points": 0},
     "judged": "wrong on a GPU: tl.clamp is floating-point only in Triton's semantic (ValueError at compile); "
               "the interpreter must give the same verdict"},
    {"id": "outer.right.split_join_pairs", "group": "right",
     "description": "tl.join/tl.split round trip: pairs (x, 0) joined then split before adding (a FlagGems-like detour)",
     "fill": """offs_x = tl.program_id(0) * B0 + tl.arange(0, B0)
offs_y = tl.program_id(1) * B1 + tl.arange(0, B1)
x = tl.load(x_ptr + offs_x, mask=offs_x < N0, other=0.0)
y = tl.load(y_ptr + offs_y, mask=offs_y < N1, other=0.0)
pair = tl.join(x, x * 0.0)
a, b = tl.split(pair)
z = (a + b)[None, :] + y[:, None]
tl.store(z_ptr + offs_y[:, None] * N0 + offs_x[None, :], z, mask=(offs_y[:, None] < N1) & (offs_x[None, :] < N0))
""",
     "expect": {"code_points": 5}, "judged": "right"},
    {"id": "outer.wrong.store_mask_x_only_persistent", "group": "wrong",
     "description": "a persistent loop over y blocks (tl.range(pid_1 * B1, N1, ...)) whose tail block is masked by x only",
     "fill": """offs_x = tl.program_id(0) * B0 + tl.arange(0, B0)
mx = offs_x < N0
x = tl.load(x_ptr + offs_x, mask=mx, other=0.0)
for start in tl.range(tl.program_id(1) * B1, N1, tl.num_programs(1) * B1):
    offs_y = start + tl.arange(0, B1)
    y = tl.load(y_ptr + offs_y, mask=offs_y < N1, other=0.0)
    tl.store(z_ptr + offs_y[:, None] * N0 + offs_x[None, :], x[None, :] + y[:, None], mask=mx[None, :])
""",
     "expect": {"code_points": 2, "failing_cases": ["given", "probe.rows_tail"]},
     "judged": "wrong: writes rows N1..B1-1 of the tail block past z (rows_tail; small_ragged too)"},
    {"id": "outer.wrong.stride_of_x", "group": "wrong",
     "description": "row stride of z taken from y's length (N1) instead of N0 ('stride of the wrong tensor')",
     "fill": """offs_x = tl.program_id(0) * B0 + tl.arange(0, B0)
offs_y = tl.program_id(1) * B1 + tl.arange(0, B1)
x = tl.load(x_ptr + offs_x, mask=offs_x < N0, other=0.0)
y = tl.load(y_ptr + offs_y, mask=offs_y < N1, other=0.0)
tl.store(z_ptr + offs_y[:, None] * N1 + offs_x[None, :], x[None, :] + y[:, None],
         mask=(offs_y[:, None] < N1) & (offs_x[None, :] < N0))
""",
     "expect": {"code_points": 0, "diagnoses": ["row_stride_n1"]},
     "judged": "wrong (existing mutant row_stride_n1 in another style)"},
    {"id": "outer.wrong.int32_overflow_hidden", "group": "hidden",
     "description": "int32 offsets (no .to(tl.int64)) — right for every shape the course uses; overflows past 2^31 elements",
     "fill": """pid0 = tl.program_id(0)
pid1 = tl.program_id(1)
ox = pid0 * B0 + tl.arange(0, B0)
oy = pid1 * B1 + tl.arange(0, B1)
x = tl.load(x_ptr + ox, mask=ox < N0)
y = tl.load(y_ptr + oy, mask=oy < N1)
tl.store(z_ptr + (oy * N0)[:, None] + ox[None, :], x[None, :] + y[:, None], mask=(oy < N1)[:, None] & (ox < N0)[None, :])
""",
     "expect": {"code_points": 5},
     "judged": "right for the course's shapes (the reference solution has the same int32 offsets); not a probe target"},
    {"id": "outer.wrong.where_add_only", "group": "wrong",
     "description": "tl.where(mask, x + y, 0.0) instead of a store mask: zeros written past z on ragged shapes",
     "fill": """offs_x = tl.program_id(0) * B0 + tl.arange(0, B0)
offs_y = tl.program_id(1) * B1 + tl.arange(0, B1)
mask = (offs_y[:, None] < N1) & (offs_x[None, :] < N0)
x = tl.load(x_ptr + offs_x, mask=offs_x < N0, other=0.0)
y = tl.load(y_ptr + offs_y, mask=offs_y < N1, other=0.0)
tl.store(z_ptr + offs_y[:, None] * N0 + offs_x[None, :], tl.where(mask, x[None, :] + y[:, None], 0.0))
""",
     "expect": {"code_points": 2, "failing_cases": ["given"]},
     "judged": "(given 100x90 is ragged: first written as 3) wrong: the store is unmasked; its x-tail lanes write into the next row (then overwritten?) and past z"},
]
