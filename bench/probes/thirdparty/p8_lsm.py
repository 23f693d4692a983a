"""Third-party styles, eighth batch, puzzle_long_softmax (the whole kernel body).

A running log-sum-exp (JAX's logaddexp carried across blocks, the write pass exp(x - lse)), a numba
port with one column per iteration (scalar online updates over T), a "safe division" eps in the
denominator, the normalisation as a third pass over z reloaded through a flattened 1-D index (the
layout of the stores and of the reloads differ: a barrier-free read-after-write within a program on a
GPU), and the bugs: x addressed column-major, the result stored through fp16."""
EXERCISE = "puzzle_long_softmax"

HEAD = """pid = tl.program_id(0)
rows = pid * B0 + tl.arange(0, B0)
row_mask = rows < N0
"""


def online(*, addr: str = "rows[:, None] * T + cols[None, :]", write: str = "tl.exp(xv - m[:, None]) / s[:, None]",
           tail: str = "") -> str:
    addr2 = addr.replace("cols", "cols2")
    return HEAD + f"""m = tl.full((B0,), float("-inf"), dtype=tl.float32)
s = tl.zeros((B0,), dtype=tl.float32)
for start in range(0, T, B1):
    cols = start + tl.arange(0, B1)
    mask = row_mask[:, None] & (cols[None, :] < T)
    x = tl.load(x_ptr + {addr}, mask=mask, other=float("-inf"))
    m_new = tl.maximum(m, tl.max(x, axis=1))
    s = s * tl.exp(m - m_new) + tl.sum(tl.exp(x - m_new[:, None]), axis=1)
    m = m_new
for start2 in range(0, T, B1):
    cols2 = start2 + tl.arange(0, B1)
    mask2 = row_mask[:, None] & (cols2[None, :] < T)
    xv = tl.load(x_ptr + {addr2}, mask=mask2, other=float("-inf"))
    tl.store(z_ptr + rows[:, None] * T + cols2[None, :], {write}, mask=mask2)
""" + tail


PROBES = [
    {"id": "lsm8.right.running_logsumexp", "group": "right",
     "description": "lse carried across blocks: mb = max(lse, max(x)); lse = mb + log(exp(lse - mb) + Σexp(x - mb)); "
                    "write exp(x - lse)",
     "fill": HEAD + """lse = tl.full((B0,), float("-inf"), dtype=tl.float32)
for start in range(0, T, B1):
    cols = start + tl.arange(0, B1)
    mask = row_mask[:, None] & (cols[None, :] < T)
    x = tl.load(x_ptr + rows[:, None] * T + cols[None, :], mask=mask, other=float("-inf"))
    mb = tl.maximum(lse, tl.max(x, axis=1))
    lse = mb + tl.log(tl.exp(lse - mb) + tl.sum(tl.exp(x - mb[:, None]), axis=1))
for start2 in range(0, T, B1):
    cols2 = start2 + tl.arange(0, B1)
    mask2 = row_mask[:, None] & (cols2[None, :] < T)
    xv = tl.load(x_ptr + rows[:, None] * T + cols2[None, :], mask=mask2, other=float("-inf"))
    tl.store(z_ptr + rows[:, None] * T + cols2[None, :], tl.exp(xv - lse[:, None]), mask=mask2)
""",
     "expect": {"code_points": 5},
     "judged": "right (lse rounded once per block, about 1 ulp of the max each: under rtol 1e-4 at these lengths; "
               "rows past N0 are -inf - -inf = NaN and never stored)"},
    {"id": "lsm8.right.numba_column_online", "group": "right",
     "description": "one column per iteration: xj = tl.load(x_ptr + rows * T + j, ...); scalar-per-row online "
                    "update of (m, s); a second loop writes each column",
     "fill": HEAD + """m = tl.full((B0,), float("-inf"), dtype=tl.float32)
s = tl.zeros((B0,), dtype=tl.float32)
for j in range(0, T):
    xj = tl.load(x_ptr + rows * T + j, mask=row_mask, other=float("-inf"))
    m_new = tl.maximum(m, xj)
    s = s * tl.exp(m - m_new) + tl.exp(xj - m_new)
    m = m_new
for j2 in range(0, T):
    xj2 = tl.load(x_ptr + rows * T + j2, mask=row_mask, other=0.0)
    tl.store(z_ptr + rows * T + j2, tl.exp(xj2 - m) / s, mask=row_mask)
""",
     "expect": {"code_points": 5}, "judged": "right (rows past N0 carry NaN in s and are never stored)"},
    {"id": "lsm8.right.eps_denominator", "group": "right",
     "description": "write exp(x - m) / (s + 1e-6) (a 'safe division' eps)",
     "fill": online(write="tl.exp(xv - m[:, None]) / (s[:, None] + 1e-6)"),
     "expect": {"code_points": 5}, "judged": "right: s >= 1 (the max's own term), so the eps moves z by <= 1e-6 relative"},
    {"id": "lsm8.gpu_check.relayout_third_pass", "group": "gpu-check",
     "description": "pass 2 stores exp(x - m) as [B0, B1] tiles; pass 3 reloads z through a 1-D index "
                    "(idx // B1, idx % B1), reshapes, divides by s and stores back (no barrier between)",
     "fill": online(write="tl.exp(xv - m[:, None])", tail="""idx = tl.arange(0, B0 * B1)
r = pid * B0 + idx // B1
for start3 in range(0, T, B1):
    c = start3 + idx % B1
    mk = (r < N0) & (c < T)
    e = tl.load(z_ptr + r * T + c, mask=mk, other=0.0)
    zt = tl.reshape(e, [B0, B1]) / s[:, None]
    tl.store(z_ptr + r * T + c, tl.reshape(zt, [B0 * B1]), mask=mk)
"""),
     "expect": {"code_points": 5},
     "judged": "right on the interpreter (programs and statements run in order). On a GPU the 1-D reload may be "
               "done by other threads than the 2-D stores: a read-after-write within a program with no barrier"},
    {"id": "lsm8.wrong.x_column_major", "group": "wrong",
     "description": "x addressed column-major in both passes (x_ptr + rows[:, None] + cols[None, :] * N0), z row-major",
     "fill": online(addr="rows[:, None] + cols[None, :] * N0"),
     "expect": {"code_points": 0, "diagnoses": ["column_major"]},
     "judged": "wrong wherever T > 1 and N0 > 1 (each row's softmax taken over a column-major walk of x)"},
    {"id": "lsm8.wrong.fp16_store", "group": "wrong",
     "description": "the result cast to fp16 before the store ((exp(x - m) / s).to(tl.float16))",
     "fill": online(write="(tl.exp(xv - m[:, None]) / s[:, None]).to(tl.float16)"),
     "expect": {"code_points": 0, "diagnoses": ["half_precision_output"]},
     "judged": "wrong everywhere: fp16 keeps 11 significant bits (relative 4.9e-4) against rtol 1e-4"},
]
