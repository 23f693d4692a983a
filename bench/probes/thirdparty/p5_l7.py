"""Third-party styles, fifth batch, lesson07_softmax (two blanks: other=, the shift)."""
EXERCISE = "lesson07_softmax"
O = 'other=-float("inf"))'
SH = "shifted = logits - tl.max(logits, axis=0)"

PROBES = [
    {"id": "l7_5.right.float_neg_inf_string", "group": "right", "description": "other=float('-inf')",
     "edits": [{"old": O, "new": "other=float('-inf'))"}], "expect": {"code_points": 3}, "judged": "right"},
    {"id": "l7_5.right.max_positional_axis_method", "group": "right",
     "description": "the shift as logits.max(0) (a tensor method, positional axis)",
     "edits": [{"old": SH, "new": "shifted = logits - logits.max(0)"}], "expect": {"code_points": 3}, "judged": "right"},
    {"id": "l7_5.right.finite_f32_lowest", "group": "right", "description": "other=-3.4e38 (float32's lowest, finite)",
     "edits": [{"old": O, "new": "other=-3.4e38)"}], "expect": {"code_points": 3}, "judged": "right"},
    {"id": "l7_5.wrong.other_neg_one", "group": "wrong", "description": "other=-1.0 (a small sentinel)",
     "edits": [{"old": O, "new": "other=-1.0)"}],
     "expect": {"code_points": 1.5, "diagnoses": ["padding_not_neg_inf"], "not_diagnosed": ["padding_zero"]},
     "judged": "wrong wherever N is not a power of 2 (the padding lanes' exp(-1 - max) in the denominator). At main "
               "probe.very_negative was also diagnosed 'filled with 0.0': false (its rows underflow whatever the "
               "padding value); now under the value the other cases showed"},
    {"id": "l7_5.wrong.shift_sum", "group": "wrong", "description": "subtract tl.sum(logits, axis=0) (with -inf padding: -inf)",
     "edits": [{"old": SH, "new": "shifted = logits - tl.sum(logits, axis=0)"}],
     "expect": {"code_points": 0, "diagnoses": ["nonfinite_output"]},
     "judged": "(first judged 1.5: the cases' rows are not centred, so on power-of-2 rows the sum is far from the max "
               "and exp underflows or overflows: NaN) wrong everywhere; on ragged rows the sum is -inf"},
]
