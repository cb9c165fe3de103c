"""Charts for the results site as inline SVG strings: pure functions, no JavaScript, nothing fetched.

Colours are CSS classes (``s0`` .. ``s9``, ``axis``, ``band``), not attributes, so that the page's stylesheet
themes them, dark mode included. Every piece of text that comes from the store (a bot's name) is escaped here,
because callers insert the result into templates as markup.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections.abc import Callable, Sequence
from itertools import pairwise

from markupsafe import Markup, escape

from arena.site.common import downsample
from arena.site.rows import Series

PALETTE_SIZE = 10
TABLE_ROWS = 40
"""At most this many rows in a chart's table of values (:func:`chart_values`): the values at evenly spaced matches,
enough to read a trend from without a screen reader going through the 300 points a line may have."""


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


def outliers(series: Sequence[Series]) -> set[int]:
    """The series (by index) that sit far from all the others, so far that scaling the chart to them would squeeze
    the rest into a band: a group of at most a third of the lines, on one side of a gap wider than the rest of the
    chart's range. Their lines are drawn clamped to the chart's edge, with their real values in their labels.

    >>> near = [Series(str(i), ((0, 20.0 + i), (1, 21.0 + i))) for i in range(3)]
    >>> outliers(near + [Series("far", ((0, -40.0), (1, -38.0)))])
    {3}
    >>> outliers(near)
    set()
    """
    spans = sorted((min(y for _, y in s.points), max(y for _, y in s.points), i)
                   for i, s in enumerate(series) if s.points)
    if len(spans) < 3:
        return set()
    best: set[int] = set()
    for cut in range(1, len(spans)):
        low, high = spans[:cut], spans[cut:]
        gap = min(lo for lo, _, _ in high) - max(hi for _, hi, _ in low)
        small, large = (low, high) if len(low) <= len(high) else (high, low)
        rest = max(hi for _, hi, _ in large) - min(lo for lo, _, _ in large)
        if len(small) * 3 <= len(spans) and gap > max(rest, 1e-9) and len(small) > len(best):
            best = {i for _, _, i in small}
    return best


def _label_positions(wanted: Sequence[float], low: float, high: float, gap: float = 18) -> list[float]:
    """End-label heights near ``wanted`` (pixels, any order), pushed apart to at least ``gap`` and kept in range."""
    order = sorted(range(len(wanted)), key=lambda i: wanted[i])
    placed = [0.0] * len(wanted)
    last = low - gap
    for i in order:
        placed[i] = last = max(wanted[i], last + gap)
    overflow = last - high
    if overflow > 0:  # shift the whole stack up, as far as it fits
        for i in order:
            placed[i] = max(low, placed[i] - overflow)
    return placed


def line_chart(series: Sequence[Series], label: str, y_title: str, x_title: str = "match",
               width: int = 720, height: int = 300, steps: bool = False, end_labels: bool = False) -> Markup:
    """One line per series (colour ``s{i % 10}``), with its band shaded when it has one. Every point has its value
    as a tooltip. ``steps``: a value holds until the next point (a bot's rating does not move while it sits out).
    ``end_labels``: each line is named at its end (not by colour alone), and a line far from all the others is
    clamped to the edge rather than let it squeeze them (see :func:`outliers`)."""
    xs = [x for s in series for x, _ in s.points]
    title = escape(label)
    if not xs:
        return Markup(f'<svg class="chart" viewBox="0 0 {width} 60" role="img" aria-label="{title}">'
                      f'<title>{title}</title><text x="{width / 2}" y="34" text-anchor="middle" class="note">'
                      'no rated matches yet</text></svg>')
    far = outliers(series) if end_labels else set()
    shown = [s for i, s in enumerate(series) if i not in far]
    ys = [y for s in shown for _, y in s.points] + [v for s in shown for _, lo, hi in s.band for v in (lo, hi)]
    left, right, top, bottom = 48, 14 + (130 if end_labels else 0), 12, 38
    y_ticks = nice_ticks(min(ys), max(ys))
    x_low, x_high = min(xs), max(xs)
    if x_high == x_low:
        x_low, x_high = x_low - 1, x_high + 1
    y_low, y_high = y_ticks[0], y_ticks[-1]

    def px(x: float) -> float:
        return left + (x - x_low) / (x_high - x_low) * (width - left - right)

    def py(y: float) -> float:
        return top + (y_high - min(max(y, y_low), y_high)) / (y_high - y_low) * (height - top - bottom)

    # A group, not an image: an image's children are hidden from assistive technology, and the end labels are
    # focusable. The axes and the points are left out of what a screen reader reads (the chart's table of values,
    # chart_values, says the same in rows); each end label's title (its accessible name) says its line's last value.
    parts = [f'<svg class="chart" viewBox="0 0 {width} {height}" role="group" aria-label="{title}">',
             f"<title>{title}</title>", '<g class="axis" aria-hidden="true">']
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
    ends = [py(s.points[-1][1]) if s.points else 0.0 for s in series]
    label_at = _label_positions(ends, top + 4, height - bottom)
    for i, s in enumerate(series):
        colour = f"s{i % PALETTE_SIZE}"
        name = escape(s.name)
        parts.append(f'<g class="{colour}{" far" if i in far else ""}"><title>{name}</title>')
        if s.band:
            upper = " ".join(f"{px(x):.1f},{py(hi):.1f}" for x, _, hi in s.band)
            lower = " ".join(f"{px(x):.1f},{py(lo):.1f}" for x, lo, _ in reversed(s.band))
            parts.append(f'<polygon class="band" points="{upper} {lower}"/>')
        if s.points:
            # Each point's coordinates as text once, for the line and for its tooltip's circle: a bot's chart has
            # hundreds of points in a big league, and a thousand bot pages each have one.
            spots = [(f"{px(x):.1f}", f"{py(y):.1f}") for x, y in s.points]
            coords: list[str] = []
            for n, (cx, cy) in enumerate(spots):
                if steps and n:
                    coords.append(f"{cx},{spots[n - 1][1]}")
                coords.append(f"{cx},{cy}")
            last_x, last_y = s.points[-1]
            parts.append(f'<polyline class="line" points="{" ".join(coords)}"/>')
            # A point per value, its value as a tooltip on hover (the lines are thin targets).
            parts.append('<g aria-hidden="true">' + "".join(
                f'<circle class="pt" cx="{cx}" cy="{cy}" r="4"><title>{name}: {y:.2f} after match '
                f'{x:.0f}</title></circle>' for (x, y), (cx, cy) in zip(s.points, spots, strict=True)) + "</g>")
            parts.append(f'<circle class="dot" cx="{spots[-1][0]}" cy="{spots[-1][1]}" r="3"/>')
            if end_labels:
                # The label's text in the page's ink (the palette's light colours are under 4.5:1 on the panel),
                # and a stroke of its line's colour before it to tie the two.
                off = " (off scale)" if i in far else ""
                said = f"{name}: {last_y:.2f} after match {last_x:.0f}{off}"
                at = label_at[i]
                parts.append(f'<line class="key" x1="{width - right + 6}" x2="{width - right + 16}" y1="{at:.1f}" '
                             f'y2="{at:.1f}"/><text class="end" x="{width - right + 20}" y="{at + 4:.1f}" '
                             f'tabindex="0">{name} {_fmt(last_y)}{off}<title>{said}</title></text>')
        parts.append("</g>")
    parts.append("</svg>")
    return Markup("".join(parts))


def chart_values(series: Sequence[Series], limit: int = TABLE_ROWS) -> list[tuple[float, list[str]]]:
    """A chart's values as rows of a table: at most ``limit`` matches, evenly spaced over those the chart has a
    point at (the first and the last always in), each with every line's value there (the latest at or before it:
    a rating holds while its bot sits out; "–" before a line's first point), its band after it as a range.

    >>> rows = chart_values([Series("a", ((1, 2.0), (3, 2.5))), Series("b", ((2, 1.0),), ((2, 0.5, 1.5),))])
    >>> [(x, values) for x, values in rows]
    [(1, ['2.00', '–']), (2, ['2.00', '1.00 (0.50 to 1.50)']), (3, ['2.50', '1.00 (0.50 to 1.50)'])]
    """
    xs = sorted({x for s in series for x, _ in s.points})
    chosen = downsample(xs, limit)
    # Each line's points and band by match, found by bisection: a bot's chart has hundreds of points in a big
    # league, and a scan of them for each of the table's rows was a tenth of its page's cost.
    lines = [(_by_x([x for x, _ in s.points]), [y for _, y in s.points],
              _by_x([x for x, _, _ in s.band]), [(lo, hi) for _, lo, hi in s.band]) for s in series]
    rows = []
    for x in chosen:
        values = []
        for point_at, ys, band_at, bands in lines:
            before = point_at(x)
            band = band_at(x)
            value = "–" if before is None else f"{ys[before]:.2f}"
            if band is not None and before is not None:
                value += f" ({bands[band][0]:.2f} to {bands[band][1]:.2f})"
            values.append(value)
        rows.append((x, values))
    return rows


def _by_x(xs: Sequence[float]) -> Callable[[float], int | None]:
    """The index of the last of ``xs`` at or before a match (in their order, as the points are listed), or None."""
    if all(a <= b for a, b in pairwise(xs)):
        return lambda x: bisect_right(xs, x) - 1 if xs and xs[0] <= x else None
    return lambda x: next((i for i in range(len(xs) - 1, -1, -1) if xs[i] <= x), None)


BAR_PAD = 4


def _bar_px(value: float, scale: tuple[float, float], width: int) -> float:
    """Where ``value`` falls on a rating bar of ``width`` drawn over ``scale`` (shared by the bars and their axis)."""
    low, high = scale
    return BAR_PAD + (min(max(value, low), high) - low) / (high - low) * (width - 2 * BAR_PAD)


def rating_axis(scale: tuple[float, float], width: int = 150, height: int = 16) -> Markup:
    """The scale of the rating bars (:func:`rating_bar` with the same ``scale`` and ``width``): a few round rating
    values with ticks, so that a bar's position and length read as numbers."""
    ticks = [t for t in nice_ticks(*scale, count=3) if scale[0] <= t <= scale[1]]
    parts = [(f'<svg class="ratingaxis" viewBox="0 0 {width} {height}" width="{width}" height="{height}" '
              f'role="img" aria-label="rating scale from {scale[0]:.0f} to {scale[1]:.0f}">'
              f'<line class="track" x1="{BAR_PAD}" x2="{width - BAR_PAD}" y1="{height - 1}" y2="{height - 1}"/>')]
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
