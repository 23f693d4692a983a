"""Out-of-bounds writes: the words for a case whose kernel changed a guard region.

The harness puts each input, and each tensor the entry point allocates with a torch factory,
inside a larger buffer with guard elements before and after the data, and compares the guards
after the call (sandbox/harness.py, `_Guards`). A changed guard makes the case an error; the
runner validates the evidence (sandbox/runner.py, `_out_of_bounds`) and this module says it.
"""
from __future__ import annotations

from service.messages import render
from service.report import OutOfBounds


def describe(breaches: list[OutOfBounds], *, language: str, entry_point: str) -> str:
    """One line: what was written where, by how many elements, and the misconception it points to."""
    text = _sentence(breaches[0], language, entry_point)
    more = len(breaches) - 1
    if more:
        text += render("bounds.more", language, more=more)
    return text


def _sentence(b: OutOfBounds, language: str, entry_point: str) -> str:
    if b.kind == "input":
        what = render("bounds.what.input", language, buffer=b.buffer)
    elif b.output:
        what = render("bounds.what.output", language, output=b.output, entry_point=entry_point)
    else:
        what = render("bounds.what.scratch", language, entry_point=entry_point, shape=str(b.shape), dtype=b.dtype)
    if language == "zh" and what[-1].isascii():
        what += " "  # "输入 x 的数据": a space between a Latin name and the Chinese that follows
    edge = render(f"bounds.edge.{b.side}", language)
    where = render(f"bounds.where.{'adjacent' if b.distance == 0 else 'further'}_{'one' if b.changed == 1 else 'many'}",
                   language, what=what, edge=edge, changed=b.changed, position=b.distance + 1)
    value = (render("bounds.value.nan", language) if b.value.lower() == "nan"
             else render("bounds.value.other", language, value=b.value) if b.value else "")
    if b.side == "before":
        why = render("bounds.why.before", language)
    elif b.distance == 0 and b.changed == 1:
        why = render("bounds.why.one_too_many", language)
    elif b.distance == 0:
        why = render("bounds.why.extra", language)
    else:
        why = render("bounds.why.further", language)
    if b.kind == "input":
        why += render("bounds.why.input_written", language, buffer=b.buffer)
    return render("bounds.sentence", language, where=where, value=value, why=why)
