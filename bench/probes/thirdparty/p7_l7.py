"""Third-party styles, seventh batch, lesson07_softmax (two blanks: other=, the shift).

Shifts that are not the maximum but are still safe (max - 10, the maximum of an fp16 copy, the
maximum computed in float64), and the bugs: half the maximum as the shift, the log-sum-exp
computed without a shift (a JAX person's `jnp.log(jnp.sum(jnp.exp(x)))`)."""
EXERCISE = "lesson07_softmax"
SH = "shifted = logits - tl.max(logits, axis=0)"


def shift(text: str) -> dict:
    return {"old": SH, "new": f"shifted = logits - {text}"}


PROBES = [
    {"id": "l7_7.right.max_minus_ten", "group": "right",
     "description": "shift by tl.max(logits, axis=0) - 10.0 (the exponent's largest value is 10)",
     "edits": [shift("(tl.max(logits, axis=0) - 10.0)")], "expect": {"code_points": 3},
     "judged": "right: softmax is shift-invariant; exp(10) * N stays far below fp32's maximum and no row underflows"},
    {"id": "l7_7.right.fp16_max", "group": "right",
     "description": "shift by tl.max(logits.to(tl.float16), axis=0) (the maximum of an fp16 copy, off by < 0.5)",
     "edits": [shift("tl.max(logits.to(tl.float16), axis=0)")], "expect": {"code_points": 3},
     "judged": "right: the shift is within fp16's rounding of the true max (|x| < 1000 << 65504), exp of at most ~e^0.5"},
    {"id": "l7_7.right.float64_max", "group": "right",
     "description": "shift by tl.max(logits.to(tl.float64), axis=0) (a float64 max; the subtraction promotes)",
     "edits": [shift("tl.max(logits.to(tl.float64), axis=0)")], "expect": {"code_points": 3},
     "judged": "right (shifted is float64, exp in float64, the store casts to float32)"},
    {"id": "l7_7.wrong.half_max", "group": "wrong",
     "description": "shift by tl.max(logits, axis=0) * 0.5 (half the maximum)",
     "edits": [shift("tl.max(logits, axis=0) * 0.5")],
     "expect": {"code_points": 2, "vetoes": ["coincidental_pass"], "failing_cases": ["probe.large_logits"]},
     "judged": "wrong: rows near +500 overflow (exp(x - 250)); rows near -150 keep exp(-75) in range, regular rows too"},
    {"id": "l7_7.wrong.naive_logsumexp", "group": "wrong",
     "description": "shift by tl.log(tl.sum(tl.exp(logits), axis=0)) (the log-sum-exp without its max)",
     "edits": [shift("tl.log(tl.sum(tl.exp(logits), axis=0))")],
     "expect": {"code_points": 2, "vetoes": ["coincidental_pass"],
                "failing_cases": ["probe.large_logits", "probe.very_negative"]},
     "judged": "wrong: exp overflows near +500 (inf - inf) and underflows near -150 (log 0 = -inf); right on rows in exp's range"},
]
