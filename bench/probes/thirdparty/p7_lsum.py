"""Third-party styles, seventh batch, puzzle_long_sum (the whole kernel body).

A 1-D flattened index where a 2-D tile is meant (`idx // B1`, `idx % B1`, then tl.reshape), a
warp-shuffle tree emulated by reshaping into pairs, Kahan-compensated accumulation, a peeled first
block (a CUDA prologue), a loop bound one block past the row (an all-masked block), and the bugs:
`tl.static_range` over a runtime T (a `#pragma unroll` habit), loads cast to bfloat16, the mask on
the store only, rows indexed `pid + tl.arange(0, B0)` (CUDA's blockIdx + threadIdx without blockDim)."""
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
    {"id": "lsum7.right.flat_index_reshape", "group": "right",
     "description": "a 1-D index over the tile: idx = tl.arange(0, B0 * B1); r = idx // B1; c = idx % B1; "
                    "tl.reshape(x, [B0, B1]) before the row sums",
     "fill": """pid = tl.program_id(0)
idx = tl.arange(0, B0 * B1)
r = pid * B0 + idx // B1
acc = tl.zeros([B0], dtype=tl.float32)
for start in range(0, T, B1):
    c = start + idx % B1
    x = tl.load(x_ptr + r * T + c, mask=(r < N0) & (c < T), other=0.0)
    acc += tl.sum(tl.reshape(x, [B0, B1]), axis=1)
rows = pid * B0 + tl.arange(0, B0)
tl.store(z_ptr + rows, acc, mask=rows < N0)
""",
     "expect": {"code_points": 5}, "judged": "right (row-major reshape: element (i, j) is idx = i * B1 + j)"},
    {"id": "lsum7.right.pairwise_tree_reshape", "group": "right",
     "description": "each block summed as a tree: tl.sum(tl.reshape(x, [B0, B1 // 2, 2]), axis=2) then axis=1 "
                    "(a warp-shuffle reduction emulated)",
     "fill": body(add="    pairs = tl.sum(tl.reshape(x, [B0, B1 // 2, 2]), axis=2)\n    acc += tl.sum(pairs, axis=1)\n"),
     "expect": {"code_points": 5}, "judged": "right (B1 >= 16 in every case)"},
    {"id": "lsum7.right.kahan_compensated", "group": "right",
     "description": "Kahan summation across blocks: y = s - comp; t = acc + y; comp = (t - acc) - y; acc = t",
     "fill": body(acc="acc = tl.zeros([B0], dtype=tl.float32)\ncomp = tl.zeros([B0], dtype=tl.float32)\n",
                  add="    y = tl.sum(x, axis=1) - comp\n    t = acc + y\n    comp = (t - acc) - y\n    acc = t\n"),
     "expect": {"code_points": 5}, "judged": "right (a more accurate sum)"},
    {"id": "lsum7.right.peeled_first_block", "group": "right",
     "description": "the first block before the loop (a CUDA prologue), then for start in range(B1, T, B1)",
     "fill": """pid = tl.program_id(0)
rows = pid * B0 + tl.arange(0, B0)
cols0 = tl.arange(0, B1)
x0 = tl.load(x_ptr + rows[:, None] * T + cols0[None, :], mask=(rows[:, None] < N0) & (cols0[None, :] < T), other=0.0)
acc = tl.sum(x0, axis=1)
for start in range(B1, T, B1):
    cols = start + tl.arange(0, B1)
    m = (rows[:, None] < N0) & (cols[None, :] < T)
    x = tl.load(x_ptr + rows[:, None] * T + cols[None, :], mask=m, other=0.0)
    acc += tl.sum(x, axis=1)
tl.store(z_ptr + rows, acc, mask=rows < N0)
""",
     "expect": {"code_points": 5}, "judged": "right (T >= 1; the loop is empty when T <= B1)"},
    {"id": "lsum7.right.bound_one_block_past", "group": "right",
     "description": "for start in range(0, T + B1, B1) (one block too many, all of it masked)",
     "fill": body(loop="for start in range(0, T + B1, B1):\n"),
     "expect": {"code_points": 5}, "judged": "right (the extra block loads only other=0.0)"},
    {"id": "lsum7.wrong.static_range_runtime_t", "group": "wrong",
     "description": "for start in tl.static_range(0, T, B1) (an unrolled loop over a runtime T)",
     "fill": body(loop="for start in tl.static_range(0, T, B1):\n"),
     "expect": {"code_points": 0},
     "judged": "a compile error everywhere: static_range needs constexpr bounds, T is a runtime argument"},
    {"id": "lsum7.wrong.bf16_loads", "group": "wrong",
     "description": "x = tl.load(...).to(tl.bfloat16) (a half-width copy, accumulated in fp32)",
     "fill": body(load="x = tl.load(x_ptr + rows[:, None] * T + cols[None, :], mask=m, other=0.0).to(tl.bfloat16)\n",
                  add="    acc += tl.sum(x.to(tl.float32), axis=1)\n"),
     "expect": {"code_points": 0, "not_diagnosed": ["half_precision_accumulator"]},
     "judged": "wrong everywhere: bfloat16 keeps 8 significant bits (relative 4e-3 per element), far past atol 1e-4. The accumulator is float32: 'an accumulator in bfloat16' (named at main on boundary.t_one, T = 1, where values and accumulator round alike) is contradicted by every other failed case"},
    {"id": "lsum7.wrong.store_mask_only", "group": "wrong",
     "description": "loads with no mask, the store masked (the mask written once, at the end)",
     "fill": body(load="x = tl.load(x_ptr + rows[:, None] * T + cols[None, :])\n"),
     "expect": {"code_points": 2},
     "judged": "wrong wherever T is not a multiple of B1 (the next row's head added) or rows past N0 read past x: "
               "the given check (T = 200) and the boundary/probe cases fail; the regular cases (T = 128, 96; "
               "N0 a multiple of B0) pass: 3 of 4, 2.25 -> 2"},
    {"id": "lsum7.wrong.rows_without_block_dim", "group": "wrong",
     "description": "rows = pid + tl.arange(0, B0) (CUDA's blockIdx.x + threadIdx.x, the blockDim left out)",
     "fill": body(head="pid = tl.program_id(0)\nrows = pid + tl.arange(0, B0)\n"),
     "expect": {"code_points": 1.5, "vetoes": ["coincidental_pass"], "diagnoses": ["rows_not_written"]},
     "judged": "(first judged without the veto: the given check passes only because it launches B0 = 1, a coincidence) wrong for B0 > 1: programs overlap and rows past cdiv(N0, B0) + B0 - 1 are never written; "
               "right for B0 = 1 (the given check and regular.b0_1): 2 of 4 regular-item cases, boundary fails"},
]
