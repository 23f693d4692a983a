"""The dashboard's charts, drawn on the server as SVG: a histogram against a vertical line, and
hourly columns with lines over them. Shapes carry classes styled by static/style.css (no inline
style: the pages' Content-Security-Policy forbids it); every word is escaped. Each chart has its
numbers beside it in a table, so it reads without the picture."""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from markupsafe import Markup, escape

WIDTH, HEIGHT = 640, 220
LEFT, RIGHT, TOP, BOTTOM = 40, 10, 12, 34


def _open(css: str, label: str, height: int = HEIGHT) -> list[str]:
    return [f'<svg class="chart {css}" viewBox="0 0 {WIDTH} {height}" role="img" aria-label="{escape(label)}">',
            f"<title>{escape(label)}</title>"]


def _nice_max(value: float) -> float:
    if value <= 0:
        return 1.0
    for step in (1, 2, 5, 10, 20, 25, 50, 100, 200, 250, 500, 1000, 2000, 5000, 10000, 20000, 50000, 100000):
        if value <= step * 4:
            return float(step * -(-value // step))
    return float(value)


def _y_axis(parts: list[str], top: float, label: str) -> None:
    plot_h = HEIGHT - TOP - BOTTOM
    for fraction in (0, 0.5, 1):
        y = TOP + plot_h * (1 - fraction)
        parts.append(f'<line class="grid" x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{y:.1f}" y2="{y:.1f}"/>')
        parts.append(f'<text class="tick" x="{LEFT - 4}" y="{y + 4:.1f}" text-anchor="end">{top * fraction:g}</text>')
    parts.append(f'<text class="axis-label" x="{LEFT}" y="{TOP - 2}">{escape(label)}</text>')


@dataclass(frozen=True)
class Bin:
    low: float
    high: float
    count: int
    passed: int


def histogram(bins: Sequence[Bin], *, pass_line: float | None, label: str, pass_label: str, y_label: str) -> Markup:
    """Students per score bin (the passing part darker), with the pass line across the score axis."""
    parts = _open("histogram", label)
    if not bins:
        return Markup("".join([*parts, "</svg>"]))
    top = _nice_max(max(b.count for b in bins))
    lo, hi = bins[0].low, bins[-1].high
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    _y_axis(parts, top, y_label)

    def x(score: float) -> float:
        return LEFT + (score - lo) / ((hi - lo) or 1) * plot_w

    for b in bins:
        x0, x1 = x(b.low) + 1, x(b.high) - 1
        h = b.count / top * plot_h
        h_pass = b.passed / top * plot_h
        if b.count:
            parts.append(f'<rect class="bar" x="{x0:.1f}" y="{TOP + plot_h - h:.1f}" width="{max(x1 - x0, 1):.1f}" '
                         f'height="{h:.1f}"/>')
        if b.passed:
            parts.append(f'<rect class="bar passed" x="{x0:.1f}" y="{TOP + plot_h - h_pass:.1f}" '
                         f'width="{max(x1 - x0, 1):.1f}" height="{h_pass:.1f}"/>')
        parts.append(f'<text class="tick" x="{x(b.low):.1f}" y="{HEIGHT - BOTTOM + 14}" '
                     f'text-anchor="middle">{b.low:g}</text>')
    parts.append(f'<text class="tick" x="{x(hi):.1f}" y="{HEIGHT - BOTTOM + 14}" text-anchor="end">{hi:g}</text>')
    if pass_line is not None and lo <= pass_line <= hi:
        px = x(pass_line)
        parts.append(f'<line class="pass-line" x1="{px:.1f}" x2="{px:.1f}" y1="{TOP - 4}" y2="{HEIGHT - BOTTOM + 4}"/>')
        parts.append(f'<text class="pass-label" x="{min(px + 4, WIDTH - RIGHT):.1f}" y="{HEIGHT - 4}" '
                     f'text-anchor="{"end" if px > WIDTH * 0.8 else "start"}">{escape(pass_label)}</text>')
    parts.append("</svg>")
    return Markup("".join(parts))


@dataclass(frozen=True)
class Series:
    name: str  # a CSS class: the legend in the page names it
    values: Sequence[float | None]


def hourly(hours: Sequence[datetime], *, columns: Series | None, lines: Sequence[Series], label: str, y_label: str,
           marker: datetime | None = None, marker_label: str = "") -> Markup:
    """One slot per hour: `columns` as bars, `lines` drawn over them on the same scale; a dashed
    vertical marker (the deadline) if it falls inside."""
    parts = _open("hourly", label)
    if not hours:
        return Markup("".join([*parts, "</svg>"]))
    values = [v for s in ([columns] if columns else []) + list(lines) for v in s.values if v is not None]
    top = _nice_max(max(values, default=0))
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    slot = plot_w / len(hours)
    _y_axis(parts, top, y_label)

    def y(value: float) -> float:
        return TOP + plot_h - value / top * plot_h

    if columns is not None:
        for i, value in enumerate(columns.values):
            if value:
                parts.append(f'<rect class="bar {columns.name}" x="{LEFT + i * slot + slot * 0.1:.1f}" '
                             f'y="{y(value):.1f}" width="{max(slot * 0.8, 0.5):.1f}" '
                             f'height="{plot_h - (y(value) - TOP):.1f}"/>')
    for series in lines:
        runs: list[list[str]] = [[]]
        for i, value in enumerate(series.values):
            if value is None:
                runs.append([])
                continue
            runs[-1].append(f"{LEFT + (i + 0.5) * slot:.1f},{y(value):.1f}")
        for run in runs:
            if len(run) == 1:
                cx, cy = run[0].split(",")
                parts.append(f'<circle class="dot {series.name}" cx="{cx}" cy="{cy}" r="2.5"/>')
            elif run:
                parts.append(f'<polyline class="line {series.name}" points="{" ".join(run)}"/>')
    step = max(1, -(-len(hours) // 4))  # four labels at most: they stay apart on a phone
    for i in range(0, len(hours), step):
        parts.append(f'<text class="tick" x="{LEFT + (i + 0.5) * slot:.1f}" y="{HEIGHT - BOTTOM + 14}" '
                     f'text-anchor="middle">{hours[i].strftime("%m-%d %H:00")}</text>')
    if marker is not None and hours[0] <= marker <= hours[-1].replace(minute=59, second=59):
        mx = LEFT + (marker - hours[0]).total_seconds() / 3600 * slot
        parts.append(f'<line class="marker" x1="{mx:.1f}" x2="{mx:.1f}" y1="{TOP - 4}" y2="{HEIGHT - BOTTOM + 4}"/>')
        parts.append(f'<text class="pass-label" x="{mx - 3:.1f}" y="{HEIGHT - 4}" '
                     f'text-anchor="end">{escape(marker_label)}</text>')
    parts.append("</svg>")
    return Markup("".join(parts))


def share_bar(share: float | None, label: str) -> Markup:
    """A small horizontal bar for a share (0..1), for a table cell."""
    width = 0.0 if share is None else max(0.0, min(1.0, share)) * 100
    return Markup(f'<svg class="share-bar" viewBox="0 0 100 10" role="img" aria-label="{escape(label)}">'
                  f'<rect class="track" x="0" y="1" width="100" height="8" rx="2"/>'
                  f'<rect class="fill" x="0" y="1" width="{width:.1f}" height="8" rx="2"/></svg>')


def level_bars(counts: Sequence[int], label: str) -> Markup:
    """Four small columns, one per hint level, scaled to the largest, for a table cell."""
    top = max([*counts, 1])
    parts = [f'<svg class="level-bars" viewBox="0 0 {len(counts) * 12} 20" role="img" aria-label="{escape(label)}">']
    for i, count in enumerate(counts):
        h = count / top * 18
        parts.append(f'<rect class="track" x="{i * 12 + 1}" y="1" width="10" height="18" rx="1"/>')
        if count:
            parts.append(f'<rect class="fill level-{i + 1}" x="{i * 12 + 1}" y="{19 - h:.1f}" width="10" '
                         f'height="{h:.1f}" rx="1"/>')
    parts.append("</svg>")
    return Markup("".join(parts))
