"""Third-party styles, seventh batch, puzzle_outer_add (the whole kernel body).

A 1-D flattened index over the tile (`idx % B0`, `idx // B0`: one dimension where two are meant),
2-D index tensors from `[:, None]`/`[None, :]` aranges loaded as [1, B0] and [B1, 1] tiles (CUDA's
threadIdx.x / threadIdx.y), every program writing its whole column strip (a benign race: equal
values), and the bugs: the flattened index divided by the wrong block size, `tl.where` in place of
the store's mask."""
EXERCISE = "puzzle_outer_add"

PROBES = [
    {"id": "outer7.right.flat_index", "group": "right",
     "description": "idx = tl.arange(0, B0 * B1); i = pid_0 * B0 + idx % B0; j = pid_1 * B1 + idx // B0 (a 1-D tile)",
     "fill": """pid_0 = tl.program_id(0)
pid_1 = tl.program_id(1)
idx = tl.arange(0, B0 * B1)
i = pid_0 * B0 + idx % B0
j = pid_1 * B1 + idx // B0
m = (i < N0) & (j < N1)
xv = tl.load(x_ptr + i, mask=m, other=0.0)
yv = tl.load(y_ptr + j, mask=m, other=0.0)
tl.store(z_ptr + j * N0 + i, xv + yv, mask=m)
""",
     "expect": {"code_points": 5}, "judged": "right (every (i, j) of the tile once, gathered loads)"},
    {"id": "outer7.wrong.flat_index_wrong_divisor", "group": "wrong",
     "description": "the flattened index split by B1 (i = idx % B1, j = idx // B1) where the tile is B0 wide",
     "fill": """pid_0 = tl.program_id(0)
pid_1 = tl.program_id(1)
idx = tl.arange(0, B0 * B1)
i = pid_0 * B0 + idx % B1
j = pid_1 * B1 + idx // B1
m = (i < N0) & (j < N1)
xv = tl.load(x_ptr + i, mask=m, other=0.0)
yv = tl.load(y_ptr + j, mask=m, other=0.0)
tl.store(z_ptr + j * N0 + i, xv + yv, mask=m)
""",
     "expect": {"code_points": 3, "vetoes": ["coincidental_pass"], "failing_cases": ["probe.rect_blocks"],
                "diagnoses": ["cells_not_written"]},
     "judged": "wrong where B0 != B1 (columns B1..B0-1 of each block never written, rows past the block written "
               "by the wrong program); right on square blocks: the given check and the regular cases (32/32, 16/16) "
               "pass, the boundary cases too (16/16); probe.rect_blocks (32/8) and the other probes (32/16) fail"},
    {"id": "outer7.right.cuda_2d_index_tiles", "group": "right",
     "description": "i = pid_0 * B0 + tl.arange(0, B0)[None, :]; j = pid_1 * B1 + tl.arange(0, B1)[:, None]; "
                    "x and y loaded as [1, B0] and [B1, 1] tiles",
     "fill": """i = tl.program_id(0) * B0 + tl.arange(0, B0)[None, :]
j = tl.program_id(1) * B1 + tl.arange(0, B1)[:, None]
xv = tl.load(x_ptr + i, mask=i < N0, other=0.0)
yv = tl.load(y_ptr + j, mask=j < N1, other=0.0)
tl.store(z_ptr + j * N0 + i, xv + yv, mask=(i < N0) & (j < N1))
""",
     "expect": {"code_points": 5}, "judged": "right"},
    {"id": "outer7.right.whole_column_strip", "group": "right",
     "description": "each program loops over all of y (for jb in range(0, N1, B1)): programs with the same pid_0 "
                    "write the same values (a benign race)",
     "fill": """offs_x = tl.program_id(0) * B0 + tl.arange(0, B0)
mask_x = offs_x < N0
xv = tl.load(x_ptr + offs_x, mask=mask_x, other=0.0)
for jb in range(0, N1, B1):
    offs_y = jb + tl.arange(0, B1)
    mask_y = offs_y < N1
    yv = tl.load(y_ptr + offs_y, mask=mask_y, other=0.0)
    tl.store(z_ptr + offs_y[:, None] * N0 + offs_x[None, :], xv[None, :] + yv[:, None],
             mask=mask_y[:, None] & mask_x[None, :])
""",
     "expect": {"code_points": 5}, "judged": "right (redundant work; every write of an element is the same value)"},
    {"id": "outer7.wrong.where_instead_of_store_mask", "group": "wrong",
     "description": "tl.store(ptrs, tl.where(mask, z, 0.0)) (tl.where in place of the store's mask: padding written)",
     "fill": """pid_0 = tl.program_id(0)
pid_1 = tl.program_id(1)
offs_x = pid_0 * B0 + tl.arange(0, B0)
offs_y = pid_1 * B1 + tl.arange(0, B1)
mask = (offs_y[:, None] < N1) & (offs_x[None, :] < N0)
xv = tl.load(x_ptr + offs_x, mask=offs_x < N0, other=0.0)
yv = tl.load(y_ptr + offs_y, mask=offs_y < N1, other=0.0)
tl.store(z_ptr + offs_y[:, None] * N0 + offs_x[None, :], tl.where(mask, xv[None, :] + yv[:, None], 0.0))
""",
     "expect": {"code_points": 2},
     "judged": "wrong wherever N0 or N1 is not a multiple of its block (zeros written past z and over the next row's "
               "head); the regular cases fit their blocks and pass, the given check (100, 90) fails: 2 of 3, 2"},
]
