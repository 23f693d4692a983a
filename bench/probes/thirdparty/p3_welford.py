"""Third-party styles, third round, welford_merge (three expression blanks; edits of solution.py).

Inductor (`tl.full([BLOCK], ...)` list shapes, `tl.broadcast_to`), CUDA ports (n_b by index arithmetic
instead of a reduction, the block size as the count), AI-assistant code (over-defensive masks,
redundant casts, `tl.where` guards on n). code_points = code.regular (2) + code.boundary (1)."""
EXERCISE = "welford_merge"
NB = "n_b = tl.sum(tl.where(mask, 1.0, 0.0), axis=0)"
M2 = "m2_b = tl.sum(tl.where(mask, (values - mean_b) * (values - mean_b), 0.0), axis=0)"
C = "m2 = m2 + m2_b + delta * delta * n * n_b / n_new"


def nb(fill: str) -> dict:
    return {"old": NB, "new": f"n_b = {fill}"}


def m2(fill: str) -> dict:
    return {"old": M2, "new": f"m2_b = {fill}"}


def c(fill: str) -> dict:
    return {"old": C, "new": f"m2 = m2 + m2_b + {fill}"}


PROBES = [
    {"id": "wf3.right.inductor_full_list", "group": "right",
     "description": "Inductor: n_b = tl.sum(tl.where(mask, tl.full([BLOCK], 1.0, tl.float32), 0.0), 0) (a list shape)",
     "edits": [nb("tl.sum(tl.where(mask, tl.full([BLOCK], 1.0, tl.float32), 0.0), 0)")],
     "expect": {"code_points": 3}, "judged": "right: tl.full's shape written as a list, as Inductor and the tutorials do"},
    {"id": "wf3.right.cuda_min_count", "group": "right",
     "description": "CUDA port: n_b = tl.minimum(N - start, BLOCK) (an int32 count, no reduction, no cast)",
     "edits": [nb("tl.minimum(N - start, BLOCK)")],
     "expect": {"code_points": 3}, "judged": "right: an int32 count promotes to float32 in mean_b and n_new"},
    {"id": "wf3.right.ai_defensive_m2", "group": "right",
     "description": "AI-assistant: where(mask & (cols < N) & (cols >= 0), fma(d, d, 0.0), 0.0) with .to(tl.float32) casts",
     "edits": [m2("tl.sum(tl.where(mask & (cols < N) & (cols >= 0), tl.fma((values - mean_b).to(tl.float32), "
                  "(values - mean_b).to(tl.float32), 0.0), 0.0).to(tl.float32), axis=0)")],
     "expect": {"code_points": 3}, "judged": "right (redundant)"},
    {"id": "wf3.right.ai_guard_first_merge", "group": "right",
     "description": "AI-assistant: tl.where(n > 0, delta * delta * n * n_b / n_new, 0.0) (guards the first merge, n = 0)",
     "edits": [c("tl.where(n > 0, delta * delta * n * n_b / n_new, 0.0)")],
     "expect": {"code_points": 3}, "judged": "right: the guarded term is 0 at n = 0 anyway"},
    {"id": "wf3.right.broadcast_list_mask", "group": "right",
     "description": "Inductor: m2_b = tl.sum(tl.where(tl.broadcast_to(mask, [BLOCK]), d * d, 0.0), axis=0)",
     "edits": [m2("tl.sum(tl.where(tl.broadcast_to(mask, [BLOCK]), (values - mean_b) * (values - mean_b), 0.0), axis=0)")],
     "expect": {"code_points": 3}, "judged": "right"},
    {"id": "wf3.right.weights_split", "group": "right",
     "description": "(delta * n) * (delta * n_b) / n_new (the form of Chan's paper, regrouped)",
     "edits": [c("(delta * n) * (delta * n_b) / n_new")],
     "expect": {"code_points": 3}, "judged": "right"},
    {"id": "wf3.wrong.cuda_block_count", "group": "wrong",
     "description": "CUDA habit: the count is the block size, n_b = BLOCK * 1.0",
     "edits": [nb("BLOCK * 1.0")],
     "expect": {"code_points": 1, "diagnoses": ["last_chunk_counted_as_block"]},
     "judged": "wrong on every ragged row (mean and variance scaled by N/BLOCK-ish); aligned regular cases pass"},
    {"id": "wf3.wrong.m2_raw_moment_where", "group": "wrong",
     "description": "AI-assistant: Σ where(mask, x*x - mean_b*mean_b, 0) (raw moment, masked, cancels on large means)",
     "edits": [m2("tl.sum(tl.where(mask, values * values - mean_b * mean_b, 0.0), axis=0)")],
     "expect": {"code_points": 2, "vetoes": ["coincidental_pass"], "diagnoses": ["cancellation"], "failing_cases": ["probe.large_mean"]},
     "judged": "wrong numerically: catastrophic cancellation at mean 1e4 (probe.large_mean)"},
    {"id": "wf3.wrong.weight_n_b_over_n", "group": "wrong",
     "description": "delta * delta * n_b (the second weight forgotten, n / n_new)",
     "edits": [c("delta * delta * n_b")],
     "expect": {"code_points": 0, "diagnoses": ["delta_weight_n_b_only"]},
     "judged": "(first judged 1) wrong on every row: even the first merge adds delta^2 n_b with delta = mean_b (n = 0)"},
    {"id": "wf3.wrong.divide_by_n_first_merge", "group": "wrong",
     "description": "delta * delta * n_b * n / n (a typo of n_new): 0/0 = NaN at the first merge",
     "edits": [c("delta * delta * n_b * n / n")],
     "expect": {"code_points": 0}, "judged": "wrong everywhere: NaN from the first chunk"},
    {"id": "wf3.right.cuda_builtin_min_count", "group": "right",
     "description": "CUDA port: n_b = min(N - start, BLOCK) * 1.0 (Python's min, Triton's builtin_min)",
     "edits": [nb("min(N - start, BLOCK) * 1.0")],
     "expect": {"code_points": 3}, "judged": "right: the compiler reads min as builtin_min (tl.minimum on a tensor)"},
]
