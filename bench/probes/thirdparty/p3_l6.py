"""Third-party styles, third round, lesson06_mean_var (one blank)."""
EXERCISE = "lesson06_mean_var"
B = "centered_sq = tl.where(mask, (values - mean)"


def fill(f: str) -> dict:
    return {"old": B, "new": f"centered_sq = tl.where({f}, (values - mean)"}


PROBES = [
    {"id": "l6_3.right.broadcast_list", "group": "right", "description": "Inductor: tl.broadcast_to(mask, [BLOCK])",
     "edits": [fill("tl.broadcast_to(mask, [BLOCK])")], "expect": {"code_points": 3}, "judged": "right"},
    {"id": "l6_3.right.ai_defensive", "group": "right", "description": "AI-assistant: mask & (cols < N) & (cols >= 0)",
     "edits": [fill("mask & (cols < N) & (cols >= 0)")], "expect": {"code_points": 3}, "judged": "right"},
    {"id": "l6_3.wrong.cuda_block_bound", "group": "wrong", "description": "CUDA habit: cols < BLOCK (every lane)",
     "edits": [fill("cols < BLOCK")], "expect": {"code_points": 1.5},
     "judged": "wrong when N < BLOCK: each padding lane adds mean^2 (as no mask at all)"},
]
