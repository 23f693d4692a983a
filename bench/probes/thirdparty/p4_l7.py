"""Third-party styles, fourth batch, lesson07_softmax (two blanks: other=, the shift)."""
EXERCISE = "lesson07_softmax"
O = 'other=-float("inf"))'
SH = "shifted = logits - tl.max(logits, axis=0)"

PROBES = [
    {"id": "l7_4.right.max_axis_none", "group": "right", "description": "tl.max(logits, axis=None) (the whole block: a scalar)",
     "edits": [{"old": SH, "new": "shifted = logits - tl.max(logits, axis=None)"}],
     "expect": {"code_points": 3}, "judged": "right"},
    {"id": "l7_4.right.other_full_neg_inf", "group": "right",
     "description": "other=tl.full([BLOCK], float('-inf'), tl.float32) and the max over tl.where(mask, logits, -inf), keep_dims",
     "edits": [{"old": O, "new": "other=tl.full([BLOCK], float(\"-inf\"), tl.float32))"},
               {"old": SH, "new": "shifted = logits - tl.max(tl.where(mask, logits, float(\"-inf\")), axis=0, keep_dims=True)"}],
     "expect": {"code_points": 3}, "judged": "right"},
    {"id": "l7_4.wrong.subtract_min", "group": "wrong", "description": "subtract tl.min(logits, axis=0)",
     "edits": [{"old": SH, "new": "shifted = logits - tl.min(logits, axis=0)"}],
     "expect": {"code_points": 1.5, "diagnoses": ["nonfinite_output"]},
     "judged": "(first judged 0) wrong: with -inf padding the min is -inf on ragged rows (NaN: given, past_pow2, "
               "strided); a power-of-2 row of randn passes (1.5 of the regular points)"},
    {"id": "l7_4.wrong.subtract_masked_mean", "group": "wrong",
     "description": "subtract the mean of the valid logits: tl.sum(tl.where(mask, logits, 0.0), axis=0) / N",
     "edits": [{"old": SH, "new": "shifted = logits - tl.sum(tl.where(mask, logits, 0.0), axis=0) / N"}],
     "expect": {"code_points": 2, "vetoes": ["coincidental_pass"], "diagnoses": ["shift_not_max"]},
     "judged": "wrong reasoning (the mean does not bound exp): right on randn, overflows on the large-logits probe"},
]
