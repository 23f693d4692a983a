"""Third-party styles for lesson07_softmax (two blanks). code_points of 3."""
EXERCISE = "lesson07_softmax"
O = 'other=-float("inf"))'
M = "shifted = logits - tl.max(logits, axis=0)"

PROBES = [
    {"id": "l7.right.max_neg_axis_keepdims", "group": "right",
     "description": "tl.max(logits, axis=-1, keep_dims=True) (negative axis, shape (1,))",
     "edits": [{"old": M, "new": "shifted = logits - tl.max(logits, axis=-1, keep_dims=True)"}],
     "expect": {"code_points": 3}, "judged": "right"},
    {"id": "l7.right.other_float_neg_inf_where_max", "group": "right",
     "description": "other=float('-inf') and max over tl.where(mask, logits, -float('inf'))",
     "edits": [{"old": O, "new": "other=float('-inf'))"},
               {"old": M, "new": "shifted = logits - tl.max(tl.where(mask, logits, -float('inf')), 0)"}],
     "expect": {"code_points": 3}, "judged": "right"},
    {"id": "l7.wrong.other_zero_where_max_only", "group": "wrong",
     "description": "other=0 with tl.where(mask, x, -inf) only under the max: padding lanes still add exp(0 - max) to the denominator",
     "edits": [{"old": O, "new": "other=0.0)"},
               {"old": M, "new": "shifted = logits - tl.max(tl.where(mask, logits, -float('inf')), axis=0)"}],
     "expect": {"code_points": 1.5, "diagnoses": ["padding_zero"]},
     "judged": "(first written as 1) wrong on every ragged row (denominator too large), right when N is a power of two"},
    {"id": "l7.wrong.other_zero_under_max", "group": "wrong",
     "description": "other=0 under the max (Triton tutorial without -inf)",
     "edits": [{"old": O, "new": "other=0)"}],
     "expect": {"code_points": 1.5, "diagnoses": ["padding_zero"]},
     "judged": "(first written as 1) wrong: padding 0 in max and denominator"},
]
