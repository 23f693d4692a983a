"""Third-party styles, third round, puzzle_long_sum (the whole kernel body).

TorchInductor's generated reductions (xoffset/xindex/xmask/rindex/rmask, a 2-D `_tmp` accumulator over
`for roffset in range(0, rnumel, RBLOCK)`, `tl.where(rmask & xmask, ...)`, `eviction_policy`), vLLM /
lightllm (early return, int64 offsets, `tl.multiple_of`/`tl.max_contiguous`, `cache_modifier`, constexpr
flags), triton-puzzles solutions with CUDA habits (`tl.static_range` over rows, scalar loads)."""
EXERCISE = "puzzle_long_sum"

INDUCTOR = """xnumel = N0
rnumel = T
xoffset = tl.program_id(0) * XBLOCK
xindex = xoffset + tl.arange(0, XBLOCK)[:, None]
xmask = xindex < xnumel
rbase = tl.arange(0, RBLOCK)[None, :]
x0 = xindex
_tmp2 = tl.full([XBLOCK, RBLOCK], 0, tl.float32)
for roffset in range(0, rnumel, RBLOCK):
    rindex = roffset + rbase
    rmask = rindex < rnumel
    r1 = rindex
    tmp0 = tl.load(x_ptr + (r1 + (T * x0)), rmask & xmask, eviction_policy='evict_first', other=0.0)
    tmp1 = tl.broadcast_to(tmp0, [XBLOCK, RBLOCK])
    tmp3 = _tmp2 + tmp1
    _tmp2 = tl.where(rmask & xmask, tmp3, _tmp2)
tmp2 = tl.sum(_tmp2, 1)[:, None]
tl.store(z_ptr + (x0), tmp2, xmask)
"""

PROBES = [
    {"id": "lsum3.wrong.inductor_plain_assign_block", "group": "wrong",
     "description": "Inductor's generated reduction with XBLOCK = B0 (a plain assignment: the constexpr becomes a tensor)",
     "fill": "XBLOCK = B0\nRBLOCK = B1\n" + INDUCTOR,
     "expect": {"code_points": 0},
     "judged": "(first judged right) wrong: Triton's code generator (3.6 and 3.9 alike) turns an assigned value into a "
               "tensor, so tl.arange(0, XBLOCK) fails to compile: \"arange's arguments must be of type tl.constexpr\""},
    {"id": "lsum3.right.inductor_annotated_constexpr", "group": "right",
     "description": "as Inductor, with XBLOCK: tl.constexpr = B0 annotated assignments in the body",
     "fill": "XBLOCK: tl.constexpr = B0\nRBLOCK: tl.constexpr = B1\n" + INDUCTOR,
     "expect": {"code_points": 5}, "judged": "right: an annotated constexpr assignment is Triton syntax"},
    {"id": "lsum3.right.inductor_no_other", "group": "right",
     "description": "Inductor load without other= (the tl.where(rmask & xmask, ...) keeps padding out)",
     "fill": "XBLOCK: tl.constexpr = B0\nRBLOCK: tl.constexpr = B1\n" + INDUCTOR.replace(", other=0.0)", ")"),
     "expect": {"code_points": 5}, "judged": "right: masked lanes never reach _tmp2"},
    {"id": "lsum3.right.vllm_early_return", "group": "right",
     "description": "vLLM: early return, int64 row offsets, multiple_of/max_contiguous, cache_modifier='.cg'",
     "fill": """pid = tl.program_id(0)
if pid * B0 >= N0:
    return
rows = pid * B0 + tl.arange(0, B0)
row_mask = rows < N0
row_off = rows.to(tl.int64) * T
acc = tl.zeros((B0,), dtype=tl.float32)
for start in range(0, T, B1):
    cols = tl.max_contiguous(tl.multiple_of(start + tl.arange(0, B1), B1), B1)
    x = tl.load(x_ptr + row_off[:, None] + cols[None, :], mask=row_mask[:, None] & (cols[None, :] < T),
                other=0.0, cache_modifier=".cg")
    acc += tl.sum(x.to(tl.float32), axis=1)
tl.store(z_ptr + rows, acc, mask=row_mask)
""",
     "expect": {"code_points": 5}, "judged": "right (the hints are true: start is a multiple of B1)"},
    {"id": "lsum3.right.puzzles_static_range_rows", "group": "right",
     "description": "triton-puzzles / CUDA habit: one row at a time in tl.static_range(B0), a scalar if and scalar store",
     "fill": """pid = tl.program_id(0)
for i in tl.static_range(B0):
    row = pid * B0 + i
    if row < N0:
        acc = tl.zeros((B1,), dtype=tl.float32)
        for j in range(0, T, B1):
            offs = j + tl.arange(0, B1)
            acc += tl.load(x_ptr + row * T + offs, mask=offs < T, other=0.0)
        tl.store(z_ptr + row, tl.sum(acc, axis=0))
""",
     "expect": {"code_points": 5}, "judged": "right"},
    {"id": "lsum3.right.thread_per_element", "group": "right",
     "description": "CUDA thread-per-element port: a scalar loop over every column, a vector of rows loaded per column",
     "fill": """pid = tl.program_id(0)
rows = pid * B0 + tl.arange(0, B0)
acc = tl.zeros((B0,), dtype=tl.float32)
for j in range(T):
    acc += tl.load(x_ptr + rows * T + j, mask=rows < N0, other=0.0)
tl.store(z_ptr + rows, acc, mask=rows < N0)
""",
     "expect": {"code_points": 5}, "judged": "right (slow: T loads of B0 lanes)"},
    {"id": "lsum3.right.constexpr_flag_branch", "group": "right",
     "description": "lightllm: a constexpr flag selecting a branch (EVEN_T = False written inline), int64 pid",
     "fill": """EVEN: tl.constexpr = False
pid = tl.program_id(0).to(tl.int64)
rows = pid * B0 + tl.arange(0, B0)
acc = tl.zeros((B0, B1), dtype=tl.float32)
for start in range(0, T, B1):
    cols = start + tl.arange(0, B1)
    if EVEN:
        x = tl.load(x_ptr + rows[:, None] * T + cols[None, :])
    else:
        x = tl.load(x_ptr + rows[:, None] * T + cols[None, :], mask=(rows[:, None] < N0) & (cols[None, :] < T), other=0.0)
    acc += x
tl.store(z_ptr + rows, tl.sum(acc, axis=1), mask=rows < N0)
""",
     "expect": {"code_points": 5}, "judged": "right"},
    {"id": "lsum3.wrong.vllm_return_partial_block", "group": "wrong",
     "description": "vLLM early return written for full blocks only: if pid * B0 + B0 > N0: return",
     "fill": """pid = tl.program_id(0)
if pid * B0 + B0 > N0:
    return
rows = pid * B0 + tl.arange(0, B0)
acc = tl.zeros((B0,), dtype=tl.float32)
for start in range(0, T, B1):
    cols = start + tl.arange(0, B1)
    acc += tl.sum(tl.load(x_ptr + rows[:, None] * T + cols[None, :], mask=cols[None, :] < T, other=0.0), axis=1)
tl.store(z_ptr + rows, acc)
""",
     "expect": {"code_points": 3, "vetoes": ["coincidental_pass"]},
     "judged": "wrong when B0 does not divide N0 (probe.rows_tail: the last rows stay NaN); the regular cases pass"},
    {"id": "lsum3.wrong.static_range_runtime_bound", "group": "wrong",
     "description": "CUDA #pragma unroll habit: for j in tl.static_range(0, T, B1) with a runtime T",
     "fill": """pid = tl.program_id(0)
rows = pid * B0 + tl.arange(0, B0)
acc = tl.zeros((B0,), dtype=tl.float32)
for j in tl.static_range(0, T, B1):
    cols = j + tl.arange(0, B1)
    acc += tl.sum(tl.load(x_ptr + rows[:, None] * T + cols[None, :], mask=(rows[:, None] < N0) & (cols[None, :] < T), other=0.0), axis=1)
tl.store(z_ptr + rows, acc, mask=rows < N0)
""",
     "expect": {"code_points": 0},
     "judged": "wrong: static_range needs constexpr bounds; a compile error on every case (GPU and interpreter alike?)"},
    {"id": "lsum3.wrong.inductor_rnumel_n1", "group": "wrong",
     "description": "Inductor naming with rnumel = N1 (N1 is 1 here): only column 0 summed",
     "fill": "XBLOCK: tl.constexpr = B0\nRBLOCK: tl.constexpr = B1\n" + INDUCTOR.replace("rnumel = T", "rnumel = N1"),
     "expect": {"code_points": 0}, "judged": "wrong everywhere but T = 1 (boundary.t_one)"},
    {"id": "lsum3.gpu_check.load_no_other_plain_sum", "group": "gpu-check",
     "description": "masked load without other= summed directly (no tl.where): masked lanes undefined",
     "fill": """pid = tl.program_id(0)
rows = pid * B0 + tl.arange(0, B0)
acc = tl.zeros((B0,), dtype=tl.float32)
for start in range(0, T, B1):
    cols = start + tl.arange(0, B1)
    acc += tl.sum(tl.load(x_ptr + rows[:, None] * T + cols[None, :], mask=(rows[:, None] < N0) & (cols[None, :] < T)), axis=1)
tl.store(z_ptr + rows, acc, mask=rows < N0)
""",
     "expect": {"code_points": 5},
     "judged": "undefined by Triton's rule (masked lanes without other are unspecified); on GPUs they are 0 in practice; "
               "judged: graded by what runs, passes on both (needs a GPU check)"},
    {"id": "lsum3.right.cuda_builtin_min_clamp", "group": "right",
     "description": "CUDA port: the column index clamped with Python's min (the compiler's builtin_min, element-wise) "
                    "and the clamped lanes zeroed by tl.where",
     "fill": """pid = tl.program_id(0)
rows = pid * B0 + tl.arange(0, B0)
rows_c = min(rows, N0 - 1)
acc = tl.zeros((B0,), dtype=tl.float32)
for start in range(0, T, B1):
    cols = start + tl.arange(0, B1)
    cols_c = min(cols, T - 1)
    x = tl.load(x_ptr + rows_c[:, None] * T + cols_c[None, :])
    acc += tl.sum(tl.where(cols[None, :] < T, x, 0.0), axis=1)
tl.store(z_ptr + rows, acc, mask=rows < N0)
""",
     "expect": {"code_points": 5},
     "judged": "right on a GPU: min of a tensor is element-wise there (tl.core.builtin_min)"},
    {"id": "lsum3.right.cuda_while_loop", "group": "right",
     "description": "CUDA port: a while loop with a manual index (start = 0; while start < T: ...; start += B1)",
     "fill": """pid = tl.program_id(0)
rows = pid * B0 + tl.arange(0, B0)
acc = tl.zeros((B0,), dtype=tl.float32)
start = 0
while start < T:
    cols = start + tl.arange(0, B1)
    acc += tl.sum(tl.load(x_ptr + rows[:, None] * T + cols[None, :], mask=(rows[:, None] < N0) & (cols[None, :] < T), other=0.0), axis=1)
    start += B1
tl.store(z_ptr + rows, acc, mask=rows < N0)
""",
     "expect": {"code_points": 5}, "judged": "right"},
    {"id": "lsum3.right.vllm_assume_element_ty", "group": "right",
     "description": "vLLM: tl.assume(T > 0), the store cast to z_ptr.dtype.element_ty, a scalar max(T, 1) guard",
     "fill": """tl.assume(T > 0)
tl.assume(N0 > 0)
pid = tl.program_id(0)
rows = pid * B0 + tl.arange(0, B0)
acc = tl.zeros((B0,), dtype=tl.float32)
n_blocks = tl.cdiv(max(T, 1), B1)
for b in range(n_blocks):
    cols = b * B1 + tl.arange(0, B1)
    acc += tl.sum(tl.load(x_ptr + rows[:, None] * T + cols[None, :], mask=(rows[:, None] < N0) & (cols[None, :] < T), other=0.0), axis=1)
tl.store(z_ptr + rows, acc.to(z_ptr.dtype.element_ty), mask=rows < N0)
""",
     "expect": {"code_points": 5}, "judged": "right"},
    {"id": "lsum3.wrong.cuda_builtin_max_count", "group": "wrong",
     "description": "CUDA port: a ragged tail handled by max(cols, 0) instead of a mask (every lane still loads past T)",
     "fill": """pid = tl.program_id(0)
rows = pid * B0 + tl.arange(0, B0)
acc = tl.zeros((B0,), dtype=tl.float32)
for start in range(0, T, B1):
    cols = max(start + tl.arange(0, B1), 0)
    acc += tl.sum(tl.load(x_ptr + rows[:, None] * T + cols[None, :], mask=rows[:, None] < N0, other=0.0), axis=1)
tl.store(z_ptr + rows, acc, mask=rows < N0)
""",
     "expect": {"code_points": 2},
     "judged": "wrong whenever B1 does not divide T: the tail reads the next row (given T=200 and every ragged case); "
               "T multiple of B1 passes (regular cases)"},
    {"id": "lsum3.right.python_and_not_masks", "group": "right",
     "description": "Python habit: masks with and / or / not ((rows < N0) and not (cols >= T)); Triton reads them element-wise",
     "fill": """pid = tl.program_id(0)
rows = pid * B0 + tl.arange(0, B0)
acc = tl.zeros((B0,), dtype=tl.float32)
for start in range(0, T, B1):
    cols = start + tl.arange(0, B1)
    inside = (rows[:, None] < N0) and not (cols[None, :] >= T)
    acc += tl.sum(tl.load(x_ptr + rows[:, None] * T + cols[None, :], mask=inside, other=0.0), axis=1)
tl.store(z_ptr + rows, acc, mask=(rows < N0) or (rows < 0))
""",
     "expect": {"code_points": 5},
     "judged": "right on a GPU: the compiler's and/or/not of tensors are logical_and/logical_or/__not__ "
               "(a deprecation warning for blocks)"},
]
