"""Small SVG pictures drawn on the server: the score against the pass line, and one row of a
padding probe (valid lanes vs padding lanes, and what each group added to the second sum).

Every number and word is escaped; shapes carry classes styled by static/style.css (no inline
style: the pages' Content-Security-Policy forbids it)."""
from __future__ import annotations

from dataclasses import dataclass

from markupsafe import Markup, escape

WIDTH = 640
LANE_CELLS_MAX = 128  # above this many lanes the row is drawn as two proportional runs


def _fmt(value: float) -> str:
    return f"{value:.4g}"


def score_bar(*, total: float, maximum: float, pass_threshold: float, label: str, pass_label: str,
              passed: bool | None = None) -> Markup:
    """`passed`: the verdict, which colours the bar (a veto or an unmet requirement fails a
    submission whose points reach the line); None: by the points alone."""
    maximum = maximum or 1.0
    fill = max(0.0, min(1.0, total / maximum)) * WIDTH
    line = max(0.0, min(1.0, pass_threshold / maximum)) * WIDTH
    ok = total >= pass_threshold if passed is None else passed
    colour = "ok" if ok else "short"
    return Markup(
        f'<svg class="score-bar" viewBox="0 0 {WIDTH} 34" role="img" aria-label="{escape(label)}">'
        f"<title>{escape(label)}</title>"
        f'<rect class="track" x="0" y="6" width="{WIDTH}" height="16" rx="4"/>'
        f'<rect class="fill {colour}" x="0" y="6" width="{fill:.1f}" height="16" rx="4"/>'
        f'<line class="pass-line" x1="{line:.1f}" x2="{line:.1f}" y1="0" y2="28"/>'
        f'<text class="pass-label" x="{min(line, WIDTH - 4):.1f}" y="33" text-anchor="end">{escape(pass_label)}</text>'
        "</svg>")


@dataclass(frozen=True)
class PaddingRow:
    """One row of a case whose BLOCK is wider than N. `counted`: the lanes [0, counted) that the
    second sum took in (BLOCK when the re-mask is missing, N when right); None if not known.
    `valid_sum` / `padding_sum`: what the valid and the padding lanes added, when known."""

    n: int
    block: int
    counted: int | None
    valid_sum: float | None = None
    padding_sum: float | None = None


def padding_row(row: PaddingRow, label: str) -> Markup:
    """Shapes only (the words sit beside it in the page, where a phone can read them): the row's
    BLOCK lanes, valid ones left of the dashed line N, and below two bars on one scale, what the
    valid lanes and what the padding lanes added to the second sum. `label`: the picture in words."""
    n, block = row.n, row.block
    pad_counted = max(0, min(row.counted, block) - n) if row.counted is not None else None
    parts = [f'<svg class="padding-row" viewBox="0 0 {WIDTH} 96" role="img" aria-label="{escape(label)}">',
             f"<title>{escape(label)}</title>"]
    top, height = 4, 32

    def lane_class(i: int) -> str:
        if i < n:
            return "lane valid" if row.counted is None or i < row.counted else "lane valid missed"
        if pad_counted is None:
            return "lane padding"
        return "lane padding counted" if i < n + pad_counted else "lane padding"

    if block <= LANE_CELLS_MAX:
        w = WIDTH / block
        for i in range(block):
            parts.append(f'<rect class="{lane_class(i)}" x="{i * w:.2f}" y="{top}" width="{max(w - 1, 0.5):.2f}" '
                         f'height="{height}"/>')
    else:  # runs, proportional: valid | counted padding | untouched padding
        runs = [(0, n, lane_class(0)), (n, n + (pad_counted or 0), "lane padding counted"),
                (n + (pad_counted or 0), block, "lane padding")]
        for start, end, cls in runs:
            if end > start:
                x, w = start / block * WIDTH, (end - start) / block * WIDTH
                parts.append(f'<rect class="{cls}" x="{x:.2f}" y="{top}" width="{max(w, 1):.2f}" height="{height}"/>')
    split = n / block * WIDTH
    parts.append(f'<line class="boundary" x1="{split:.1f}" x2="{split:.1f}" y1="0" y2="{top + height + 4}"/>')

    # What each group added to Σ(x − mean)², as bars on one scale (2 units at least, to be seen).
    known = [abs(v) for v in (row.valid_sum, row.padding_sum) if v is not None]
    scale = max(known, default=0.0) or 1.0
    bars = [("valid", row.valid_sum), ("padding counted" if pad_counted else "padding", row.padding_sum)]
    for index, (cls, value) in enumerate(bars):
        if value is not None:
            width = max(2.0, abs(value) / scale * WIDTH)
            parts.append(f'<rect class="sum {cls}" x="0" y="{50 + index * 24}" width="{width:.1f}" height="18"/>')
    parts.append("</svg>")
    return Markup("".join(parts))
