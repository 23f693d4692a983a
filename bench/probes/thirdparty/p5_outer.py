"""Third-party styles, fifth batch, puzzle_outer_add (the whole kernel body).

A JAX/Pallas person (tl.expand_dims and tl.broadcast_to instead of [:, None], one combined 2-D
index), a CUDA programmer (a linear program id split by hand is not possible with this 2-D grid, so
row-by-row stores in tl.static_range; int64 linear offsets), an LLM (tl.where on the value with the
store masked, keyword arguments), and their bugs: masks on the loads but none on the store, a mask
bound off by one (<=), the x block offset taken from pid_1, z written column-major (a transposed layout)."""
EXERCISE = "puzzle_outer_add"

PROBES = [
    {"id": "outer5.right.expand_dims_broadcast", "group": "right",
     "description": "tl.expand_dims(x, 0) + tl.expand_dims(y, 1), the mask through tl.broadcast_to to (B1, B0)",
     "fill": """offs_x = tl.program_id(0) * B0 + tl.arange(0, B0)
offs_y = tl.program_id(1) * B1 + tl.arange(0, B1)
x = tl.load(x_ptr + offs_x, mask=offs_x < N0, other=0.0)
y = tl.load(y_ptr + offs_y, mask=offs_y < N1, other=0.0)
z = tl.expand_dims(x, 0) + tl.expand_dims(y, 1)
mask = tl.broadcast_to(tl.expand_dims(offs_x < N0, 0), (B1, B0)) & tl.broadcast_to(tl.expand_dims(offs_y < N1, 1), (B1, B0))
tl.store(z_ptr + tl.expand_dims(offs_y, 1) * N0 + tl.expand_dims(offs_x, 0), z, mask=mask)
""",
     "expect": {"code_points": 5}, "judged": "right"},
    {"id": "outer5.right.int64_linear_offsets", "group": "right",
     "description": "int64 row offsets (offs_y.to(tl.int64) * N0) and the store through one precomputed 2-D pointer block",
     "fill": """pid_x = tl.program_id(axis=0)
pid_y = tl.program_id(axis=1)
ox = pid_x * B0 + tl.arange(0, B0)
oy = (pid_y * B1 + tl.arange(0, B1)).to(tl.int64)
xv = tl.load(x_ptr + ox, mask=ox < N0, other=0.0)
yv = tl.load(y_ptr + oy, mask=oy < N1, other=0.0)
out_ptrs = z_ptr + oy[:, None] * N0 + ox[None, :]
tl.store(out_ptrs, yv[:, None] + xv[None, :], mask=(oy[:, None] < N1) & (ox[None, :] < N0))
""",
     "expect": {"code_points": 5}, "judged": "right"},
    {"id": "outer5.right.cuda_static_rows", "group": "right",
     "description": "a CUDA port: the y block written one row at a time in tl.static_range(B1), each row's store "
                    "masked by (offs_x < N0) & (j < N1) with a scalar j",
     "fill": """offs_x = tl.program_id(0) * B0 + tl.arange(0, B0)
mx = offs_x < N0
xv = tl.load(x_ptr + offs_x, mask=mx, other=0.0)
for r in tl.static_range(B1):
    j = tl.program_id(1) * B1 + r
    yj = tl.load(y_ptr + j, mask=j < N1, other=0.0)
    tl.store(z_ptr + j * N0 + offs_x, xv + yj, mask=mx & (j < N1))
""",
     "expect": {"code_points": 5}, "judged": "right (B1 = 32 unrolled stores)"},
    {"id": "outer5.right.llm_where_values", "group": "right",
     "description": "an LLM's kernel: loads masked without other=, the sum cleaned with tl.where(mask, z, 0.0), "
                    "the store masked, keyword arguments",
     "fill": """pid0 = tl.program_id(axis=0)
pid1 = tl.program_id(axis=1)
i = pid0 * B0 + tl.arange(0, B0)
j = pid1 * B1 + tl.arange(0, B1)
mask = (j[:, None] < N1) & (i[None, :] < N0)
xv = tl.load(pointer=x_ptr + i, mask=i < N0)
yv = tl.load(pointer=y_ptr + j, mask=j < N1)
z = tl.where(mask, yv[:, None] + xv[None, :], 0.0)
tl.store(pointer=z_ptr + j[:, None] * N0 + i[None, :], value=z, mask=mask)
""",
     "expect": {"code_points": 5}, "judged": "right"},
    {"id": "outer5.wrong.load_masked_store_not", "group": "wrong",
     "description": "masks on both loads, none on the store",
     "fill": """offs_x = tl.program_id(0) * B0 + tl.arange(0, B0)
offs_y = tl.program_id(1) * B1 + tl.arange(0, B1)
x = tl.load(x_ptr + offs_x, mask=offs_x < N0, other=0.0)
y = tl.load(y_ptr + offs_y, mask=offs_y < N1, other=0.0)
tl.store(z_ptr + offs_y[:, None] * N0 + offs_x[None, :], x[None, :] + y[:, None])
""",
     "expect": {"code_points": 2, "diagnoses": ["store_out_of_bounds"]},
     "judged": "wrong where N0 or N1 is not a multiple of its block (the given check's 100 x 90 fails: no veto)"},
    {"id": "outer5.wrong.mask_le", "group": "wrong",
     "description": "off-by-one bounds: offs_x <= N0 and offs_y <= N1 on loads and store",
     "fill": """offs_x = tl.program_id(0) * B0 + tl.arange(0, B0)
offs_y = tl.program_id(1) * B1 + tl.arange(0, B1)
mx = offs_x <= N0
my = offs_y <= N1
x = tl.load(x_ptr + offs_x, mask=mx, other=0.0)
y = tl.load(y_ptr + offs_y, mask=my, other=0.0)
tl.store(z_ptr + offs_y[:, None] * N0 + offs_x[None, :], x[None, :] + y[:, None], mask=my[:, None] & mx[None, :])
""",
     "expect": {"code_points": 2, "diagnoses": ["store_out_of_bounds"]},
     "judged": "(first judged 0: the regular cases' sizes are multiples of the blocks, where <= adds no lane) wrong "
               "wherever N0 or N1 is ragged: column N0 of each row lands on the next row's first element, row N1 "
               "past z"},
    {"id": "outer5.wrong.x_offset_from_pid1", "group": "wrong",
     "description": "the x block offset taken from program_id(1) (both offsets from the same axis: a copy-paste slip)",
     "fill": """offs_x = tl.program_id(1) * B0 + tl.arange(0, B0)
offs_y = tl.program_id(1) * B1 + tl.arange(0, B1)
x = tl.load(x_ptr + offs_x, mask=offs_x < N0, other=0.0)
y = tl.load(y_ptr + offs_y, mask=offs_y < N1, other=0.0)
tl.store(z_ptr + offs_y[:, None] * N0 + offs_x[None, :], x[None, :] + y[:, None],
         mask=(offs_y[:, None] < N1) & (offs_x[None, :] < N0))
""",
     "expect": {"code_points": 0, "diagnoses": ["program_id_same_axis"],
                "not_diagnosed": ["unexplained_outer_add", "block_offset_missing"]},
     "judged": "wrong wherever there is more than one block in either direction (the exercise's "
               "wrong.same_program_id; first 'matches none', now program_id_same_axis: the diagonal blocks alone)"},
    {"id": "outer5.wrong.column_major_z", "group": "wrong",
     "description": "z written column-major: offs_x[None, :] * N1 + offs_y[:, None] (the [N0, N1] layout of a "
                    "Fortran / JAX-transposed habit)",
     "fill": """offs_x = tl.program_id(0) * B0 + tl.arange(0, B0)
offs_y = tl.program_id(1) * B1 + tl.arange(0, B1)
x = tl.load(x_ptr + offs_x, mask=offs_x < N0, other=0.0)
y = tl.load(y_ptr + offs_y, mask=offs_y < N1, other=0.0)
tl.store(z_ptr + offs_x[None, :] * N1 + offs_y[:, None], x[None, :] + y[:, None],
         mask=(offs_y[:, None] < N1) & (offs_x[None, :] < N0))
""",
     "expect": {"code_points": 0, "diagnoses": ["column_major"], "not_diagnosed": ["unexplained_outer_add"]},
     "judged": "wrong everywhere: z holds the [N0, N1] matrix's memory (first judged `transposed`, which is another "
               "mistake: x[:, None] + y[None, :] in z's layout; graded 'matches none' at main, now column_major)"},
]
