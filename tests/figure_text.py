"""Text on a figure: every visible piece of text with its box on the canvas, and what is wrong
with them (overlapping one another, outside the figure's own width and height, or an axis label
longer than its axes)."""

from __future__ import annotations

import itertools

from matplotlib.text import Text


def texts(fig) -> list[tuple[str, object]]:
    """(text, window extent) of every visible, non-empty Text artist of ``fig``."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    # tick labels whose tick lies outside the view limits exist but are not drawn
    hidden = set()
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            lo, hi = sorted(axis.get_view_interval())
            for tick in axis.get_major_ticks() + axis.get_minor_ticks():
                loc = tick.get_loc()
                if loc is None or not lo - 1e-9 * max(1, abs(hi)) <= loc <= hi + 1e-9 * max(
                        1, abs(hi)):
                    hidden |= {id(tick.label1), id(tick.label2)}
    out = []
    for t in fig.findobj(Text):
        if not t.get_visible() or not t.get_text().strip() or id(t) in hidden:
            continue
        out.append((t.get_text(), t.get_window_extent(renderer)))
    return out


def _outruns(fig, tolerance_px: float) -> list[str]:
    """Axis labels longer than their axes: a y label taller than its panel (it runs into the
    panel above or past the top edge), an x label wider than its panel."""
    renderer = fig.canvas.get_renderer()
    bad = []
    for ax in fig.axes:
        box = ax.get_window_extent(renderer)
        for label, (lo, hi), (a, b) in (
                (ax.yaxis.label, (box.y0, box.y1), (1, 3)),
                (ax.xaxis.label, (box.x0, box.x1), (0, 2))):
            if not label.get_visible() or not label.get_text().strip():
                continue
            ext = label.get_window_extent(renderer).extents
            if ext[a] < lo - tolerance_px or ext[b] > hi + tolerance_px:
                bad.append(f"{label.get_text()!r} outruns its axes ({ext[a]:.0f}-{ext[b]:.0f} "
                           f"against {lo:.0f}-{hi:.0f})")
    return bad


def problems(fig, tolerance_px: float = 0.5) -> list[str]:
    found = texts(fig)
    w, h = fig.bbox.width, fig.bbox.height
    bad = []
    for text, box in found:
        if box.x0 < -tolerance_px or box.y0 < -tolerance_px or box.x1 > w + tolerance_px \
                or box.y1 > h + tolerance_px:
            bad.append(f"{text!r} leaves the canvas ({box.x0:.0f},{box.y0:.0f})-"
                       f"({box.x1:.0f},{box.y1:.0f}) of {w:.0f}x{h:.0f}")
    for (ta, a), (tb, b) in itertools.combinations(found, 2):
        if a.x0 + tolerance_px < b.x1 and b.x0 + tolerance_px < a.x1 and \
                a.y0 + tolerance_px < b.y1 and b.y0 + tolerance_px < a.y1:
            bad.append(f"{ta!r} overlaps {tb!r}")
    return bad + _outruns(fig, max(tolerance_px, 2.0))
