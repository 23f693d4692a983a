"""Third-party styles, sixth batch, lesson07_softmax (two blanks: other=, the shift).

`tl.where` re-masking inside the max, `tl.flip` before the max, `tl.reduce` with a builtin as the
combine, a finite NumPy sentinel (-1e4), and the bug: the shift by the largest magnitude
(`tl.max(tl.abs(x))`: right for positive rows, an underflow for very negative ones)."""
EXERCISE = "lesson07_softmax"
O = 'other=-float("inf"))'
SH = "shifted = logits - tl.max(logits, axis=0)"

PROBES = [
    {"id": "l7_6.right.where_inside_max", "group": "right",
     "description": "shift by tl.max(tl.where(mask, logits, -float('inf')), axis=0) (re-masked, NumPy's np.where)",
     "edits": [{"old": SH, "new": "shifted = logits - tl.max(tl.where(mask, logits, -float('inf')), axis=0)"}],
     "expect": {"code_points": 3}, "judged": "right"},
    {"id": "l7_6.right.flip_then_max", "group": "right",
     "description": "shift by tl.max(tl.flip(logits, 0), axis=0) (a flip changes no maximum)",
     "edits": [{"old": SH, "new": "shifted = logits - tl.max(tl.flip(logits, 0), axis=0)"}],
     "expect": {"code_points": 0, "rejected": True},
     "judged": "(first judged 3) a right kernel, refused by the blank's rule: tl.flip is no math, comparison or "
               "reduction function; the message names it. Left: a policy question, noted in the README"},
    {"id": "l7_6.right.reduce_builtin_maximum", "group": "right",
     "description": "shift by tl.reduce(logits, 0, tl.maximum) (a builtin as the combine function)",
     "edits": [{"old": SH, "new": "shifted = logits - tl.reduce(logits, 0, tl.maximum)"}],
     "expect": {"code_points": 0, "rejected": True},
     "judged": "(first judged 3 if it compiles) refused by the blank's rule (tl.reduce is not listed; its combine "
               "function would be a @triton.jit function outside the blank)"},
    {"id": "l7_6.right.finite_sentinel_1e4", "group": "right",
     "description": "other=-1e4 (a finite sentinel far below every case's logits)",
     "edits": [{"old": O, "new": "other=-1e4)"}],
     "expect": {"code_points": 3},
     "judged": "right on these cases (exp(-1e4 - max) is 0 for every max above -1e4 + 104)"},
    {"id": "l7_6.wrong.shift_max_abs", "group": "wrong",
     "description": "shift by tl.max(tl.abs(tl.where(mask, logits, 0.0)), axis=0) (the largest magnitude)",
     "edits": [{"old": SH, "new": "shifted = logits - tl.max(tl.abs(tl.where(mask, logits, 0.0)), axis=0)"}],
     "expect": {"code_points": 2, "vetoes": ["coincidental_pass"], "diagnoses": ["nonfinite_output"],
                "not_diagnosed": ["no_max_underflow", "no_max_overflow"], "failing_cases": ["probe.very_negative"]},
     "judged": "wrong: right on rows with a positive maximum; on rows near -150 the shift is -2·150, exp underflows: 0/0. At main "
               "no_max_underflow, 'matches: the row maximum was not subtracted', which probe.large_logits (passed) "
               "contradicts; now nonfinite_output (first judged shift_not_max, whose message is about the mean)"},
]
