"""Charts for the results site as inline SVG strings: pure functions, no JavaScript, nothing fetched.

Colours are CSS classes (``s0`` .. ``s9``, ``axis``, ``band``), not attributes, so that the page's stylesheet
themes them, dark mode included. Every piece of text that comes from the store (a bot's name) is escaped here,
because callers insert the result into templates as markup.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from markupsafe import Markup, escape

from arena.site.data import Series

PALETTE_SIZE = 10


def nice_ticks(low: float, high: float, count: int = 5) -> list[float]:
    """Round tick values covering ``low``..``high``, about ``count`` of them.

    >>> nice_ticks(0, 10)
    [0.0, 2.0, 4.0, 6.0, 8.0, 10.0]
    >>> nice_ticks(-3.2, 41)
    [-10.0, 0.0, 10.0, 20.0, 30.0, 40.0, 50.0]
    """
    if high <= low:
        low, high = low - 0.25, high + 0.25
    raw = (high - low) / count
    magnitude = 10 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1, 2, 2.5, 5, 10) if m * magnitude >= raw)
    first = math.floor(low / step) * step
    ticks = []
    value = first
    while value < high + step * 0.999:
        ticks.append(round(value, 10))
        value += step
        if value > high and ticks[-1] >= high:
            break
    return [float(t) for t in ticks]


def _fmt(value: float) -> str:
    return f"{value:.1f}".rstrip("0").rstrip(".") if abs(value) < 1e6 else f"{value:.0f}"


def line_chart(series: Sequence[Series], label: str, y_title: str, x_title: str = "match",
               width: int = 720, height: int = 300) -> Markup:
    """One line per series (colour ``s{i % 10}``), with its band shaded when it has one."""
    xs = [x for s in series for x, _ in s.points]
    ys = [y for s in series for _, y in s.points] + [v for s in series for _, lo, hi in s.band for v in (lo, hi)]
    title = escape(label)
    if not xs:
        return Markup(f'<svg class="chart" viewBox="0 0 {width} 60" role="img" aria-label="{title}">'
                      f'<title>{title}</title><text x="{width / 2}" y="34" text-anchor="middle" class="note">'
                      'no rated matches yet</text></svg>')
    left, right, top, bottom = 48, 14, 12, 38
    y_ticks = nice_ticks(min(ys), max(ys))
    x_low, x_high = min(xs), max(xs)
    if x_high == x_low:
        x_low, x_high = x_low - 1, x_high + 1
    y_low, y_high = y_ticks[0], y_ticks[-1]

    def px(x: float) -> float:
        return left + (x - x_low) / (x_high - x_low) * (width - left - right)

    def py(y: float) -> float:
        return top + (y_high - y) / (y_high - y_low) * (height - top - bottom)

    parts = [f'<svg class="chart" viewBox="0 0 {width} {height}" role="img" aria-label="{title}">',
             f"<title>{title}</title>", '<g class="axis">']
    for tick in y_ticks:
        parts.append(f'<line x1="{left}" x2="{width - right}" y1="{py(tick):.1f}" y2="{py(tick):.1f}" class="grid"/>'
                     f'<text x="{left - 6}" y="{py(tick) + 4:.1f}" text-anchor="end">{_fmt(tick)}</text>')
    for tick in nice_ticks(x_low, x_high, 6):
        if x_low <= tick <= x_high:
            parts.append(f'<text x="{px(tick):.1f}" y="{height - bottom + 16}" text-anchor="middle">{tick:.0f}</text>')
    parts.append(f'<text x="{(left + width - right) / 2}" y="{height - 4}" text-anchor="middle" class="title">'
                 f'{escape(x_title)}</text>'
                 f'<text transform="translate(12 {(top + height - bottom) / 2}) rotate(-90)" text-anchor="middle" '
                 f'class="title">{escape(y_title)}</text></g>')
    for i, s in enumerate(series):
        colour = f"s{i % PALETTE_SIZE}"
        parts.append(f'<g class="{colour}"><title>{escape(s.name)}</title>')
        if s.band:
            upper = " ".join(f"{px(x):.1f},{py(hi):.1f}" for x, _, hi in s.band)
            lower = " ".join(f"{px(x):.1f},{py(lo):.1f}" for x, lo, _ in reversed(s.band))
            parts.append(f'<polygon class="band" points="{upper} {lower}"/>')
        if s.points:
            line = " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in s.points)
            last_x, last_y = s.points[-1]
            parts.append(f'<polyline class="line" points="{line}"/>'
                         f'<circle class="dot" cx="{px(last_x):.1f}" cy="{py(last_y):.1f}" r="3"/>')
        parts.append("</g>")
    parts.append("</svg>")
    return Markup("".join(parts))


BAR_PAD = 4


def _bar_px(value: float, scale: tuple[float, float], width: int) -> float:
    """Where ``value`` falls on a rating bar of ``width`` drawn over ``scale`` (shared by the bars and their axis)."""
    low, high = scale
    return BAR_PAD + (min(max(value, low), high) - low) / (high - low) * (width - 2 * BAR_PAD)


def rating_axis(scale: tuple[float, float], width: int = 150, height: int = 16) -> Markup:
    """The scale of the rating bars (:func:`rating_bar` with the same ``scale`` and ``width``): a few round rating
    values with ticks, so that a bar's position and length read as numbers."""
    ticks = [t for t in nice_ticks(*scale, count=3) if scale[0] <= t <= scale[1]]
    parts = [f'<svg class="ratingaxis" viewBox="0 0 {width} {height}" width="{width}" height="{height}" role="img" '
             f'aria-label="rating scale from {scale[0]:.0f} to {scale[1]:.0f}">'
             f'<line class="track" x1="{BAR_PAD}" x2="{width - BAR_PAD}" y1="{height - 1}" y2="{height - 1}"/>']
    for tick in ticks:
        x = _bar_px(tick, scale, width)
        anchor = "start" if x < 12 else "end" if x > width - 12 else "middle"
        parts.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{height - 5}" y2="{height - 1}"/>'
                     f'<text x="{x:.1f}" y="{height - 7}" text-anchor="{anchor}">{_fmt(tick)}</text>')
    parts.append("</svg>")
    return Markup("".join(parts))


def rating_bar(mu: float, sigma: float, scale: tuple[float, float], width: int = 150, height: int = 18) -> Markup:
    """mu ± 3 sigma as a bar on a shared scale, a dot at mu and a tick at mu - 3 sigma (the conservative rating)."""
    pad = BAR_PAD

    def px(value: float) -> float:
        return _bar_px(value, scale, width)

    lo, hi = mu - 3 * sigma, mu + 3 * sigma
    label = escape(f"mu {mu:.2f}, plus or minus 3 sigma: {lo:.2f} to {hi:.2f}")
    mid = height / 2
    return Markup(
        f'<svg class="ratingbar" viewBox="0 0 {width} {height}" width="{width}" height="{height}" role="img" '
        f'aria-label="{label}"><title>{label}</title>'
        f'<line class="track" x1="{pad}" x2="{width - pad}" y1="{mid}" y2="{mid}"/>'
        f'<rect class="range" x="{px(lo):.1f}" y="{mid - 4}" width="{max(px(hi) - px(lo), 1):.1f}" height="8" rx="3"/>'
        f'<line class="floor" x1="{px(lo):.1f}" x2="{px(lo):.1f}" y1="{mid - 7}" y2="{mid + 7}"/>'
        f'<circle class="mu" cx="{px(mu):.1f}" cy="{mid}" r="3.5"/></svg>')
