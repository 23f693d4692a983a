"""Third-party styles, sixth batch, puzzle_outer_add (the whole kernel body).

Int64 program ids with uint32 lanes, NumPy-style clamped reads kept by tl.where, the result from
tl.full with the pointer's dtype, `tl.static_assert` on the block sizes, z written twice (x
stored, then y added atomically), and the bugs: `|` for `&` in the store mask, a square-block
static_assert, the x mask off by one (`< N0 - 1`)."""
EXERCISE = "puzzle_outer_add"

BASE = """ox = tl.program_id(0) * B0 + tl.arange(0, B0)
oy = tl.program_id(1) * B1 + tl.arange(0, B1)
x = tl.load(x_ptr + ox, mask=ox < N0, other=0.0)
y = tl.load(y_ptr + oy, mask=oy < N1, other=0.0)
msk = (oy[:, None] < N1) & (ox[None, :] < N0)
tl.store(z_ptr + oy[:, None] * N0 + ox[None, :], y[:, None] + x[None, :], mask=msk)
"""

PROBES = [
    {"id": "outer6.right.int64_pid_uint32_lanes", "group": "right",
     "description": "program ids .to(tl.int64), lanes tl.arange(...).to(tl.uint32)",
     "fill": BASE.replace("tl.program_id(0) * B0 + tl.arange(0, B0)", "tl.program_id(0).to(tl.int64) * B0 + tl.arange(0, B0).to(tl.uint32)")
                 .replace("tl.program_id(1) * B1 + tl.arange(0, B1)", "tl.program_id(1).to(tl.int64) * B1 + tl.arange(0, B1).to(tl.uint32)"),
     "expect": {"code_points": 5}, "judged": "right"},
    {"id": "outer6.right.numpy_clamped_reads", "group": "right",
     "description": "x = tl.where(ox < N0, tl.load(x_ptr + tl.minimum(ox, N0 - 1)), 0.0) (clamped reads, no load mask)",
     "fill": BASE.replace("x = tl.load(x_ptr + ox, mask=ox < N0, other=0.0)",
                          "x = tl.where(ox < N0, tl.load(x_ptr + tl.minimum(ox, N0 - 1)), 0.0)")
                 .replace("y = tl.load(y_ptr + oy, mask=oy < N1, other=0.0)",
                          "y = tl.where(oy < N1, tl.load(y_ptr + tl.minimum(oy, N1 - 1)), 0.0)"),
     "expect": {"code_points": 5}, "judged": "right"},
    {"id": "outer6.right.full_pointer_dtype_static_assert", "group": "right",
     "description": "tl.static_assert(B0 >= 1 and B1 >= 1); z = tl.full((B1, B0), 0, z_ptr.dtype.element_ty) + ...",
     "fill": "tl.static_assert(B0 >= 1 and B1 >= 1)\n" + BASE.replace(
         "y[:, None] + x[None, :], mask=msk)",
         "tl.full((B1, B0), 0, z_ptr.dtype.element_ty) + y[:, None] + x[None, :], mask=msk)"),
     "expect": {"code_points": 5}, "judged": "right"},
    {"id": "outer6.right.store_x_then_atomic_y", "group": "right",
     "description": "z written twice: the x tile stored, then y added with tl.atomic_add (both masked)",
     "fill": BASE.replace(
         "tl.store(z_ptr + oy[:, None] * N0 + ox[None, :], y[:, None] + x[None, :], mask=msk)\n",
         "zp = z_ptr + oy[:, None] * N0 + ox[None, :]\n"
         "tl.store(zp, tl.zeros((B1, B0), tl.float32) + x[None, :], mask=msk)\n"
         "tl.atomic_add(zp, tl.zeros((B1, B0), tl.float32) + y[:, None], mask=msk)\n"),
     "expect": {"code_points": 5}, "judged": "right (each element belongs to one program)"},
    {"id": "outer6.wrong.or_store_mask", "group": "wrong",
     "description": "the store mask (oy[:, None] < N1) | (ox[None, :] < N0) (| for &)",
     "fill": BASE.replace("msk = (oy[:, None] < N1) & (ox[None, :] < N0)", "msk = (oy[:, None] < N1) | (ox[None, :] < N0)"),
     "expect": {"code_points": 2, "diagnoses": ["store_out_of_bounds"]},
     "judged": "wrong wherever N0 or N1 is not a multiple of its block (writes past z's rows or tail); the "
               "given check (100, 90) fails"},
    {"id": "outer6.wrong.static_assert_square", "group": "wrong",
     "description": "tl.static_assert(B0 == B1) (a square-block assumption)",
     "fill": "tl.static_assert(B0 == B1)\n" + BASE,
     "expect": {"code_points": 3, "vetoes": ["coincidental_pass"], "failing_cases": ["probe.rect_blocks"]},
     "judged": "wrong: refuses rectangular blocks (probe.rect_blocks, B0 = 32, B1 = 8: a compile error)"},
    {"id": "outer6.wrong.x_mask_n0_minus_one", "group": "wrong",
     "description": "the store's column bound ox < N0 - 1 (off by one: z's last column never written)",
     "fill": BASE.replace("msk = (oy[:, None] < N1) & (ox[None, :] < N0)", "msk = (oy[:, None] < N1) & (ox[None, :] < N0 - 1)"),
     "expect": {"code_points": 0}, "judged": "wrong everywhere (the last column keeps the buffer's NaN)"},
]
