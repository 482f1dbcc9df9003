"""The reproduction check's figure: per kind of estimate (throughputs, per-process ratios,
interleaved ratios; ``analysis.reproduce``), a panel of every quantity in both sets as the
rerun's difference from the reference, one row per experiment, each dot coloured by whether it
lies inside the reference's 95% interval, outside it, or has no interval to decide; the
throughputs' panel shades the between-run tolerance. The axis is linear near zero and
logarithmic beyond ``LINEAR_PCT`` (matplotlib's symlog), so that a few large shifts leave the
small ones readable."""

from __future__ import annotations

import matplotlib.ticker
import pandas as pd

from ..analysis import reproduce as R
from ..render.plot import TWO_COLUMN_IN, Line2D, NotDrawn, Patch, fitted_legend, plt, wrapped

TITLE = "rerun against its reference"
LINEAR_PCT = 2.0          # percent: linear inside ±this, logarithmic beyond
COLOURS = {R.INSIDE: "#009E73", R.OUTSIDE: "#D55E00", R.NO_INTERVAL: "#999999"}
PANELS = {R.THROUGHPUT: "throughputs", R.PER_PROCESS: "per-process ratios",
          R.INTERLEAVED: "interleaved ratios"}
TICKS = (2, 5, 10, 20, 50, 100, 200, 500, 1000)
ROW_IN, FRAME_IN = 0.16, 1.3
TICK_GAP = 0.17           # the least distance of two ticks, as a share of the panel's width


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


def _panel(ax, d: pd.DataFrame, experiments: list[str], kind: str, tol) -> None:
    if kind == R.THROUGHPUT and tol is not None and tol.value:
        ax.axvspan(-100 * tol.value, 100 * tol.value, color="0.88", lw=0, zorder=0)
    ax.axvline(0, color="0.3", lw=0.6, zorder=1)
    y = {e: i for i, e in enumerate(experiments)}
    for outcome, colour in COLOURS.items():
        part = d[d["outcome"] == outcome]
        # spread a row's dots a little, in a fixed pattern: the figure is the same every time
        jitter = [((i % 5) - 2) * 0.09 for i in range(len(part))]
        ax.scatter(part["pct"], [y[e] + j for e, j in zip(part["experiment"], jitter)],
                   s=9, color=colour, edgecolor="white", linewidth=0.3, zorder=3)
    ax.set_xscale("symlog", linthresh=LINEAR_PCT, linscale=1.0)
    values = d["pct"]
    ax.set_xlim(min(values.min(), -LINEAR_PCT) * 1.25, max(values.max(), LINEAR_PCT) * 1.25)
    ax.xaxis.set_major_locator(matplotlib.ticker.FixedLocator(_ticks(ax)))
    ax.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())
    ax.xaxis.set_major_formatter(_pct)
    ax.set_yticks(range(len(experiments)), experiments)
    ax.set_ylim(len(experiments) - 0.5, -0.5)
    ax.set_xlabel("rerun − reference")
    ax.set_title(f"{PANELS[kind]} ({len(d)})")


def figure(frame: pd.DataFrame, tol, rerun: str, reference: str):
    """The figure, or a ``NotDrawn`` where no estimate is in both sets."""
    data = frame[frame["kind"].isin(R.ESTIMATED) & frame["relative_difference"].notna()]
    if data.empty:
        return NotDrawn(TITLE, "no estimate is in both sets, so there is nothing to set "
                               "against the reference")
    data = data.assign(pct=100 * data["relative_difference"].astype(float))
    kinds = [k for k in R.ESTIMATED if (data["kind"] == k).any()]
    experiments = list(dict.fromkeys(data["experiment"].astype(str)))
    fig, axes = plt.subplots(1, len(kinds), sharey=True, squeeze=False, layout="constrained",
                             figsize=(TWO_COLUMN_IN, FRAME_IN + ROW_IN * len(experiments)))
    for ax, kind in zip(axes[0], kinds):
        _panel(ax, data[data["kind"] == kind], experiments, kind, tol)
    fig.suptitle("\n".join(wrapped(f"{rerun} against {reference}: each estimate's difference "
                                   f"from the reference", TWO_COLUMN_IN - 0.2, 8)),
                 fontsize=8)
    handles = [Line2D([], [], ls="none", marker="o", markersize=3.5, color=c,
                      label=f"{o} the reference's 95% CI" if o != R.NO_INTERVAL else o)
               for o, c in COLOURS.items()]
    if tol is not None and tol.value and R.THROUGHPUT in kinds:
        handles.append(Patch(facecolor="0.88", label=f"between-run tolerance "
                                                      f"±{100 * tol.value:.2f}%"))
    fitted_legend(fig, handles, borderaxespad=0.2)
    return fig
