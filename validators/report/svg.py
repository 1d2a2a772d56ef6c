"""Line charts as inline SVG: no JavaScript and no files beside the report, so it opens anywhere."""

from __future__ import annotations

import math
from html import escape

from blueprints.figures import plain
from validators.outcome import Reference, Series

WIDTH, HEIGHT = 640, 300
LEFT, RIGHT, TOP, BOTTOM = 70, 160, 20, 45
COLORS = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf")


def _ticks(lo: float, hi: float, n: int = 5) -> list[float]:
    if hi <= lo:
        return [lo]
    raw = (hi - lo) / n
    step = 10 ** math.floor(math.log10(raw))
    for m in (1, 2, 5, 10):
        if raw <= m * step:
            step *= m
            break
    start = math.ceil(lo / step) * step
    return [start + i * step for i in range(int((hi - start) / step + 1e-9) + 1)]


def _label(v: float) -> str:
    for unit, f in (("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(v) >= f:
            return f"{plain(v / f)}{unit}"
    return plain(v)


def chart(series: list[Series], title: str, x_label: str, y_label: str, y_scale: float = 1.0,
          log2_x: bool = False, log10_y: bool = False, references: tuple[Reference, ...] = ()) -> str:
    """One chart of several series; ``y_scale`` divides y (e.g. 1e6 for MB/s); ``log2_x`` for message sizes,
    ``log10_y`` for latency tails; each reference (the check's threshold) is a dashed horizontal line, inside the
    y range. Points that are not finite numbers are left out."""
    pts = [[(math.log2(x) if log2_x else x, math.log10(y / y_scale) if log10_y else y / y_scale)
            for x, y in s.points if math.isfinite(x) and math.isfinite(y)
            and not (log2_x and x <= 0) and not (log10_y and y <= 0)] for s in series]
    refs = [(math.log10(r.y / y_scale) if log10_y else r.y / y_scale, r.label) for r in references
            if math.isfinite(r.y) and not (log10_y and r.y <= 0)]
    xs = [x for p in pts for x, _ in p] or [0.0]
    ys = [y for p in pts for _, y in p] + [y for y, _ in refs] or [0.0]
    x0, x1 = min(xs), max(xs) if max(xs) > min(xs) else min(xs) + 1
    y0: float
    y1: float
    if log10_y:
        y0, y1 = math.floor(min(ys)), max(math.ceil(max(ys)), math.floor(min(ys)) + 1)
    else:
        y0, y1 = 0.0, max(ys) * 1.1 if max(ys) > 0 else 1.0
    pw, ph = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def sx(x: float) -> float:
        return LEFT + (x - x0) / (x1 - x0) * pw

    def sy(y: float) -> float:
        return TOP + ph - (y - y0) / (y1 - y0) * ph

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" class="plot" width="{WIDTH}" height="{HEIGHT}" '
           f'viewBox="0 0 {WIDTH} {HEIGHT}" role="img" aria-label="{escape(title)}">',
           f"<title>{escape(title)}</title>",
           f'<rect x="{LEFT}" y="{TOP}" width="{pw}" height="{ph}" fill="#fff" stroke="#999"/>']
    for t in (range(int(y0), int(y1) + 1) if log10_y else _ticks(y0, y1)):
        shown = _label(10.0 ** t) if log10_y else _label(t)
        out.append(f'<line x1="{LEFT}" x2="{LEFT + pw}" y1="{sy(t):.1f}" y2="{sy(t):.1f}" stroke="#eee"/>')
        out.append(f'<text x="{LEFT - 6}" y="{sy(t) + 4:.1f}" text-anchor="end" font-size="11">{shown}</text>')
    for t in _ticks(x0, x1):
        shown = _label(2 ** t) + "B" if log2_x else _label(t)
        out.append(f'<text x="{sx(t):.1f}" y="{TOP + ph + 16}" text-anchor="middle" font-size="11">{shown}</text>')
    out.append(f'<text x="{LEFT + pw / 2}" y="{HEIGHT - 6}" text-anchor="middle" font-size="12">'
               f"{escape(x_label)}</text>")
    out.append(f'<text transform="translate(14,{TOP + ph / 2}) rotate(-90)" text-anchor="middle" font-size="12">'
               f"{escape(y_label)}</text>")
    for i, (s, p) in enumerate(zip(series, pts, strict=True)):
        color = COLORS[i % len(COLORS)]
        path = " ".join(f"{sx(x):.1f},{sy(y):.1f}" for x, y in p)
        out.append(f'<polyline class="series" data-name="{escape(s.name)}" data-points="{len(p)}" fill="none" '
                   f'stroke="{color}" stroke-width="2" points="{path}"/>')
        ly = TOP + 14 + i * 16
        out.append(f'<line x1="{WIDTH - RIGHT + 10}" x2="{WIDTH - RIGHT + 28}" y1="{ly - 4}" y2="{ly - 4}" '
                   f'stroke="{color}" stroke-width="2"/>')
        out.append(f'<text x="{WIDTH - RIGHT + 32}" y="{ly}" font-size="11">{escape(s.name)}</text>')
    for y, label in refs:
        out.append(f'<line class="threshold" data-label="{escape(label)}" x1="{LEFT}" x2="{LEFT + pw}" '
                   f'y1="{sy(y):.1f}" y2="{sy(y):.1f}" stroke="#c62828" stroke-width="1.5" stroke-dasharray="6,4"/>')
        out.append(f'<text x="{LEFT + pw - 4}" y="{sy(y) - 4:.1f}" text-anchor="end" font-size="11" fill="#c62828">'
                   f"{escape(label)}</text>")
    out.append("</svg>")
    return "\n".join(out)
