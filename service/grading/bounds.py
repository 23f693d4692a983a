"""Out-of-bounds writes: the words for a case whose kernel changed a guard region.

The harness puts each input, and each tensor the entry point allocates with a torch factory,
inside a larger buffer with guard elements before and after the data, and compares the guards
after the call (sandbox/harness.py, `_Guards`). A changed guard makes the case an error; the
runner validates the evidence (sandbox/runner.py, `_out_of_bounds`) and this module says it.
"""
from __future__ import annotations

from service.report import OutOfBounds


def describe(breaches: list[OutOfBounds], *, language: str, entry_point: str) -> str:
    """One line: what was written where, by how many elements, and the misconception it points to."""
    first = breaches[0]
    text = (_zh if language == "zh" else _en)(first, entry_point)
    more = len(breaches) - 1
    if more:
        text += (f"（另有 {more} 处保护区也被改写，见用例的 out_of_bounds。）" if language == "zh"
                 else f" ({more} more guard region(s) changed too: see the case's out_of_bounds.)")
    return text


def _zh(b: OutOfBounds, entry_point: str) -> str:
    if b.kind == "input":
        what = f"输入 {b.buffer}"
    elif b.output:
        what = f"输出 {b.output}（{entry_point} 里分配的张量）"
    else:
        what = f"在 {entry_point} 里分配的一个张量（形状 {b.shape}，{b.dtype}，不是返回的输出）"
    edge = "末尾之后" if b.side == "after" else "开头之前"
    if b.distance == 0:
        where = "紧挨着的 1 个元素被改写" if b.changed == 1 else f"从紧挨着的元素起共 {b.changed} 个元素被改写"
    else:
        where = f"从第 {b.distance + 1} 个元素起共 {b.changed} 个元素被改写"
    value = ("写入的值是 NaN，正是输入保护区里放的 NaN：这个值本身也是越界读来的。" if b.value.lower() == "nan"
             else f"写入的值是 {b.value}。" if b.value else "")
    if b.side == "before":
        why = "这说明偏移算小了（例如多减了 1，或下标可能为负）：检查偏移和 mask 的下界。"
    elif b.distance == 0 and b.changed == 1:
        why = ("这正是 mask 多放进了一个元素：写成了 `cols < N + 1` 或 `cols <= N` 之类；"
               "有效下标是 0 … N-1，mask 应为 `cols < N`。")
    elif b.distance == 0:
        why = "mask 放进了多余的元素：界可能用了 BLOCK（或比 N 大的数）而不是 N，或者 store 没有 mask；有效下标只到 N-1。"
    else:
        why = "写到了离末尾更远的地方：检查偏移（行步长、块偏移）和 store 的 mask。"
    if b.kind == "input":
        why += f"内核本不该写 {b.buffer}：也检查 tl.store 是不是用错了指针。"
    if what[-1].isascii():
        what += " "
    return (f"越界写入：内核写到了{what}的数据{edge}，{where}（评分时每块数据前后都有保护区，调用后逐位检查）。"
            f"{value}{why}这个用例按出错处理，不比较数值。")


def _en(b: OutOfBounds, entry_point: str) -> str:
    if b.kind == "input":
        what = f"input {b.buffer}"
    elif b.output:
        what = f"output {b.output} (a tensor allocated in {entry_point})"
    else:
        what = f"a tensor allocated in {entry_point} (shape {b.shape}, {b.dtype}; not a returned output)"
    edge = "after the end" if b.side == "after" else "before the start"
    where = (f"the element just {edge} of the data of {what}" if b.distance == 0
             else f"element {b.distance + 1} {edge} of the data of {what}")
    count = "that one element" if b.changed == 1 else f"{b.changed} guard elements from there"
    value = (" The value written is NaN, the NaN placed around the inputs: the data written was itself read out of bounds."
             if b.value.lower() == "nan" else f" The value written is {b.value}." if b.value else "")
    if b.side == "before":
        why = " The offset is too small (one subtracted too many, or a negative index): check the offsets and the mask's lower bound."
    elif b.distance == 0 and b.changed == 1:
        why = (" This is a mask that admits one element too many: `cols < N + 1` or `cols <= N`; the valid indices "
               "are 0 … N-1, so the mask is `cols < N`.")
    elif b.distance == 0:
        why = (" The mask admits extra elements: its bound may be BLOCK (or something larger than N) instead of N, "
               "or the store has no mask; valid indices end at N-1.")
    else:
        why = " The write lands further past the end: check the offsets (row stride, block offset) and the store's mask."
    if b.kind == "input":
        why += f" The kernel should not write {b.buffer} at all: check that tl.store uses the right pointer."
    return (f"Out-of-bounds write: the kernel changed {where} ({count}; guard regions around every buffer are compared "
            f"bit for bit after the call).{value}{why} The case counts as an error; its values are not compared.")
