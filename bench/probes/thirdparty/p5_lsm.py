"""Third-party styles, fifth batch, puzzle_long_softmax (the whole kernel body).

A JAX/Pallas person (the online state updated as one tuple assignment), a tutorial author
(`-float('inf')` in tl.full, natural exp), `while` loops with tensor methods (x.max(axis=1), p.sum(1)),
a CUDA programmer (a finite -1e30 sentinel, one row at a time in tl.static_range), an LLM (tl.where
after an other=0 load), and their bugs: the store without its row mask, other=0 in the first pass
only, exp2 with log2(e) truncated to 1.44, the running max updated before the sum's rescale."""
EXERCISE = "puzzle_long_softmax"

WHOLE = """pid = tl.program_id(0)
rows = pid * B0 + tl.arange(0, B0)
rmask = rows < N0
m = tl.full([B0], -float('inf'), tl.float32)
s = tl.zeros([B0], tl.float32)
for start in range(0, T, B1):
    cols = start + tl.arange(0, B1)
    msk = rmask[:, None] & (cols[None, :] < T)
    x = tl.load(x_ptr + rows[:, None] * T + cols[None, :], mask=msk, other=-float('inf'))
    m_new = tl.maximum(m, tl.max(x, axis=1))
    s = s * tl.exp(m - m_new) + tl.sum(tl.exp(x - m_new[:, None]), axis=1)
    m = m_new
for start in range(0, T, B1):
    cols = start + tl.arange(0, B1)
    msk = rmask[:, None] & (cols[None, :] < T)
    x = tl.load(x_ptr + rows[:, None] * T + cols[None, :], mask=msk, other=-float('inf'))
    tl.store(z_ptr + rows[:, None] * T + cols[None, :], tl.exp(x - m[:, None]) / s[:, None], mask=msk)
"""


PROBES = [
    {"id": "lsm5.right.tutorial_neg_float_inf", "group": "right",
     "description": "tl.full([B0], -float('inf'), tl.float32), natural exp, other=-float('inf') in both passes",
     "fill": WHOLE,
     "expect": {"code_points": 5}, "judged": "right"},
    {"id": "lsm5.right.pallas_tuple_update", "group": "right",
     "description": "a JAX/Pallas habit: the online state updated as one tuple assignment, "
                    "m, s = m_new, s * tl.exp(m - m_new) + ...",
     "fill": WHOLE.replace("""    s = s * tl.exp(m - m_new) + tl.sum(tl.exp(x - m_new[:, None]), axis=1)
    m = m_new
""", """    m, s = m_new, s * tl.exp(m - m_new) + tl.sum(tl.exp(x - m_new[:, None]), axis=1)
"""),
     "expect": {"code_points": 5}, "judged": "right (the right-hand side is evaluated with the old m)"},
    {"id": "lsm5.right.while_methods", "group": "right",
     "description": "both passes as `while` loops with a manual offset, the block max and sum as tensor methods "
                    "(x.max(axis=1), p.sum(1))",
     "fill": """pid = tl.program_id(0)
rows = pid * B0 + tl.arange(0, B0)
rmask = rows < N0
m = tl.full((B0,), float("-inf"), tl.float32)
s = tl.zeros((B0,), tl.float32)
off = 0
while off < T:
    cols = off + tl.arange(0, B1)
    msk = rmask[:, None] & (cols[None, :] < T)
    x = tl.load(x_ptr + rows[:, None] * T + cols[None, :], mask=msk, other=float("-inf"))
    m_new = tl.maximum(m, x.max(axis=1))
    s = s * tl.exp(m - m_new) + tl.exp(x - m_new[:, None]).sum(1)
    m = m_new
    off += B1
off = 0
while off < T:
    cols = off + tl.arange(0, B1)
    msk = rmask[:, None] & (cols[None, :] < T)
    x = tl.load(x_ptr + rows[:, None] * T + cols[None, :], mask=msk, other=float("-inf"))
    tl.store(z_ptr + rows[:, None] * T + cols[None, :], tl.exp(x - m[:, None]) / s[:, None], mask=msk)
    off += B1
""",
     "expect": {"code_points": 5},
     "judged": "right (first graded 0 on the interpreter: the gate could not compile a tensor method from a @jit "
               "function, fixed)"},
    {"id": "lsm5.right.cuda_finite_sentinel_static_rows", "group": "right",
     "description": "a CUDA port: rows one at a time in tl.static_range(B0) with a scalar guard, a finite -1e30 "
                    "sentinel for padding, a reciprocal of the sum",
     "fill": """pid = tl.program_id(0)
for r in tl.static_range(B0):
    row = pid * B0 + r
    if row < N0:
        m = -1e30
        s = 0.0
        for start in range(0, T, B1):
            cols = start + tl.arange(0, B1)
            x = tl.load(x_ptr + row * T + cols, mask=cols < T, other=-1e30)
            m_new = tl.maximum(m, tl.max(x, axis=0))
            s = s * tl.exp(m - m_new) + tl.sum(tl.exp(x - m_new), axis=0)
            m = m_new
        inv = 1.0 / s
        for start in range(0, T, B1):
            cols = start + tl.arange(0, B1)
            x = tl.load(x_ptr + row * T + cols, mask=cols < T, other=-1e30)
            tl.store(z_ptr + row * T + cols, tl.exp(x - m) * inv, mask=cols < T)
""",
     "expect": {"code_points": 5}, "judged": "right (exp(-1e30 - m) is 0)"},
    {"id": "lsm5.right.llm_where_after_zero_load", "group": "right",
     "description": "an LLM's kernel: loads with other=0.0, then x = tl.where(mask, x, float('-inf')) before max and exp",
     "fill": WHOLE.replace("other=-float('inf'))\n    m_new", "other=0.0)\n    x = tl.where(msk, x, float('-inf'))\n    m_new")
                  .replace("other=-float('inf'))\n    tl.store", "other=0.0)\n    x = tl.where(msk, x, float('-inf'))\n    tl.store"),
     "expect": {"code_points": 5}, "judged": "right"},
    {"id": "lsm5.wrong.exp2_truncated_log2e", "group": "wrong",
     "description": "exp2 with log2(e) truncated to 1.44 (tl.exp2(1.44 * (x - m)))",
     "fill": WHOLE.replace("tl.exp(m - m_new)", "tl.exp2(1.44 * (m - m_new))")
                  .replace("tl.exp(x - m_new[:, None])", "tl.exp2(1.44 * (x - m_new[:, None]))")
                  .replace("tl.exp(x - m[:, None])", "tl.exp2(1.44 * (x - m[:, None]))"),
     "expect": {"code_points": 0, "diagnoses": ["exponent_scaled"], "not_diagnosed": ["unexplained_softmax"]},
     "judged": "wrong everywhere: 2^(1.44 t) = e^(0.998 t), off by up to 0.3% per term ('matches none' at main; now "
               "exponent_scaled, the scale read from the outputs)"},
    {"id": "lsm5.wrong.first_pass_other_zero", "group": "wrong",
     "description": "other=0.0 in the first pass (max and sum), -inf in the second: padding lanes add exp(0 - m) "
                    "each to the denominator",
     "fill": WHOLE.replace("other=-float('inf'))\n    m_new", "other=0.0)\n    m_new"),
     "expect": {"code_points": 2, "diagnoses": ["zero_padding"]},
     "judged": "(first judged 3 with coincidental_pass: the given check's T = 200 fails, so no veto) wrong where T "
               "is not a multiple of B1; T a multiple of B1 passes"},
    {"id": "lsm5.wrong.store_rows_unmasked", "group": "wrong",
     "description": "the second pass's store masked by the column bound only (cols < T), the loads fully masked",
     "fill": WHOLE.replace("/ s[:, None], mask=msk)", "/ s[:, None], mask=(cols < T)[None, :])"),
     "expect": {"code_points": 3, "vetoes": ["coincidental_pass"], "diagnoses": ["store_out_of_bounds"]},
     "judged": "(first judged 4 without a veto) wrong where N0 is not a multiple of B0: the last program writes past "
               "z (probe.rows_tail; the given check's B0 = 1 passes, hence coincidental_pass)"},
    {"id": "lsm5.wrong.online_state_order", "group": "wrong",
     "description": "m updated before s is rescaled: m = tl.maximum(...); s = s * tl.exp(m - m) + ... (the rescale "
                    "factor is always 1)",
     "fill": WHOLE.replace("""    m_new = tl.maximum(m, tl.max(x, axis=1))
    s = s * tl.exp(m - m_new) + tl.sum(tl.exp(x - m_new[:, None]), axis=1)
    m = m_new
""", """    m = tl.maximum(m, tl.max(x, axis=1))
    s = s * tl.exp(m - m) + tl.sum(tl.exp(x - m[:, None]), axis=1)
"""),
     "expect": {"code_points": 0, "diagnoses": ["no_rescale"]},
     "judged": "(first judged nonfinite_output: m is updated first, so m - m is 0, never -inf - -inf) wrong wherever "
               "a later block raises the max: exactly no rescale"},
]
