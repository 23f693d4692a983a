"""Third-party styles, eighth batch, lesson07_softmax (two blanks: other=, the shift).

The maximum taken over `tl.where(mask, logits, -inf)` (JAX's masked max) with a -inf padding and with
a 0.0 padding (the max right, the padding's exp(0 - max) still in the denominator), `keep_dims=True`,
and the bug: the first logit as the shift ("any constant works", not the maximum)."""
EXERCISE = "lesson07_softmax"
SH = "shifted = logits - tl.max(logits, axis=0)"
OT = 'other=-float("inf"))'


def shift(text: str) -> dict:
    return {"old": SH, "new": f"shifted = logits - {text}"}


PROBES = [
    {"id": "l7_8.right.masked_max_where", "group": "right",
     "description": 'shift by tl.max(tl.where(mask, logits, float("-inf")), axis=0)',
     "edits": [shift('tl.max(tl.where(mask, logits, float("-inf")), axis=0)')],
     "expect": {"code_points": 3}, "judged": "right"},
    {"id": "l7_8.right.max_keep_dims", "group": "right",
     "description": "shift by tl.max(logits, axis=0, keep_dims=True) (shape [1], broadcast)",
     "edits": [shift("tl.max(logits, axis=0, keep_dims=True)")], "expect": {"code_points": 3}, "judged": "right"},
    {"id": "l7_8.wrong.zero_other_masked_max", "group": "wrong",
     "description": 'other=0.0 with the shift tl.max(tl.where(mask, logits, float("-inf")), axis=0) (the max '
                    "fixed, the padding's exp(0 - max) still summed)",
     "edits": [{"old": OT, "new": "other=0.0)"}, shift('tl.max(tl.where(mask, logits, float("-inf")), axis=0)')],
     "expect": {"code_points": 1.5, "diagnoses": ["padding_zero"]},
     "judged": "wrong wherever N < BLOCK: each padding lane adds exp(-max) to the denominator (e^-max is large on "
               "negative rows, about e^-2..e^+3 on regular ones); the given check (N = 17) fails, the power-of-2 "
               "regular cases pass"},
    {"id": "l7_8.wrong.first_logit_shift", "group": "wrong",
     "description": "shift by tl.sum(tl.where(cols == 0, logits, 0.0), axis=0) (the row's first logit)",
     "edits": [shift("tl.sum(tl.where(cols == 0, logits, 0.0), axis=0)")],
     "expect": {"code_points": 2, "vetoes": ["coincidental_pass"], "failing_cases": ["probe.large_logits"]},
     "judged": "wrong where max - x0 > 88.7 (rows near 500 with scale ~100: exp overflows); the padding's "
               "exp(-inf) is 0 and rows within exp's range are right"},
]
