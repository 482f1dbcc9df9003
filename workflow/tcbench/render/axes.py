"""A figure's value axes: one number format for every tick (``Ticks``), a logarithmic axis
where the values span more than ``LOG_SPAN``x, labelled at 1, 2 and 5 of each decade where they
span few decades, its label saying "log scale"; and a ratio's two reference lines, at 1 and at
``stats.GAIN`` (``ratio_lines``); and x tick labels broken to fit their slots
(``fit_ticks``)."""

from __future__ import annotations

import math
import re
import textwrap

import matplotlib
import matplotlib.font_manager
import matplotlib.textpath
import matplotlib.ticker
import numpy as np
import pandas as pd
from matplotlib.lines import Line2D

from .. import stats
from .numbers import times

_TEXT_PATH = matplotlib.textpath.TextToPath()   # measures text without a renderer

LOG_SPAN = 10.0                # values spanning more than this factor get a log axis


class Ticks(matplotlib.ticker.Formatter):
    """One format for every tick of an axis: thousands as k (millions as M) once the largest
    tick reaches 10,000, and as many decimals as the tick step needs, the same for all."""

    def set_locs(self, locs):
        super().set_locs(locs)
        finite = sorted(float(v) for v in locs if np.isfinite(v))
        top = max((abs(v) for v in finite), default=0.0)
        self.div, self.suffix = (1e6, "M") if top >= 1e7 else (1e3, "k") if top >= 1e4 \
            else (1.0, "")
        # the fewest decimals that print every tick exactly (2.5 is "2.5", never "2")
        scaled = [v / self.div for v in finite]
        self.decimals = next((d for d in range(7) if all(
            abs(round(v, d) - v) <= 1e-9 * max(1.0, abs(v)) for v in scaled)), 6)

    def __call__(self, x, pos=None):
        if not hasattr(self, "div"):
            self.set_locs(self.axis.get_majorticklocs() if self.axis else [x])
        return f"{x / self.div:,.{self.decimals}f}{self.suffix}"


@matplotlib.ticker.FuncFormatter
def log_ticks(v, _pos=None) -> str:
    """Ticks on a log axis: 0.1, 0.2, 0.5, 1, 2, 5, 10, 100, 1k, 10k, 1M."""
    if v <= 0:
        return ""
    if v >= 1e6:
        return f"{v / 1e6:.3g}M"
    if v >= 1e3:
        return f"{v / 1e3:.3g}k"
    return f"{v:.3g}"


# a log axis spanning fewer decades than this gets labelled ticks at 1, 2 and 5 of each decade
# (decades alone would leave one or two labels on the axis)
FEW_DECADES = 3.0


LOG_NOTE = " (log scale)"


def value_axis(ax, values, *, label: str | None = None) -> bool:
    """Linear axis with ``Ticks``, or a log axis where the values span more than ``LOG_SPAN``×;
    ``label`` becomes the y label, which says "log scale" on a log axis. Returns whether the
    axis is logarithmic."""
    v = pd.to_numeric(pd.Series(values), errors="coerce").dropna()
    v = v[v > 0]
    log = bool(len(v) > 1 and v.max() / v.min() > LOG_SPAN)
    if log:
        ax.set_yscale("log")
        few = math.log10(v.max() / v.min()) < FEW_DECADES
        ax.yaxis.set_major_locator(matplotlib.ticker.LogLocator(
            base=10, subs=(1.0, 2.0, 5.0) if few else (1.0,)))
        ax.yaxis.set_major_formatter(log_ticks)
        ax.yaxis.set_minor_locator(matplotlib.ticker.LogLocator(base=10, subs="auto"))
        ax.yaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
        # the axis spans the data (bars stand on its floor), not whole empty decades
        ax.set_ylim(v.min() / 1.6, v.max() * 1.6)
    else:
        ax.yaxis.set_major_formatter(Ticks())
    if label is not None:
        # a long label takes the note on a line of its own rather than outrun its axes
        note = LOG_NOTE if len(label) + len(LOG_NOTE) <= 26 else "\n" + LOG_NOTE.strip()
        ax.set_ylabel(label + (note if log else ""))
    return log


def ratio_lines(ax) -> list:
    """A ratio's two references: 1× (the same speed) and ``stats.GAIN`` (the threshold a
    95% interval must clear for "pays off"); the legend's handles for them."""
    same = dict(color="0.2", lw=0.8, ls="--")
    gain = dict(color="#7a1f1f", lw=0.9, ls=":")
    # over the bars and the grid (a grid line often sits at 1 too), under runs and whiskers
    ax.axhline(1.0, zorder=1.5, **same)
    ax.axhline(stats.GAIN, zorder=1.6, **gain)
    return [Line2D([], [], label="1× (same speed)", **same),
            Line2D([], [], label=f"{times(stats.GAIN)} (pays-off threshold)", **gain)]


def reference_room(ax) -> None:
    """Room above the pays-off line (``stats.GAIN``), which autoscaling leaves on the axes'
    edge where every value is below it, half drawn."""
    lo, hi = ax.get_ylim()
    if ax.get_yscale() == "log":
        ax.set_ylim(lo, max(hi, stats.GAIN * 1.12))
    elif hi < stats.GAIN + 0.08 * (hi - lo):
        ax.set_ylim(lo, stats.GAIN + 0.1 * (stats.GAIN - lo))


def axes_width_in(ax) -> float:
    """Approximate drawing width of ``ax`` in inches (its share of the figure's columns, less
    room for the y axis labels)."""
    spec = ax.get_subplotspec()
    share = len(spec.colspan) / spec.get_gridspec().ncols if spec else 1.0
    return ax.figure.get_size_inches()[0] * share - 0.45



def _width_in(line: str, font) -> float:
    """The drawn width of one line of text in ``font``, in inches (no renderer needed)."""
    width, _, _ = _TEXT_PATH.get_text_width_height_descent(line, font, ismath=False)
    return width / 72


UPRIGHT_FREE_IN = 0.6   # an upright label's length the figure's height already has room for


def fit_ticks(ax, labels, slot_in: float | None = None,
              upright: bool = False) -> tuple[list[str], bool]:
    """x tick ``labels`` that fit side by side: their lines broken at spaces (and after
    hyphens) until no two neighbours run into each other in their slots (``slot_in`` inches
    apart; by default the axes' width shared among them). Where even single words do, or where
    the caller asks for ``upright`` labels, True: they stand upright, each with no more lines
    than its slot is wide."""
    font = matplotlib.font_manager.FontProperties(size=matplotlib.rcParams["xtick.labelsize"])
    slot = axes_width_in(ax) / max(len(labels), 1) if slot_in is None else slot_in
    lines = [str(lab).splitlines() for lab in labels]
    if not upright:
        ticks = _side_by_side(lines, slot, font)
        if ticks is not None:
            return ticks, False
    # upright, a label's lines lie side by side: no more than its slot holds, the two shortest
    # neighbouring parts of the setting sharing a line until they fit
    # (a line's pitch, measured: ~1.31 times the font size; 1.4 leaves the neighbours apart)
    most = max(1, int((slot - 0.05) / (1.4 * font.get_size_in_points() / 72)))
    out = []
    for lab in lines:
        parts = list(lab)
        while len(parts) > most:
            i = min(range(len(parts) - 1), key=lambda k: len(parts[k]) + len(parts[k + 1]))
            parts[i:i + 2] = [f"{parts[i]}, {parts[i + 1]}"]
        out.append("\n".join(parts))
    return out, True


def _side_by_side(lines: list[list[str]], slot: float, font) -> list[str] | None:
    """The labels' lines broken until neighbours do not meet in ``slot`` inches; None where even
    single words do."""
    # a line breaks at spaces and after hyphens ("reduce-", "overhead")
    longest_word = max((len(w) + 1 for lab in lines for line in lab
                        for w in re.split(r"\s+|(?<=-)", line)), default=1)

    def fitted(chars: int) -> list[str]:
        return ["\n".join(textwrap.fill(line, chars, break_long_words=False)
                          for line in lab)
                for lab in lines]

    def crowded(ticks: list[str]) -> bool:
        w = [max((_width_in(line, font) for line in t.splitlines()), default=0.0)
             for t in ticks]
        return any((a + b) / 2 > slot - 0.05 for a, b in zip(w, w[1:]))   # 0.05 in apart

    room = max((len(line) for lab in lines for line in lab), default=1)
    while crowded(fitted(room)) and room > longest_word:
        room -= 1
    ticks = fitted(room)
    return None if crowded(ticks) else ticks


def group_ticks(ax, groups, narrow: bool = False) -> None:
    """The x axis of grouped bars: a tick per group, its label fitted (fit_ticks), upright
    where the caller finds the slots ``narrow`` or the labels do not fit side by side."""
    many = len(groups) > 1
    ticks, upright = fit_ticks(ax, groups, upright=narrow and many)
    ax.set_xticks(range(len(groups)), ticks)
    ax.set_xlim(-0.55, len(groups) - 0.45)
    ax.grid(axis="x", visible=False)
    if upright and many:
        ax.tick_params(axis="x", labelrotation=90)
        # upright labels take their length from the axes' height: the figure grows by what
        # the longest takes beyond the ~0.6 in of five lines lying flat
        font = matplotlib.font_manager.FontProperties(
            size=matplotlib.rcParams["xtick.labelsize"])
        longest = max((_width_in(line, font) for t in ticks for line in t.splitlines()),
                      default=0.0)
        if longest > UPRIGHT_FREE_IN:
            ax.figure.set_figheight(ax.figure.get_figheight() + longest - UPRIGHT_FREE_IN)
