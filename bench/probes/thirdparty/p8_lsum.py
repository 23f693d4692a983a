"""Third-party styles, eighth batch, puzzle_long_sum (the whole kernel body).

A numba/CUDA "one thread per row" port (a scalar column loop: one load of B0 rows per column), JAX's
masking (indices clamped with tl.where, loads unmasked, values cleaned by tl.where), the tile loaded
transposed ([B1, B0], cols on axis 0) and summed over axis 0, and the bugs: x addressed column-major
(a Fortran habit), the store one row off (1-based rows from Julia), other=float("-inf") copied from a
softmax, per-block tl.atomic_add into a z the host never zeroed."""
EXERCISE = "puzzle_long_sum"


def body(*, load: str = "x = tl.load(x_ptr + rows[:, None] * T + cols[None, :], mask=m, other=0.0)\n",
         add: str = "    acc += tl.sum(x, axis=1)\n",
         tail: str = "tl.store(z_ptr + rows, acc, mask=rows < N0)\n") -> str:
    return ("pid = tl.program_id(0)\nrows = pid * B0 + tl.arange(0, B0)\nacc = tl.zeros([B0], dtype=tl.float32)\n"
            "for start in range(0, T, B1):\n    cols = start + tl.arange(0, B1)\n"
            "    m = (rows[:, None] < N0) & (cols[None, :] < T)\n" + "    " + load + add + tail)


PROBES = [
    {"id": "lsum8.right.numba_column_loop", "group": "right",
     "description": "for j in range(0, T): acc += tl.load(x_ptr + rows * T + j, mask=rows < N0, other=0.0) "
                    "(one column of B0 rows per iteration, a per-thread loop port)",
     "fill": """pid = tl.program_id(0)
rows = pid * B0 + tl.arange(0, B0)
row_mask = rows < N0
acc = tl.zeros([B0], dtype=tl.float32)
for j in range(0, T):
    acc += tl.load(x_ptr + rows * T + j, mask=row_mask, other=0.0)
tl.store(z_ptr + rows, acc, mask=row_mask)
""",
     "expect": {"code_points": 5}, "judged": "right (a sequential sum per row; float32 error far below 1e-4)"},
    {"id": "lsum8.right.jax_where_clamped", "group": "right",
     "description": "indices clamped with tl.where(idx < n, idx, 0), loads without a mask, values kept by tl.where",
     "fill": """pid = tl.program_id(0)
rows = pid * B0 + tl.arange(0, B0)
safe_rows = tl.where(rows < N0, rows, 0)
acc = tl.zeros([B0], dtype=tl.float32)
for start in range(0, T, B1):
    cols = start + tl.arange(0, B1)
    safe_cols = tl.where(cols < T, cols, 0)
    x = tl.load(x_ptr + safe_rows[:, None] * T + safe_cols[None, :])
    x = tl.where((rows[:, None] < N0) & (cols[None, :] < T), x, 0.0)
    acc += tl.sum(x, axis=1)
tl.store(z_ptr + rows, acc, mask=rows < N0)
""",
     "expect": {"code_points": 5}, "judged": "right (every address in bounds; the clamped lanes' values dropped)"},
    {"id": "lsum8.right.transposed_tile", "group": "right",
     "description": "the tile loaded as [B1, B0] (x_ptr + rows[None, :] * T + cols[:, None]) and summed over axis 0",
     "fill": """pid = tl.program_id(0)
rows = pid * B0 + tl.arange(0, B0)
acc = tl.zeros([B0], dtype=tl.float32)
for start in range(0, T, B1):
    cols = start + tl.arange(0, B1)
    xt = tl.load(x_ptr + rows[None, :] * T + cols[:, None], mask=(rows[None, :] < N0) & (cols[:, None] < T), other=0.0)
    acc += tl.sum(xt, axis=0)
tl.store(z_ptr + rows, acc, mask=rows < N0)
""",
     "expect": {"code_points": 5}, "judged": "right (the same elements, reduced along the axis that holds the columns)"},
    {"id": "lsum8.wrong.column_major_x", "group": "wrong",
     "description": "x addressed column-major: x_ptr + rows[:, None] + cols[None, :] * N0 (a Fortran habit)",
     "fill": body(load="x = tl.load(x_ptr + rows[:, None] + cols[None, :] * N0, mask=m, other=0.0)\n"),
     "expect": {"code_points": 0, "diagnoses": ["column_major"]},
     "judged": "wrong wherever T > 1 and N0 > 1 (element (i, j) read from i + j·N0); every address stays in x"},
    {"id": "lsum8.wrong.store_one_row_off", "group": "wrong",
     "description": "tl.store(z_ptr + rows + 1, acc, mask=rows + 1 < N0) (a 1-based row index in the store only)",
     "fill": body(tail="tl.store(z_ptr + rows + 1, acc, mask=rows + 1 < N0)\n"),
     "expect": {"code_points": 0, "diagnoses": ["rows_shifted"]},
     "judged": "wrong everywhere: z[i + 1] gets row i's sum, z[0] is never written (NaN from the host's buffer)"},
    {"id": "lsum8.wrong.other_neg_inf", "group": "wrong",
     "description": 'other=float("-inf") in the load (copied from a softmax kernel)',
     "fill": body(load='x = tl.load(x_ptr + rows[:, None] * T + cols[None, :], mask=m, other=float("-inf"))\n'),
     "expect": {"code_points": 2, "diagnoses": ["padding_infinite"]},
     "judged": "wrong wherever a block has padding lanes (T not a multiple of B1): -inf sums; the regular cases "
               "(T = 128, 96, rows multiples of B0) pass, the given check (T = 200) fails: 3 of 4, 2.25 -> 2"},
    {"id": "lsum8.wrong.atomic_into_unzeroed_z", "group": "wrong",
     "description": "tl.atomic_add(z_ptr + rows, tl.sum(x, axis=1), mask=rows < N0) per block, z never zeroed "
                    "(a torch.zeros habit)",
     "fill": body(add="    tl.atomic_add(z_ptr + rows, tl.sum(x, axis=1), mask=rows < N0)\n", tail=""),
     "expect": {"code_points": 0, "diagnoses": ["rows_not_written"]},
     "judged": "wrong everywhere: the host fills z with NaN, NaN + anything is NaN"},
]
