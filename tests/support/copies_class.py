"""A small class for the copied-answers tests (API, browser) and the bench: bodies of puzzle_outer_add,
one assignment, some students copying one another and some not."""
from __future__ import annotations

from service.config import REPO_ROOT

EXERCISE = "puzzle_outer_add"
ASSIGNMENT = "hw3-outer-add"
TEMPLATE = (REPO_ROOT / "exercises" / EXERCISE / "template.py").read_text(encoding="utf-8")
SOLUTION = (REPO_ROOT / "exercises" / EXERCISE / "solution.py").read_text(encoding="utf-8")

# The reference solution's body: everyone who writes it is not copying anyone.
REFERENCE_FILL = SOLUTION.split("B1: tl.constexpr):\n", 1)[1].split("\n\ndef add_vec_block(", 1)[0]

# One student's own kernel (it differs from the reference: one 2-D mask, loads without `other`)...
OWN_FILL = """\
    pa = tl.program_id(0)
    pb = tl.program_id(1)
    ia = pa * B0 + tl.arange(0, B0)
    ib = pb * B1 + tl.arange(0, B1)
    xa = tl.load(x_ptr + ia, mask=ia < N0)
    yb = tl.load(y_ptr + ib, mask=ib < N1)
    both = (ib[:, None] < N1) & (ia[None, :] < N0)
    tl.store(z_ptr + ib[:, None] * N0 + ia[None, :], yb[:, None] + xa[None, :], mask=both)"""
# ... and the same kernel with every variable renamed and the spacing changed: a copy.
RENAMED_FILL = """\
    first = tl.program_id(0)
    second = tl.program_id(1)
    cols = first*B0 + tl.arange(0, B0)
    rows = second*B1 + tl.arange(0, B1)
    xs = tl.load(x_ptr + cols, mask=cols < N0)
    ys = tl.load(y_ptr + rows, mask=rows < N1)
    ok = (rows[:, None] < N1) & (cols[None, :] < N0)
    tl.store(z_ptr + rows[:, None] * N0 + cols[None, :], ys[:, None] + xs[None, :], mask=ok)"""
# A third student's different kernel (its own structure).
OTHER_FILL = """\
    i = tl.program_id(0) * B0 + tl.arange(0, B0)
    j = tl.program_id(1) * B1 + tl.arange(0, B1)
    a = tl.load(x_ptr + i, mask=i < N0, other=0.0)
    b = tl.load(y_ptr + j, mask=j < N1, other=0.0)
    tl.store(z_ptr + j[:, None] * N0 + i[None, :], a[None, :] + b[:, None], mask=(j[:, None] < N1) & (i[None, :] < N0))"""

COPIED_ANSWER = ("z 的两个维度相互独立，x 的一块和 y 的一块组合成 z 的一个 [B1, B0] 块，所以用二维 grid。"
                 "N0、N1 不整除块大小时，最后一块有越界的行和列：load 的 mask 只保证不读越界的 x、y，"
                 "这些 lane 仍然会算出值；store 如果不屏蔽，越过行尾的列会写进下一行开头，越过 N1 的行会写到 z 之外。")
# The copy with punctuation, spacing and one word changed.
COPIED_ANSWER_EDITED = ("z 的两个维度相互独立, x 的一块和 y 的一块组合成 z 的一个 [B1,B0] 块，所以用 二维 grid。"
                        "N0、N1 不整除块大小时，最后一块有越界的行和列: load 的 mask 只保证不读越界的 x、y，"
                        "这些 lane 依然会算出值；store 如果不屏蔽，越过行尾的列会写进下一行开头，越过 N1 的行会写到 z 之外。")
OWN_ANSWER = ("I split the grid in two dimensions because the blocks of x and y are independent. The last block can run "
              "past N0 or N1, so the loads are masked; but the store also needs the 2-D mask, or it writes into the next "
              "row and past the end of z.")
SHORT_ANSWER = "用二维 grid，store 要 mask。"  # short: the same for many students, never flagged


def code(fill: str) -> str:
    return TEMPLATE.replace("    ______", fill, 1)


def body(student: str, fill: str, answer: str, *, attempt: int = 1, name: str | None = None) -> dict:
    return {"exercise": EXERCISE, "code": code(fill), "answers": {"load_mask_enough": answer},
            "assignment": ASSIGNMENT, "student": {"id": student, **({"name": name} if name else {})}, "attempt": attempt}


def small_class() -> list[dict]:
    """alice and bob copy each other (text and code), bob's first attempt was his own; carol and dan
    write the reference solution and a short answer; erin copied alice first, then wrote her own."""
    return [
        body("bob", OTHER_FILL, OWN_ANSWER, attempt=1, name="Bob"),
        body("alice", OWN_FILL, COPIED_ANSWER, name="Alice"),
        body("bob", RENAMED_FILL, COPIED_ANSWER_EDITED, attempt=2, name="Bob"),
        body("carol", REFERENCE_FILL, SHORT_ANSWER, name="Carol"),
        body("dan", REFERENCE_FILL, SHORT_ANSWER, name="Dan"),
        body("erin", RENAMED_FILL, COPIED_ANSWER, attempt=1, name="Erin"),
        body("erin", OTHER_FILL, OWN_ANSWER.replace("I split", "We split the work").upper()[:60] + " mine.", attempt=2,
             name="Erin"),
    ]
