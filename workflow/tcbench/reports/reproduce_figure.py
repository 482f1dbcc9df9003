"""The reproduction check's figure: per kind of estimate (throughputs, per-process ratios,
interleaved ratios; ``analysis.reproduce``), a panel with one row per quantity in both sets:
the reference's 95% interval as a grey bar around its estimate (0), and beside it the rerun's
estimate with its interval, coloured by whether the estimate lies inside the reference's
interval, outside it, or has no interval to decide. Everything is the relative difference from
the reference's estimate, so quantities of any size share an axis; the throughputs' panel
shades the between-run tolerance. The axis is linear near zero and logarithmic beyond
``LINEAR_PCT`` (matplotlib's symlog), so that a few large shifts leave the small ones
readable. The panels stand one above the other, each as tall as its rows."""

from __future__ import annotations

import matplotlib.ticker
import numpy as np
import pandas as pd

from .. import stats
from ..analysis import reproduce
from ..render.plot import TWO_COLUMN_IN, Line2D, NotDrawn, Patch, fitted_legend, plt, wrapped

TITLE = "rerun against its reference"
LINEAR_PCT = 2.0          # percent: linear inside ±this, logarithmic beyond
COLOURS = {reproduce.INSIDE: "#009E73", reproduce.OUTSIDE: "#D55E00",
           reproduce.NO_INTERVAL: "#999999"}
REFERENCE = "0.75"
PANELS = {reproduce.THROUGHPUT: "throughputs", reproduce.PER_PROCESS: "per-process ratios",
          reproduce.INTERLEAVED: "interleaved ratios"}
TICKS = (2, 5, 10, 20, 50, 100, 200, 500, 1000)
ROW_IN, PANEL_IN, FRAME_IN = 0.125, 0.45, 0.7
LABEL_PT = 5.5
TICK_GAP = 0.09           # the least distance of two ticks, as a share of the panel's width


def _ticks(ax) -> list[float]:
    """0, then outwards each side the candidate ticks inside the view whose labels keep
    ``TICK_GAP`` of the panel's width from the last one kept (on a symlog axis the decades
    crowd: 2%, 5% and 10% can sit a label's width apart)."""
    lo, hi = ax.get_xlim()
    scale = ax.xaxis.get_transform().transform
    (t_lo, t_hi) = scale([lo, hi])
    where = lambda v: (scale([v])[0] - t_lo) / (t_hi - t_lo)  # noqa: E731
    kept = [0.0]
    for sign in (-1, 1):
        last = where(0.0)
        for t in TICKS:
            v = sign * t
            if lo <= v <= hi and abs(where(v) - last) >= TICK_GAP:
                kept.append(float(v))
                last = where(v)
    return sorted(kept)


@matplotlib.ticker.FuncFormatter
def _pct(v, _pos=None) -> str:
    return "0" if v == 0 else f"{v:+g}%"


def _label(r) -> str:
    """A row's name: experiment, precision, and the baseline a ratio is against."""
    base = "" if pd.isna(r["baseline"]) or r["kind"] == reproduce.THROUGHPUT \
        else f" ÷ {r['baseline']}"
    return f"{r['experiment']} {r['precision']}{base}"


def _rel(values, ref) -> np.ndarray:
    return 100 * (pd.to_numeric(values, errors="coerce").to_numpy(float) / ref - 1)


def _panel(ax, d: pd.DataFrame, kind: str, tol) -> list[float]:
    """Draw one kind's rows; returns every x it drew (for the panels' common limits)."""
    d = d.reset_index(drop=True)
    y = np.arange(len(d))
    ref = d["reference"].astype(float).to_numpy()
    if kind == reproduce.THROUGHPUT and tol is not None and tol.value:
        ax.axvspan(-100 * tol.value, 100 * tol.value, color="0.9", lw=0, zorder=0)
    ax.axvline(0, color="0.3", lw=0.6, zorder=1)
    lo, hi = _rel(d["reference_low"], ref), _rel(d["reference_high"], ref)
    has = ~(np.isnan(lo) | np.isnan(hi))
    ax.hlines(y[has] - 0.16, lo[has], hi[has], color=REFERENCE, lw=2.2, zorder=2)
    new_lo, new_hi = _rel(d["rerun_low"], ref), _rel(d["rerun_high"], ref)
    for outcome, colour in COLOURS.items():
        at = (d["outcome"] == outcome).to_numpy()
        ci = at & ~(np.isnan(new_lo) | np.isnan(new_hi))
        ax.hlines(y[ci] + 0.16, new_lo[ci], new_hi[ci], color=colour, lw=0.9, zorder=3)
        ax.scatter(d.loc[at, "pct"], y[at] + 0.16, s=7, color=colour, edgecolor="white",
                   linewidth=0.3, zorder=4)
    ax.set_xscale("symlog", linthresh=LINEAR_PCT, linscale=1.0)
    ax.set_yticks(y, [_label(r) for _, r in d.iterrows()], fontsize=LABEL_PT)
    ax.set_ylim(len(d) - 0.5, -0.5)
    ax.set_title(f"{PANELS[kind]} ({len(d)})", fontsize=7)
    xs = [*d["pct"], *lo[has], *hi[has], *new_lo[~np.isnan(new_lo)], *new_hi[~np.isnan(new_hi)]]
    return [float(x) for x in xs if np.isfinite(x)]


def figure(frame: pd.DataFrame, tol, rerun: str, reference: str):
    """The figure, or a ``NotDrawn`` where no estimate is in both sets."""
    data = frame[frame["kind"].isin(reproduce.ESTIMATED) & frame["relative_difference"].notna()]
    if data.empty:
        return NotDrawn(TITLE, "no estimate is in both sets, so there is nothing to set "
                               "against the reference")
    data = data.assign(pct=100 * data["relative_difference"].astype(float))
    kinds = [k for k in reproduce.ESTIMATED if (data["kind"] == k).any()]
    rows = [int((data["kind"] == k).sum()) for k in kinds]
    fig, axes = plt.subplots(
        len(kinds), 1, sharex=True, squeeze=False, layout="constrained",
        gridspec_kw={"height_ratios": [PANEL_IN + ROW_IN * n for n in rows]},
        figsize=(TWO_COLUMN_IN, FRAME_IN + sum(PANEL_IN + ROW_IN * n for n in rows)))
    xs = []
    for ax, kind in zip(axes[:, 0], kinds):
        xs += _panel(ax, data[data["kind"] == kind], kind, tol)
    bottom = axes[-1, 0]
    bottom.set_xlim(min(*xs, -LINEAR_PCT) * 1.25, max(*xs, LINEAR_PCT) * 1.25)
    bottom.xaxis.set_major_locator(matplotlib.ticker.FixedLocator(_ticks(bottom)))
    bottom.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())
    bottom.xaxis.set_major_formatter(_pct)
    bottom.set_xlabel("difference from the reference's estimate")
    fig.suptitle("\n".join(wrapped(f"{rerun} against {reference}: each estimate with its 95% "
                                   f"interval beside the reference's", TWO_COLUMN_IN - 0.2, 8)),
                 fontsize=8)
    # a reference pooled from several runs gives the interval one more run should land in
    what = ("95% prediction interval" if (data["reference_interval"] == stats.PREDICTION).any()
            else "95% CI")
    handles = [Line2D([], [], color=REFERENCE, lw=2.2, label=f"the reference's {what}"),
               *(Line2D([], [], marker="o", markersize=3.5, color=c, lw=0.9,
                        label=f"rerun, {o} the reference's interval"
                        if o != reproduce.NO_INTERVAL
                        else f"rerun, {o}") for o, c in COLOURS.items())]
    if tol is not None and tol.value and reproduce.THROUGHPUT in kinds:
        handles.append(Patch(facecolor="0.9", label=f"between-run tolerance "
                                                     f"±{100 * tol.value:.2f}%"))
    fitted_legend(fig, handles, borderaxespad=0.2)
    return fig
