"""Third-party styles, third round, lesson07_softmax (two blanks)."""
EXERCISE = "lesson07_softmax"
O = 'other=-float("inf"))'
M = "shifted = logits - tl.max(logits, axis=0)"

PROBES = [
    {"id": "l7_3.right.inductor_full_where", "group": "right",
     "description": "Inductor: max over tl.where(mask, logits, tl.full([BLOCK], float('-inf'), tl.float32))",
     "edits": [{"old": M, "new": "shifted = logits - tl.max(tl.where(mask, logits, tl.full([BLOCK], float('-inf'), tl.float32)), 0)"}],
     "expect": {"code_points": 3}, "judged": "right"},
    {"id": "l7_3.right.ai_float32_min", "group": "right",
     "description": "AI-assistant: other=-3.4028234663852886e38 (float32 lowest) and max cast .to(tl.float32)",
     "edits": [{"old": O, "new": "other=-3.4028234663852886e38)"},
               {"old": M, "new": "shifted = logits - tl.max(logits.to(tl.float32), axis=0).to(tl.float32)"}],
     "expect": {"code_points": 3}, "judged": "right: exp(lowest - max) is 0"},
    {"id": "l7_3.right.cuda_half_lowest", "group": "right",
     "description": "CUDA habit: other=-65504.0 (half's lowest) as the padding",
     "edits": [{"old": O, "new": "other=-65504.0)"}],
     "expect": {"code_points": 3},
     "judged": "right: a finite sentinel far below every row (the very-negative probe is at -180); as mutant correct.finite_sentinel"},
    {"id": "l7_3.wrong.ai_max_abs", "group": "wrong",
     "description": "AI-assistant: subtract tl.max(tl.abs(logits)) ('stable for negative values too')",
     "edits": [{"old": M, "new": "shifted = logits - tl.max(tl.abs(tl.where(mask, logits, 0.0)), axis=0)"}],
     "expect": {"code_points": 2, "vetoes": ["coincidental_pass"]},
     "judged": "wrong on very negative rows: exp underflows to 0 everywhere, 0/0 = NaN (the boundary case)"},
]
