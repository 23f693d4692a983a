"""Third-party styles, fourth batch, welford_merge (three expression blanks; edits of solution.py)."""
EXERCISE = "welford_merge"
NB = "n_b = tl.sum(tl.where(mask, 1.0, 0.0), axis=0)"
M2 = "m2_b = tl.sum(tl.where(mask, (values - mean_b) * (values - mean_b), 0.0), axis=0)"
C = "m2 = m2 + m2_b + delta * delta * n * n_b / n_new"

PROBES = [
    {"id": "wf4.right.count_from_last_index", "group": "right",
     "description": "n_b = tl.max(tl.where(mask, cols - start + 1, 0), axis=0) * 1.0 (the last valid lane's 1-based index)",
     "edits": [{"old": NB, "new": "n_b = tl.max(tl.where(mask, cols - start + 1, 0), axis=0) * 1.0"}],
     "expect": {"code_points": 3}, "judged": "right"},
    {"id": "wf4.right.m2_fma_keepdims_free", "group": "right",
     "description": "m2_b = tl.sum(tl.fma(d, d, 0.0)) with d = tl.where(mask, values - mean_b, 0.0) inline, no axis",
     "edits": [{"old": M2, "new": "m2_b = tl.sum(tl.fma(tl.where(mask, values - mean_b, 0.0), tl.where(mask, values - mean_b, 0.0), 0.0))"}],
     "expect": {"code_points": 3}, "judged": "right (1-D: no axis is the whole block)"},
    {"id": "wf4.right.correction_reciprocal", "group": "right",
     "description": "delta * delta * (n * n_b * (1.0 / n_new)) (a reciprocal multiply)",
     "edits": [{"old": C, "new": "m2 = m2 + m2_b + delta * delta * (n * n_b * (1.0 / n_new))"}],
     "expect": {"code_points": 3}, "judged": "right"},
    {"id": "wf4.wrong.correction_over_block", "group": "wrong",
     "description": "dividing by BLOCK instead of n_new: delta * delta * n * n_b / BLOCK",
     "edits": [{"old": C, "new": "m2 = m2 + m2_b + delta * delta * n * n_b / BLOCK"}],
     "expect": {"code_points": 0}, "judged": "wrong wherever a row has more than one chunk"},
    {"id": "wf4.wrong.count_blocks", "group": "wrong",
     "description": "n_b = tl.cdiv(N, BLOCK) * 1.0 (the number of chunks, not the chunk's count)",
     "edits": [{"old": NB, "new": "n_b = tl.cdiv(N, BLOCK) * 1.0"}],
     "expect": {"code_points": 0}, "judged": "wrong everywhere (mean_b = sum / number of chunks)"},
    {"id": "wf4.wrong.m2_fp16", "group": "wrong",
     "description": "fp16 habit: m2_b summed from fp16 squares, tl.where(mask, d * d, 0.0).to(tl.float16)",
     "edits": [{"old": M2, "new": "m2_b = tl.sum(tl.where(mask, (values - mean_b) * (values - mean_b), 0.0).to(tl.float16), axis=0).to(tl.float32)"}],
     "expect": {"code_points": 2.5},
     "judged": "(first judged 0) wrong: tl.sum of a float16 block returns float16 (Triton keeps the dtype), so each "
               "chunk's M2_b is rounded to 11 bits; one chunk (regular.one_chunk) misses 2e-4, many chunks average "
               "the rounding out on the interpreter. No diagnosis ('matches none'). GPU check: a GPU's fp16 tree "
               "reduction rounds every partial sum and may fail more cases"},
]
