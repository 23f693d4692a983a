"""Third-party styles, sixth batch, puzzle_long_sum (the whole kernel body).

Int64 program ids (`tl.program_id(0).to(tl.int64)`), uint32 column offsets, an accumulator from
the pointer's dtype (`tl.full([B0], 0, x_ptr.dtype.element_ty)`), `tl.range(..., flatten=True)`
over a block count, a loop-carried tuple, reading past the row end with clamped offsets and a
`tl.where` afterwards, an output written more than once (a running store each block, zeroed then
atomically added), and the bugs: the clamped read not re-masked, a NumPy int accumulator,
`range(0, T - 1, B1)`, `cols <= T`, the input used as scratch, only the last block stored."""
EXERCISE = "puzzle_long_sum"


def body(*, head: str = "pid = tl.program_id(0)\nrows = pid * B0 + tl.arange(0, B0)\n",
         acc: str = "acc = tl.zeros([B0], dtype=tl.float32)\n",
         loop: str = "for start in range(0, T, B1):\n",
         mask: str = "(rows[:, None] < N0) & (cols[None, :] < T)",
         load: str = "x = tl.load(x_ptr + rows[:, None] * T + cols[None, :], mask=m, other=0.0)\n",
         add: str = "    acc += tl.sum(x, axis=1)\n",
         tail: str = "tl.store(z_ptr + rows, acc, mask=rows < N0)\n") -> str:
    return (head + acc + loop + "    cols = start + tl.arange(0, B1)\n" + f"    m = {mask}\n"
            + "    " + load + add + tail)


PROBES = [
    {"id": "lsum6.right.int64_pid_uint32_cols", "group": "right",
     "description": "pid = tl.program_id(0).to(tl.int64); cols = start + tl.arange(0, B1).to(tl.uint32)",
     "fill": """pid = tl.program_id(0).to(tl.int64)
rows = pid * B0 + tl.arange(0, B0)
acc = tl.zeros([B0], dtype=tl.float32)
for start in range(0, T, B1):
    cols = start + tl.arange(0, B1).to(tl.uint32)
    m = (rows[:, None] < N0) & (cols[None, :] < T)
    x = tl.load(x_ptr + rows[:, None] * T + cols[None, :], mask=m, other=0.0)
    acc += tl.sum(x, axis=1)
tl.store(z_ptr + rows, acc, mask=rows < N0)
""",
     "expect": {"code_points": 5}, "judged": "right"},
    {"id": "lsum6.right.full_from_pointer_dtype", "group": "right",
     "description": "acc = tl.full([B0], 0, x_ptr.dtype.element_ty) (the dtype read from the pointer)",
     "fill": body(acc="acc = tl.full([B0], 0, x_ptr.dtype.element_ty)\n"),
     "expect": {"code_points": 5}, "judged": "right (x is float32)"},
    {"id": "lsum6.right.range_flatten_block_count", "group": "right",
     "description": "for b in tl.range(0, tl.cdiv(T, B1), flatten=True): start = b * B1",
     "fill": body(loop="for b in tl.range(0, tl.cdiv(T, B1), flatten=True):\n    start = b * B1\n"),
     "expect": {"code_points": 5}, "judged": "right (flatten is a hint)"},
    {"id": "lsum6.right.loop_carried_tuple", "group": "right",
     "description": "a loop-carried tuple: acc, nblk = acc + tl.sum(x, axis=1), nblk + 1",
     "fill": body(acc="acc = tl.zeros([B0], dtype=tl.float32)\nnblk = 0\n",
                  add="    acc, nblk = acc + tl.sum(x, axis=1), nblk + 1\n"),
     "expect": {"code_points": 5}, "judged": "right"},
    {"id": "lsum6.right.clamped_offsets_where", "group": "right",
     "description": "reads with clamped offsets (tl.minimum(cols, T - 1), rows clamped to N0 - 1), no load mask, "
                    "then tl.where(m, x, 0.0)",
     "fill": body(load="x = tl.load(x_ptr + tl.minimum(rows, N0 - 1)[:, None] * T + tl.minimum(cols, T - 1)[None, :])\n",
                  add="    acc += tl.sum(tl.where(m, x, 0.0), axis=1)\n"),
     "expect": {"code_points": 5}, "judged": "right (every address in bounds; the duplicates dropped)"},
    {"id": "lsum6.right.running_store_each_block", "group": "right",
     "description": "z written in every iteration (the running sum stored each block; the last store wins)",
     "fill": body(add="    acc += tl.sum(x, axis=1)\n    tl.store(z_ptr + rows, acc, mask=rows < N0)\n", tail=""),
     "expect": {"code_points": 5}, "judged": "right (T >= 1: at least one store)"},
    {"id": "lsum6.right.zero_then_atomic_add", "group": "right",
     "description": "z zeroed by a store, then each block's sum added with tl.atomic_add",
     "fill": body(acc="tl.store(z_ptr + rows, tl.zeros([B0], dtype=tl.float32), mask=rows < N0)\n",
                  add="    tl.atomic_add(z_ptr + rows, tl.sum(x, axis=1), mask=rows < N0)\n", tail=""),
     "expect": {"code_points": 5}, "judged": "right (one program owns its rows: the adds are ordered after its store)"},
    {"id": "lsum6.wrong.clamped_not_remasked", "group": "wrong",
     "description": "clamped offsets and no mask at all: the last column counted once per padding lane",
     "fill": body(load="x = tl.load(x_ptr + tl.minimum(rows, N0 - 1)[:, None] * T + tl.minimum(cols, T - 1)[None, :])\n"),
     "expect": {"code_points": 2},
     "judged": "wrong wherever T is not a multiple of B1 (the given check's T = 200); regular cases pass"},
    {"id": "lsum6.wrong.numpy_int_accumulator", "group": "wrong",
     "description": "acc = tl.zeros([B0], dtype=tl.int32) (NumPy's np.zeros(n, dtype=int)), then acc += float sums",
     "fill": body(acc="acc = tl.zeros([B0], dtype=tl.int32)\n"),
     "expect": {"code_points": 0},
     "judged": "a compile error on a GPU (the loop-carried acc changes type int32 -> fp32); the interpreter "
               "does not check it: the gate must refuse it"},
    {"id": "lsum6.wrong.range_t_minus_one", "group": "wrong",
     "description": "for start in range(0, T - 1, B1) (an off-by-one bound: T = 1 gets no iteration)",
     "fill": body(loop="for start in range(0, T - 1, B1):\n"),
     "expect": {"code_points": 3, "code_points_min": 3, "vetoes_may": ["coincidental_pass"],
                "failing_cases": ["boundary.t_one"], "not_diagnosed": ["dropped_tail", "loop_stops_early"]},
     "judged": "wrong for T = 1 only (and a drawn T = 32k + 1: then probe.ragged_t too, with coincidental_pass); "
               "(first judged coincidental_pass: that veto is for failed probes, and t_one is a boundary case; "
               "the submission passes at 8/10, by the rule's threshold). At main the report said dropped_tail "
               "('the loop bound was rounded down, T // B1'), which boundary.t_short (T = 20, passed) rules out; "
               "now unexplained_sum"},
    {"id": "lsum6.wrong.cols_le_t", "group": "wrong",
     "description": "mask (rows[:, None] < N0) & (cols[None, :] <= T) (one column too many)",
     "fill": body(mask="(rows[:, None] < N0) & (cols[None, :] <= T)"),
     "expect": {"code_points": 2, "diagnoses": ["col_mask_too_wide"]},
     "judged": "wrong where T is not a multiple of B1 (the next row's first value added)"},
    {"id": "lsum6.wrong.input_as_scratch", "group": "wrong",
     "description": "the row sum stored into x's first column, then copied to z (x used as scratch)",
     "fill": body(tail="tl.store(x_ptr + rows * T, acc, mask=rows < N0)\n"
                       "tl.store(z_ptr + rows, tl.load(x_ptr + rows * T, mask=rows < N0), mask=rows < N0)\n"),
     "expect": {"code_points": 4, "diagnoses": ["input_overwritten"], "failing_cases": ["given"]},
     "judged": "wrong: z is right but the input is changed in every case. (first judged 0) an overwritten input is "
               "a diagnosis, not a failed case (docs/grading.md, 'Inputs overwritten'; the catalogue's "
               "wrong.zeroes_input is 4): only the given check, which sums x after the call, fails"},
    {"id": "lsum6.wrong.store_last_block_only", "group": "wrong",
     "description": "each block's own sum stored in the loop (overwritten: only the last block's sum remains)",
     "fill": body(add="    tl.store(z_ptr + rows, tl.sum(x, axis=1), mask=rows < N0)\n", tail=""),
     "expect": {"code_points": 0, "diagnoses": ["last_block_only"]}, "judged": "wrong wherever T > B1"},
]
