"""Third-party styles, fourth batch, puzzle_long_sum (the whole kernel body; edits of solution.py for
what lies outside it: helper @triton.jit functions, tl.reduce combine functions, @triton.autotune /
@triton.heuristics / do_not_specialize decorators).

Row-pointer style (`x_ptr += row * T`), tl.where on offsets instead of load masks, keep_dims
accumulators, tl.static_assert, loop counts written by hand (`(T + B1 - 1) // B1` and its
off-by-ones), tl.dot against a ones vector, false tl.multiple_of hints, 2-D tiled loops over the
row block, masks missing in one direction, other= wrong for the sum, stride mixups."""
EXERCISE = "puzzle_long_sum"

KERNEL = "@triton.jit\ndef sum_kernel(x_ptr, z_ptr, N0, N1, T, B0: tl.constexpr, B1: tl.constexpr):\n"
BODY = """    pid = tl.program_id(0)
    rows = pid * B0 + tl.arange(0, B0)
    row_mask = rows < N0
    acc = tl.zeros((B0,), dtype=tl.float32)
    for start in range(0, T, B1):
        cols = start + tl.arange(0, B1)
        mask = row_mask[:, None] & (cols[None, :] < T)
        x = tl.load(x_ptr + rows[:, None] * T + cols[None, :], mask=mask, other=0.0)
        acc += tl.sum(x, axis=1)
    tl.store(z_ptr + rows, acc, mask=row_mask)
"""
ADD = "@triton.jit\ndef _add(a, b):\n    return a + b\n\n\n"
HELPER = """@triton.jit
def _load_tile(x_ptr, rows, cols, N0, T):
    mask = (rows[:, None] < N0) & (cols[None, :] < T)
    return tl.load(x_ptr + rows[:, None] * T + cols[None, :], mask=mask, other=0.0)


"""


def body(text: str) -> dict:
    return {"old": BODY, "new": text}


PROBES = [
    {"id": "lsum4.right.row_pointer_advance", "group": "right",
     "description": "row-pointer style: x_ptr += pid * B0 * T and z_ptr += pid * B0 (the Triton tutorials' "
                    "`X += row * stride`), offsets relative to the block's first row",
     "fill": """pid = tl.program_id(0)
x_ptr += pid * B0 * T
z_ptr += pid * B0
r = tl.arange(0, B0)
rmask = r < N0 - pid * B0
acc = tl.zeros((B0,), dtype=tl.float32)
for off in range(0, T, B1):
    c = off + tl.arange(0, B1)
    acc += tl.sum(tl.load(x_ptr + r[:, None] * T + c[None, :], mask=rmask[:, None] & (c[None, :] < T), other=0.0), axis=1)
tl.store(z_ptr + r, acc, mask=rmask)
""",
     "expect": {"code_points": 5}, "judged": "right"},
    {"id": "lsum4.right.where_safe_offsets", "group": "right",
     "description": "no load masks: offsets made safe with tl.where(mask, offs, 0), the loaded lanes zeroed by "
                    "tl.where, the store masked",
     "fill": """pid = tl.program_id(0)
rows = pid * B0 + tl.arange(0, B0)
acc = tl.zeros((B0,), dtype=tl.float32)
for start in range(0, T, B1):
    cols = start + tl.arange(0, B1)
    valid = (rows[:, None] < N0) & (cols[None, :] < T)
    offs = tl.where(valid, rows[:, None] * T + cols[None, :], 0)
    x = tl.load(x_ptr + offs)
    acc += tl.sum(tl.where(valid, x, 0.0), axis=1)
tl.store(z_ptr + rows, acc, mask=rows < N0)
""",
     "expect": {"code_points": 5}, "judged": "right: every load is in bounds (offset 0 for invalid lanes)"},
    {"id": "lsum4.right.keepdims_acc", "group": "right",
     "description": "a (B0, 1) accumulator from tl.sum(..., axis=1, keep_dims=True), stored through a (B0, 1) pointer block",
     "fill": """pid = tl.program_id(0)
rows = (pid * B0 + tl.arange(0, B0))[:, None]
acc = tl.zeros((B0, 1), dtype=tl.float32)
for start in range(0, T, B1):
    cols = (start + tl.arange(0, B1))[None, :]
    acc += tl.sum(tl.load(x_ptr + rows * T + cols, mask=(rows < N0) & (cols < T), other=0.0), axis=1, keep_dims=True)
tl.store(z_ptr + rows, acc, mask=rows < N0)
""",
     "expect": {"code_points": 5}, "judged": "right"},
    {"id": "lsum4.right.static_assert_manual_cdiv", "group": "right",
     "description": "tl.static_assert on the block sizes, the loop count written (T + B1 - 1) // B1, int64 offsets",
     "fill": """tl.static_assert(B1 >= 1)
tl.static_assert((B0 & (B0 - 1)) == 0, "B0 must be a power of 2")
pid = tl.program_id(0).to(tl.int64)
rows = pid * B0 + tl.arange(0, B0)
acc = tl.zeros((B0,), dtype=tl.float32)
n_iter = (T + B1 - 1) // B1
for i in range(n_iter):
    cols = i * B1 + tl.arange(0, B1)
    m = (rows[:, None] < N0) & (cols[None, :] < T)
    acc += tl.sum(tl.load(x_ptr + rows[:, None] * T + cols[None, :], mask=m, other=0.0), axis=1)
tl.store(z_ptr + rows, acc, mask=rows < N0)
""",
     "expect": {"code_points": 5}, "judged": "right"},
    {"id": "lsum4.right.cdiv_overcount_masked", "group": "right",
     "description": "loop count (T + B1) // B1 (one block too many when B1 divides T); the extra block is fully masked",
     "fill": """pid = tl.program_id(0)
rows = pid * B0 + tl.arange(0, B0)
acc = tl.zeros((B0,), dtype=tl.float32)
for i in range((T + B1) // B1):
    cols = i * B1 + tl.arange(0, B1)
    acc += tl.sum(tl.load(x_ptr + rows[:, None] * T + cols[None, :], mask=(rows[:, None] < N0) & (cols[None, :] < T), other=0.0), axis=1)
tl.store(z_ptr + rows, acc, mask=rows < N0)
""",
     "expect": {"code_points": 5}, "judged": "right: wasteful, but the masked extra block adds 0"},
    {"id": "lsum4.wrong.cdiv_minus_one", "group": "wrong",
     "description": "loop count (T - 1) // B1 (an off-by-one of cdiv): the last block is dropped on every row",
     "fill": """pid = tl.program_id(0)
rows = pid * B0 + tl.arange(0, B0)
acc = tl.zeros((B0,), dtype=tl.float32)
for i in range((T - 1) // B1):
    cols = i * B1 + tl.arange(0, B1)
    acc += tl.sum(tl.load(x_ptr + rows[:, None] * T + cols[None, :], mask=(rows[:, None] < N0) & (cols[None, :] < T), other=0.0), axis=1)
tl.store(z_ptr + rows, acc, mask=rows < N0)
""",
     "expect": {"code_points": 0}, "judged": "wrong everywhere (T = 1: no block at all, z = 0)"},
    {"id": "lsum4.wrong.other_one", "group": "wrong",
     "description": "other=1.0 on the load (a product's identity), masks right",
     "fill": BODY.replace("    ", "", 1).replace("\n    ", "\n").replace("other=0.0", "other=1.0"),
     "expect": {"code_points": 2, "diagnoses": ["padding_not_zero"]},
     "judged": "(first judged 3: the failed given check costs a regular point) wrong where the last block is partial "
               "(each row + its padding count): T multiple of B1 passes; given (T = 200) fails"},
    {"id": "lsum4.wrong.row_mask_only_load", "group": "wrong",
     "description": "the load masked by rows only (mask missing in the column direction), other=0.0",
     "fill": BODY.replace("    ", "", 1).replace("\n    ", "\n").replace(
         "mask = row_mask[:, None] & (cols[None, :] < T)", "mask = row_mask[:, None] & (cols[None, :] >= 0)"),
     "expect": {"code_points": 2, "diagnoses": ["next_row_leak"]},
     "judged": "(first judged 3: the given check fails) wrong when B1 does not divide T: the tail reads the next "
               "row's head (and past x on the last row)"},
    {"id": "lsum4.wrong.stride_b1", "group": "wrong",
     "description": "stride mixup: rows[:, None] * B1 (the block width) as the row stride",
     "fill": BODY.replace("    ", "", 1).replace("\n    ", "\n").replace("rows[:, None] * T", "rows[:, None] * B1"),
     "expect": {"code_points": 0}, "judged": "wrong on every case with more than one row (t_one: B1 = 16 ≠ T = 1)"},
    {"id": "lsum4.right.tiled_row_subloop", "group": "right",
     "description": "2-D tiled loops: the row block in sub-blocks of one row (tl.static_range(B0)), columns in a runtime loop, "
                    "each row's scalar sum stored alone",
     "fill": """pid = tl.program_id(0)
for r in tl.static_range(0, B0, 1):
    row = pid * B0 + r
    acc = tl.zeros((B1,), dtype=tl.float32)
    for off in range(0, T, B1):
        cols = off + tl.arange(0, B1)
        acc += tl.load(x_ptr + row * T + cols, mask=(cols < T) & (row < N0), other=0.0)
    tl.store(z_ptr + row, tl.sum(acc, axis=0), mask=row < N0)
""",
     "expect": {"code_points": 5},
     "judged": "right: graded 0 at main 463df8f (Triton 3.9's interpreter splat the scalar row < N0 into an int32 "
               "block, and its masked load refused it, 'mask has unsupported dtype'); 5 after"},
    {"id": "lsum4.gpu_check.false_multiple_of", "group": "gpu-check",
     "description": "vLLM-like hints that are false: tl.multiple_of(row offset, B1) where T is not a multiple of B1",
     "fill": """pid = tl.program_id(0)
rows = pid * B0 + tl.arange(0, B0)
acc = tl.zeros((B0,), dtype=tl.float32)
for start in range(0, T, B1):
    cols = tl.max_contiguous(tl.multiple_of(start + tl.arange(0, B1), B1), B1)
    base = tl.multiple_of(rows * T, 16)
    acc += tl.sum(tl.load(x_ptr + base[:, None] + cols[None, :], mask=(rows[:, None] < N0) & (cols[None, :] < T), other=0.0), axis=1)
tl.store(z_ptr + rows, acc, mask=rows < N0)
""",
     "expect": {"code_points": 5},
     "judged": "undefined: the hint rows * T multiple of 16 is false for T = 200, 20, 1, primes; the interpreter "
               "ignores hints (passes); on a GPU a vectorised masked load may read misaligned (needs a GPU check)"},
    {"id": "lsum4.gpu_check.dot_ones", "group": "gpu-check",
     "description": "matmul habit: acc += tl.dot(x, ones[B1, 16])[:, 0]-like reduction via tl.dot with a ones tile",
     "fill": """pid = tl.program_id(0)
rows = pid * B0 + tl.arange(0, B0)
ones = tl.full((B1, 16), 1.0, tl.float32)
acc = tl.zeros((B0, 16), dtype=tl.float32)
for start in range(0, T, B1):
    cols = start + tl.arange(0, B1)
    x = tl.load(x_ptr + rows[:, None] * T + cols[None, :], mask=(rows[:, None] < N0) & (cols[None, :] < T), other=0.0)
    acc = tl.dot(x, ones, acc, input_precision="ieee")
tl.store(z_ptr + rows, tl.max(acc, axis=1), mask=rows < N0)
""",
     "expect": {"code_points": 5},
     "judged": "(first judged 0, 'tl.dot needs M >= 16') right: Triton 3.6 and 3.9 both compile tl.dot with M = 1 for "
               "sm_90 (the gate compiles it; checked with the 3.6 compiler too) and input_precision='ieee' keeps fp32 "
               "(tf32 would miss 1e-4); GPU check: the H100's answer to the FMA-lowered dot"},
    {"id": "lsum4.outside.reduce_combine_helper", "group": "outside",
     "description": "tl.reduce(x, 1, _add) with a @triton.jit combine function defined above the kernel (outside the blank)",
     "edits": [{"old": KERNEL, "new": ADD + KERNEL},
               {"old": "        acc += tl.sum(x, axis=1)\n", "new": "        acc += tl.reduce(x, 1, _add)\n"}],
     "expect": {"code_points": 0, "vetoes": ["modified_outside_blank"]},
     "judged": "right as a kernel, but the helper lies outside the blank: not run; the body's _add is undefined in "
               "the program that runs (0), vetoed; the message should say the helper outside the blank was not run"},
    {"id": "lsum4.outside.jit_helper_load", "group": "outside",
     "description": "a @triton.jit helper _load_tile(x_ptr, rows, cols, N0, T) above the kernel, called in the body",
     "edits": [{"old": KERNEL, "new": HELPER + KERNEL},
               {"old": "        x = tl.load(x_ptr + rows[:, None] * T + cols[None, :], mask=mask, other=0.0)\n",
                "new": "        x = _load_tile(x_ptr, rows, cols, N0, T)\n"}],
     "expect": {"code_points": 0, "vetoes": ["modified_outside_blank"]},
     "judged": "as reduce_combine_helper: the helper is outside the blank (not run), the call fails"},
    {"id": "lsum4.outside.autotune_decorator", "group": "outside",
     "description": "@triton.autotune(configs=[triton.Config({}, num_warps=4), ...], key=['T']) above @triton.jit",
     "edits": [{"old": KERNEL, "new": "@triton.autotune(configs=[triton.Config({}, num_warps=4), "
                "triton.Config({}, num_warps=8)], key=['T'])\n" + KERNEL}],
     "expect": {"code_points": 5, "vetoes": ["modified_outside_blank"]},
     "judged": "an edit outside the blank (not run; the body is right: 5), vetoed"},
    {"id": "lsum4.outside.do_not_specialize", "group": "outside",
     "description": "@triton.jit(do_not_specialize=['T']) (vLLM's habit against recompiles)",
     "edits": [{"old": "@triton.jit\ndef sum_kernel", "new": "@triton.jit(do_not_specialize=[\"T\"])\ndef sum_kernel"}],
     "expect": {"code_points": 5, "vetoes": ["modified_outside_blank"]},
     "judged": "an edit outside the blank (not run; body right: 5), vetoed"},
    {"id": "lsum4.wrong.nested_def", "group": "wrong",
     "description": "the combine function written inside the body (a nested def) for tl.reduce",
     "fill": """def _add(a, b):
    return a + b
pid = tl.program_id(0)
rows = pid * B0 + tl.arange(0, B0)
acc = tl.zeros((B0,), dtype=tl.float32)
for start in range(0, T, B1):
    cols = start + tl.arange(0, B1)
    x = tl.load(x_ptr + rows[:, None] * T + cols[None, :], mask=(rows[:, None] < N0) & (cols[None, :] < T), other=0.0)
    acc += tl.reduce(x, 1, _add)
tl.store(z_ptr + rows, acc, mask=rows < N0)
""",
     "expect": {"code_points": 0},
     "judged": "Triton compiles no nested function definition (3.6 and 3.9): a compile error on every case"},
    {"id": "lsum4.wrong.fp16_load_cast_acc", "group": "wrong",
     "description": "fp16 habit: each tile cast to fp16 and summed in fp16 (x.to(tl.float16)), the accumulator fp32",
     "fill": """pid = tl.program_id(0)
rows = pid * B0 + tl.arange(0, B0)
acc = tl.zeros((B0,), dtype=tl.float32)
for start in range(0, T, B1):
    cols = start + tl.arange(0, B1)
    x = tl.load(x_ptr + rows[:, None] * T + cols[None, :], mask=(rows[:, None] < N0) & (cols[None, :] < T), other=0.0)
    acc += tl.sum(x.to(tl.float16), axis=1).to(tl.float32)
tl.store(z_ptr + rows, acc, mask=rows < N0)
""",
     "expect": {"code_points": 0},
     "judged": "wrong: fp16 rounding (~1e-3 relative per element) beyond atol/rtol 1e-4 on almost every case"},
    {"id": "lsum4.gpu_check.tensor_descriptor", "group": "gpu-check",
     "description": "Triton >= 3.4's successor of block pointers: tl.make_tensor_descriptor(x_ptr, shape, strides, "
                    "block_shape) in the kernel and desc.load([row0, start]) (out-of-range elements read as 0)",
     "fill": """pid = tl.program_id(0)
desc = tl.make_tensor_descriptor(x_ptr, shape=[N0, T], strides=[T, 1], block_shape=[B0, B1])
acc = tl.zeros((B0,), dtype=tl.float32)
for start in range(0, T, B1):
    acc += tl.sum(desc.load([pid * B0, start]), axis=1)
rows = pid * B0 + tl.arange(0, B0)
tl.store(z_ptr + rows, acc, mask=rows < N0)
""",
     "expect": {"code_points": 0},
     "judged": "0 on a GPU: compiled for sm_90 the kernel needs 128 bytes of global scratch a program (its TMA "
               "descriptor) and the launcher, with no triton.set_allocator in the lesson's host code, raises 'no "
               "allocator was set' (T = 1 fails to compile first: strides must be 16-byte aligned). At main 463df8f "
               "the interpreter ran it: 3 points and coincidental_pass suspected (t_one and the prime-T ragged_t "
               "failed on stride alignment, the rest passed); 0 after, with the GPU's reason. "
               "GPU check: the H100 run must fail each launch with the allocator error"},
]
