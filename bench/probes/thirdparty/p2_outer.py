"""Third-party styles, second batch, puzzle_outer_add."""
EXERCISE = "puzzle_outer_add"

PROBES = [
    {"id": "outer2.right.broadcast_to", "group": "right",
     "description": "tl.broadcast_to both operands to (B1, B0) before adding; mask with tl.broadcast_to too",
     "fill": """ox = tl.program_id(0) * B0 + tl.arange(0, B0)
oy = tl.program_id(1) * B1 + tl.arange(0, B1)
x = tl.broadcast_to(tl.load(x_ptr + ox, mask=ox < N0, other=0.0)[None, :], (B1, B0))
y = tl.broadcast_to(tl.load(y_ptr + oy, mask=oy < N1, other=0.0)[:, None], (B1, B0))
m = tl.broadcast_to((oy < N1)[:, None], (B1, B0)) & tl.broadcast_to((ox < N0)[None, :], (B1, B0))
tl.store(z_ptr + oy[:, None] * N0 + ox[None, :], x + y, mask=m)
""",
     "expect": {"code_points": 5}, "judged": "right"},
]
