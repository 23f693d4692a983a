"""Third-party styles, third round, lesson05_row_sum (three blanks; edits of solution.py)."""
EXERCISE = "lesson05_row_sum"
S1 = "row_start = x + row * stride_m"
LD = "mask=cols < N, other=0.0)"

PROBES = [
    {"id": "l5_3.right.inductor_full_scalar_stride", "group": "right",
     "description": "Inductor: row * tl.full([], stride_m, tl.int64) (a 0-d int64 tensor, list shape)",
     "edits": [{"old": S1, "new": "row_start = x + row * tl.full([], stride_m, tl.int64)"}],
     "expect": {"code_points": 3}, "judged": "right"},
    {"id": "l5_3.right.ai_defensive_mask", "group": "right",
     "description": "AI-assistant: mask=(cols < N) & (cols >= 0) & (cols < BLOCK), other=tl.zeros([BLOCK], dtype=tl.float32)",
     "edits": [{"old": LD, "new": "mask=(cols < N) & (cols >= 0) & (cols < BLOCK), other=tl.zeros([BLOCK], dtype=tl.float32))"}],
     "expect": {"code_points": 3}, "judged": "right (over-defensive)"},
    {"id": "l5_3.right.stride_int64_method", "group": "right",
     "description": "vLLM int64 stride (tl.cast: stride_m is a constexpr) and other=0 (an int zero)",
     "edits": [{"old": S1, "new": "row_start = x + row * tl.cast(stride_m, tl.int64)"},
               {"old": LD, "new": "mask=cols < N, other=0)"}],
     "expect": {"code_points": 3}, "judged": "right"},
    {"id": "l5_3.wrong.cuda_block_mask", "group": "wrong",
     "description": "CUDA habit: mask=cols < BLOCK (the block size is the bound)",
     "edits": [{"old": LD, "new": "mask=cols < BLOCK, other=0.0)"}],
     "expect": {"code_points": 1.5},
     "judged": "wrong on every ragged row: the next row's values (or past the tensor) are summed"},
    {"id": "l5_3.wrong.stride_is_n", "group": "wrong",
     "description": "thread-per-element index arithmetic: row * N (the contiguous row length)",
     "edits": [{"old": S1, "new": "row_start = x + row * N"}],
     "expect": {"code_points": 2, "vetoes": ["coincidental_pass"], "diagnoses": ["row_stride_is_n"]},
     "judged": "wrong only on strided views (boundary/probe), right on contiguous inputs"},
    {"id": "l5_3.right.cuda_min_bound", "group": "right",
     "description": "CUDA habit: mask=cols < min(N, BLOCK) (the bound clamped to the block, Python's min of two constexprs)",
     "edits": [{"old": LD, "new": "mask=cols < min(N, BLOCK), other=0.0)"}],
     "expect": {"code_points": 3}, "judged": "right (N <= BLOCK always here: the min is N)"},
]
