"""Grouped bars, one slot per (setting, precision), in one fixed colour per precision (the
vocabulary's, colour-vision safe). Wherever a cell has repeats its bar carries its interval
(``tcbench.stats``): a 95% confidence interval where n >= 3 (black, capped), the range where
n = 2 (grey, uncapped); a single run is marked with a dagger; and each finished run is a dot on
its bar (``runs``), so that a spread of two modes shows. Every slot is either a bar (or a
point) or a label saying why there is none: the cell's status (unsupported, oom, diverged,
error), the reason its finished runs have no such value (``why_missing``: "no fp32", "not
measured"), or why there is no record of it at all (``absent``: "not in design", "planned, no
record", "no record")."""

from __future__ import annotations

import matplotlib.colors as mcolors
import matplotlib.transforms as mtransforms
import numpy as np
import pandas as pd
from matplotlib.lines import Line2D

from .. import stats
from .. import vocabulary as V
from . import numbers
from .axes import axes_width_in, group_ticks
from .settings import axis_value, shown_axes

PALETTE = V.PALETTE

VALUE_FONT = 5.5               # pt, values printed on bars
# behind a printed value: a reference line or a grid line does not strike through it
VALUE_BOX = dict(boxstyle="square,pad=0.08", fc="white", ec="none", alpha=0.85)

REFERENCE_HATCH = "//////"
# a cell the verdict makes no claim of (too few repeats, its repeats are gated, or its baseline
# did not run): its colour washed out and cross-hatched, so it never reads as an ordinary result
UNJUDGED_HATCH, UNJUDGED_EDGE, UNJUDGED_WASH = "xxxx", "0.35", 0.55

SINGLE = V.SINGLE_RUN_MARK


def slot_width(n: int) -> float:
    """Data-unit width of one of ``n`` bars in a group (groups are 1 apart); a lone bar is not
    drawn as a slab."""
    return min(0.8 / max(n, 1), 0.4)


def slot_x(i: int, j: int, n: int) -> float:
    """Centre of bar ``j`` of ``n`` in group ``i``."""
    width = slot_width(n)
    return i - width * n / 2 + width * (j + 0.5)


# each finished run, on its bar or beside its point: hollow, so that it shows on every colour
RUN_MARK = dict(marker="o", markersize=2.6, mfc="white", mec="0.1", mew=0.6, ls="none")
RUN_HANDLE = Line2D([], [], label="each run", **RUN_MARK)


def run_dots(ax, x: float, values, n: int) -> bool:
    """Each run's value as a dot at ``x``, spread across the middle of the slot (in their
    order) so that equal values stay countable. Returns whether any dot was drawn."""
    v = [float(y) for y in values if y is not None and np.isfinite(float(y))]
    if not v:
        return False
    half = slot_width(n) * 0.22 if len(v) > 1 else 0.0
    xs = np.linspace(x - half, x + half, len(v))
    ax.plot(xs, v, zorder=4, clip_on=False, **RUN_MARK)
    return True


def labels_fit(ax, texts, groups: int, n: int, font: float = VALUE_FONT) -> bool:
    """Whether the widest of ``texts`` fits the distance between two bars' centres
    (DejaVu Sans digits are ~0.64 em wide)."""
    if not len(texts):
        return True
    widest = max(len(t) for t in texts) * font * 0.64 / 72
    slot = axes_width_in(ax) / (groups + 0.1) * slot_width(n)
    return widest <= slot * 0.95


def present_precisions(df: pd.DataFrame) -> list[str]:
    have = set(df["precision"].astype(str))
    return [p for p in V.PRECISIONS if p in have]


def setting_label(df: pd.DataFrame) -> pd.Series:
    """The x-axis: batch size where it varies, plus whichever axes ``settings.shown_axes`` names
    inside ``df`` (one experiment), one per line."""
    axes = shown_axes(df)
    parts = []
    if df["batch_size"].nunique() > 1 or not axes:
        parts.append("bs " + df["batch_size"].astype(int).astype(str))
    for a in axes:
        parts.append(df[a].map(lambda v, c=a: axis_value(c, v)))
    label = parts[0]
    for p in parts[1:]:
        label = label + "\n" + p
    return label


NO_RECORD = "no record"          # a slot with no record, where the study's plan is not known


def missing_text(row, absent: str = NO_RECORD) -> str:
    """Why a slot has no bar: ``absent`` where the set has no record of the cell at all."""
    if row is None:
        return absent
    why = row.get("why_missing") if hasattr(row, "get") else None
    if isinstance(why, str) and why:
        return why
    status = str(row.get("status", V.OK))
    return "not measured" if status == V.OK or row.get("repeats_ok", 0) else status


# a colour as light as fp8-tensorwise's yellow (relative luminance above this) fills a bar
# well but is barely legible as text or a thin line on white: those take it darkened
LIGHT, DARKENED = 0.5, 0.6


def legible(colour: str) -> tuple:
    """``colour`` as text or a thin line on white: itself, or darkened where it is light."""
    rgb = np.array(mcolors.to_rgb(colour))
    linear = np.where(rgb <= 0.04045, rgb / 12.92, ((rgb + 0.055) / 1.055) ** 2.4)
    light = float(linear @ np.array([0.2126, 0.7152, 0.0722])) > LIGHT
    return tuple(rgb * DARKENED) if light else tuple(rgb)


def label_slot(ax, x: float, text: str, colour: str) -> None:
    """A vertical label standing on the x axis, in axes coordinates so it works on log axes."""
    trans = mtransforms.blended_transform_factory(ax.transData, ax.transAxes)
    ax.text(x, 0.02, text, transform=trans, rotation=90, ha="center", va="bottom",
            fontsize=5.5, color=legible(colour), clip_on=False)


def interval_kind(r, interval: str) -> str:
    """What the interval of ``{interval}_low``/``_high`` is (``tcbench.stats``): the one a
    table wrote in ``{interval}_interval``, else the one its ``{interval}_n`` implies."""
    declared = r.get(f"{interval}_interval")
    if isinstance(declared, str) and declared in stats.METHOD_TEXT:
        return declared
    k = r.get(f"{interval}_n")
    return stats.method(0 if k is None or pd.isna(k) else int(k))


# how each kind of interval is drawn: colour, cap size
WHISKERS = {stats.CI: ("0.1", 1.6), stats.RANGE: ("0.55", 0), stats.SPREAD: ("0.35", 1.6)}


def _interval_bar(ax, x: float, v: float, r, interval: str, annotate, drawn: dict):
    """The interval of one bar as ``tcbench.stats`` says what it is; returns the bar's top
    and whether a single run's dagger is still to be printed after its value."""
    kind = interval_kind(r, interval)
    kind = stats.CI if kind in stats.CONFIDENCE_METHODS else kind   # an interleaved one too
    lo, hi = r.get(f"{interval}_low"), r.get(f"{interval}_high")
    if kind in WHISKERS and pd.notna(lo) and pd.notna(hi):
        colour, cap = WHISKERS[kind]
        ax.errorbar(x, v, yerr=[[max(v - lo, 0)], [max(hi - v, 0)]], fmt="none",
                    ecolor=colour, elinewidth=0.8, capsize=cap, capthick=0.8)
        drawn["intervals"].add(kind)
        return max(v, hi), False
    if kind == stats.SINGLE:
        drawn["intervals"].add(kind)
        if not annotate:
            ax.annotate(SINGLE, (x, v), xytext=(0, 0.5), textcoords="offset points",
                        ha="center", va="bottom", fontsize=5.5, color="0.2")
            return v, False
        return v, True
    return v, False


def _value_label(annotate, v: float, r, interval: str | None) -> str:
    """A bar's value as the tables print it: at the digits its confidence interval carries
    (``numbers.carried_place``), with that interval's mark (§ across runs, ¶ one process's
    rounds), else as ``annotate`` prints a value alone."""
    kind = interval_kind(r, interval) if interval else None
    if kind not in stats.CONFIDENCE_METHODS:
        return annotate(v)
    return numbers.marked_value(stats.Estimate(v, r.get(f"{interval}_low"),
                                               r.get(f"{interval}_high"), 0, kind), annotate)


def washed(colour: str) -> tuple:
    """``colour`` mixed with white: a not-judged cell's fill."""
    rgb = np.array(mcolors.to_rgb(colour))
    return tuple(rgb + (1 - rgb) * UNJUDGED_WASH)


def _bar(ax, x: float, r, value: str, p: str, n: int, *, hatch: bool, interval, annotate,
         drawn: dict, point: bool = False, above: float = -np.inf,
         muted: bool = False) -> None:
    """One bar (or, with ``point``, one marker) with its interval, and its status (some
    repeats failed) or its value on top, above ``above`` too (its highest run's dot);
    ``muted``: a cell the verdict does not judge (washed out, cross-hatched)."""
    v = r[value]
    fill = washed(PALETTE[p]) if muted else PALETTE[p]
    if point:
        ax.plot([x], [v], marker="o", markersize=4.2, mfc=fill, ls="none", zorder=3.5,
                mec=UNJUDGED_EDGE if muted else "0.1", mew=0.6)
        if muted:      # a point has no hatch: the cross of one over it
            ax.plot([x], [v], marker="x", markersize=3.2, mec=UNJUDGED_EDGE, mew=0.7,
                    ls="none", zorder=3.6)
    else:
        ax.bar(x, v, width=slot_width(n) * 0.92, color=fill,
               edgecolor=UNJUDGED_EDGE if muted else "white", linewidth=0,
               hatch=UNJUDGED_HATCH if muted else REFERENCE_HATCH if hatch else None)
    top, single = _interval_bar(ax, x, v, r, interval, annotate, drawn) if interval \
        else (v, False)
    lift = 3.0 if np.isfinite(above) else 1.5      # clear of the dots
    top = max(top, above)
    status = str(r.get("status", V.OK))
    if status != V.OK:   # some repeats failed: say so on the bar
        ax.annotate(status, (x, top), xytext=(0, 6), textcoords="offset points",
                    ha="center", va="bottom", fontsize=5, rotation=90, color="0.2")
    elif annotate:
        text = _value_label(annotate, v, r, interval) + (SINGLE if interval and single else "")
        ax.annotate(text, (x, top), xytext=(0, lift), textcoords="offset points",
                    ha="center", va="bottom", fontsize=VALUE_FONT, color="0.15",
                    bbox=VALUE_BOX, zorder=5, gid=VALUE_GID)


def grouped_bars(ax, data: pd.DataFrame, value: str, *, groups: list[str] | None = None,
                 interval: str | None = None, hatched=(), annotate=None,
                 precisions: list[str] | None = None, absent=None, runs=None,
                 point: bool = False, muted=frozenset(), clear=None) -> dict:
    """Bars of ``value`` per (group, precision), in fixed precision colours and slots.

    ``data`` has one row per (group, precision) with ``status`` and ``repeats_ok``;
    ``interval`` names the stem of ``{interval}_low``/``_high``/``_n`` columns (drawn as
    ``tcbench.stats`` says what they are); groups in ``hatched`` (published references) are
    hatched; ``annotate`` formats the value printed above each bar (all or none, so that a
    partial set does not mislead); ``runs`` maps (group, precision) to the values of the
    cell's finished runs, each drawn as a dot on its bar; ``point`` draws a marker instead
    of a bar (a median, which a bar from zero would misstate); cells in ``muted`` ((group,
    precision) pairs the verdict does not judge) are washed out and cross-hatched; ``clear``
    maps (group, precision) to a height the printed value stays above (a mark drawn beside
    the bar). A slot
    without a value gets a
    label saying why (``absent(group, precision)`` for a cell with no row at all). Returns
    what was drawn, for the legend:
    ``{"precisions": [...], "intervals": {methods}, "runs": bool}``."""
    groups = groups if groups is not None else list(dict.fromkeys(data["group"]))
    precisions = precisions or present_precisions(data)
    n = len(precisions)
    if annotate and not labels_fit(ax, data[value].dropna().map(annotate), len(groups), n):
        annotate = None
    rows = {(str(r["group"]), str(r["precision"])): r for _, r in data.iterrows()}
    drawn = {"precisions": precisions, "intervals": set(), "runs": False}
    for i, g in enumerate(groups):
        for j, p in enumerate(precisions):
            x = slot_x(i, j, n)
            r = rows.get((g, p))
            if r is None or pd.isna(r[value]):
                label_slot(ax, x, missing_text(r, absent(g, p) if absent and r is None
                                               else NO_RECORD), PALETTE[p])
                continue
            dots = runs.get((g, p), ()) if runs is not None else ()
            _bar(ax, x, r, value, p, n, hatch=g in hatched, interval=interval,
                 annotate=annotate, drawn=drawn, point=point, muted=(g, p) in muted,
                 above=max((float(v) for v in [*dots, *(clear or {}).get((g, p), ())]),
                           default=-np.inf))
            # beside a point, not over it: the point is the mean
            if run_dots(ax, x + (slot_width(n) * 0.5 if point else 0.0), dots, n):
                drawn["runs"] = True
    group_ticks(ax, groups, narrow=axes_width_in(ax) / max(len(groups), 1) < 0.55)
    ax.margins(y=0.18 if annotate or drawn["intervals"] else 0.08)
    return drawn


VALUE_GID = "value"    # a value printed over its bar (``_bar``), found again by ``clear_of_lines``


def clear_of_lines(fig, ys, gap_px: float = 2.0) -> None:
    """Lift every printed value of ``fig`` that a horizontal reference line (at each of
    ``ys``, in data units) would strike through to just above it, growing the axis where the
    lifted value would leave it. The figure is laid out (drawn) first: where a label sits
    is known only then."""
    renderer = fig.canvas.get_renderer()
    for ax in fig.axes:
        labels = [t for t in ax.texts if t.get_gid() == VALUE_GID]
        if not labels:
            continue
        fig.canvas.draw()
        top = ax.get_window_extent(renderer).y1
        for t in labels:
            for y in sorted(ys):
                line = ax.transData.transform((0, y))[1]
                box = t.get_window_extent(renderer).expanded(1.0, 1.08)
                if box.y0 - gap_px <= line <= box.y1 + gap_px:
                    dx, dy = t.xyann
                    t.xyann = (dx, dy + (line - box.y0 + gap_px) * 72 / fig.dpi)
            if t.get_window_extent(renderer).y1 > top:
                lo, hi = ax.get_ylim()
                ax.set_ylim(lo, hi * 1.15 if ax.get_yscale() == "log" else hi + 0.12 * (hi - lo))
