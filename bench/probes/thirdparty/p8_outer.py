"""Third-party styles, eighth batch, puzzle_outer_add (the whole kernel body).

JAX's gather with clamped indices (tl.where(idx < n, idx, n - 1), loads unmasked, the store masked),
a runtime loop over the rows of the y block with a scalar `if` (a per-thread CUDA port), a pointer tensor
built in int64 and broadcast with tl.broadcast_to, and the bugs: a pitched row stride
(tl.num_programs(0) * B0, cudaMallocPitch's padded width), z stored through fp16."""
EXERCISE = "puzzle_outer_add"

HEAD = """pid_0 = tl.program_id(0)
pid_1 = tl.program_id(1)
offs_x = pid_0 * B0 + tl.arange(0, B0)
offs_y = pid_1 * B1 + tl.arange(0, B1)
mask_x = offs_x < N0
mask_y = offs_y < N1
"""


def plain(*, stride: str = "N0", value: str = "z") -> str:
    return HEAD + f"""x = tl.load(x_ptr + offs_x, mask=mask_x, other=0.0)
y = tl.load(y_ptr + offs_y, mask=mask_y, other=0.0)
z = x[None, :] + y[:, None]
tl.store(z_ptr + offs_y[:, None] * {stride} + offs_x[None, :], {value}, mask=mask_y[:, None] & mask_x[None, :])
"""


PROBES = [
    {"id": "outer8.right.jax_clamped_gather", "group": "right",
     "description": "xi = tl.where(offs_x < N0, offs_x, N0 - 1) (and yj), loads unmasked, the store masked",
     "fill": HEAD + """xi = tl.where(mask_x, offs_x, N0 - 1)
yj = tl.where(mask_y, offs_y, N1 - 1)
x = tl.load(x_ptr + xi)
y = tl.load(y_ptr + yj)
tl.store(z_ptr + offs_y[:, None] * N0 + offs_x[None, :], x[None, :] + y[:, None], mask=mask_y[:, None] & mask_x[None, :])
""",
     "expect": {"code_points": 5}, "judged": "right (clamped reads stay in x and y; the store keeps only valid (i, j))"},
    {"id": "outer8.right.runtime_row_loop", "group": "right",
     "description": "for jj in range(0, B1): j = pid_1 * B1 + jj; if j < N1: one row of the block stored",
     "fill": """pid_0 = tl.program_id(0)
pid_1 = tl.program_id(1)
offs_x = pid_0 * B0 + tl.arange(0, B0)
mask_x = offs_x < N0
x = tl.load(x_ptr + offs_x, mask=mask_x, other=0.0)
for jj in range(0, B1):
    j = pid_1 * B1 + jj
    if j < N1:
        yj = tl.load(y_ptr + j)
        tl.store(z_ptr + j * N0 + offs_x, x + yj, mask=mask_x)
""",
     "expect": {"code_points": 5}, "judged": "right (a runtime loop with a scalar branch per row)"},
    {"id": "outer8.right.int64_broadcast_ptrs", "group": "right",
     "description": "ptrs = tl.broadcast_to(z_ptr + (offs_y.to(tl.int64) * N0)[:, None], (B1, B0)) + offs_x[None, :]",
     "fill": HEAD + """x = tl.load(x_ptr + offs_x, mask=mask_x, other=0.0)
y = tl.load(y_ptr + offs_y, mask=mask_y, other=0.0)
ptrs = tl.broadcast_to(z_ptr + (offs_y.to(tl.int64) * N0)[:, None], (B1, B0)) + offs_x[None, :]
tl.store(ptrs, tl.broadcast_to(x[None, :], (B1, B0)) + tl.broadcast_to(y[:, None], (B1, B0)),
         mask=mask_y[:, None] & mask_x[None, :])
""",
     "expect": {"code_points": 5}, "judged": "right"},
    {"id": "outer8.wrong.pitched_row_stride", "group": "wrong",
     "description": "row stride tl.num_programs(0) * B0 (the padded width of a pitched allocation)",
     "fill": plain(stride="(tl.num_programs(0) * B0)"),
     "expect": {"code_points": 2, "diagnoses": ["valid_lanes_out_of_bounds"], "not_diagnosed": ["store_out_of_bounds"]},
     "judged": "wrong wherever N0 is not a multiple of B0 (rows placed cdiv(N0, B0)·B0 apart: past z's end too); "
               "the regular cases (64/32, 32/16) pass, the given check (100, B0 = 32) fails: 2 of 3, 2"},
    {"id": "outer8.wrong.fp16_store", "group": "wrong",
     "description": "z stored through fp16 (z.to(tl.float16))",
     "fill": plain(value="z.to(tl.float16)"),
     "expect": {"code_points": 0, "diagnoses": ["half_precision_output"]},
     "judged": "wrong everywhere: sums of two randn values rounded to 11 bits (~1e-3 absolute) against 1e-5"},
]
